/*
 * sim_nccl_p2p.c -- the sim's ncclSend and ncclRecv (sim_nccl.h). The k-th
 * send from rank a to rank b pairs with the k-th recv of b from a, as NCCL
 * pairs them. A rank's point to point calls of one group on one stream are
 * one operation there (NCCL runs them as one kernel, so a rank that sends
 * and receives in one group never waits on itself): when it runs, each of
 * its parts either finds its peer's part posted and the data is copied at
 * once, or posts itself for the peer to find; the operation ends when all
 * its parts are complete. A part whose peer will never come (a fault skipped
 * it, its group failed, an abort) ends without a result, and the
 * communicator reports an asynchronous error, as NCCL's aborted kernels do.
 */
#include "sim_nccl.h"

#include <stdlib.h>
#include <string.h>

struct sim_p2p_post {
  sim_p2p_post *next;
  int src, dst, is_send;
  uint64_t seq;
  const void *send;
  void *recv;
  size_t bytes;
  int *state; /* the waiting part's: 0 waiting, 1 complete, 3 ended without a result; NULL: a part that never runs */
};

typedef struct p2p_op { /* the operation's record: its parts and their states, freed when it ran */
  clique *q;
  int n;
  coll_args *parts;
  int *state;
} p2p_op;

static void pair_of(const coll_args *a, int *src, int *dst) {
  *src = a->kind == C_SEND ? a->rank : a->root;
  *dst = a->kind == C_SEND ? a->root : a->rank;
}

/* The peer's post matching part a, taken off the list (sim_S.mu held), or NULL. */
static sim_p2p_post *take_match(clique *q, const coll_args *a) {
  int src, dst;
  pair_of(a, &src, &dst);
  for (sim_p2p_post **pp = &q->posts; *pp; pp = &(*pp)->next) {
    sim_p2p_post *p = *pp;
    if (p->src == src && p->dst == dst && p->seq == a->seq && p->is_send != (a->kind == C_SEND)) {
      *pp = p->next;
      return p;
    }
  }
  return NULL;
}

/* Part a arrives (sim_S.mu held): paired with its peer's post, or posted; a
 * dead part (state NULL) ends its peer's without a result. */
static void arrive(clique *q, const coll_args *a, int *state) {
  sim_p2p_post *m = q->aborted ? NULL : take_match(q, a);
  size_t bytes = a->count * sim_nccl_type_size(a->type);
  if (q->aborted) {
    if (state) *state = 3;
    return;
  }
  if (m) {
    if (!state || !m->state) { /* one side never runs */
      if (m->state) *m->state = 3;
      if (state) *state = 3;
      if (q->async == GL_NCCL_SUCCESS) q->async = GL_NCCL_REMOTE_ERROR;
    } else {
      const void *from = a->kind == C_SEND ? a->send : m->send;
      void *to = a->kind == C_SEND ? m->recv : a->recv;
      size_t n = a->kind == C_SEND ? bytes : m->bytes;
      size_t room = a->kind == C_SEND ? m->bytes : bytes;
      if (n > room) n = room;
      if (n) memmove(to, from, n);
      *m->state = 1;
      *state = 1;
    }
    free(m);
    return;
  }
  sim_p2p_post *p = calloc(1, sizeof *p);
  if (!p) {
    if (state) *state = 3;
    if (q->async == GL_NCCL_SUCCESS) q->async = GL_NCCL_SYSTEM_ERROR;
    return;
  }
  pair_of(a, &p->src, &p->dst);
  p->is_send = a->kind == C_SEND;
  p->seq = a->seq;
  p->send = a->send;
  p->recv = a->recv;
  p->bytes = bytes;
  p->state = state;
  p->next = q->posts;
  q->posts = p;
}

/* The part's order between its two ranks, taken now (sim_S.mu held). */
static void take_seq(clique *q, coll_args *a) {
  int src, dst;
  pair_of(a, &src, &dst);
  uint64_t *ctr = a->kind == C_SEND ? &q->sends[src * q->n + dst] : &q->recvs[src * q->n + dst];
  a->seq = (*ctr)++;
}

static int finish(p2p_op *o) { /* sim_S.mu held: 1 when the caller must free the clique */
  clique *q = o->q;
  free(o->parts);
  free(o->state);
  return --q->refs == 0;
}

static int p2p_host(void *user, const gld_sim_launch *launch) {
  (void)user;
  p2p_op o;
  memcpy(&o, launch->params[0], sizeof o);
  pthread_mutex_lock(&sim_S.mu);
  for (int i = 0; i < o.n; i++) arrive(o.q, &o.parts[i], &o.state[i]);
  sim_progress_locked();
  for (int i = 0; i < o.n; i++)
    while (o.state[i] == 0) sim_wait_locked();
  for (int i = 0; i < o.n; i++)
    if (o.state[i] == 3 && o.q->async == GL_NCCL_SUCCESS) o.q->async = GL_NCCL_REMOTE_ERROR;
  clique *q = o.q;
  int last = finish(&o);
  pthread_mutex_unlock(&sim_S.mu);
  if (last) sim_nccl_clique_free(q);
  return 0;
}

static void leave_all(p2p_op *o) { /* the operation never runs: its parts end their peers' */
  pthread_mutex_lock(&sim_S.mu);
  for (int i = 0; i < o->n; i++) arrive(o->q, &o->parts[i], NULL);
  sim_progress_locked();
  clique *q = o->q;
  int last = finish(o);
  pthread_mutex_unlock(&sim_S.mu);
  if (last) sim_nccl_clique_free(q);
}

static int p2p_skipped(void *user, const gld_sim_launch *launch) {
  (void)user;
  p2p_op o;
  memcpy(&o, launch->params[0], sizeof o);
  leave_all(&o);
  return 0;
}

static struct CUfunc_st p2p_func = {.name = "nccl send/recv (sim)", .host = p2p_host, .skipped = p2p_skipped,
                                    .nparams = 1, .sizes = {sizeof(p2p_op)}, .ptx_nparams = -1, .max_threads = 1024};

gld_ncclResult sim_p2p_queue(ncclComm_t c, coll_args *parts, int n, CUstream st) {
  if (c->net) { /* between processes: the parts' orders taken, the hub pairs them */
    pthread_mutex_lock(&sim_S.mu);
    for (int i = 0; i < n; i++) take_seq(c->q, &parts[i]);
    pthread_mutex_unlock(&sim_S.mu);
    return sim_net_queue(c, parts, n, st);
  }
  p2p_op o = {c->q, n, malloc((size_t)n * sizeof *parts), calloc((size_t)n, sizeof(int))};
  if (!o.parts || !o.state) {
    free(o.parts), free(o.state);
    for (int i = 0; i < n; i++) sim_p2p_drop(c, parts[i]);
    return GL_NCCL_SYSTEM_ERROR;
  }
  pthread_mutex_lock(&sim_S.mu);
  for (int i = 0; i < n; i++) {
    o.parts[i] = parts[i];
    o.parts[i].q = c->q;
    take_seq(c->q, &o.parts[i]);
  }
  c->q->refs++; /* held by the operation until it ran */
  pthread_mutex_unlock(&sim_S.mu);
  CUresult r = sim_enqueue_host_call(&p2p_func, &o, sizeof o, st, 0);
  if (r != CUDA_SUCCESS) {
    leave_all(&o);
    return r == CUDA_ERROR_OUT_OF_MEMORY ? GL_NCCL_SYSTEM_ERROR : GL_NCCL_UNHANDLED_CUDA_ERROR;
  }
  return GL_NCCL_SUCCESS;
}

void sim_p2p_drop(ncclComm_t c, coll_args a) {
  if (c->net) {
    sim_net_fail(c, "a send or recv of its group could not be queued");
    return;
  }
  pthread_mutex_lock(&sim_S.mu);
  a.q = c->q;
  take_seq(c->q, &a);
  arrive(c->q, &a, NULL);
  sim_progress_locked();
  pthread_mutex_unlock(&sim_S.mu);
}

void sim_p2p_abort_locked(clique *q) {
  while (q->posts) {
    sim_p2p_post *p = q->posts;
    q->posts = p->next;
    if (p->state) *p->state = 3;
    free(p);
  }
}

void sim_p2p_free(clique *q) { sim_p2p_abort_locked(q); }
