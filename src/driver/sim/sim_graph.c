/*
 * sim_graph.c -- the sim's CUDA graphs: stream capture (what a capturing
 * stream is given becomes a node instead of running; a stream that waits
 * for an event recorded in a capture joins it, and must be joined back
 * before the capture ends), instantiation, update and launch.
 *
 * A graph is its nodes in capture order. Each node was captured after the
 * nodes it depends on, so capture order is a topological order, and a
 * replay queues the nodes in that order on the launching stream: the
 * dependencies hold (the branches of a fork run one after another, which is
 * one valid schedule of the graph). Events recorded and waited for inside a
 * capture are dependencies, not nodes. A replay is queued whole or not at
 * all.
 */
#include "sim_internal.h"

#include <stdlib.h>
#include <string.h>

struct CUgraph_st {
  struct CUctx_st *ctx;
  sim_op *nodes;     /* copies, in capture order; a kernel node owns its launch record */
  int n, cap;
  int invalid;       /* a capture that an unsupported call invalidated */
};

struct CUgraphExec_st {
  struct CUctx_st *ctx;
  sim_op *nodes;
  int n;
};

static gld_sim_launch *launch_dup(const sim_op *op) {
  if (!op->launch) return NULL;
  gld_sim_launch *l = malloc(op->launch_bytes);
  if (!l) return NULL;
  memcpy(l, op->launch, op->launch_bytes);
  for (int i = 0; i < l->nparams; i++) /* the parameters point into the record itself */
    l->params[i] = (char *)l + ((const char *)op->launch->params[i] - (const char *)op->launch);
  return l;
}

static void nodes_free(sim_op *nodes, int n) {
  for (int i = 0; i < n; i++) free(nodes[i].launch);
  free(nodes);
}

/* Copies of n nodes, each with its own launch record; NULL when out of memory. */
static sim_op *nodes_dup(const sim_op *nodes, int n) {
  sim_op *v = calloc(n ? (size_t)n : 1, sizeof *v);
  if (!v) return NULL;
  for (int i = 0; i < n; i++) {
    v[i] = nodes[i];
    v[i].mark = NULL;
    if (nodes[i].launch && !(v[i].launch = launch_dup(&nodes[i]))) {
      nodes_free(v, i);
      return NULL;
    }
  }
  return v;
}

/* ---- capture ---------------------------------------------------------- */

void sim_capture_invalidate_locked(struct CUstream_st *st) {
  if (st->capture) st->capture->invalid = 1;
}

void sim_capture_stream_gone_locked(struct CUstream_st *st) {
  struct CUgraph_st *g = st->capture;
  if (!g) return;
  st->capture = NULL;
  if (!st->cap_origin) return;
  for (struct CUstream_st *t = st->ctx->streams; t; t = t->next_in_ctx)
    if (t->capture == g) t->capture = NULL;
  nodes_free(g->nodes, g->n);
  free(g);
}

CUresult sim_capture_locked(struct CUstream_st *st, sim_op *op, struct CUevent_st *ev) {
  struct CUgraph_st *g = st->capture;
  if (g && g->invalid) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  switch (op->kind) {
  case OP_RECORD: /* a point other streams of the capture can depend on */
    ev->cap = g;
    ev->cap_src = st;
    ev->cap_ops = st->cap_ops;
    ev->ctx = st->ctx;
    return CUDA_SUCCESS;
  case OP_WAIT:
    if (!ev->cap || (g && ev->cap != g) || st->ctx != ev->cap->ctx) { /* no capture's, another's, another device's */
      if (g) g->invalid = 1;
      return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
    }
    if (!g) { /* st joins the capture the event belongs to */
      st->capture = ev->cap;
      st->cap_origin = 0;
      st->cap_ops = 0;
      st->cap_rejoined = 1; /* nothing of its own yet */
    }
    for (struct CUstream_st *src = st->ctx->streams; src; src = src->next_in_ctx) /* (still there) */
      if (src == ev->cap_src && src != st && !src->cap_origin && src->capture == ev->cap &&
          ev->cap_ops == src->cap_ops)
        src->cap_rejoined = 1; /* everything it captured comes before st's next node */
    return CUDA_SUCCESS;
  case OP_FREE: /* a replay would free it again: the sim has no free nodes */
    g->invalid = 1;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  default:
    break;
  }
  if (g->n == g->cap) {
    int cap = g->cap ? 2 * g->cap : 16;
    sim_op *v = realloc(g->nodes, (size_t)cap * sizeof *v);
    if (!v) return CUDA_ERROR_OUT_OF_MEMORY;
    g->nodes = v;
    g->cap = cap;
  }
  sim_op *node = &g->nodes[g->n++];
  *node = *op; /* the launch record is the graph's now */
  node->mark = NULL;
  op->launch = NULL;
  st->cap_ops++;
  if (!st->cap_origin) st->cap_rejoined = 0;
  return CUDA_SUCCESS;
}

CUresult sim_cuStreamBeginCapture(CUstream st, CUstreamCaptureMode mode) {
  NEED_INIT();
  if (!st) return CUDA_ERROR_INVALID_HANDLE; /* the sim has no NULL stream to capture */
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  struct CUgraph_st *g = calloc(1, sizeof *g);
  if (!g) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&sim_S.mu);
  if (st->capture) {
    pthread_mutex_unlock(&sim_S.mu);
    free(g);
    return CUDA_ERROR_ILLEGAL_STATE;
  }
  g->ctx = st->ctx;
  st->capture = g;
  st->cap_origin = 1;
  st->cap_ops = 0;
  pthread_mutex_unlock(&sim_S.mu);
  return CUDA_SUCCESS;
}

CUresult sim_cuStreamEndCapture(CUstream st, CUgraph *out) {
  NEED_INIT();
  if (!st || !out) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&sim_S.mu);
  struct CUgraph_st *g = st->capture;
  if (!g || !st->cap_origin) {
    pthread_mutex_unlock(&sim_S.mu);
    return CUDA_ERROR_ILLEGAL_STATE;
  }
  int unjoined = 0;
  for (struct CUstream_st *t = st->ctx->streams; t; t = t->next_in_ctx) {
    if (t->capture != g) continue;
    if (t != st && !t->cap_rejoined) unjoined = 1;
    t->capture = NULL; /* the capture ends for every stream in it */
  }
  st->capture = NULL;
  pthread_mutex_unlock(&sim_S.mu);
  *out = NULL;
  if (g->invalid || unjoined) {
    CUresult r = g->invalid ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
    nodes_free(g->nodes, g->n);
    free(g);
    return r;
  }
  *out = g;
  return CUDA_SUCCESS;
}

CUresult sim_cuStreamIsCapturing(CUstream st, CUstreamCaptureStatus *status) {
  NEED_INIT();
  if (!st || !status) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&sim_S.mu);
  *status = !st->capture          ? CU_STREAM_CAPTURE_STATUS_NONE
            : st->capture->invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                   : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  pthread_mutex_unlock(&sim_S.mu);
  return CUDA_SUCCESS;
}

/* ---- graphs and their instances --------------------------------------- */

CUresult sim_cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *n) {
  NEED_INIT();
  if (!g || !n) return CUDA_ERROR_INVALID_VALUE;
  if (nodes) {
    for (size_t i = 0; i < *n; i++) /* opaque handles: the node's place, from 1 */
      nodes[i] = i < (size_t)g->n ? (CUgraphNode)(uintptr_t)(i + 1) : NULL;
    if (*n > (size_t)g->n) *n = (size_t)g->n;
  } else {
    *n = (size_t)g->n;
  }
  return CUDA_SUCCESS;
}

CUresult sim_cuGraphDestroy(CUgraph g) {
  NEED_INIT();
  if (!g) return CUDA_ERROR_INVALID_VALUE;
  nodes_free(g->nodes, g->n);
  free(g);
  return CUDA_SUCCESS;
}

CUresult sim_cuGraphInstantiateWithFlags(CUgraphExec *out, CUgraph g, unsigned long long flags) {
  NEED_INIT();
  const unsigned long long known = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
                                   CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD | CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
  if (!out || !g || (flags & ~known)) return CUDA_ERROR_INVALID_VALUE;
  struct CUgraphExec_st *x = calloc(1, sizeof *x);
  if (!x) return CUDA_ERROR_OUT_OF_MEMORY;
  if (!(x->nodes = nodes_dup(g->nodes, g->n))) {
    free(x);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  x->n = g->n;
  x->ctx = g->ctx;
  *out = x;
  return CUDA_SUCCESS;
}

CUresult sim_cuGraphExecDestroy(CUgraphExec x) {
  NEED_INIT();
  if (!x) return CUDA_ERROR_INVALID_VALUE;
  nodes_free(x->nodes, x->n); /* queued replays run copies of their own */
  free(x);
  return CUDA_SUCCESS;
}

CUresult sim_cuGraphUpload(CUgraphExec x, CUstream st) {
  NEED_INIT();
  if (!x) return CUDA_ERROR_INVALID_VALUE;
  if (!st) return CUDA_ERROR_INVALID_HANDLE;
  return st->ctx == x->ctx ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT; /* nothing to upload on sim */
}

/* Same topology: as many nodes, each of the same kind (and kernel). */
CUresult sim_cuGraphExecUpdate(CUgraphExec x, CUgraph g, CUgraphExecUpdateResultInfo *info) {
  NEED_INIT();
  if (!x || !g || !info) return CUDA_ERROR_INVALID_VALUE;
  memset(info, 0, sizeof *info);
  int same = x->n == g->n;
  for (int i = 0; same && i < g->n; i++)
    same = x->nodes[i].kind == g->nodes[i].kind && x->nodes[i].func == g->nodes[i].func;
  if (!same) {
    info->result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
  }
  sim_op *v = nodes_dup(g->nodes, g->n);
  if (!v) return CUDA_ERROR_OUT_OF_MEMORY;
  nodes_free(x->nodes, x->n);
  x->nodes = v;
  info->result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
  return CUDA_SUCCESS;
}

CUresult sim_cuGraphLaunch(CUgraphExec x, CUstream st) {
  NEED_INIT();
  if (!x) return CUDA_ERROR_INVALID_VALUE;
  if (!st) return CUDA_ERROR_INVALID_HANDLE;
  if (st->ctx != x->ctx) return CUDA_ERROR_INVALID_CONTEXT;
  /* every node and launch record first: the replay is queued whole or not at all */
  int n = x->n;
  sim_op *ops = nodes_dup(x->nodes, n);
  if (!ops) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&sim_S.mu);
  CUresult r = st->destroying ? CUDA_ERROR_INVALID_HANDLE : st->ctx->sticky;
  for (int i = 0; r == CUDA_SUCCESS && st->capture && i < n; i++) /* a replay inside a capture */
    r = sim_capture_locked(st, &ops[i], NULL);
  int queued = 0;
  if (r == CUDA_SUCCESS && !st->capture) {
    for (; queued < n; queued++) {
      /* the ring grows or the host waits for room: nothing here fails but
       * memory, which only a ring's growth needs */
      if ((r = sim_enqueue_locked(st, &ops[queued])) != CUDA_SUCCESS) break;
      /* the timing model runs the nodes one after another, as the replay
       * does (a node it cannot make only loses that node's time) */
      if (sim_model && st->ms) (void)sim_model_enqueue(st->ms, &ops[queued].mw, NULL, 0);
    }
  }
  pthread_mutex_unlock(&sim_S.mu);
  /* the launch records of nodes not queued (or captured: the graph took those) */
  for (int i = queued; i < n; i++) free(ops[i].launch);
  free(ops);
  return r;
}
