/*
 * comm_check.h -- under policy strict, a job's communicator of several
 * processes (gpu.comm{}) is checked against a distributed hang: each rank
 * publishes its collectives (kind, dtype, count, op, root, script line) to
 * rank 0 over its store connection, asynchronously (a thread per rank
 * sends them; the call does not wait). Rank 0's thread compares the i-th
 * collective of every rank as they arrive; on a mismatch, on a collective
 * not reached by every rank within the timeout, or when a rank whose
 * collective others wait in has ended, it sends every rank the verdict.
 * Each rank's thread then aborts its NCCL communicator (its hung calls end)
 * and keeps the text: the communicator, and its device, raise it at the
 * rank's next wait or call. Point to point calls (send, recv) are published
 * too, numbered apart from the collectives, per ordered pair of ranks: rank
 * 0 pairs the k-th send from a to b with the k-th recv of b from a
 * (comm_check_p2p.c); a pair whose dtype or count differ, a send or recv
 * whose partner does not come within the timeout, or whose partner's rank
 * is gone, is a verdict as above.
 */
#ifndef GPULUA_CORE_COMM_CHECK_H
#define GPULUA_CORE_COMM_CHECK_H

#include <stddef.h>

#include "comm.h"

#define GL_CHECK_ALL_TO_ALL 5 /* kinds past gl_coll_kind's */
#define GL_CHECK_BARRIER 6
#define GL_CHECK_SEND 7
#define GL_CHECK_RECV 8

struct gl_store;
typedef struct gl_comm_check gl_comm_check;
/* Start checking c, a rank of a job of several processes meeting at store s
 * (kept by c). 0, or -1 with a message in err. */
int gl_comm_check_start(gl_comm *c, struct gl_store *s, double timeout_s, char *err, size_t errlen);
/* The hot path: collective `kind` (gl_coll_kind, or GL_CHECK_*) of c is
 * about to be queued; dtype a gl_dtype, op/root -1 where they do not apply. */
void gl_comm_check_publish(gl_comm *c, int kind, int dtype, size_t count, int op, int root, const char *what,
                           gl_site *site);
/* The hot path: a send to (is_send) or recv from rank peer of count
 * elements of dtype, given at loc, is about to be queued. */
void gl_comm_check_publish_p2p(gl_comm *c, int is_send, int peer, int dtype, size_t count, const char *what, int loc);
/* Around the calls of c's NCCL communicator: the check's thread does not
 * abort it meanwhile. enter: 0, or -1 with the verdict raised. */
int gl_comm_check_enter(gl_comm *c, const char *what);
void gl_comm_check_leave(gl_comm *c);
/* 1 once a verdict came: c is poisoned with it, and so is its device (if it
 * was not), and c has nothing in flight any more. */
int gl_comm_check_failed(gl_comm *c);
/* After a fault on c's device: wait a little for a verdict that explains it
 * (a peer's failure that the backend noticed first); then as gl_comm_check_failed. */
int gl_comm_check_await(gl_comm *c);
/* Stop: the rank's pending collectives sent and its bye said, the thread
 * joined; NCCL communicators the thread aborted are NULL in c->nc after it. */
void gl_comm_check_stop(gl_comm *c);

#endif
