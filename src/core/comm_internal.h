/*
 * comm_internal.h -- what comm.c shares with comm_p2p.c (the point to point
 * calls, all_to_all and the barrier). Messages begin with `what`, the
 * script's name for the call.
 */
#ifndef GPULUA_CORE_COMM_INTERNAL_H
#define GPULUA_CORE_COMM_INTERNAL_H

#include "comm.h"
#include "dtype.h"

/* NCCL loaded, or an error naming why not. */
int gl_comm_load(gl_runtime *rt, const char *what);
/* NCCL's text for a result. */
const char *gl_comm_nccl_text(int r);
/* NCCL's data type of dt, -1 for none. */
int gl_comm_nccl_type(gl_dtype dt);
/* 0 when c can take a call: not closed, not poisoned, no send or recv
 * waiting for its match (comm_p2p.c). */
int gl_comm_usable(gl_comm *c, const char *what);
/* Local rank i's `role` slice: usable, on rank i's device. */
int gl_comm_check_slice(gl_comm *c, const char *what, const char *role, int i, const gl_slice *x);
/* After a call on every local rank's stream: their `done` events recorded (several ranks). */
int gl_comm_mark_inflight(gl_comm *c, gl_stream *const *streams);
/* One look at c's ranks: 1 while a collective still runs on one. */
int gl_comm_watch_once(gl_comm *c, gl_site *site);
/* comm_p2p.c: an error when sends or recvs wait for their match; their
 * parts dropped (close, teardown). */
int gl_comm_p2p_unmatched(gl_comm *c, const char *what);
void gl_comm_p2p_drop(gl_comm *c);

#endif
