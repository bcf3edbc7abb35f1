/*
 * ops.h -- the operations scripts queue on streams: copies, fills, the read
 * of a slice into a host buffer, and kernel launches. Each validates its
 * arguments (liveness, sizes in bytes, devices, limits), then goes through
 * gl_queue_op (queue.h). Nothing is queued when a check fails.
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

/* s:copy(dst, src): host->device, device->host, device->device on one
 * device, or a peer copy between devices. */
int gl_copy(gl_stream *s, gl_ref dst, gl_ref src, gl_site *site);
/* s:fill(x, value): value is one element's bytes. */
int gl_fill(gl_stream *s, gl_slice *x, const void *value, gl_site *site);
/* x:read{stream = s}: copy x into h (a fresh pageable buffer of x's size)
 * and wait for the copy. */
int gl_read(gl_slice *x, gl_stream *s, gl_hostbuf *h, gl_site *site);

/* A launch's configuration. grid[0] = 0: "auto", the grid a built-in picks
 * from the device and its work (launch.c); other kernels refuse it. */
typedef struct gl_launch_cfg {
  unsigned grid[3], block[3];
  unsigned shared;
  uint64_t id; /* a prepared configuration's number in its runtime (immutable, so a kernel remembers
                  the last one its limits passed); 0 for a table read at the launch */
} gl_launch_cfg;

/* The checks of s:launch(k, cfg, ...), in the order a script meets them:
 * the kernel against the stream (its device; on sim, a host implementation:
 * has_host), the configuration against the device's and the kernel's
 * limits, each slice argument (argument i, 0-based) against the signature
 * and the stream's device. */
int gl_launch_check_kernel(gl_stream *s, const gl_kernel *k, int has_host);
int gl_launch_check_limits(gl_kernel *k, const gl_device *d, const gl_launch_cfg *c);
int gl_launch_check_slice(gl_stream *s, const gl_kernel *k, int i, const gl_slice *x);
/* gl_launch_check_slice's usual case, inline: live memory of s's device, of
 * the declared dtype (then it returns 0 without a call). */
static inline int gl_launch_slice_usual(const gl_stream *s, const gl_kernel *k, int i, const gl_slice *x) {
  const gl_alloc *a = x->a;
  int dt = k->sig.p[i].dtype;
  return a && !x->released && !a->freed && a->dev == s->dev && s->dev->opened && (dt < 0 || x->dtype == (gl_dtype)dt);
}
/* A launch's slice arguments, gathered as they are read: slices[i] the
 * slice of parameter i (NULL for scalars), and the runs of their operands
 * (queue.h; const T* parameters are reads, other pointers writes). The
 * operands themselves are made only when something needs them (a conflict's
 * message, a capture). */
typedef struct gl_launch_args {
  gl_slice *slices[GL_MAX_PARAMS];
  gl_run runs[GL_MAX_PARAMS];
  int n, nruns;  /* slice arguments so far; their runs */
  int any_range; /* policy off's runs */
  double cost_us; /* the kernel's cost for the sim's timing model (k:cost), or 0 */
} gl_launch_args;

static inline void gl_launch_args_init(gl_launch_args *a, const gl_stream *s) {
  a->n = a->nruns = 0;
  a->any_range = s->dev->rt->policy == GL_POLICY_OFF;
  a->cost_us = 0;
}
/* Parameter i of k is the slice x (checked: gl_launch_check_slice). */
static inline void gl_launch_args_slice(gl_launch_args *restrict a, const gl_kernel *k, int i, gl_slice *x) {
  a->slices[i] = x;
  gl_run_add(a->runs, &a->nruns, a->n++, &x->a->acc, x->lo, x->hi, !k->sig.p[i].is_const, a->any_range);
}
/* Queue the launch: k's parameter buffer holds the arguments, `a` its slice
 * arguments (gathered under the policy now). A built-in's element counts are
 * checked against its slices first. */
int gl_launch(gl_stream *s, gl_kernel *k, const gl_launch_cfg *c, gl_launch_args *a, gl_site *site);

#endif
