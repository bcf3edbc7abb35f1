/*
 * sim_nccl.h -- what the sim's collectives (sim_nccl.c) and its point to
 * point calls (sim_nccl_p2p.c) share: a communicator's clique of ranks and
 * one rank's part of a call. Everything here is under sim_S.mu.
 */
#ifndef GPULUA_SIM_NCCL_H
#define GPULUA_SIM_NCCL_H

#include <stdint.h>

#include "nccl_table.h"
#include "sim_internal.h"

enum { C_ALL_REDUCE, C_BROADCAST, C_REDUCE, C_ALL_GATHER, C_REDUCE_SCATTER, C_SEND, C_RECV };

typedef struct meeting meeting;
typedef struct sim_p2p_post sim_p2p_post;
typedef struct sim_net_rank sim_net_rank;

typedef struct clique {
  int n, refs;
  gld_ncclResult async; /* what ncclCommGetAsyncError reports (GPULUA_SIM_NCCL_FAULT=async:N) */
  uint64_t *issued;  /* per rank: calls queued so far */
  meeting *meetings; /* collectives some rank has reached */
  int aborted;       /* ncclCommAbort on a rank: every meeting not complete fails */
  uint64_t *sends, *recvs; /* [src * n + dst]: sends from src to dst queued so far, recvs of dst from src */
  sim_p2p_post *posts;     /* point to point parts waiting for their peer's */
} clique;

struct ncclComm {
  clique *q;
  int rank, ordinal;
  sim_net_rank *net; /* a rank of a job of processes (sim_nccl_net.c), or NULL: within this process */
};

typedef struct coll_args { /* one rank's part, as its operation's record holds it */
  clique *q;
  uint64_t seq;
  int rank, kind, op, root; /* send, recv: root is the peer */
  gld_ncclDataType type;
  size_t count;
  const void *send;
  void *recv;
} coll_args;

size_t sim_nccl_type_size(gld_ncclDataType t);
/* The collective of parts[0 .. n) (one per rank, each with its send and
 * recv), computed for every rank: 0, or -1 when out of host memory. */
int sim_nccl_compute(const coll_args *part, int n);
/* The clique of n ranks, its counters zeroed (refs 0); NULL when out of memory. */
clique *sim_nccl_clique_new(int n);
/* The clique freed (its last reference gone). */
void sim_nccl_clique_free(clique *q);

/* sim_nccl_p2p.c: parts[0 .. n) of rank c, sends and recvs, queued on st as
 * one operation (as NCCL runs a group's point to point calls of a rank as one
 * kernel): each pairs with the peer's part of the same order between the two
 * ranks; the operation completes when all its parts have. */
gld_ncclResult sim_p2p_queue(ncclComm_t c, coll_args *parts, int n, CUstream st);
/* A part that will never run (its group failed): its order taken, and its
 * peer's part ends without a result. */
void sim_p2p_drop(ncclComm_t c, coll_args a);
/* ncclCommAbort: every waiting part ends without a result (sim_S.mu held). */
void sim_p2p_abort_locked(clique *q);
/* The waiting posts freed with the clique. */
void sim_p2p_free(clique *q);

/* sim_nccl_net.c: communicators between processes. Rank 0's id names a hub
 * (a listening socket served by a thread of rank 0's process); every rank
 * connects to it, and each call's part goes there, the hub computing the
 * collective when every rank's part has come. */
gld_ncclResult sim_net_unique_id(gld_ncclUniqueId *id);
gld_ncclResult sim_net_init_rank(ncclComm_t *comm, int n, gld_ncclUniqueId id, int rank);
/* parts[0 .. n) of one operation on st (their sequence numbers taken). */
gld_ncclResult sim_net_queue(ncclComm_t c, const coll_args *parts, int n, CUstream st);
/* The communicator cannot go on (a part never queued, an abort): every
 * rank's calls fail, naming why. */
void sim_net_fail(ncclComm_t c, const char *why);
/* The rank's reference dropped (ncclCommDestroy). */
void sim_net_release(sim_net_rank *nr);
/* What ended the communicators of this process that failed first, or "". */
const char *sim_net_remote_text(void);
/* GPULUA_SIM_NCCL_ADDR: 0 when s is a numeric IPv4 or IPv6 address. */
int sim_net_parse_addr(const char *s);

#endif
