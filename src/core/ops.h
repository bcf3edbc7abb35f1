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

/* A launch's configuration. */
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
/* Queue the launch: k's parameter buffer holds the arguments, slices[i] the
 * slice of each pointer parameter (NULL for scalars). A built-in's element
 * counts are checked against its slices first. */
int gl_launch(gl_stream *s, gl_kernel *k, const gl_launch_cfg *c, gl_slice *const *slices, gl_site *site);

#endif
