/*
 * checker.h -- ordering and ownership: vector clocks per stream and access
 * records per piece of memory (a device allocation or a host buffer's memory).
 *
 * Every stream has a runtime-wide id and a vector clock: clock[t] is the
 * position (sequence number of queued operations) of stream t that the
 * stream's later work is known to be ordered after, through wait, join, fork
 * or close. The host's knowledge is each stream's done_seq (raised by syncs,
 * queries and, through the clocks, by what a synced stream was ordered
 * after). An access on stream S conflicts with an earlier access on T != S
 * when their byte ranges overlap, at least one writes, and S is not ordered
 * after it: neither S's clock nor T's done_seq covers its position.
 */
#ifndef GPULUA_CHECKER_H
#define GPULUA_CHECKER_H

#include <stdint.h>

#include "core.h"

/* What a conflict is about, for the message. */
/* What an access is, for a message (formatted only when there is one). */
typedef struct {
  gl_slice *x;           /* the slice accessed, or NULL */
  gl_hostbuf *h;         /* else the host buffer */
  const char *op;        /* "s:copy dst", "s:fill", ...; NULL for a launch */
  const char *kernel;    /* a launch: the kernel's name */
  int arg;               /* ... and the argument's position */
} gl_access_desc;

/* Register a new stream (id, empty clock); forget it when it is freed. */
void gl_checker_stream_new(gl_runtime *rt, gl_stream *s);
void gl_checker_stream_free(gl_stream *s);

/* s's later work is ordered after everything queued on t so far (join,
 * fork, close, and the waits `auto` inserts). */
void gl_clock_join(gl_stream *s, gl_stream *t);
/* ... after an event: its clock snapshot (see gl_clock_snapshot). gens
 * (may be NULL for a stream's own live clock) holds each id's generation. */
void gl_clock_merge(gl_stream *s, const uint64_t *clock, const uint32_t *gens, int n);
/* A copy of s's clock with s's own position, and the ids' generations: the
 * state an event records. */
uint64_t *gl_clock_snapshot(gl_stream *s, uint32_t **gens, int *n);
/* The host has seen s complete up to seq (and so all it was ordered after). */
void gl_clock_host_reached(gl_stream *s, uint64_t seq);
/* ... an event: everything in its snapshot. */
void gl_clock_host_reached_snapshot(gl_runtime *rt, const uint64_t *clock, const uint32_t *gens, int n);

/* Is an access of stream t at position seq ordered before s's next work? */
int gl_ordered_before(gl_stream *s, gl_stream *t, uint64_t seq);

/* Check an access of [lo, hi) by stream s (write or read) against the
 * records, under the runtime's policy: strict raises an error naming both
 * streams and both locations; auto makes s wait for the conflicting stream;
 * off checks nothing. Call for every operand before queueing. */
void gl_access_check(lua_State *L, gl_accesses *acc, gl_stream *s, uint64_t lo, uint64_t hi, int write,
                     const gl_access_desc *d);
/* Record the access once queued (at s->seq). `loc` from gl_loc_here. */
void gl_access_record(gl_runtime *rt, gl_accesses *acc, gl_stream *s, uint64_t lo, uint64_t hi, int write, int loc);
/* Lua on the host reads or writes the memory: it conflicts with any device
 * write (or, for a host write, any device access) the host has not seen
 * complete. */
void gl_access_check_host(lua_State *L, gl_accesses *acc, uint64_t lo, uint64_t hi, int write, const char *what);
/* Order `waiter` after every recorded access (for a free); 0 or a CUresult. */
CUresult gl_access_order_all(gl_accesses *acc, gl_stream *waiter);
/* Block the host until every recorded access has finished. With learn, the
 * host's knowledge of those streams is raised (an explicit wait); without, it
 * stays as it was (a finalizer: when garbage collection runs must not change
 * what the checker allows). */
void gl_access_wait_all(gl_accesses *acc, int learn);
/* Have all recorded accesses finished? Asks the driver without blocking and
 * without raising the host's knowledge (so the checker's verdicts never
 * depend on when this is asked). */
int gl_access_finished(gl_accesses *acc);
void gl_access_clear(gl_accesses *acc);

/* The calling Lua code's location, interned ("file:line"). */
int gl_loc_here(lua_State *L);
const char *gl_loc_text(int loc);

/* Intern any text (a kernel name) among the locations; gl_loc_text gives it back. */
int gl_intern(const char *text);

#endif
