/*
 * ops.h -- the operations scripts queue on streams: copies, fills, the read
 * of a slice into a host buffer, and kernel launches. The caller fills a
 * request on its stack (the call's name as the script wrote it, its
 * operands, its site) and makes one core call, which validates everything
 * (liveness, sizes in bytes, devices, limits) in order, then goes through
 * gl_queue_op (queue.h). Nothing is queued when a check fails; every
 * message starts with the request's call.
 */
#ifndef GPULUA_CORE_OPS_H
#define GPULUA_CORE_OPS_H

#include <stdint.h>

#include "device.h"
#include "memory.h"
#include "module.h"
#include "queue.h"
#include "runtime.h"
#include "stream.h"
#include "types.h"

/* One end of a copy: a slice or a host buffer. */
typedef struct gl_ref {
  gl_slice *x;
  gl_hostbuf *h;
} gl_ref;

/* The outcome of a request's core call that the caller raises as it is,
 * without naming a capture under way: an error about the arguments as
 * given (their count, a value the caller could not take, an uninitialised
 * slice), or out of memory keeping a captured launch's record. */
#define GL_REFUSED (-2)

/* A copy, as its caller asks for it (filled on the stack, given to
 * gl_copy_submit): host->device, device->host, device->device on one
 * device, or a peer copy between devices. */
typedef struct gl_copy_req {
  const char *call;  /* the call as the script wrote it ("s:copy"): every message starts with it */
  gl_stream *s;
  gl_ref dst, src;   /* the call's arguments 1 and 2 */
  gl_site *site;
} gl_copy_req;
/* Check (both ends alive, a host dst writable, the same size, not two host
 * buffers, the devices and the stream's, no overlap) and queue. 0, or -1
 * with the error. */
int gl_copy_submit(const gl_copy_req *r);

/* A fill of every element of a slice with one value. */
typedef struct gl_fill_req {
  const char *call;        /* "s:fill" */
  gl_stream *s;
  gl_slice *x;             /* the call's argument 1 */
  int missing;             /* no value was given: GL_REFUSED after x's checks, with no message (the caller's own) */
  const char *why, *given; /* the value does not fit x's dtype: why, and what was given; NULL: it fits */
  unsigned char value[8];  /* one element's bytes */
  gl_site *site;
} gl_fill_req;
/* Check (x alive, the value, x's device against the stream's) and queue.
 * 0, -1 or GL_REFUSED with the error. */
int gl_fill_submit(const gl_fill_req *r);

/* A read of a slice into a host buffer (a fresh pageable buffer of its
 * size), on a stream of its device, waited for. */
typedef struct gl_read_req {
  const char *call;  /* "x:read" */
  gl_slice *x;
  gl_stream *s;
  gl_hostbuf *h;
  gl_site *site;
  int no_wait;       /* queue only: the caller learns of its end otherwise (a task's await) */
} gl_read_req;
int gl_read_submit(const gl_read_req *r);

/* A launch's configuration. grid[0] = 0: "auto", the grid a built-in picks
 * from the device and its work (launch.c); other kernels refuse it. */
typedef struct gl_launch_cfg {
  unsigned grid[3], block[3];
  unsigned shared;
  uint64_t id; /* a prepared configuration's number in its runtime (immutable, so a kernel remembers
                  the last one its limits passed); 0 for a table read at the launch */
} gl_launch_cfg;

struct gl_graph;

/* A kernel launch, as its caller asks for it: filled on the caller's stack
 * (nothing allocated) and given to gl_launch_submit. slices[] and values[]
 * are read only for the kernel's parameters, when nargs is their count,
 * and only before argument `bad`. */
typedef struct gl_launch_req {
  const char *call;          /* the call as the script wrote it ("s:launch"): every message starts with it */
  gl_stream *s;
  gl_kernel *k;              /* NULL: the kernel was released */
  const gl_launch_cfg *cfg;
  int has_host;              /* k has a host implementation (needed where the backend runs no device code) */
  double cost_us;            /* the kernel's cost for the backend's timing model, or 0 */
  gl_site *site;
  /* the caller's hook, for a launch captured into a graph: what it keeps
   * with the graph (0, or -1 out of memory; NULL: nothing) */
  int (*captured)(void *arg, struct gl_graph *g);
  void *captured_arg;
  int nargs;                 /* the arguments given */
  int bad;                   /* the first argument the caller could not take (0-based), or -1; for it: */
  const char *given;         /*   what was given, described, and */
  const char *why;           /*   for a scalar, why its value does not fit (NULL: a pointer parameter got no slice) */
  gl_slice *slices[GL_MAX_PARAMS];           /* per parameter: its slice, NULL for a scalar */
  unsigned char values[GL_MAX_PARAMS][8];    /* per scalar parameter: its value as its dtype's bytes, the
                                                rest of its 8 zero (all 8 are copied) */
} gl_launch_req;

/* Check and queue a launch, in the order a script meets the checks: the
 * kernel (released; the argument count; its device against the stream's;
 * where the backend runs no device code, a host implementation), the
 * configuration against the device's and the kernel's limits, each argument
 * in turn (the caller's refusal `bad`; a slice's liveness, dtype and
 * device), then a built-in's element counts and overlaps; the arguments
 * are written into k's parameter buffer and the launch goes through
 * gl_queue_op. Nothing is allocated. 0, -1 or GL_REFUSED with the
 * runtime's error (out of memory keeping a captured launch's record: the
 * capture is then broken). */
int gl_launch_submit(gl_launch_req *r);

#endif
