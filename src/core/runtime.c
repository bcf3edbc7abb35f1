/*
 * runtime.c -- runtimes: creation on the chosen backend, teardown in a safe
 * order, and the list of live runtimes that exit() tears down.
 */
#include "runtime.h"

#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "device.h"
#include "hostmem.h"
#include "module.h"
#include "options.h"
#include "trace.h"

void gl_ctx_forget(void); /* device.c */

/* Runtimes not yet torn down, for exit(): os.exit() without closing the Lua
 * state runs no finalizer, so an atexit handler tears them down. Process-wide
 * by nature (there is one exit); the nodes are the runtimes themselves. */
static gl_runtime *live;

static void teardown_at_exit(void) {
  for (gl_runtime *rt = live; rt; rt = rt->next_live)
    if (rt->host_kernel_depth > 0) return; /* exit inside a sim host kernel: its stream cannot drain */
  while (live) gl_runtime_teardown(live);
}

static void track(gl_runtime *rt) {
  static int registered;
  if (!registered) registered = atexit(teardown_at_exit) == 0;
  rt->next_live = live;
  live = rt;
}

static void untrack(gl_runtime *rt) {
  for (gl_runtime **pp = &live; *pp; pp = &(*pp)->next_live)
    if (*pp == rt) {
      *pp = rt->next_live;
      break;
    }
  rt->next_live = NULL;
}

gl_runtime *gl_runtime_new(gl_buf *why) {
  if (!gl_backend_name) {
    gl_buf_printf(why, "gpulua: no backend has been chosen");
    return NULL;
  }
  int policy = gl_initial_policy(why);
  if (policy < 0 || gl_timeline_check(why) != 0) return NULL;
  int n = 0;
  CUresult r = gl_drv.cuDeviceGetCount(&n);
  if (r != CUDA_SUCCESS) {
    gl_buf_printf(why, "cuDeviceGetCount failed: %s: %s", gl_error_name(r), gl_error_string(r));
    return NULL;
  }
  gl_runtime *rt = calloc(1, sizeof *rt);
  if (rt) {
    rt->devs = calloc((size_t)(n > 0 ? n : 1), sizeof *rt->devs);
    rt->peer = calloc((size_t)(n > 0 ? n * n : 1), 1);
  }
  if (!rt || !rt->devs || !rt->peer) {
    if (rt) {
      free(rt->devs);
      free(rt->peer);
    }
    free(rt);
    gl_buf_printf(why, "gpulua: out of host memory");
    return NULL;
  }
  rt->ndev = n;
  rt->policy = (gl_policy)policy;
  const char *file = gl_trace_option(), *svg = gl_timeline_svg_option();
  int text = gl_timeline_option();
  if (((file || text) && gl_trace_start(rt, "gpulua: --trace (or GPULUA_TRACE)", file, text) != 0) ||
      (svg && gl_trace_start_svg(rt, "gpulua: --timeline (or GPULUA_TIMELINE)", svg) != 0)) {
    gl_buf_printf(why, "%s", gl_error_message(rt)); /* a trace that cannot be written stops the run now */
    gl_runtime_free(rt);
    return NULL;
  }
  track(rt);
  return rt;
}

void gl_runtime_teardown(gl_runtime *rt) {
  untrack(rt);
  if (rt->dead) return;
  gl_comm_settle(rt, NULL, NULL); /* no wait below may be for a collective that cannot complete */
  gl_trace_finish(rt); /* also after an error: the trace is written */
  gl_graph_teardown(rt);
  gl_comm_teardown(rt); /* before the devices close: NCCL's communicators use their contexts */
  gl_hostmem_reap(rt, 1);
  for (int i = 0; i < rt->ndev; i++)
    if (rt->devs[i].opened) gl_device_close(&rt->devs[i]);
  gl_module_reap(rt, 1);
  for (int i = 0; i < rt->ndev; i++) {
    gl_device *d = &rt->devs[i];
    if (!d->opened) continue;
    gl_drv.cuDevicePrimaryCtxRelease(d->cu);
    d->opened = 0;
  }
  gl_ctx_forget();
  rt->dead = 1;
  free(rt->devs);
  rt->devs = NULL;
  free(rt->peer);
  rt->peer = NULL;
  free(rt->by_id);
  free(rt->gen);
  rt->by_id = NULL;
  rt->gen = NULL;
  rt->nids = rt->capids = 0;
  rt->ndev = 0;
}

void gl_runtime_free(gl_runtime *rt) {
  if (!rt) return;
  gl_runtime_teardown(rt);
  gl_locations_free(&rt->locs);
  gl_buf_free(&rt->err.msg);
  gl_buf_free(&rt->host_kernel_error);
  free(rt);
}
