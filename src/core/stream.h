/*
 * stream.h -- streams: creation, ordering (join, fork, waits on events),
 * synchronisation, close.
 *
 * Ownership: a stream is reference counted. Its handle (a Lua userdata)
 * holds one reference, and so does everything that must still name it after
 * it closes: access records (a later free is ordered after it), events,
 * trace records. Closing makes the device's main stream wait for the
 * stream's queued work, then destroys the driver's stream; the work is never
 * lost, and the struct lives on (closed) while references remain.
 */
#ifndef GPULUA_CORE_STREAM_H
#define GPULUA_CORE_STREAM_H

#include "device.h"
#include "driver.h"
#include "error.h"
#include "types.h"

#define GL_STREAM_NAME_MAX 63

struct gl_stream {
  int refs;
  gl_device *dev;
  CUstream cu;          /* NULL once closed */
  int is_main;
  char name[GL_STREAM_NAME_MAX + 1];
  uint64_t seq;         /* operations queued so far */
  uint64_t done_seq;    /* operations known to have finished */
  CUevent tail_ev;      /* reused to order other streams after this one */
  CUevent final_ev;     /* recorded when the stream is closed */
  uint64_t last_launch_seq; /* the last kernel launch (0: none), for fault messages: */
  int last_kernel, last_launch_loc; /* its kernel's name and script location (interned) */
  int last_kind;        /* the kind (gl_op_kind) of the last operation queued, plus 1 (0: none yet), for display */
  int closed_at;        /* where it was closed (a location) */
  gl_stream *next_open, **prev_open;
  int id;               /* runtime-wide, for vector clocks (clock.h) */
  uint64_t *clock;      /* clock[t]: position of stream t this one is ordered after */
  int nclock;
  uint64_t learned;     /* the latest position of this stream that anything has learned or
                         * may learn (a clock, an event, the host): clock.h */
  struct gl_graph *capture; /* the graph this stream is capturing into (graph.h), or NULL */
  struct gl_blas_slot *blas; /* its cuBLAS handle and workspace (blas.h), from its first gemm */
  struct gl_scratch *scratch; /* its reductions' scratch memory (scratch.h), from its first reduction */
};

/* A new stream on dev (name NULL: "streamN"). The caller holds the one
 * reference. */
int gl_stream_new(gl_device *dev, const char *name, int priority, int is_main, gl_stream **out, gl_site *site);
void gl_stream_ref(gl_stream *s);
void gl_stream_unref(gl_stream *s);
/* 0 when s is open on a device that can take work. */
int gl_stream_check_closed(gl_stream *s);
static inline int gl_stream_check(gl_stream *s) { return s->cu ? gl_device_check(s->dev) : gl_stream_check_closed(s); }
/* Close s (not the main stream): dev.main waits for its work, then the
 * driver's stream is destroyed. `loc` says where (a location); `learn`:
 * the checker counts main as ordered after s (an explicit close; never for a
 * finalizer's, so that verdicts do not depend on when the collector runs). */
int gl_stream_close(gl_stream *s, int loc, int learn);

/* `waiter`'s later work waits for all work queued on s so far (s open or
 * closed), through s's tail event. With learn, the checker counts waiter as
 * ordered after s (a join, a fork, auto's waits); without, the wait is
 * gpulua's own bookkeeping (a free's ordering) and changes no verdict.
 * During a capture a wait across its edge is refused, named as the
 * runtime's join (rt->names.join, names.h), whoever asked for it. */
int gl_stream_order_after(gl_stream *waiter, gl_stream *s, int learn, gl_site *site);
/* s:join(t), and the waits `auto` inserts (inserted = 1, for the trace). */
int gl_stream_join(gl_stream *s, gl_stream *t, int inserted, gl_site *site);
/* In these calls `call` is the call's name as the caller wrote it
 * ("s:fork", "s:sync"): the errors begin with it. */

/* s:fork{}: a new stream whose work starts after s's queued work. *out is
 * the caller's reference whenever it is set (also when the ordering failed). */
int gl_stream_fork(gl_stream *s, const char *name, int priority, gl_stream **out, const char *call, gl_site *site);
/* s:wait(e) */
int gl_stream_wait_event(gl_stream *s, gl_event *e, const char *call, gl_site *site);

int gl_stream_sync(gl_stream *s, const char *call, gl_site *site);
int gl_stream_query(gl_stream *s, int *finished, const char *call, gl_site *site);
/* Block the host until the work queued on s so far has finished (through
 * s's tail event: a copy just queued, as x:read does). */
int gl_stream_wait_host(gl_stream *s, gl_site *site);
/* The device's own stream for the spares that captures need (blas.h,
 * scratch.h), made at the first call and never given to scripts: the spares
 * are allocated there, before anything else is queued on it, and the host
 * then waits for that stream alone (gl_stream_spares_ready), so that no
 * stream needs to be ordered after their making to use them. */
int gl_stream_spares(gl_device *d, gl_site *site, gl_stream **out);
static inline int gl_stream_spares_ready(gl_stream *spares, gl_site *site) {
  return spares->done_seq == spares->seq ? 0 : gl_stream_sync(spares, "gl_stream_spares_ready", site);
}
/* The host has seen all work queued on s finish. */
void gl_stream_mark_synced(gl_stream *s);
/* For display (the REPL): "stream 'main' on device 0: idle, 12 operations
 * queued, last a launch of saxpy (at x.lua:3)". Asks the driver whether s is
 * idle (never while it captures), and changes nothing the checker knows. */
void gl_stream_describe(gl_stream *s, gl_buf *b);

#endif
