/*
 * after.h -- points on streams that the host hears of: a host function
 * queued on a stream (s:after, a task's s:await) or behind an event
 * (e:await), which, once the device reaches it, puts the point on the
 * runtime's list of reached points. The script's thread takes them from
 * there in the order the device reached them (gl_after_take), and learns
 * then what the point's stream had finished, as a sync would; or blocks
 * until the next one comes (gl_after_wait), without spinning.
 *
 * A point carries the caller's token (the Lua layer's name for what runs
 * there) and nothing else of the caller's: a point whose caller no longer
 * wants it is taken like any other and its token found unknown.
 *
 * Threads: the host function runs on the driver's thread; it touches only
 * the reached list (under its mutex) and gl_after_reached_anywhere.
 *
 * Ownership: the runtime's (rt->after, made at the first point). A point
 * holds a reference to its stream until taken; e:await's point holds one of
 * its device's watcher streams (a stream that waits for the event, then runs
 * the host function), given back to the device's pool when taken. Teardown
 * (after the devices drained) frees what is left.
 */
#ifndef GPULUA_CORE_AFTER_H
#define GPULUA_CORE_AFTER_H

#include <stdatomic.h>
#include <stdint.h>

#include "types.h"

typedef struct gl_afters gl_afters; /* a runtime's points (after.c) */

/* Points reached and not yet taken, in every runtime of the process: the
 * cheap first test of a safe point. */
extern _Atomic int gl_after_reached_anywhere;

/* A point on s after all work queued there so far, named token. During a
 * capture: refused (a host function would become a graph node). */
int gl_after_queue(gl_stream *s, uint64_t token, const char *call, gl_site *site);
/* A point reached once the work e marks has finished (e recorded). */
int gl_after_event(gl_event *e, uint64_t token, const char *call, gl_site *site);
/* The next reached point, in the order reached: 1 with its token (the host
 * now knows what its stream had finished there), or 0 when none is. */
int gl_after_take(gl_runtime *rt, uint64_t *token);
/* Points queued and not yet taken. */
int gl_after_pending(const gl_runtime *rt);
/* Let the device go on with the work before the pending points, without
 * blocking (a query of each point's stream); -1 with the error when one of
 * their devices has failed (its points are then dropped: never reached). */
int gl_after_poll(gl_runtime *rt, const char *call, gl_site *site);
/* Block until a point is reached (at once when one is, or when none is
 * pending); -1 as gl_after_poll. */
int gl_after_wait(gl_runtime *rt, const char *call, gl_site *site);
/* Device d closes: its watcher streams are destroyed (after the drain). */
void gl_after_device_close(gl_device *d);
/* The runtime's end (its devices closed): free every point. */
void gl_after_teardown(gl_runtime *rt);

#endif
