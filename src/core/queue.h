/*
 * queue.h -- the one path every queued operation takes (a copy, a fill, a
 * launch, the copy of x:read, the zero fill of dev:zeros):
 *
 *   check   each operand against the access records, under the policy
 *           (strict: an error naming both streams and both script lines;
 *           auto: the stream waits for the other one; off: nothing)
 *   order   room for the records is made before anything is queued
 *   context the stream's device's context
 *   trace   begin
 *   driver  the call(s)
 *   trace   end
 *   record  each operand's access at the stream's new position, with the
 *           script location (only resolved when a message may use it), and
 *           a launch's kernel and location for fault messages
 *
 * Callers validate their arguments (sizes, devices, dtypes) first and fill a
 * gl_op; the path itself cannot drift between operations.
 */
#ifndef GPULUA_CORE_QUEUE_H
#define GPULUA_CORE_QUEUE_H

#include "driver.h"
#include "signature.h"
#include "types.h"

/* One piece of memory an operation touches. */
typedef struct gl_operand {
  gl_accesses *acc;       /* the memory's access records */
  uint64_t lo, hi;        /* the bytes it covers there */
  int write;
  const gl_slice *x;      /* for messages: the slice, or */
  const gl_hostbuf *h;    /* ... the host buffer */
  const char *role;       /* "s:copy dst", "s:fill", ...; NULL: argument `arg` of the launch */
  int arg;
} gl_operand;

/* The most operands an operation has: a launch's pointer arguments. */
#define GL_MAX_OPERANDS GL_MAX_PARAMS

typedef struct gl_op {
  gl_op_kind kind;
  const char *name;       /* the trace's name (NULL: the kind's); a launch: the kernel's */
  size_t bytes;           /* bytes moved or filled (0: nothing is queued, only checked) */
  gl_operand *opnd;
  int nopnd;
  union {
    struct {              /* GL_OP_H2D, D2H, D2D, PEER */
      CUdeviceptr dst, src;
      void *hdst;
      const void *hsrc;
      CUcontext dctx, sctx;
    } copy;
    struct {              /* GL_OP_FILL: bytes / size elements of the value's size bytes */
      CUdeviceptr p;
      unsigned size;
      unsigned char v[8];
    } fill;
    struct {              /* GL_OP_LAUNCH */
      gl_kernel *k;
      const unsigned *grid, *block;
      unsigned shared;
      void **params;
    } launch;
  } u;
} gl_op;

/* Check, queue and record `op` on s. 0, or -1 with the runtime's error (a
 * conflict under strict, a driver failure, out of memory). */
int gl_queue_op(gl_stream *s, gl_op *op, gl_site *site);

#endif
