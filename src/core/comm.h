/*
 * comm.h -- NCCL communicators and their collectives (gpu.comm): each call
 * is one NCCL group over this process's ranks, checked and recorded like
 * queued work on each rank's stream (a read of send, a write of recv).
 *
 * Ownership: a communicator holds one NCCL communicator per rank of this
 * process and belongs to its runtime's list of live communicators. comm:close
 * destroys them at once (NCCL waits for their queued collectives); the
 * finalizer only marks it closed and leaves the destroying to the runtime's
 * teardown (after the devices finished), so it never waits. An NCCL error,
 * or an asynchronous one found after a call, poisons it: later calls raise
 * the first error again; close still works.
 */
#ifndef GPULUA_CORE_COMM_H
#define GPULUA_CORE_COMM_H

#include "driver.h"
#include "error.h"
#include "types.h"

#define GL_MAX_LOCAL_RANKS 64 /* ranks of one communicator in one process */

typedef enum { GL_COLL_ALL_REDUCE, GL_COLL_BROADCAST, GL_COLL_REDUCE, GL_COLL_ALL_GATHER, GL_COLL_REDUCE_SCATTER } gl_coll_kind;

typedef struct gl_comm {
  gl_runtime *rt;
  int n;                   /* ranks in this process */
  int size, first_rank;    /* ranks of the whole communicator; this process's first one */
  gl_device **devs;        /* per local rank */
  struct ncclComm **nc;    /* per local rank; NULL entries once destroyed */
  gl_buf poison;           /* non-empty once an NCCL error, or a rank's fault, poisoned it */
  CUevent *done;           /* per local rank (several): recorded after its latest collective */
  int inflight;            /* collectives queued that the host has not seen complete on every rank */
  int closed, closed_at;   /* comm:close (or the finalizer), and where */
  struct gl_store *store;  /* a job's store (gpu.comm{}), closed with it; or NULL */
  struct gl_comm_check *check; /* a job's check of its collectives (comm_check.h), or NULL */
  struct gl_comm *next_live, **prev_live;
  struct gl_p2p_part *p2p; /* sends and recvs between ranks of this process waiting for their match (comm_p2p.c) */
  int np2p, cap2p;
} gl_comm;

/* In these calls, `call` is the script's name for the call ("gpu.comm",
 * "comm:all_reduce", "comm:close"): every message begins with it. */

/* One rank per device of `devs` (n of them, distinct), in this process. */
int gl_comm_new_local(gl_runtime *rt, const char *call, int n, gl_device **devs, gl_site *site, gl_comm **out);
/* Rank `rank` of `size` ranks across processes, on dev: rank 0 writes a new
 * NCCL unique id to id_file (atomically: a temporary file renamed), the
 * others wait for it, at most timeout_s seconds. cuda only. */
int gl_comm_new_rank(gl_runtime *rt, const char *call, int rank, int size, const char *id_file, double timeout_s,
                     gl_device *dev, gl_site *site, gl_comm **out);

/* Rank `rank` of `size` on dev from an NCCL unique id already shared
 * (ncclCommInitRank; id its bytes): what gl_comm_new_rank and a job's store end in. */
int gl_comm_init_rank(gl_runtime *rt, const char *call, int rank, int size, const void *id, gl_device *dev,
                      gl_comm **out);

/* One collective, as the binding fills it: per local rank i (comm->n of
 * them), send[i] and recv[i] (recv[i] == send[i]: in place) on streams[i];
 * op a reduction (GL_NCCL_SUM ..), root a rank. */
typedef struct gl_coll_req {
  const char *call;
  gl_comm *comm;
  gl_coll_kind kind;
  int op, root;
  gl_slice **send, **recv;
  gl_stream **streams;
  gl_site *site;          /* the script's line */
} gl_coll_req;
/* Check everything in order (the communicator, the capture, root, then per
 * rank its slices, stream, dtypes and sizes; the sizes against the
 * collective; recv apart from send or in place), admit every rank's
 * accesses, then one NCCL group over the ranks. 0, or -1 with the runtime's
 * error (an NCCL error also poisons the communicator). */
int gl_comm_collective(const gl_coll_req *r);

/* Point to point (comm_p2p.c): per local rank i, x[i] (NULL: rank i takes
 * no part) sent to, or received from, rank peer[i] on streams[i]. A part
 * whose peer is in another process is queued at once; one whose peer is in
 * this process waits until its match is given (NCCL needs both in one group
 * when one thread drives both ranks), then every matched part is queued as
 * one NCCL group. Between the two calls nothing may be queued on or recorded
 * on the waiting parts' streams (an error at the matching call), and no
 * other call of the communicator may come (an error naming the part). */
typedef struct gl_p2p_req {
  const char *call;
  gl_comm *comm;
  int is_send;
  gl_slice **x;
  const int *peer;
  gl_stream **streams;
  gl_site *site;
} gl_p2p_req;
int gl_comm_p2p(const gl_p2p_req *r);
/* all_to_all: per local rank i, block k of send[i] to rank k, block k of
 * recv[i] from rank k, one NCCL group of sends and recvs. */
int gl_comm_all_to_all(gl_comm *c, const char *what, gl_slice **send, gl_slice **recv, gl_stream **streams,
                       gl_site *site);
/* Every rank reaches it: a one-element all-reduce on each local rank's main
 * stream, waited for on the host. */
int gl_comm_barrier(gl_comm *c, const char *what, gl_site *site);

/* Before a wait on device d (NULL: any), which a collective that cannot
 * complete would make endless: every communicator of several local ranks,
 * one on d among them, with collectives in flight is watched until they have
 * completed on every rank, or a rank's device faulted. A fault poisons the
 * communicator (later calls raise it), aborts its NCCL communicators (no rank
 * waits for the faulted one any more) and poisons the devices of its other
 * ranks (every wait there reports it). 0, or -1 when d is poisoned (its
 * message). gl_comm_poll looks once, without waiting (for queries). */
int gl_comm_settle(gl_runtime *rt, gl_device *d, gl_site *site);
/* Device d faulted (r, found by `call`; gl_fail_cu): d is poisoned with its
 * fault, and so are its communicators with collectives in flight (as above). */
void gl_comm_fault(gl_runtime *rt, gl_device *d, CUresult r, const char *call, gl_site *site);
int gl_comm_poll(gl_runtime *rt, gl_device *d, gl_site *site);

/* comm:close: destroy the NCCL communicators now. 0, or -1 (closed before). */
int gl_comm_close(gl_comm *c, const char *call, int loc);
/* The finalizer: closed, destroyed at teardown (never waits). */
void gl_comm_release(gl_comm *c);
/* Teardown: every communicator destroyed, the devices' work finished first. */
void gl_comm_teardown(gl_runtime *rt);
/* The name of reduction op (GL_NCCL_SUM ..), and the op of a name (-1: none). */
const char *gl_comm_op_name(int op);
int gl_comm_op_parse(const char *name);

#endif
