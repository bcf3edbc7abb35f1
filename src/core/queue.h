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
#include "error.h"
#include "signature.h"
#include "types.h"

/* One piece of memory an operation touches. */
typedef struct gl_operand {
  gl_accesses *acc;       /* the memory's access records */
  uint64_t lo, hi;        /* the bytes it covers there */
  int write;
  const gl_slice *x;      /* for messages: the slice, or */
  const gl_hostbuf *h;    /* ... the host buffer */
  const char *role;       /* "s:gemm a", ...; NULL: made from the op's call and `arg` (a launch's argument
                             `arg`; a copy's dst 1 or src 2; the call alone for 0) */
  int arg;
  const char *what;       /* for messages, instead of describing the slice (gpulua's own memory) */
} gl_operand;

/* The most operands an operation has: a launch's pointer arguments. */
#define GL_MAX_OPERANDS GL_MAX_PARAMS

/* A run of operands that are one range: on the same memory, the same way,
 * each touching the range of those before it (adjacent views of one buffer,
 * as x:split makes them; under policy off, which keeps no ranges, any such
 * operands). Checking or recording their union [lo, hi) is checking or
 * recording each. */
typedef struct gl_run {
  int first, end;            /* opnd[first .. end) */
  uint64_t lo, hi;
  gl_accesses *acc;          /* the memory, and */
  int write;                 /* the way, of all of them */
} gl_run;

/* Operand i (of acc, [lo, hi), write) joins the last of the runs r[0 .. *nr)
 * of the operands before it, or starts a new one (any_range: policy off's
 * rule). */
static inline void gl_run_add(gl_run *restrict r, int *restrict nr, int i, gl_accesses *acc, uint64_t lo,
                              uint64_t hi, int write, int any_range) {
  if (*nr > 0) {
    gl_run *last = &r[*nr - 1];
    if (acc == last->acc && write == last->write && lo < hi && last->lo < last->hi &&
        (any_range || (lo <= last->hi && hi >= last->lo))) {
      if (lo < last->lo) last->lo = lo;
      if (hi > last->hi) last->hi = hi;
      last->end = i + 1;
      return;
    }
  }
  r[(*nr)++] = (gl_run){i, i + 1, lo, hi, acc, write};
}

typedef struct gl_op {
  gl_op_kind kind;
  const char *name;       /* the trace's name (NULL: the kind's); a launch: the kernel's */
  const char *call;       /* the call as the script wrote it ("s:copy"), for messages; NULL: a gemm's, or
                             the name (a collective's) */
  size_t bytes;           /* bytes moved or filled (0: nothing is queued, only checked) */
  gl_operand *opnd;       /* NULL for a launch given its slices: made from them when needed */
  int nopnd;
  const gl_run *runs;     /* opnd's runs under the policy now (gl_run_add), or NULL: found by the queue */
  int nruns;
  union {
    struct {              /* GL_OP_H2D, D2H, D2D, PEER */
      CUdeviceptr dst, src;
      void *hdst;
      const void *hsrc;
      CUcontext dctx, sctx;
      int read;             /* x:read: a conflict with another stream of the slice's device suggests reading there */
    } copy;
    struct {              /* GL_OP_FILL: bytes / size elements of the value's size bytes */
      CUdeviceptr p;
      unsigned size;
      unsigned char v[8];
    } fill;
    struct {              /* GL_OP_GEMM: cuBLAS's column-major call (blas.c) */
      struct cublasContext *handle;
      int ta, tb, m, n, k, lda, ldb, ldc, count; /* count 0: cublasGemmEx, else strided batched */
      long long sa, sb, sc;
      int dtype, compute;   /* cudaDataType, cublasComputeType_t */
      const void *a, *b;
      void *c;
      double alpha, beta;
      int status;           /* the cublasStatus_t of a failed call */
      const char *call;     /* the script's call ("s:gemm"), for that error's message */
    } gemm;
    struct {              /* GL_OP_LAUNCH */
      gl_kernel *k;
      const unsigned *grid, *block;
      unsigned shared;
      void **params;
      gl_slice *const *slices; /* per parameter: its slice, NULL for scalars (when opnd is NULL) */
      gl_slice *scratch;       /* a built-in reduction's: the stream's scratch, its last operand (scratch.h) */
      const char *scratch_what; /* ... and its description, for messages */
      int modeled;             /* the sim's timing model is told its cost: */
      double model_bytes, model_us; /* bytes moved (a built-in's), microseconds (k:cost) */
    } launch;
  } u;
} gl_op;

/* For messages: operand o of op, the memory ("slice f32[1000] on device 0",
 * "the cuBLAS workspace of stream 's'") into `what` and the call and
 * argument that touch it ("s:launch of 'axpy' argument 2") into `role`. */
void gl_operand_describe(const gl_op *op, const gl_operand *o, gl_buf *what, gl_buf *role);

/* For conflicts' messages: "stream 'b' (device 0)", or, when the other
 * stream of conflict c is of another device, "stream 'main' of device 0"
 * (every device has a 'main'); then the tail, from ", while stream 'a' may
 * still be writing it (queued at x.lua:8)" to how to order the streams
 * (fork: s:fork is one way). */
struct gl_conflict;
void gl_conflict_stream(gl_buf *b, const gl_stream *s, const struct gl_conflict *c);
void gl_conflict_tail(gl_buf *b, const gl_stream *s, const struct gl_conflict *c, int fork);

/* The call that queues op, for messages: its own (op->call), or its kind's. */
const char *gl_op_call(const gl_op *op);

/* What an operation of kind k is, for display: "a copy host -> device". */
const char *gl_op_kind_text(gl_op_kind k);

/* Check, queue and record `op` on s. 0, or -1 with the runtime's error (a
 * conflict under strict, a driver failure, out of memory). */
int gl_queue_op(gl_stream *s, gl_op *op, gl_site *site);

/* gl_queue_op in two halves, for work that is one group of driver calls on
 * several streams (a collective, comm.c): admit checks op's operands on s
 * under the policy and makes room for its records (no capture: the caller
 * refuses one first); the caller then makes the calls for every stream, and
 * recorded counts op queued on s and records its operands (also after a
 * failed group: what may have been queued is recorded, so frees wait). */
int gl_queue_admit(gl_stream *s, gl_op *op, gl_site *site);
void gl_queue_recorded(gl_stream *s, gl_op *op, gl_site *site);

#endif
