/*
 * stream.c -- streams (see stream.h).
 */
#include "stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "clock.h"
#include "comm.h"
#include "device.h"
#include "event.h"
#include "graph.h"
#include "queue.h"
#include "runtime.h"
#include "scratch.h"
#include "trace.h"
#include "driver_ext.h"

static void unlink_open(gl_stream *s) {
  if (!s->prev_open) return;
  *s->prev_open = s->next_open;
  if (s->next_open) s->next_open->prev_open = s->prev_open;
  s->prev_open = NULL;
  s->next_open = NULL;
}

void gl_stream_ref(gl_stream *s) { s->refs++; }

void gl_stream_unref(gl_stream *s) {
  if (!s || --s->refs > 0) return;
  if (s->dev->opened) {
    gl_set_ctx(s->dev);
    if (s->cu) gld_drv.cuStreamDestroy(s->cu);
    if (s->tail_ev) gld_drv.cuEventDestroy(s->tail_ev);
    if (s->final_ev) gld_drv.cuEventDestroy(s->final_ev);
  }
  unlink_open(s);
  gl_clock_stream_free(s);
  free(s);
}

int gl_stream_new(gl_device *dev, const char *name, int priority, int is_main, gl_stream **out, gl_site *site) {
  gl_runtime *rt = dev->rt;
  gl_stream *s = calloc(1, sizeof *s);
  if (!s) return gl_fail_nomem(rt, NULL);
  s->refs = 1;
  s->dev = dev;
  s->is_main = is_main;
  s->closed_at = GL_LOC_NONE;
  s->last_kernel = s->last_launch_loc = GL_LOC_NONE;
  if (name) snprintf(s->name, sizeof s->name, "%s", name);
  else snprintf(s->name, sizeof s->name, "stream%d", ++dev->stream_counter);
  gl_set_ctx(dev);
  CUresult r = gld_drv.cuStreamCreateWithPriority(&s->cu, CU_STREAM_NON_BLOCKING, priority);
  if (r == CUDA_SUCCESS) r = gld_drv.cuEventCreate(&s->tail_ev, CU_EVENT_DISABLE_TIMING);
  if (r == CUDA_SUCCESS && gl_clock_stream_new(rt, s) != 0) r = CUDA_ERROR_OUT_OF_MEMORY;
  if (r != CUDA_SUCCESS) {
    if (s->cu) gld_drv.cuStreamDestroy(s->cu);
    if (s->tail_ev) gld_drv.cuEventDestroy(s->tail_ev);
    free(s);
    return gl_fail_cu(rt, dev, r, "cuStreamCreateWithPriority", site);
  }
  s->next_open = dev->streams;
  if (dev->streams) dev->streams->prev_open = &s->next_open;
  s->prev_open = &dev->streams;
  dev->streams = s;
  *out = s;
  return 0;
}

int gl_stream_spares(gl_device *d, gl_site *site, gl_stream **out) {
  if (!d->spares && gl_stream_new(d, "spares", 0, 0, &d->spares, site) != 0) return -1;
  *out = d->spares;
  return 0;
}

int gl_stream_check_closed(gl_stream *s) {
  return gl_fail(s->dev->rt, "stream '%s' of device %d is closed (closed at %s)", s->name, s->dev->ordinal,
                 gl_loc_text(s->dev->rt, s->closed_at));
}

void gl_stream_mark_synced(gl_stream *s) { gl_clock_host_reached(s, s->seq); }

void gl_stream_describe(gl_stream *s, gl_buf *b) {
  gl_runtime *rt = s->dev->rt;
  gl_buf_printf(b, "stream '%s' on device %d", s->name, s->dev->ordinal);
  if (!s->cu) {
    gl_buf_printf(b, ", closed (at %s)", gl_loc_text(rt, s->closed_at));
    return;
  }
  if (s->capture) {
    gl_buf_printf(b, ": capturing into graph '%s'", s->capture->name); /* a query would end the capture */
  } else if (!s->dev->opened) {
    gl_buf_printf(b, ": its device is shut down");
  } else {
    gl_set_ctx(s->dev);
    int q = gld_drv_quiet(1); /* for display: moves no clock */
    CUresult r = gld_drv.cuStreamQuery(s->cu); /* the answer is not passed on: no verdict changes */
    gld_drv_quiet(q);
    uint64_t open = s->seq - s->done_seq, all = s->seq;
    if (r == CUDA_SUCCESS || open == 0)
      gl_buf_printf(b, ": idle, %llu operation%s queued", (unsigned long long)all, all == 1 ? "" : "s");
    else if (r == CUDA_ERROR_NOT_READY)
      gl_buf_printf(b, ": busy, %llu of %llu operation%s queued may be pending", (unsigned long long)open,
                    (unsigned long long)all, all == 1 ? "" : "s");
    else gl_buf_printf(b, ": %s", gld_error_name(r));
  }
  if (s->last_kind == 0) return;
  if (s->last_kind == GL_OP_LAUNCH + 1 && s->last_launch_seq == s->seq && s->last_kernel != GL_LOC_NONE) {
    gl_buf_printf(b, ", last %s of %s", gl_op_kind_text(GL_OP_LAUNCH), gl_loc_text(rt, s->last_kernel));
    if (s->last_launch_loc != GL_LOC_NONE) gl_buf_printf(b, " (at %s)", gl_loc_text(rt, s->last_launch_loc));
  } else {
    gl_buf_printf(b, ", last %s", gl_op_kind_text((gl_op_kind)(s->last_kind - 1)));
  }
}

int gl_stream_order_after(gl_stream *waiter, gl_stream *s, int learn, gl_site *site) {
  if (waiter == s) return 0;
  gl_runtime *rt = s->dev->rt;
  /* inside a capture the wait is a dependency of the graph: always made */
  int captured = rt->capture && waiter->capture == rt->capture;
  if (gl_capture_check_order(rt, waiter, s, rt->names.join, site) != 0) return -1;
  if (learn && gl_clock_join(waiter, s) != 0) return gl_fail_nomem(rt, NULL);
  if (!captured && s->done_seq >= s->seq) return 0;
  CUevent ev = s->final_ev;
  if (s->cu) {
    gl_set_ctx(s->dev);
    CUresult r = gld_drv.cuEventRecord(s->tail_ev, s->cu);
    if (r != CUDA_SUCCESS) return gl_fail_cu(rt, s->dev, r, "cuEventRecord", site);
    ev = s->tail_ev;
  }
  if (!ev) return 0;
  gl_set_ctx(waiter->dev);
  CUresult r = gld_drv.cuStreamWaitEvent(waiter->cu, ev, 0);
  if (r != CUDA_SUCCESS) return gl_fail_cu(rt, waiter->dev, r, "cuStreamWaitEvent", site);
  waiter->seq++;
  return 0;
}

int gl_stream_join(gl_stream *s, gl_stream *t, int inserted, gl_site *site) {
  gl_trace_wait(s, t, t->seq, inserted ? "auto wait" : "join");
  return gl_stream_order_after(s, t, 1, site);
}

int gl_stream_fork(gl_stream *s, const char *name, int priority, gl_stream **out, const char *call, gl_site *site) {
  gl_stream *t;
  *out = NULL;
  gl_runtime *rt = s->dev->rt;
  if (rt->capture && gl_capture_check_stream(rt, s, call, site) != 0) return -1;
  if (gl_stream_new(s->dev, name, priority, 0, &t, site) != 0) return -1;
  *out = t;
  if (rt->capture && gl_capture_add_member(rt->capture, t, call) != 0) return -1; /* a branch of the graph */
  gl_trace_wait(t, s, s->seq, "fork");
  return gl_stream_order_after(t, s, 1, site); /* on failure t is still the caller's to release */
}

int gl_stream_wait_event(gl_stream *s, gl_event *e, const char *call, gl_site *site) {
  gl_runtime *rt = s->dev->rt;
  if ((rt->capture || e->capture) && gl_capture_check_wait(rt, s, e, call, site) != 0) return -1;
  gl_set_ctx(s->dev);
  CUresult r = gld_drv.cuStreamWaitEvent(s->cu, e->ev, 0);
  if (r != CUDA_SUCCESS) return gl_fail_cu(rt, s->dev, r, "cuStreamWaitEvent", site);
  int lost = gl_clock_merge(s, e->snap, e->snap_gen, e->nsnap);
  if (rt->trace) gl_trace_wait(s, e->s, e->seq, "wait");
  s->seq++;
  return lost ? gl_fail_nomem(rt, call) : 0;
}

int gl_stream_sync(gl_stream *s, const char *call, gl_site *site) {
  if (gl_capture_refuse(s->dev->rt, call, site) != 0) return -1;
  gl_set_ctx(s->dev);
  if (gl_comm_settle(s->dev->rt, s->dev, site) != 0) return -1;
  gl_set_ctx(s->dev);
  uint64_t seq = s->seq;
  CUresult r = gld_drv.cuStreamSynchronize(s->cu);
  if (r != CUDA_SUCCESS) return gl_fail_cu(s->dev->rt, s->dev, r, "cuStreamSynchronize", site);
  gl_clock_host_reached(s, seq);
  return 0;
}

int gl_stream_query(gl_stream *s, int *finished, const char *call, gl_site *site) {
  *finished = 0;
  if (gl_capture_refuse(s->dev->rt, call, site) != 0) return -1;
  if (gl_comm_poll(s->dev->rt, s->dev, site) != 0) return -1;
  gl_set_ctx(s->dev);
  uint64_t seq = s->seq;
  CUresult r = gld_drv.cuStreamQuery(s->cu);
  *finished = 0;
  if (r == CUDA_ERROR_NOT_READY) return 0;
  if (r != CUDA_SUCCESS) return gl_fail_cu(s->dev->rt, s->dev, r, "cuStreamQuery", site);
  if (gl_comm_poll(s->dev->rt, s->dev, site) != 0) return -1; /* finished, or a collective there was aborted */
  gl_clock_host_reached(s, seq);
  *finished = 1;
  return 0;
}

int gl_stream_wait_host(gl_stream *s, gl_site *site) {
  gl_device *dev = s->dev;
  gl_set_ctx(dev);
  CUresult r = gld_drv.cuEventRecord(s->tail_ev, s->cu);
  if (r != CUDA_SUCCESS) return gl_fail_cu(dev->rt, dev, r, "cuEventRecord", site);
  if (gl_comm_settle(dev->rt, dev, site) != 0) return -1;
  gl_set_ctx(dev);
  r = gld_drv.cuEventSynchronize(s->tail_ev);
  if (r != CUDA_SUCCESS) return gl_fail_cu(dev->rt, dev, r, "cuEventSynchronize", site);
  gl_clock_host_reached(s, s->seq);
  return 0;
}

int gl_stream_close(gl_stream *s, int loc, int learn) {
  if (!s->cu || s->is_main) return 0;
  gl_device *dev = s->dev;
  gl_set_ctx(dev);
  gl_blas_stream_close(s); /* its workspace freed in its order, its cuBLAS handle kept for the next stream */
  gl_scratch_stream_close(s); /* its reductions' scratch, freed in its order */
  CUresult r = gld_drv.cuEventCreate(&s->final_ev, CU_EVENT_DISABLE_TIMING);
  const char *call = "cuEventCreate";
  if (r == CUDA_SUCCESS) r = gld_drv.cuEventRecord(s->final_ev, s->cu), call = "cuEventRecord";
  if (r == CUDA_SUCCESS && dev->main && dev->main->cu) {
    r = gld_drv.cuStreamWaitEvent(dev->main->cu, s->final_ev, 0);
    call = "cuStreamWaitEvent";
    if (r == CUDA_SUCCESS) {
      if (learn) gl_clock_join(dev->main, s); /* out of memory here only loses knowledge */
      gl_trace_wait(dev->main, s, s->seq, "close");
      dev->main->seq++;
    }
  }
  gld_drv.cuStreamDestroy(s->cu); /* queued work still completes */
  s->cu = NULL;
  s->closed_at = loc;
  unlink_open(s);
  return r == CUDA_SUCCESS ? 0 : gl_fail_cu(dev->rt, dev, r, call, NULL);
}
