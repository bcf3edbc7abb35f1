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
 */
#ifndef GPULUA_CORE_CHECKER_H
#define GPULUA_CORE_CHECKER_H

#include <stdint.h>

#include "driver.h"
#include "types.h"

/* One stream's last read and last write of one byte range. */
typedef struct gl_access {
  gl_stream *s;          /* a reference */
  uint64_t lo, hi;       /* bytes [lo, hi) of the memory */
  uint64_t wseq, rseq;   /* positions of the last write / read (0: none) */
  int wloc, rloc;        /* where they were queued (locations) */
} gl_access;

struct gl_accesses {
  gl_access *v;
  int n, cap;
};

/* What a conflict is: the other stream and its access. */
typedef struct gl_conflict {
  gl_stream *other;
  int other_writes;      /* it may still be writing (else reading) */
  int other_loc;         /* where that access was queued */
} gl_conflict;

/* Does an access of [lo, hi) by s conflict with a record? 1 and *c, or 0. */
int gl_access_conflict(const gl_accesses *acc, const gl_stream *s, uint64_t lo, uint64_t hi, int write,
                       gl_conflict *c);
/* ... by Lua on the host: with any device write (a host write: any device
 * access) the host has not seen complete. */
int gl_access_conflict_host(gl_accesses *acc, uint64_t lo, uint64_t hi, int write, gl_conflict *c);
/* Room for k more records, so that recording once queued cannot fail; -1
 * when out of memory. */
int gl_access_reserve(gl_accesses *acc, int k);
/* Record an access queued on s (at s->seq), after gl_access_reserve. */
void gl_access_record(gl_accesses *acc, gl_stream *s, uint64_t lo, uint64_t hi, int write, int loc);
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

#endif
