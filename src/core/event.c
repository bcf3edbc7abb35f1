/*
 * event.c -- events and the per-device event pool (see event.h).
 */
#include "event.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "comm.h"
#include "device.h"
#include "graph.h"
#include "runtime.h"
#include "stream.h"
#include "driver_ext.h"

CUresult gl_event_take(gl_device *d, int timing, CUevent *ev) {
  if (d->npool[timing]) {
    *ev = d->event_pool[timing][--d->npool[timing]];
    return CUDA_SUCCESS;
  }
  gl_set_ctx(d);
  return gld_drv.cuEventCreate(ev, timing ? 0 : CU_EVENT_DISABLE_TIMING);
}

void gl_event_give(gl_device *d, CUevent ev, int timing) {
  if (d->npool[timing] == d->cappool[timing]) {
    int cap = d->cappool[timing] ? 2 * d->cappool[timing] : 32;
    CUevent *p = cap <= 4096 ? realloc(d->event_pool[timing], (size_t)cap * sizeof *p) : NULL;
    if (!p) {
      gl_set_ctx(d);
      gld_drv.cuEventDestroy(ev);
      return;
    }
    d->event_pool[timing] = p;
    d->cappool[timing] = cap;
  }
  d->event_pool[timing][d->npool[timing]++] = ev;
}

void gl_event_pool_clear(gl_device *d) {
  gl_set_ctx(d);
  for (int t = 0; t < 2; t++) {
    for (int i = 0; i < d->npool[t]; i++) gld_drv.cuEventDestroy(d->event_pool[t][i]);
    free(d->event_pool[t]);
    d->event_pool[t] = NULL;
    d->npool[t] = d->cappool[t] = 0;
  }
}

/* The snapshot of s into e's storage: inline for the usual few streams, else
 * e's heap arrays (grown when needed; out of memory leaves no snapshot). */
static void take_snapshot(gl_event *e, gl_stream *s) {
  int len = gl_clock_snapshot_len(s);
  if (e->cap >= len) { /* the heap arrays of an earlier record */
  } else if (len <= GL_EVENT_SNAP_INLINE) {
    e->snap = e->inline_snap;
    e->snap_gen = e->inline_gen;
  } else {
    uint64_t *c = malloc((size_t)len * sizeof *c);
    uint32_t *g = malloc((size_t)len * sizeof *g);
    if (e->cap) {
      free(e->snap);
      free(e->snap_gen);
      e->cap = 0;
    }
    if (!c || !g) {
      free(c);
      free(g);
      e->snap = NULL;
      e->snap_gen = NULL;
      e->nsnap = 0;
      gl_clock_learn(s, s->seq); /* what the snapshot would have done */
      return;
    }
    e->snap = c;
    e->snap_gen = g;
    e->cap = len;
  }
  gl_clock_snapshot(s, e->snap, e->snap_gen, len);
  e->nsnap = len;
}

int gl_event_record(gl_event *e, gl_stream *s, int timing, const char *call, gl_site *site) {
  gl_device *d = s->dev;
  unsigned capture = 0;
  if (d->rt->capture && gl_capture_check_record(d->rt, s, timing, &capture, call, site) != 0) return -1;
  CUevent ev;
  CUresult r = gl_event_take(d, timing != 0, &ev);
  if (r != CUDA_SUCCESS) return gl_fail_cu(d->rt, d, r, "cuEventCreate", site);
  gl_set_ctx(d);
  r = gld_drv.cuEventRecord(ev, s->cu);
  if (r != CUDA_SUCCESS) {
    gl_event_give(d, ev, timing != 0);
    return gl_fail_cu(d->rt, d, r, "cuEventRecord", site);
  }
  e->ev = ev;
  e->s = s;
  gl_stream_ref(s);
  e->seq = s->seq;
  e->timing = timing;
  e->capture = capture;
  take_snapshot(e, s);
  return 0;
}

int gl_event_rerecord(gl_event *e, gl_stream *s, const char *call, gl_site *site) {
  gl_device *d = s->dev;
  unsigned capture = 0;
  if (d->rt->capture && gl_capture_check_record(d->rt, s, e->timing, &capture, call, site) != 0) return -1;
  CUevent ev = e->ev;
  if (e->s->dev != d) { /* a driver event belongs to its context: one of d's */
    CUresult r = gl_event_take(d, e->timing != 0, &ev);
    if (r != CUDA_SUCCESS) return gl_fail_cu(d->rt, d, r, "cuEventCreate", site);
  }
  gl_set_ctx(d);
  CUresult r = gld_drv.cuEventRecord(ev, s->cu);
  if (r != CUDA_SUCCESS) {
    if (ev != e->ev) gl_event_give(d, ev, e->timing != 0);
    return gl_fail_cu(d->rt, d, r, "cuEventRecord", site);
  }
  if (ev != e->ev) {
    if (e->s->dev->opened) gl_event_give(e->s->dev, e->ev, e->timing != 0);
    e->ev = ev;
  }
  if (e->s != s) {
    gl_stream_ref(s);
    gl_stream_unref(e->s);
    e->s = s;
  }
  e->seq = s->seq;
  e->capture = capture;
  take_snapshot(e, s);
  return 0;
}

int gl_event_check(gl_event *e) {
  if (!e->ev || !e->s) return -2; /* released: the caller says so in its own words */
  return gl_device_check(e->s->dev);
}

static void reached(gl_event *e) {
  if (e->snap) gl_clock_host_reached_snapshot(e->s->dev->rt, e->snap, e->snap_gen, e->nsnap);
  else if (e->s->done_seq < e->seq) e->s->done_seq = e->seq;
}

int gl_event_sync(gl_event *e, const char *call, gl_site *site) {
  gl_device *d = e->s->dev;
  if (gl_capture_check_event(d->rt, e, call, site) != 0) return -1;
  if (gl_comm_settle(d->rt, d, site) != 0) return -1;
  CUresult r = gld_drv.cuEventSynchronize(e->ev);
  if (r != CUDA_SUCCESS) return gl_fail_cu(d->rt, d, r, "cuEventSynchronize", site);
  reached(e);
  return 0;
}

int gl_event_query(gl_event *e, int *done, const char *call, gl_site *site) {
  gl_device *d = e->s->dev;
  *done = 0;
  if (gl_capture_check_event(d->rt, e, call, site) != 0) return -1;
  if (gl_comm_poll(d->rt, d, site) != 0) return -1;
  CUresult r = gld_drv.cuEventQuery(e->ev);
  *done = 0;
  if (r == CUDA_ERROR_NOT_READY) return 0;
  if (r != CUDA_SUCCESS) return gl_fail_cu(d->rt, d, r, "cuEventQuery", site);
  if (gl_comm_poll(d->rt, d, site) != 0) return -1; /* reached, or a collective before it was aborted */
  reached(e);
  *done = 1;
  return 0;
}

int gl_event_peek(const gl_event *e) {
  if (!e->ev || !e->s || e->capture) return 0;
  int q = gld_drv_quiet(1); /* for display: moves no clock */
  int done = gld_drv.cuEventQuery(e->ev) == CUDA_SUCCESS;
  gld_drv_quiet(q);
  return done;
}

int gl_event_elapsed(gl_event *a, gl_event *b, float *ms, const char *call, gl_site *site) {
  gl_runtime *rt = a->s->dev->rt;
  if (gl_capture_check_event(rt, a, call, site) != 0 || gl_capture_check_event(rt, b, call, site) != 0) return -1;
  if (!a->timing || !b->timing)
    return gl_fail(rt, "%s: both events must be recorded with timing = true (%s was not)", call,
                   !a->timing ? "the first" : "the second");
  if (a->s->dev != b->s->dev) /* CUDA times events of one context only: refused on both backends */
    return gl_fail(rt, "%s: the events are on two devices (the first on device %d, the second on "
                       "device %d): CUDA times only events of one device",
                   call, a->s->dev->ordinal, b->s->dev->ordinal);
  if (gl_event_sync(a, call, site) != 0 || gl_event_sync(b, call, site) != 0) return -1;
  *ms = 0;
  CUresult r = gld_drv.cuEventElapsedTime(ms, a->ev, b->ev);
  if (r != CUDA_SUCCESS) return gl_fail_cu(rt, a->s->dev, r, "cuEventElapsedTime", site);
  return 0;
}

void gl_event_release(gl_event *e) {
  if (e->ev && e->s && e->s->dev->opened) gl_event_give(e->s->dev, e->ev, e->timing != 0);
  e->ev = NULL;
  if (e->s) gl_stream_unref(e->s);
  e->s = NULL;
  if (e->cap) {
    free(e->snap);
    free(e->snap_gen);
  }
  e->snap = NULL;
  e->snap_gen = NULL;
  e->nsnap = e->cap = 0;
}
