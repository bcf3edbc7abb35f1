/*
 * after.c -- points on streams that the host hears of (after.h).
 *
 * Each point is a host function (cuLaunchHostFunc) that appends the point
 * to its runtime's reached list; the list's order is the order in which the
 * device reached the points. The script's thread takes from its head. It
 * keeps the points not yet reached on a list of its own (pending), so that it
 * can let the device progress (a query of each point's stream) and notice a
 * device that failed: a failed device runs no host function again, so its
 * points would never come, and a wait for them ends with the device's error
 * instead.
 *
 * Waiting: the backend's host_wait where it has one (the sim, whose workers
 * and host kernels need the waiting thread's help), else the reached list's
 * condition, signalled by the host function. Either wait ends every
 * WAIT_CHECK_MS to look for a failed device; a point reached wakes it at once.
 */
#include "after.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "comm.h"
#include "device.h"
#include "driver_ext.h"
#include "error.h"
#include "event.h"
#include "graph.h"
#include "runtime.h"
#include "stream.h"

enum { WAIT_CHECK_MS = 50 };

_Atomic int gl_after_reached_anywhere;

typedef struct point point;
struct point {
  point *next, **prev; /* on the pending list: the script's thread alone */
  point *next_reached; /* on the reached list: under its mutex */
  int dead;            /* its device failed: it will not come (kept: a host function may still hold it) */
  struct gl_afters *owner;
  gl_stream *s;        /* a reference: the stream the point is on, or the event's */
  uint64_t seq;        /* s's position it marks */
  uint64_t token;
  uint64_t *snap;      /* s's clock then (NULL: out of memory: only s's own position is learned) */
  uint32_t *gen;
  int nsnap;
  CUstream watcher;    /* e:await's: the watcher stream it runs on (NULL: on s itself) */
};

struct gl_afters {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  point *reached, **reached_tail; /* guarded by mu */
  _Atomic int nreached;           /* its length: written under mu, read anywhere */
  point *pending;                 /* queued and not taken (dead ones too): the script's thread alone */
  int npending;                   /* ... of them alive */
  unsigned char *seen;            /* a poll's devices, [rt->ndev] */
};

static gl_afters *afters(gl_runtime *rt) {
  if (rt->after) return rt->after;
  gl_afters *a = calloc(1, sizeof *a);
  unsigned char *seen = calloc((size_t)rt->ndev + 1, 1);
  if (!a || !seen) {
    free(a);
    free(seen);
    return NULL;
  }
  a->seen = seen;
  pthread_mutex_init(&a->mu, NULL);
  pthread_cond_init(&a->cv, NULL);
  a->reached_tail = &a->reached;
  rt->after = a;
  return a;
}

/* On the driver's thread. */
static void reached(void *user) {
  point *p = user;
  gl_afters *a = p->owner;
  pthread_mutex_lock(&a->mu);
  p->next_reached = NULL;
  *a->reached_tail = p;
  a->reached_tail = &p->next_reached;
  a->nreached++;
  atomic_fetch_add(&gl_after_reached_anywhere, 1);
  pthread_cond_signal(&a->cv);
  pthread_mutex_unlock(&a->mu);
}

static void point_free(point *p) {
  gl_stream_unref(p->s);
  free(p->snap);
  free(p->gen);
  free(p);
}

/* Room for a snapshot of len ids in p: 1, or 0 when out of memory (p then
 * holds none, and taking it learns only its stream's own position). */
static int snap_room(point *p, int len) {
  p->snap = malloc((size_t)len * sizeof *p->snap);
  p->gen = malloc((size_t)len * sizeof *p->gen);
  if (p->snap && p->gen) {
    p->nsnap = len;
    return 1;
  }
  free(p->snap);
  free(p->gen);
  p->snap = NULL;
  p->gen = NULL;
  return 0;
}

/* A new point at s's position seq, or NULL. */
static point *point_new(gl_afters *a, gl_stream *s, uint64_t seq, uint64_t token) {
  point *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->owner = a;
  p->s = s;
  gl_stream_ref(s);
  p->seq = seq;
  p->token = token;
  return p;
}

static void pend(gl_afters *a, point *p) {
  p->next = a->pending;
  if (p->next) p->next->prev = &p->next;
  p->prev = &a->pending;
  a->pending = p;
  a->npending++;
}

static void unpend(point *p) {
  *p->prev = p->next;
  if (p->next) p->next->prev = p->prev;
}

int gl_after_queue(gl_stream *s, uint64_t token, const char *call, gl_site *site) {
  gl_runtime *rt = s->dev->rt;
  if (gl_capture_refuse(rt, call, site) != 0) return -1;
  gl_afters *a = afters(rt);
  point *p = a ? point_new(a, s, s->seq, token) : NULL;
  if (!p) return gl_fail_nomem(rt, call);
  int len = gl_clock_snapshot_len(s);
  if (snap_room(p, len)) gl_clock_snapshot(s, p->snap, p->gen, len); /* s's clock now */
  else gl_clock_learn(s, s->seq); /* what the snapshot would have done */
  gl_set_ctx(s->dev);
  CUresult r = gld_drv.cuLaunchHostFunc(s->cu, reached, p);
  if (r != CUDA_SUCCESS) {
    point_free(p);
    return gl_fail_cu(rt, s->dev, r, "cuLaunchHostFunc", site);
  }
  pend(a, p);
  return 0;
}

/* An idle watcher stream of d (made when there is none). */
static CUresult watcher_take(gl_device *d, CUstream *out) {
  if (d->nwatchers) {
    *out = d->watchers[--d->nwatchers];
    return CUDA_SUCCESS;
  }
  gl_set_ctx(d);
  return gld_drv.cuStreamCreateWithPriority(out, CU_STREAM_NON_BLOCKING, 0);
}

static void watcher_give(gl_device *d, CUstream w) {
  if (!d->opened) return; /* destroyed with its context */
  if (d->nwatchers == d->capwatchers) {
    int cap = d->capwatchers ? 2 * d->capwatchers : 4;
    CUstream *n = realloc(d->watchers, (size_t)cap * sizeof *n);
    if (!n) {
      gl_set_ctx(d);
      gld_drv.cuStreamDestroy(w);
      return;
    }
    d->watchers = n;
    d->capwatchers = cap;
  }
  d->watchers[d->nwatchers++] = w;
}

int gl_after_event(gl_event *e, uint64_t token, const char *call, gl_site *site) {
  gl_stream *s = e->s;
  gl_device *d = s->dev;
  gl_runtime *rt = d->rt;
  if (gl_capture_check_event(rt, e, call, site) != 0) return -1; /* as e:sync: not in a capture, nor of one */
  gl_afters *a = afters(rt);
  point *p = a ? point_new(a, s, e->seq, token) : NULL;
  if (!p) return gl_fail_nomem(rt, call);
  if (e->snap && snap_room(p, e->nsnap)) { /* the event's snapshot, which taking the point learns */
    memcpy(p->snap, e->snap, (size_t)e->nsnap * sizeof *p->snap);
    memcpy(p->gen, e->snap_gen, (size_t)e->nsnap * sizeof *p->gen);
  }
  CUresult r = watcher_take(d, &p->watcher);
  const char *what = "cuStreamCreateWithPriority";
  if (r == CUDA_SUCCESS) {
    gl_set_ctx(d);
    r = gld_drv.cuStreamWaitEvent(p->watcher, e->ev, 0);
    what = "cuStreamWaitEvent";
    if (r == CUDA_SUCCESS) {
      r = gld_drv.cuLaunchHostFunc(p->watcher, reached, p);
      what = "cuLaunchHostFunc";
    }
    if (r != CUDA_SUCCESS) gld_drv.cuStreamDestroy(p->watcher); /* it may be left waiting */
  }
  if (r != CUDA_SUCCESS) {
    point_free(p);
    return gl_fail_cu(rt, d, r, what, site);
  }
  pend(a, p);
  return 0;
}

int gl_after_pending(const gl_runtime *rt) { return rt->after ? rt->after->npending : 0; }

int gl_after_take(gl_runtime *rt, uint64_t *token) {
  gl_afters *a = rt->after;
  if (!a || !atomic_load(&a->nreached)) return 0;
  pthread_mutex_lock(&a->mu);
  point *p = a->reached;
  if (p) {
    a->reached = p->next_reached;
    if (!a->reached) a->reached_tail = &a->reached;
    a->nreached--;
    atomic_fetch_sub(&gl_after_reached_anywhere, 1);
  }
  pthread_mutex_unlock(&a->mu);
  if (!p) return 0;
  unpend(p);
  if (!p->dead) a->npending--;
  if (p->snap) gl_clock_host_reached_snapshot(rt, p->snap, p->gen, p->nsnap);
  else if (p->s->done_seq < p->seq) p->s->done_seq = p->seq;
  if (p->watcher) watcher_give(p->s->dev, p->watcher);
  *token = p->token;
  point_free(p);
  return 1;
}

/* Its device failed: the point will never come. It stays on the pending
 * list (a host function that ran just before the failure may still be on
 * its way to the reached list) until taken or torn down. */
static void bury(gl_afters *a, gl_device *d) {
  for (point *p = a->pending; p; p = p->next)
    if (!p->dead && p->s->dev == d) {
      p->dead = 1;
      a->npending--;
    }
}

/* One query per device of the live pending points: it lets the device go on
 * (the sim's workers) and says whether the device failed. */
static int poll(gl_runtime *rt, gl_afters *a, int quiet, gl_site *site) {
  memset(a->seen, 0, (size_t)rt->ndev);
  int rc = 0;
  for (point *p = a->pending; p; p = p->next) {
    gl_device *d = p->s->dev;
    if (p->dead || a->seen[d->ordinal]) continue;
    a->seen[d->ordinal] = 1;
    CUstream q = p->watcher ? p->watcher : p->s->cu ? p->s->cu : d->main ? d->main->cu : NULL;
    /* a collective whose other rank faulted never finishes here: settled
     * (aborted, d poisoned) as a sync would */
    int failed = gl_device_check(d) != 0 || gl_comm_poll(rt, d, site) != 0;
    if (!failed && q) {
      gl_set_ctx(d);
      int was = gld_drv_quiet(quiet);
      CUresult r = gld_drv.cuStreamQuery(q);
      gld_drv_quiet(was);
      if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY) failed = gl_fail_cu(rt, d, r, "cuStreamQuery", site) != 0;
    }
    if (failed) {
      bury(a, d); /* marks only: the list's links stay */
      rc = -1;
    }
  }
  return rc;
}

int gl_after_poll(gl_runtime *rt, const char *call, gl_site *site) {
  (void)call;
  gl_afters *a = rt->after;
  return a && a->npending ? poll(rt, a, 0, site) : 0;
}

static int any_reached(void *user) { return atomic_load(&((gl_afters *)user)->nreached) > 0; }

int gl_after_wait(gl_runtime *rt, const char *call, gl_site *site) {
  (void)call;
  gl_afters *a = rt->after;
  if (!a) return 0;
  while (!any_reached(a) && a->npending) {
    if (poll(rt, a, 1, site) != 0) return -1;
    if (gld_drv_ext.host_wait) {
      gld_drv_ext.host_wait(any_reached, a, WAIT_CHECK_MS);
      continue;
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += WAIT_CHECK_MS * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    pthread_mutex_lock(&a->mu);
    while (!a->reached && pthread_cond_timedwait(&a->cv, &a->mu, &until) != ETIMEDOUT) {
    }
    pthread_mutex_unlock(&a->mu);
  }
  return 0;
}

void gl_after_device_close(gl_device *d) {
  gl_set_ctx(d);
  for (int i = 0; i < d->nwatchers; i++) gld_drv.cuStreamDestroy(d->watchers[i]);
  free(d->watchers);
  d->watchers = NULL;
  d->nwatchers = d->capwatchers = 0;
}

void gl_after_teardown(gl_runtime *rt) {
  gl_afters *a = rt->after;
  if (!a) return;
  rt->after = NULL;
  /* the devices drained: no host function runs any more */
  int n = atomic_load(&a->nreached);
  atomic_fetch_sub(&gl_after_reached_anywhere, n);
  while (a->pending) {
    point *p = a->pending;
    a->pending = p->next;
    if (p->watcher && p->s->dev->opened) { /* never reached: its device failed */
      gl_set_ctx(p->s->dev);
      gld_drv.cuStreamDestroy(p->watcher);
    }
    point_free(p); /* reached ones too: every point is on pending until taken */
  }
  pthread_mutex_destroy(&a->mu);
  pthread_cond_destroy(&a->cv);
  free(a->seen);
  free(a);
}
