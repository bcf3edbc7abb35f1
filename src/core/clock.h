/*
 * clock.h -- vector clocks: what each stream's later work is known to be
 * ordered after, and what the host knows has finished.
 *
 * Every stream has a runtime-wide id and a vector clock: clock[t] is the
 * position (sequence number of queued operations) of stream t that the
 * stream's later work is ordered after, through wait, join, fork or close.
 * The host's knowledge is each stream's done_seq (raised by syncs, queries
 * and, through the clocks, by what a synced stream was ordered after).
 * Stream ids are reused; each id has a generation, bumped when its stream is
 * freed, so that an event's snapshot never speaks for a newer stream.
 */
#ifndef GPULUA_CORE_CLOCK_H
#define GPULUA_CORE_CLOCK_H

#include <stdint.h>

#include "types.h"

/* Give a new stream an id and an empty clock; 0 or -1 (out of memory). */
int gl_clock_stream_new(gl_runtime *rt, gl_stream *s);
/* Forget a freed stream (its id is free again). */
void gl_clock_stream_free(gl_stream *s);

/* s's later work is ordered after nothing (its clock emptied): a stream
 * forked inside a capture, once the capture ends (graph.c). */
void gl_clock_reset(gl_stream *s);
/* s's later work is ordered after everything queued on t so far. -1 when
 * out of memory: the knowledge is then lost (never gained). */
int gl_clock_join(gl_stream *s, gl_stream *t);
/* ... after an event: its snapshot (gens: each id's generation then; NULL
 * for a stream's own live clock). */
int gl_clock_merge(gl_stream *s, const uint64_t *clock, const uint32_t *gens, int n);
/* The length of s's snapshot: what an event records of s's clock. */
int gl_clock_snapshot_len(const gl_stream *s);
/* Write it (len entries: s's clock with s's own position, and the ids'
 * generations) into clock and gens. */
void gl_clock_snapshot(gl_stream *s, uint64_t *clock, uint32_t *gens, int len);
/* The host has seen s complete up to seq (and so all it was ordered after). */
void gl_clock_host_reached(gl_stream *s, uint64_t seq);
/* ... an event: everything in its snapshot. */
void gl_clock_host_reached_snapshot(gl_runtime *rt, const uint64_t *clock, const uint32_t *gens, int n);

/* Something (a clock, an event, the host) has learned t's position seq. The
 * positions learned later are copies of those or t's position then, so two
 * accesses of t both past t->learned can never be told apart by anyone:
 * the checker keeps them as one (checker.c). */
void gl_clock_learn(gl_stream *t, uint64_t seq);

/* Is an access of stream t at position seq ordered before s's next work? */
int gl_ordered_before(const gl_stream *s, const gl_stream *t, uint64_t seq);

#endif
