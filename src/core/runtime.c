/*
 * runtime.c -- runtimes: creation on the chosen backend, teardown in a safe
 * order, and the list of live runtimes that exit() tears down.
 */
#include "runtime.h"

#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "after.h"
#include "comm.h"
#include "device.h"
#include "hostmem.h"
#include "module.h"
#include "retire.h"
#include "options.h"
#include "trace.h"

void gl_ctx_forget(void); /* device.c */

/* Runtimes not yet torn down, for exit(): os.exit() without closing the Lua
 * state runs no finalizer, so an atexit handler tears them down. Process-wide
 * by nature (there is one exit); the nodes are the runtimes themselves. */
static gl_runtime *live;

/* Runtimes torn down from inside a sim host kernel (abandon), kept as they
 * were for the rest of the process's life. */
static gl_runtime *abandoned;

_Atomic int gl_host_kernels_anywhere;
_Thread_local int gl_host_kernels_here;

void gl_host_kernel_enter(void) {
  gl_host_kernels_here++;
  atomic_fetch_add_explicit(&gl_host_kernels_anywhere, 1, memory_order_relaxed);
}

void gl_host_kernel_leave(void) {
  gl_host_kernels_here--;
  atomic_fetch_sub_explicit(&gl_host_kernels_anywhere, 1, memory_order_relaxed);
}

const gl_names gl_names_c = {
    .device = "gl_device_open",
    .alloc = "gl_slice_new",
    .builtins = "gl_builtin_kernel",
    .trace = "gl_trace_start",
    .language = "C",
    .capture = "gl_graph_begin",
    .update = "gl_graph_begin_update",
    .launch_graph = "gl_graph_launch",
    .close_graph = "gl_graph_close()",
    .fork = "gl_stream_fork",
    .join = "gl_stream_join",
    .join_hint = "gl_stream_join('%s', '%s')",
    .record_again = "gl_event_rerecord()",
    .trace_start = "gl_trace_start()",
    .wait_on = "gl_stream_wait_event('%s')",
    .join_on = "gl_stream_join('%s')",
    .read_on = "gl_read_submit('%s')",
    .read_default = "gl_read_submit()",
    .peer = "gl_peer_grant(%d, %d)",
    .set_host = "a host implementation",
    .host_alloc = "gl_hostbuf_new(pinned)",
    .map_writable = "gl_hostbuf_map(writable)",
    .timeline = "gl_trace_timeline()",
};

static void teardown_at_exit(void) {
  while (live) gl_runtime_teardown(live); /* inside a sim host kernel each one is abandoned */
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
  if (!gld_backend_name) {
    gl_buf_printf(why, "gpulua: no backend has been chosen");
    return NULL;
  }
  int policy = gl_initial_policy(why);
  if (policy < 0 || gl_timeline_check(why) != 0) return NULL;
  int n = 0;
  CUresult r = gld_drv.cuDeviceGetCount(&n);
  if (r != CUDA_SUCCESS) {
    gl_buf_printf(why, "cuDeviceGetCount failed: %s: %s", gld_error_name(r), gld_error_string(r));
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
  rt->names = gl_names_c;
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

/* The teardown inside a sim host kernel: the process exits from inside it
 * (os.exit in k:host's function). That kernel's stream, and so its device,
 * finishes only when the kernel returns, which it never does: draining a
 * device, reading the trace's times or destroying anything whose work may
 * be queued would wait forever, and even a driver query would run host
 * kernels queued behind it on this thread. So the runtime is left as it is,
 * marked dead, in a list that keeps it (and what it holds) until the
 * process's exit ends the devices' work. */
static void abandon(gl_runtime *rt) {
  rt->dead = 1;
  rt->abandoned = 1;
  rt->next_live = abandoned;
  abandoned = rt;
}

void gl_runtime_teardown(gl_runtime *rt) {
  untrack(rt);
  if (rt->dead) return;
  if (gl_in_host_kernel()) {
    abandon(rt);
    return;
  }
  gl_comm_settle(rt, NULL, NULL); /* no wait below may be for a collective that cannot complete */
  gl_trace_finish(rt); /* also after an error: the trace is written */
  gl_graph_teardown(rt);
  gl_comm_teardown(rt); /* before the devices close: NCCL's communicators use their contexts */
  gl_retire_reap(rt, 1);
  for (int i = 0; i < rt->ndev; i++)
    if (rt->devs[i].opened) gl_device_close(&rt->devs[i]);
  gl_retire_reap(rt, 1); /* what closing the devices let go */
  gl_after_teardown(rt);
  for (int i = 0; i < rt->ndev; i++) {
    gl_device *d = &rt->devs[i];
    if (!d->opened) continue;
    gld_drv.cuDevicePrimaryCtxRelease(d->cu);
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
  if (rt->abandoned) return; /* kept until the process exits */
  gl_locations_free(&rt->locs);
  gl_buf_free(&rt->err.msg);
  gl_buf_free(&rt->host_kernel_error);
  free(rt);
}
