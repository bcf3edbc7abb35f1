/*
 * event.h -- events: recorded on a stream, waited for by other streams and
 * by the host, timed; and each device's pool of driver events (creating a
 * driver event costs more than recording one).
 *
 * An event's memory belongs to its caller (a Lua userdata); it holds a
 * reference to the stream it was recorded on, and a snapshot of that
 * stream's vector clock, so that whoever waits for it learns what the
 * stream was ordered after.
 */
#ifndef GPULUA_CORE_EVENT_H
#define GPULUA_CORE_EVENT_H

#include "driver.h"
#include "types.h"

#define GL_EVENT_SNAP_INLINE 16 /* stream ids an event's snapshot holds without allocating */

struct gl_event {
  CUevent ev;           /* NULL once released */
  gl_stream *s;         /* where it was recorded (a reference) */
  uint64_t seq;         /* s's position it marks */
  int timing;
  uint64_t *snap;       /* s's vector clock at the record, s's own position included (NULL:
                         * out of memory; the event then speaks only for s) */
  uint32_t *snap_gen;   /* the generation of each id then: a reused id is not the same stream */
  int nsnap;
  unsigned capture;     /* recorded inside a capture (its id, graph.h): it marks no work that runs */
  int cap;              /* entries of the heap arrays (0: snap is the inline one) */
  uint64_t inline_snap[GL_EVENT_SNAP_INLINE];
  uint32_t inline_gen[GL_EVENT_SNAP_INLINE];
};

/* In these calls `call` is the call's name as the caller wrote it
 * ("e:sync"; for a timing record, "s:record{timing = true}"): the errors
 * begin with it. */

/* Record a new event (e zeroed) after all work queued on s so far. On
 * failure e holds nothing to release. */
int gl_event_record(gl_event *e, gl_stream *s, int timing, const char *call, gl_site *site);
/* Record e again, now on s (of any device), after all work queued there so
 * far, as cuEventRecord does with an existing event: its timing stays, and
 * it allocates nothing (the driver event is kept; on another device one is
 * taken from that device's pool). On failure e is as it was. */
int gl_event_rerecord(gl_event *e, gl_stream *s, const char *call, gl_site *site);
/* 0 when e can be used (recorded, its device healthy). */
int gl_event_check(gl_event *e);
int gl_event_sync(gl_event *e, const char *call, gl_site *site);
int gl_event_query(gl_event *e, int *reached, const char *call, gl_site *site);
/* 1 when the work e marks has finished, else 0 (also for an error, which
 * the device's next call reports), without telling the checker: what the
 * host learns here changes no verdict (a progress display; pipeline.lua). */
int gl_event_peek(const gl_event *e);
/* Milliseconds from a to b (both recorded with timing); waits for both. */
int gl_event_elapsed(gl_event *a, gl_event *b, float *ms, const char *call, gl_site *site);
/* Give the driver event back to its device's pool, drop the stream. */
void gl_event_release(gl_event *e);

/* The device's pool, [timing]: take an event (created when the pool is
 * empty), give it back when done. */
CUresult gl_event_take(gl_device *d, int timing, CUevent *ev);
void gl_event_give(gl_device *d, CUevent ev, int timing);
void gl_event_pool_clear(gl_device *d);

#endif
