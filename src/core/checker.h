/*
 * checker.h -- access records: for each piece of memory (a device allocation
 * or a host buffer's memory), each stream's last read and last write of each
 * byte range, with where they were queued. The checker answers whether a
 * new access conflicts with a recorded one; what to do about it (an error
 * under strict, a wait under auto) is the caller's (queue.c, hostmem.c).
 *
 * An access on stream S conflicts with an earlier access on T != S when
 * their byte ranges overlap, at least one writes, and S is not ordered after
 * it: neither S's clock nor T's done_seq covers its position (clock.h).
 *
 * Costs: a check or a record costs O(lanes + log r + the spans it overlaps)
 * for r spans per lane; a lane the checking stream is ordered after as a
 * whole is passed over in O(1). Spans are forgotten when the host has seen
 * them finish (a lane at once; single spans by a sweep each time a lane
 * doubles) and when a later write ordered after them covers them. Nothing
 * else may forget them: a stream made later with dev:stream() is ordered
 * after nothing, so an unfinished access can still conflict with it.
 * Under policy off only each stream's latest position is kept (what frees
 * and host waits read), as a "blind" access of the whole memory.
 */
#ifndef GPULUA_CORE_CHECKER_H
#define GPULUA_CORE_CHECKER_H

#include <stdint.h>

#include "driver.h"
#include "types.h"

/* One stream's last write and last read of the bytes [lo, hi) of the
 * memory, with where they were queued. */
typedef struct gl_span {
  uint64_t lo, hi;
  uint64_t wseq, rseq;   /* positions of the last write / read (0: none) */
  int wloc, rloc;        /* where they were queued (locations) */
} gl_span;

/* One stream's records on one piece of memory: disjoint spans sorted by
 * byte range, so that a check finds the overlapping ones by binary search. */
typedef struct gl_lane {
  gl_stream *s;          /* a reference */
  uint64_t wmax, rmax;   /* the latest write / read position of any span: when the checking
                          * stream is ordered after these, no span of the lane can conflict */
  uint64_t blind;        /* the latest access recorded without a range (policy off, or out of
                          * memory): it counts as a write of the whole memory */
  int blind_loc;
  gl_span *v;
  int n, cap;
  int swept;             /* n after the last sweep of finished spans */
  int last;              /* the span the last record updated (a cache) */
  int finger;            /* where the last search ended (where the next one starts) */
} gl_lane;

struct gl_accesses {
  gl_lane *lanes;        /* one per stream with records here (few) */
  int n, cap;
};

/* What a conflict is: the other stream and its access. */
typedef struct gl_conflict {
  gl_stream *other;
  int other_writes;      /* it may still be writing (else reading) */
  int other_loc;         /* where that access was queued */
} gl_conflict;

/* Does an access of [lo, hi) by s conflict with a record? 1 and *c, or 0. */
int gl_access_conflict(gl_accesses *acc, const gl_stream *s, uint64_t lo, uint64_t hi, int write,
                       gl_conflict *c);
/* An access of [lo, hi) by s under the policy: under auto s waits for every
 * stream it conflicts with (and the records are looked at again); 0 when
 * nothing conflicts (any more), 1 and *c for a conflict under strict (the
 * caller's error names it), -1 when a wait failed. Policy off: 0. */
int gl_access_admit(gl_accesses *acc, gl_stream *s, uint64_t lo, uint64_t hi, int write, gl_conflict *c,
                    gl_site *site);
/* ... by Lua on the host: with any device write (a host write: any device
 * access) the host has not seen complete. */
int gl_access_conflict_host(gl_accesses *acc, uint64_t lo, uint64_t hi, int write, gl_conflict *c);
/* Room for k more streams' records, so that recording once queued cannot
 * fail; -1 when out of memory. */
int gl_access_reserve_slow(gl_accesses *acc, int k);
static inline int gl_access_reserve(gl_accesses *acc, int k) { /* the usual case, one stream's lane and room: at once */
  return acc->n <= 1 && acc->n + k <= acc->cap ? 0 : gl_access_reserve_slow(acc, k);
}
/* Record an access queued on s (at s->seq), after gl_access_reserve. It
 * cannot fail: without memory for a span, the access is kept blind. */
void gl_access_record(gl_accesses *acc, gl_stream *s, uint64_t lo, uint64_t hi, int write, int loc);
/* Only that s uses acc's object at its position (after gl_access_reserve), for
 * the finished and wait queries below, never for conflicts: a module's
 * launches, a graph's replays. Cheaper than a record: no ranges. */
void gl_access_mark(gl_accesses *acc, gl_stream *s);
/* Order `waiter` after every recorded access (for a free): real waits, from
 * which the checker learns nothing. */
int gl_access_order_all(gl_accesses *acc, gl_stream *waiter, gl_site *site);
/* Block the host until every recorded access has finished. With learn, the
 * host's knowledge of those streams is raised (an explicit wait), and a
 * fault is an error (a poisoned device: its poison); without, it stays as
 * it was (a finalizer or teardown: when garbage collection runs must not
 * change what the checker allows) and faults are not reported. */
int gl_access_wait_all(gl_accesses *acc, int learn, gl_site *site);
/* Have all recorded accesses finished? Asks the driver without blocking and
 * without raising the host's knowledge. (On sim, asking runs the host
 * kernels the streams wait for.) */
int gl_access_finished(gl_accesses *acc);
/* ... as far as the host already knows, without asking the driver. */
int gl_access_known_finished(const gl_accesses *acc);
void gl_access_clear(gl_accesses *acc);
/* No records at all (nothing to check). */
static inline int gl_access_none(const gl_accesses *acc) { return acc->n == 0; }
/* The number of spans kept (for tests and benchmarks). */
int gl_access_spans(const gl_accesses *acc);

#endif
