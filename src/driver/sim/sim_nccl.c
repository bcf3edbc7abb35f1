/*
 * sim_nccl.c -- the sim's NCCL (nccl_table.h): communicators between sim
 * devices of this process (ncclCommInitAll), and the five collectives. Each
 * call queues one operation on its rank's stream, as a kernel launch does;
 * the collective starts on a rank when that rank's stream reaches it, and
 * completes on every rank when every rank's stream has: the last to arrive
 * computes it for all (reading every rank's send buffer into a temporary
 * first, so in-place calls are exact), the others' workers wait for it. The
 * i-th call of one rank meets the i-th of the others, as NCCL requires.
 * Results: integer types as NCCL's (wrapping in the element's width; avg the
 * wrapped sum divided, truncated), floats computed in double and rounded
 * once. The clique of a communicator's ranks lives as long as a rank's
 * communicator or a queued collective of it (a destroy right
 * after a call leaves the call to finish). A rank that will not take part in
 * a call (a fault on its context skipped its part, or the part could not be
 * queued) leaves the meeting at once, and the call ends on every rank
 * without a result, the communicator reporting an asynchronous error, instead
 * of waiting forever; ncclCommAbort ends every call not yet complete so. Calls between ncclGroupStart and
 * ncclGroupEnd are queued at the end, all or (when one failed) none. The test
 * hook GPULUA_SIM_NCCL_FAULT (sim_device.c) makes one call fail, at once or
 * asynchronously, so gpulua's handling of NCCL errors can be tested on sim.
 * Point to point calls (ncclSend, ncclRecv) are sim_nccl_p2p.c's;
 * communicators between processes (ncclGetUniqueId, ncclCommInitRank) are
 * sim_nccl_net.c's, computed by sim_nccl_compute all the same.
 */
#include "sim_nccl.h"

#include "halfprec.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct meeting {
  meeting *next;
  uint64_t seq;
  int arrived, departed;
  int done; /* 1: computed; 2: failed (out of host memory); 3: ended without a result (a rank left, an abort) */
  coll_args *part; /* per rank */
};

static int depth; /* ncclGroupStart nesting */

size_t sim_nccl_type_size(gld_ncclDataType t) {
  switch (t) {
  case GL_NCCL_INT8: case GL_NCCL_UINT8: return 1;
  case GL_NCCL_FLOAT16: case GL_NCCL_BFLOAT16: return 2;
  case GL_NCCL_INT32: case GL_NCCL_UINT32: case GL_NCCL_FLOAT32: return 4;
  case GL_NCCL_INT64: case GL_NCCL_UINT64: case GL_NCCL_FLOAT64: return 8;
  default: return 0;
  }
}

static int is_float(gld_ncclDataType t) {
  return t == GL_NCCL_FLOAT16 || t == GL_NCCL_BFLOAT16 || t == GL_NCCL_FLOAT32 || t == GL_NCCL_FLOAT64;
}

/* Element i as a double (floats) or as int64 bits (integers: unsigned ones widened). */
static double loadf(gld_ncclDataType t, const void *p, size_t i) {
  switch (t) {
  case GL_NCCL_FLOAT16: return gld_f16_to_f32(((const uint16_t *)p)[i]);
  case GL_NCCL_BFLOAT16: return gld_bf16_to_f32(((const uint16_t *)p)[i]);
  case GL_NCCL_FLOAT32: return ((const float *)p)[i];
  default: return ((const double *)p)[i];
  }
}
static void storef(gld_ncclDataType t, void *p, size_t i, double v) {
  switch (t) {
  case GL_NCCL_FLOAT16: ((uint16_t *)p)[i] = gld_f32_to_f16((float)v); break;
  case GL_NCCL_BFLOAT16: ((uint16_t *)p)[i] = gld_f32_to_bf16((float)v); break;
  case GL_NCCL_FLOAT32: ((float *)p)[i] = (float)v; break;
  default: ((double *)p)[i] = v; break;
  }
}
static int unsigned_type(gld_ncclDataType t) { return t == GL_NCCL_UINT8 || t == GL_NCCL_UINT32 || t == GL_NCCL_UINT64; }
static int64_t loadi(gld_ncclDataType t, const void *p, size_t i) {
  switch (t) {
  case GL_NCCL_INT8: return ((const int8_t *)p)[i];
  case GL_NCCL_UINT8: return ((const uint8_t *)p)[i];
  case GL_NCCL_INT32: return ((const int32_t *)p)[i];
  case GL_NCCL_UINT32: return ((const uint32_t *)p)[i];
  default: { int64_t v; memcpy(&v, (const char *)p + 8 * i, 8); return v; }
  }
}
static void storei(gld_ncclDataType t, void *p, size_t i, int64_t v) {
  switch (t) {
  case GL_NCCL_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
  case GL_NCCL_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
  case GL_NCCL_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
  case GL_NCCL_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
  default: memcpy((char *)p + 8 * i, &v, 8); break;
  }
}

/* v wrapped to t's width (sign-extended for the signed types): the value an
 * element of type t holds */
static int64_t wrap(gld_ncclDataType t, int64_t v) {
  int64_t cell;
  storei(t, &cell, 0, v);
  return loadi(t, &cell, 0);
}

/* out[i] = op over the ranks r of src[r][off + i], i < count. Integers as
 * NCCL's kernels: sums and products wrap in the element's width; avg
 * (FuncSumPostDiv) is that wrapped sum, read as signed or unsigned, divided
 * by the ranks with truncation toward zero. */
static void reduce(gld_ncclDataType t, int op, int n, const void *const *src, size_t off, size_t count, void *out) {
  for (size_t i = 0; i < count; i++) {
    if (is_float(t)) {
      double v = loadf(t, src[0], off + i);
      for (int r = 1; r < n; r++) {
        double x = loadf(t, src[r], off + i);
        v = op == GL_NCCL_PROD ? v * x : op == GL_NCCL_MAX ? (x > v ? x : v) : op == GL_NCCL_MIN ? (x < v ? x : v) : v + x;
      }
      storef(t, out, i, op == GL_NCCL_AVG ? v / n : v);
    } else if (unsigned_type(t)) {
      uint64_t v = (uint64_t)loadi(t, src[0], off + i);
      for (int r = 1; r < n; r++) {
        uint64_t x = (uint64_t)loadi(t, src[r], off + i);
        v = op == GL_NCCL_PROD ? v * x : op == GL_NCCL_MAX ? (x > v ? x : v) : op == GL_NCCL_MIN ? (x < v ? x : v) : v + x;
      }
      if (op == GL_NCCL_AVG) v = (uint64_t)wrap(t, (int64_t)v) / (uint64_t)n;
      storei(t, out, i, (int64_t)v);
    } else {
      int64_t v = loadi(t, src[0], off + i);
      for (int r = 1; r < n; r++) {
        int64_t x = loadi(t, src[r], off + i);
        v = op == GL_NCCL_PROD ? (int64_t)((uint64_t)v * (uint64_t)x)
            : op == GL_NCCL_MAX ? (x > v ? x : v) : op == GL_NCCL_MIN ? (x < v ? x : v)
                                : (int64_t)((uint64_t)v + (uint64_t)x);
      }
      storei(t, out, i, op == GL_NCCL_AVG ? wrap(t, v) / n : v);
    }
  }
}

/* The collective for every rank, from copies of the send buffers. 0, or -1
 * when out of host memory. */
int sim_nccl_compute(const coll_args *part, int n) {
  const coll_args *p0 = &part[0];
  size_t es = sim_nccl_type_size(p0->type), count = p0->count;
  size_t in = p0->kind == C_ALL_GATHER ? count : p0->kind == C_REDUCE_SCATTER ? count * (size_t)n : count;
  const void **src = calloc((size_t)n, sizeof *src);
  char *copy = malloc(in * es * (size_t)n + 1);
  char *res = malloc(in * es * (size_t)n + 1);
  if (!src || !copy || !res) {
    free(src), free(copy), free(res);
    return -1;
  }
  for (int r = 0; r < n; r++) {
    memcpy(copy + (size_t)r * in * es, part[r].send, in * es);
    src[r] = copy + (size_t)r * in * es;
  }
  switch (p0->kind) {
  case C_ALL_REDUCE:
    reduce(p0->type, p0->op, n, src, 0, count, res);
    for (int r = 0; r < n; r++) memcpy(part[r].recv, res, count * es);
    break;
  case C_REDUCE:
    reduce(p0->type, p0->op, n, src, 0, count, res);
    memcpy(part[p0->root].recv, res, count * es);
    break;
  case C_BROADCAST:
    for (int r = 0; r < n; r++) memcpy(part[r].recv, src[p0->root], count * es);
    break;
  case C_ALL_GATHER:
    for (int r = 0; r < n; r++)
      for (int i = 0; i < n; i++) memcpy((char *)part[r].recv + (size_t)i * count * es, src[i], count * es);
    break;
  default: /* C_REDUCE_SCATTER */
    for (int r = 0; r < n; r++) {
      reduce(p0->type, p0->op, n, src, (size_t)r * count, count, res);
      memcpy(part[r].recv, res, count * es);
    }
    break;
  }
  free(src), free(copy), free(res);
  return 0;
}

clique *sim_nccl_clique_new(int n) {
  clique *q = calloc(1, sizeof *q);
  uint64_t *issued = q ? calloc((size_t)n, sizeof *issued) : NULL;
  uint64_t *sends = calloc((size_t)n * (size_t)n, sizeof *sends), *recvs = calloc((size_t)n * (size_t)n, sizeof *recvs);
  if (!issued || !sends || !recvs) {
    free(issued), free(sends), free(recvs);
    free(q);
    return NULL;
  }
  q->n = n;
  q->issued = issued;
  q->sends = sends;
  q->recvs = recvs;
  return q;
}

void sim_nccl_clique_free(clique *q) {
  sim_p2p_free(q);
  free(q->sends);
  free(q->recvs);
  free(q->issued);
  free(q);
}

/* The meeting of call seq (sim_S.mu held), made when the first rank comes;
 * NULL when out of memory. */
static meeting *meeting_of(clique *q, uint64_t seq) {
  meeting *m = q->meetings;
  while (m && m->seq != seq) m = m->next;
  if (m) return m;
  m = calloc(1, sizeof *m);
  coll_args *part = m ? calloc((size_t)q->n, sizeof *part) : NULL;
  if (!part) {
    free(m);
    return NULL;
  }
  m->seq = seq;
  m->part = part;
  m->done = q->aborted ? 3 : 0;
  m->next = q->meetings;
  q->meetings = m;
  return m;
}

/* A rank leaves meeting m (sim_S.mu held): the last one out frees it, and
 * the clique goes with the reference the rank's part held. 1 when the
 * caller must free the clique. */
static int depart_locked(clique *q, meeting *m) {
  if (m && ++m->departed == q->n) {
    meeting **pp = &q->meetings;
    while (*pp != m) pp = &(*pp)->next;
    *pp = m->next;
    free(m->part);
    free(m);
  }
  return --q->refs == 0;
}

/* One rank's part, on its stream's worker: it waits for the others. When a
 * rank will never come, or on an abort, it ends without a result, and the
 * communicator reports an asynchronous error (as NCCL's aborted kernels);
 * it fails (its stream faults) only when out of host memory. */
static int coll_host(void *user, const gld_sim_launch *launch) {
  (void)user;
  coll_args a;
  memcpy(&a, launch->params[0], sizeof a);
  clique *q = a.q;
  pthread_mutex_lock(&sim_S.mu);
  meeting *m = meeting_of(q, a.seq);
  int failed = !m;
  if (m) {
    m->part[a.rank] = a;
    if (++m->arrived == q->n && !m->done) {
      m->done = sim_nccl_compute(m->part, q->n) != 0 ? 2 : 1;
      sim_progress_locked();
    }
    while (!m->done) sim_wait_locked();
    failed = m->done == 2;
    if (m->done == 3 && q->async == GL_NCCL_SUCCESS) q->async = GL_NCCL_REMOTE_ERROR;
  }
  int last = depart_locked(q, m);
  pthread_mutex_unlock(&sim_S.mu);
  if (last) sim_nccl_clique_free(q);
  return failed;
}

/* A rank's part that never takes part (a fault skipped it on its stream, or
 * it could not be queued): it comes and leaves at once, and the meeting ends
 * without a result for every rank, as none may wait for one that never comes. */
static void coll_leave(const coll_args *a) {
  clique *q = a->q;
  pthread_mutex_lock(&sim_S.mu);
  meeting *m = meeting_of(q, a->seq);
  if (m) {
    m->arrived++;
    if (!m->done) m->done = 3;
    sim_progress_locked();
  }
  int last = depart_locked(q, m);
  pthread_mutex_unlock(&sim_S.mu);
  if (last) sim_nccl_clique_free(q);
}

static int coll_skipped(void *user, const gld_sim_launch *launch) {
  (void)user;
  coll_args a;
  memcpy(&a, launch->params[0], sizeof a);
  coll_leave(&a);
  return 0;
}

static struct CUfunc_st coll_func = {.name = "nccl collective (sim)", .host = coll_host, .skipped = coll_skipped,
                                     .nparams = 1,
                                     .sizes = {sizeof(coll_args)}, .ptx_nparams = -1, .max_threads = 1024};

/* Queue one rank's part on its stream (its sequence number taken now). */
static gld_ncclResult queue_part(ncclComm_t c, coll_args a, CUstream st) {
  pthread_mutex_lock(&sim_S.mu);
  a.seq = c->q->issued[c->rank]++;
  if (c->net) {
    pthread_mutex_unlock(&sim_S.mu);
    return sim_net_queue(c, &a, 1, st);
  }
  c->q->refs++; /* held by the operation until it ran: a destroy meanwhile does not free the clique */
  pthread_mutex_unlock(&sim_S.mu);
  CUresult r = sim_enqueue_host_call(&coll_func, &a, sizeof a, st, 0);
  if (r != CUDA_SUCCESS) {
    coll_leave(&a); /* the other ranks' parts of this call fail, none waits */
    return r == CUDA_ERROR_OUT_OF_MEMORY ? GL_NCCL_SYSTEM_ERROR : GL_NCCL_UNHANDLED_CUDA_ERROR;
  }
  return GL_NCCL_SUCCESS;
}

/* A part of a failed group that is not queued: its sequence number taken and
 * left at once, so the ranks' later calls still meet in order. */
static void drop_part(ncclComm_t c, coll_args a) {
  if (c->net) {
    sim_net_fail(c, "a collective of its group could not be queued");
    return;
  }
  pthread_mutex_lock(&sim_S.mu);
  a.seq = c->q->issued[c->rank]++;
  c->q->refs++;
  pthread_mutex_unlock(&sim_S.mu);
  coll_leave(&a);
}

/* Inside a group the calls wait here for ncclGroupEnd, which queues them all
 * or, when one of them failed, none (as NCCL does: a failed group launches
 * nothing, so no rank waits for a part that never comes). */
typedef struct pending_part {
  ncclComm_t c;
  coll_args a;
  CUstream st;
} pending_part;
static pending_part *pending;
static int npending, cappending;
static gld_ncclResult group_error;
static long ncalls; /* collective calls so far, for GPULUA_SIM_NCCL_FAULT */

static gld_ncclResult enqueue(ncclComm_t c, int kind, const void *send, void *recv, size_t count, gld_ncclDataType t,
                             int op, int root, CUstream st) {
  gld_ncclResult r = GL_NCCL_SUCCESS;
  if (!c || !sim_S.initialized) r = GL_NCCL_INVALID_ARGUMENT;
  else if (!st || st->ctx->ordinal != c->ordinal) r = GL_NCCL_INVALID_USAGE; /* the sim has no NULL stream */
  else if (!sim_nccl_type_size(t) || op < GL_NCCL_SUM || op > GL_NCCL_AVG || root < 0 || root >= c->q->n)
    r = GL_NCCL_INVALID_ARGUMENT;
  else if (count && ((kind != C_RECV && !send) || (kind != C_SEND && !recv))) r = GL_NCCL_INVALID_ARGUMENT;
  else if (++ncalls == sim_S.nccl_fault_at) {
    if (!sim_S.nccl_fault_async) r = GL_NCCL_INTERNAL_ERROR;
    else { /* the call itself goes through */
      pthread_mutex_lock(&sim_S.mu);
      c->q->async = GL_NCCL_REMOTE_ERROR;
      pthread_mutex_unlock(&sim_S.mu);
    }
  }
  coll_args a = {c ? c->q : NULL, 0, c ? c->rank : 0, kind, op, root, t, count, send, recv};
  if (r == GL_NCCL_SUCCESS && depth == 0) return kind >= C_SEND ? sim_p2p_queue(c, &a, 1, st) : queue_part(c, a, st);
  if (r == GL_NCCL_SUCCESS && npending == cappending) {
    int cap = cappending ? 2 * cappending : 8;
    pending_part *v = realloc(pending, (size_t)cap * sizeof *v);
    if (!v) r = GL_NCCL_SYSTEM_ERROR;
    else pending = v, cappending = cap;
  }
  if (r == GL_NCCL_SUCCESS) pending[npending++] = (pending_part){c, a, st};
  else if (depth > 0 && group_error == GL_NCCL_SUCCESS) group_error = r;
  return r;
}

static gld_ncclResult s_version(int *v) {
  if (!v) return GL_NCCL_INVALID_ARGUMENT;
  *v = 0; /* the sim: no NCCL version */
  return GL_NCCL_SUCCESS;
}

static gld_ncclResult s_unique_id(gld_ncclUniqueId *id) { return sim_net_unique_id(id); }

static gld_ncclResult s_init_all(ncclComm_t *comms, int n, const int *devs) {
  if (!comms || n < 1 || !sim_S.initialized) return GL_NCCL_INVALID_ARGUMENT;
  for (int i = 0; i < n; i++) {
    if (devs ? devs[i] < 0 || devs[i] >= sim_S.ndev : i >= sim_S.ndev) return GL_NCCL_INVALID_ARGUMENT;
    for (int j = 0; j < i; j++)
      if ((devs ? devs[j] : j) == (devs ? devs[i] : i)) return GL_NCCL_INVALID_USAGE; /* one rank per device */
  }
  clique *q = sim_nccl_clique_new(n);
  if (!q) return GL_NCCL_SYSTEM_ERROR;
  for (int i = 0; i < n; i++) {
    comms[i] = calloc(1, sizeof *comms[i]);
    if (!comms[i]) {
      while (i-- > 0) free(comms[i]);
      sim_nccl_clique_free(q);
      return GL_NCCL_SYSTEM_ERROR;
    }
    comms[i]->q = q;
    comms[i]->rank = i;
    comms[i]->ordinal = devs ? devs[i] : i;
  }
  q->refs = n;
  return GL_NCCL_SUCCESS;
}

static gld_ncclResult s_init_rank(ncclComm_t *comm, int n, gld_ncclUniqueId id, int rank) {
  if (!comm || !sim_S.initialized) return GL_NCCL_INVALID_ARGUMENT;
  return sim_net_init_rank(comm, n, id, rank);
}

static gld_ncclResult s_destroy(ncclComm_t c) {
  if (!c) return GL_NCCL_INVALID_ARGUMENT;
  if (c->net) {
    sim_net_release(c->net); /* the clique is the rank's: freed with it */
    free(c);
    return GL_NCCL_SUCCESS;
  }
  pthread_mutex_lock(&sim_S.mu);
  clique *q = c->q;
  int last = --q->refs == 0; /* queued collectives hold references too */
  pthread_mutex_unlock(&sim_S.mu);
  if (last) sim_nccl_clique_free(q);
  free(c);
  return GL_NCCL_SUCCESS;
}

/* As NCCL's abort: the collectives of the communicator that have not
 * completed end (here they fail on every rank, none waits), and the rank's
 * communicator is freed without waiting for them. */
static gld_ncclResult s_abort(ncclComm_t c) {
  if (!c) return GL_NCCL_INVALID_ARGUMENT;
  if (c->net) {
    sim_net_fail(c, "it aborted its communicator");
    return s_destroy(c);
  }
  pthread_mutex_lock(&sim_S.mu);
  c->q->aborted = 1;
  for (meeting *m = c->q->meetings; m; m = m->next)
    if (!m->done) m->done = 3;
  sim_p2p_abort_locked(c->q);
  sim_progress_locked();
  pthread_mutex_unlock(&sim_S.mu);
  return s_destroy(c);
}

static gld_ncclResult s_group_start(void) {
  depth++;
  return GL_NCCL_SUCCESS;
}

static gld_ncclResult s_group_end(void) {
  if (depth == 0) return GL_NCCL_INVALID_USAGE;
  if (--depth > 0) return GL_NCCL_SUCCESS;
  gld_ncclResult r = group_error;
  /* a part that cannot be queued (its context faulted, out of host memory)
   * fails the parts queued before it, and those after it are dropped */
  for (int i = 0; i < npending; i++) {
    pending_part *p = &pending[i];
    if (p->c == NULL) continue; /* a point to point part taken into an earlier one's operation */
    if (p->a.kind >= C_SEND) { /* with the later ones of its rank and stream: one operation */
      int m = 0;
      coll_args *parts = malloc((size_t)(npending - i) * sizeof *parts);
      for (int j = i; parts && j < npending; j++)
        if (pending[j].c == p->c && pending[j].st == p->st && pending[j].a.kind >= C_SEND) {
          parts[m++] = pending[j].a;
          if (j > i) pending[j].c = NULL;
        }
      if (!parts) {
        if (r == GL_NCCL_SUCCESS) r = GL_NCCL_SYSTEM_ERROR;
        if (group_error == GL_NCCL_SUCCESS) sim_p2p_drop(p->c, p->a);
        continue;
      }
      if (r == GL_NCCL_SUCCESS) r = sim_p2p_queue(p->c, parts, m, p->st);
      else if (group_error == GL_NCCL_SUCCESS)
        for (int k = 0; k < m; k++) sim_p2p_drop(p->c, parts[k]);
      free(parts);
      continue;
    }
    if (r == GL_NCCL_SUCCESS) r = queue_part(p->c, p->a, p->st);
    else if (group_error == GL_NCCL_SUCCESS) drop_part(p->c, p->a);
  }
  npending = 0;
  group_error = GL_NCCL_SUCCESS;
  return r;
}

static gld_ncclResult s_all_reduce(const void *s, void *r, size_t n, gld_ncclDataType t, gld_ncclRedOp op, ncclComm_t c,
                                  CUstream st) {
  return enqueue(c, C_ALL_REDUCE, s, r, n, t, op, 0, st);
}
static gld_ncclResult s_broadcast(const void *s, void *r, size_t n, gld_ncclDataType t, int root, ncclComm_t c,
                                 CUstream st) {
  return enqueue(c, C_BROADCAST, s, r, n, t, GL_NCCL_SUM, root, st);
}
static gld_ncclResult s_reduce(const void *s, void *r, size_t n, gld_ncclDataType t, gld_ncclRedOp op, int root,
                              ncclComm_t c, CUstream st) {
  return enqueue(c, C_REDUCE, s, r, n, t, op, root, st);
}
static gld_ncclResult s_all_gather(const void *s, void *r, size_t n, gld_ncclDataType t, ncclComm_t c, CUstream st) {
  return enqueue(c, C_ALL_GATHER, s, r, n, t, GL_NCCL_SUM, 0, st);
}
static gld_ncclResult s_reduce_scatter(const void *s, void *r, size_t n, gld_ncclDataType t, gld_ncclRedOp op,
                                      ncclComm_t c, CUstream st) {
  return enqueue(c, C_REDUCE_SCATTER, s, r, n, t, op, 0, st);
}

static gld_ncclResult s_send(const void *s, size_t n, gld_ncclDataType t, int peer, ncclComm_t c, CUstream st) {
  return enqueue(c, C_SEND, s, NULL, n, t, GL_NCCL_SUM, peer, st);
}
static gld_ncclResult s_recv(void *r, size_t n, gld_ncclDataType t, int peer, ncclComm_t c, CUstream st) {
  return enqueue(c, C_RECV, NULL, r, n, t, GL_NCCL_SUM, peer, st);
}

static const char *s_error_string(gld_ncclResult r) {
  switch (r) {
  case GL_NCCL_SUCCESS: return "no error";
  case GL_NCCL_UNHANDLED_CUDA_ERROR: return "unhandled cuda error";
  case GL_NCCL_SYSTEM_ERROR: return "unhandled system error";
  case GL_NCCL_INTERNAL_ERROR: return "internal error";
  case GL_NCCL_INVALID_ARGUMENT: return "invalid argument";
  case GL_NCCL_INVALID_USAGE: return "invalid usage";
  case GL_NCCL_REMOTE_ERROR: { /* with what ended a communicator of a job, where one did */
    const char *t = sim_net_remote_text();
    return t[0] ? t : "remote process exited or there was a network error";
  }
  default: return "unknown result code";
  }
}

static gld_ncclResult s_async_error(ncclComm_t c, gld_ncclResult *r) {
  if (!c || !r) return GL_NCCL_INVALID_ARGUMENT;
  pthread_mutex_lock(&sim_S.mu);
  *r = c->q->async;
  pthread_mutex_unlock(&sim_S.mu);
  return GL_NCCL_SUCCESS;
}

void gld_nccl_sim_table(gld_nccl *t) {
  memset(t, 0, sizeof *t);
  snprintf(t->path, sizeof t->path, "sim");
  t->ncclGetVersion = s_version;
  t->ncclGetUniqueId = s_unique_id;
  t->ncclCommInitAll = s_init_all;
  t->ncclCommInitRank = s_init_rank;
  t->ncclCommDestroy = s_destroy;
  t->ncclCommAbort = s_abort;
  t->ncclGroupStart = s_group_start;
  t->ncclGroupEnd = s_group_end;
  t->ncclAllReduce = s_all_reduce;
  t->ncclBroadcast = s_broadcast;
  t->ncclReduce = s_reduce;
  t->ncclAllGather = s_all_gather;
  t->ncclReduceScatter = s_reduce_scatter;
  t->ncclSend = s_send;
  t->ncclRecv = s_recv;
  t->ncclGetErrorString = s_error_string;
  t->ncclCommGetAsyncError = s_async_error;
}
