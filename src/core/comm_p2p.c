/*
 * comm_p2p.c -- point to point calls between the ranks of a communicator
 * (comm:send, comm:recv), all_to_all and the barrier (comm.h). A part whose
 * peer is a rank of this process waits in the communicator until its match
 * is given: one thread cannot queue a send and its recv in two NCCL groups
 * (the first would wait for the second), so the matched parts are queued
 * together, as one group.
 */
#include "comm.h"
#include "comm_internal.h"
#include "comm_check.h"

#include <stdint.h>
#include <stdlib.h>

#include "device.h"
#include "graph.h"
#include "memory.h"
#include "nccl_table.h"
#include "queue.h"
#include "runtime.h"
#include "stream.h"
#include "trace.h"

typedef struct gl_p2p_part {
  int i, peer, is_send; /* local rank, peer (a rank), direction */
  gl_slice *x;
  gl_stream *s;
  uint64_t seq; /* s->seq when given: nothing may be queued on s until the part is */
  int loc;      /* where it was given */
  const char *call;
} gl_p2p_part;

static int peer_local(const gl_comm *c, int peer) { return peer >= c->first_rank && peer < c->first_rank + c->n; }

static void part_text(const gl_comm *c, const gl_p2p_part *p, gl_buf *b) {
  gl_buf_printf(b, "%s at %s on rank %d (%s rank %d)", p->call, gl_loc_text(c->rt, p->loc), c->first_rank + p->i,
                p->is_send ? "to" : "from", p->peer);
}

int gl_comm_p2p_unmatched(gl_comm *c, const char *what) {
  if (c->np2p == 0) return 0;
  gl_buf b = GL_BUF_INIT;
  part_text(c, &c->p2p[0], &b);
  gl_fail(c->rt, "%s: %s waits for its matching %s (ranks of this process are queued together, as one NCCL group): "
                 "give it first",
          what, gl_buf_str(&b), c->p2p[0].is_send ? "comm:recv" : "comm:send");
  gl_buf_free(&b);
  return -1;
}

void gl_comm_p2p_drop(gl_comm *c) {
  for (int k = 0; k < c->np2p; k++) gl_stream_unref(c->p2p[k].s);
  free(c->p2p);
  c->p2p = NULL;
  c->np2p = c->cap2p = 0;
}

/* Every waiting part matched: each send from a to b by as many recvs of b from a, of the same count and dtype. */
static int all_matched(const gl_comm *c) {
  for (int k = 0; k < c->np2p; k++) {
    const gl_p2p_part *p = &c->p2p[k];
    int me = c->first_rank + p->i, balance = 0;
    for (int j = 0; j < c->np2p; j++) {
      const gl_p2p_part *q = &c->p2p[j];
      int qme = c->first_rank + q->i;
      if (q->is_send == p->is_send && qme == me && q->peer == p->peer) balance++;
      if (q->is_send != p->is_send && qme == p->peer && q->peer == me) balance--;
    }
    if (balance > 0) return 0;
  }
  return 1;
}

/* The matched parts' slices agree (the k-th send from a to b and the k-th recv of b from a). */
static int check_pairs(gl_comm *c, const char *what) {
  for (int k = 0; k < c->np2p; k++) {
    const gl_p2p_part *p = &c->p2p[k];
    if (!p->is_send) continue;
    int me = c->first_rank + p->i, nth = 0;
    for (int j = 0; j < k; j++)
      if (c->p2p[j].is_send && c->first_rank + c->p2p[j].i == me && c->p2p[j].peer == p->peer) nth++;
    for (int j = 0; j < c->np2p; j++) {
      const gl_p2p_part *q = &c->p2p[j];
      if (q->is_send || c->first_rank + q->i != p->peer || q->peer != me || nth-- > 0) continue;
      if (q->x->count != p->x->count || q->x->dtype != p->x->dtype) {
        gl_buf a = GL_BUF_INIT, b = GL_BUF_INIT;
        part_text(c, p, &a);
        part_text(c, q, &b);
        gl_fail(c->rt, "%s: %s sends %zu %s, but its matching %s receives %zu %s: the two must agree", what,
                gl_buf_str(&a), p->x->count, gl_dtypes[p->x->dtype].name, gl_buf_str(&b), q->x->count,
                gl_dtypes[q->x->dtype].name);
        gl_buf_free(&a);
        gl_buf_free(&b);
        return -1;
      }
      break;
    }
  }
  return 0;
}

static int queue_parts_in(gl_comm *c, const char *what, gl_p2p_part *parts, int n, gl_site *site, int publish);

/* Parts[0 .. n) admitted on their streams, queued as one NCCL group,
 * recorded; publish: each published to a job's check once admitted (sends
 * and recvs; all_to_all is published as a collective). */
static int queue_parts(gl_comm *c, const char *what, gl_p2p_part *parts, int n, gl_site *site, int publish) {
  if (c->check && gl_comm_check_enter(c, what) != 0) return -1;
  int rc = queue_parts_in(c, what, parts, n, site, publish);
  if (c->check) gl_comm_check_leave(c);
  return rc;
}

static int queue_parts_in(gl_comm *c, const char *what, gl_p2p_part *parts, int n, gl_site *site, int publish) {
  gl_runtime *rt = c->rt;
  gl_operand *o = calloc((size_t)n + 1, sizeof *o);
  gl_op *ops = calloc((size_t)n + 1, sizeof *ops);
  if (!o || !ops) {
    free(o), free(ops);
    return gl_fail_nomem(rt, NULL);
  }
  int admitted = 0, rc = 0;
  for (int k = 0; k < n && rc == 0; k++) {
    gl_slice *x = parts[k].x;
    o[k] = (gl_operand){&x->a->acc, x->lo, x->hi, !parts[k].is_send, x, NULL, parts[k].call, 0, NULL};
    ops[k] = (gl_op){.kind = GL_OP_COLL, .name = parts[k].call, .call = parts[k].call, .bytes = gl_slice_bytes(x),
                     .opnd = &o[k], .nopnd = 1};
    rc = gl_queue_admit(parts[k].s, &ops[k], site);
    if (rc == 0) admitted++;
  }
  if (rc != 0) {
    for (int k = 0; k < admitted; k++) gl_queue_recorded(parts[k].s, &ops[k], site);
    free(o), free(ops);
    return -1;
  }
  for (int k = 0; k < n && publish && c->check; k++)
    gl_comm_check_publish_p2p(c, parts[k].is_send, parts[k].peer, (int)parts[k].x->dtype, parts[k].x->count,
                              parts[k].call, parts[k].loc);
  gld_ncclResult r = gld_nc.ncclGroupStart();
  int failed = -1;
  for (int k = 0; k < n && r == GL_NCCL_SUCCESS; k++) {
    gl_p2p_part *p = &parts[k];
    gl_set_ctx(c->devs[p->i]);
    if (rt->trace) gl_trace_begin(p->s);
    void *ptr = (void *)(uintptr_t)gl_slice_ptr(p->x);
    int t = gl_comm_nccl_type(p->x->dtype);
    r = p->is_send ? gld_nc.ncclSend(ptr, p->x->count, t, p->peer, c->nc[p->i], p->s->cu)
                   : gld_nc.ncclRecv(ptr, p->x->count, t, p->peer, c->nc[p->i], p->s->cu);
    if (r != GL_NCCL_SUCCESS) failed = k;
  }
  gld_ncclResult end = gld_nc.ncclGroupEnd();
  for (int k = 0; k < n; k++) gl_queue_recorded(parts[k].s, &ops[k], site);
  free(o), free(ops);
  if (r == GL_NCCL_SUCCESS && end == GL_NCCL_SUCCESS) {
    gl_stream *streams[GL_MAX_LOCAL_RANKS];
    for (int i = 0; i < c->n; i++) streams[i] = c->devs[i]->main;
    for (int k = 0; k < n; k++) streams[parts[k].i] = parts[k].s;
    return gl_comm_mark_inflight(c, streams);
  }
  gl_buf_free(&c->poison);
  if (r != GL_NCCL_SUCCESS)
    gl_buf_printf(&c->poison, "%s: rank %d (device %d): %s failed: %s", what, c->first_rank + parts[failed].i,
                  c->devs[parts[failed].i]->ordinal, parts[failed].is_send ? "ncclSend" : "ncclRecv",
                  gl_comm_nccl_text(r));
  else
    gl_buf_printf(&c->poison, "%s: ncclGroupEnd failed: %s", what, gl_comm_nccl_text(end));
  return gl_fail(rt, "%s", gl_buf_str(&c->poison));
}

static int check_common(gl_comm *c, const char *what, int i, const char *role, gl_slice *x, gl_stream *s) {
  gl_runtime *rt = c->rt;
  int rank = c->first_rank + i;
  if (gl_comm_check_slice(c, what, role, i, x) != 0) return -1;
  if (s->dev != c->devs[i])
    return gl_fail(rt, "%s: the stream of rank %d, '%s', is on device %d, but rank %d is on device %d", what, rank,
                   s->name, s->dev->ordinal, rank, c->devs[i]->ordinal);
  if (gl_stream_check(s) != 0) return -1;
  if (gl_comm_nccl_type(x->dtype) < 0)
    return gl_fail(rt, "%s: NCCL has no %s type (it takes i8, u8, i32, u32, i64, u64, f16, bf16, f32 and f64)", what,
                   gl_dtypes[x->dtype].name);
  return 0;
}

static int prelude(gl_comm *c, const char *what, int allow_pending) {
  gl_runtime *rt = c->rt;
  if (allow_pending ? 0 : gl_comm_usable(c, what) != 0) return -1;
  if (allow_pending && c->closed)
    return gl_fail(rt, "%s: the communicator was closed (at %s)", what, gl_loc_text(rt, c->closed_at));
  if (allow_pending && c->poison.n)
    return gl_fail(rt, "%s: the communicator is unusable after an earlier error: %s", what, gl_buf_str(&c->poison));
  if (rt->capture)
    return gl_fail(rt, "%s: collectives cannot be captured into a graph yet (graph '%s', %s at %s)", what,
                   rt->capture->name, rt->names.capture, gl_loc_text(rt, rt->capture->capture_loc));
  return 0;
}

int gl_comm_p2p(const gl_p2p_req *k) {
  gl_comm *c = k->comm;
  gl_runtime *rt = c->rt;
  const char *what = k->call;
  if (prelude(c, what, 1) != 0) return -1;
  int any = 0;
  for (int i = 0; i < c->n; i++) {
    if (!k->x[i]) continue;
    any = 1;
    int rank = c->first_rank + i;
    if (k->peer[i] < 0 || k->peer[i] >= c->size)
      return gl_fail(rt, "%s: peer %d of rank %d is not a rank of this communicator (0 to %d)", what, k->peer[i], rank,
                     c->size - 1);
    if (check_common(c, what, i, k->is_send ? "send" : "recv", k->x[i], k->streams[i]) != 0) return -1;
  }
  if (!any) return gl_fail(rt, "%s: no rank of this process takes part (every entry is false)", what);
  /* the waiting parts' streams took nothing since */
  for (int j = 0; j < c->np2p; j++)
    if (c->p2p[j].s->seq != c->p2p[j].seq) {
      gl_buf b = GL_BUF_INIT;
      part_text(c, &c->p2p[j], &b);
      gl_fail(rt, "%s: work was queued on stream '%s' (device %d) after %s and before its match: it would run before "
                  "it; the waiting parts are dropped",
              what, c->p2p[j].s->name, c->p2p[j].s->dev->ordinal, gl_buf_str(&b));
      gl_buf_free(&b);
      gl_comm_p2p_drop(c);
      return -1;
    }
  int need = c->np2p + c->n;
  if (need > c->cap2p) {
    gl_p2p_part *v = realloc(c->p2p, (size_t)need * sizeof *v);
    if (!v) return gl_fail_nomem(rt, NULL);
    c->p2p = v, c->cap2p = need;
  }
  int first_new = c->np2p, loc = gl_site_loc(rt, k->site);
  gl_p2p_part remote[GL_MAX_LOCAL_RANKS];
  int nremote = 0;
  for (int i = 0; i < c->n; i++) {
    if (!k->x[i]) continue;
    gl_p2p_part p = {i, k->peer[i], k->is_send, k->x[i], k->streams[i], k->streams[i]->seq, loc, what};
    if (!peer_local(c, p.peer)) {
      remote[nremote++] = p;
      continue;
    }
    gl_stream_ref(p.s);
    c->p2p[c->np2p++] = p;
  }
  if (nremote && queue_parts(c, what, remote, nremote, k->site, 1) != 0) return -1;
  if (c->np2p == first_new || !all_matched(c)) return 0;
  if (check_pairs(c, what) != 0) {
    gl_comm_p2p_drop(c);
    return -1;
  }
  int n = c->np2p;
  gl_p2p_part *parts = c->p2p;
  c->p2p = NULL, c->np2p = c->cap2p = 0;
  int rc = queue_parts(c, what, parts, n, k->site, 1);
  for (int j = 0; j < n; j++) gl_stream_unref(parts[j].s);
  free(parts);
  return rc;
}

int gl_comm_all_to_all(gl_comm *c, const char *what, gl_slice **send, gl_slice **recv, gl_stream **streams,
                       gl_site *site) {
  gl_runtime *rt = c->rt;
  if (prelude(c, what, 0) != 0) return -1;
  size_t size = (size_t)c->size, n = send[0]->count;
  gl_dtype dt = send[0]->dtype;
  for (int i = 0; i < c->n; i++) {
    int rank = c->first_rank + i;
    if (check_common(c, what, i, "send", send[i], streams[i]) || check_common(c, what, i, "recv", recv[i], streams[i]))
      return -1;
    if (send[i]->dtype != dt || recv[i]->dtype != dt)
      return gl_fail(rt, "%s: every send and recv must have one dtype, got %s (send of rank %d) and %s (%s of rank %d)",
                     what, gl_dtypes[dt].name, c->first_rank,
                     gl_dtypes[send[i]->dtype != dt ? send[i]->dtype : recv[i]->dtype].name,
                     send[i]->dtype != dt ? "send" : "recv", rank);
    if (send[i]->count != n || recv[i]->count != n) {
      if (i == 0) /* the first rank's own pair differs */
        return gl_fail(rt, "%s: every rank's send and recv must have the same number of elements: rank %d's send has "
                           "%zu, its recv %zu", what, rank, send[i]->count, recv[i]->count);
      return gl_fail(rt, "%s: every rank's send and recv must have the same number of elements: rank %d's send has %zu, "
                         "rank %d's send %zu and recv %zu",
                     what, c->first_rank, n, rank, send[i]->count, recv[i]->count);
    }
    if (n % size != 0)
      return gl_fail(rt, "%s: send and recv must hold one block per rank (%zu ranks), got %zu elements", what, size, n);
    const gl_slice *sx = send[i], *rx = recv[i];
    if (gl_ranges_overlap(rx, rx->lo, rx->hi, sx, sx->lo, sx->hi))
      return gl_fail(rt, "%s: recv of rank %d overlaps its send: all_to_all is not in place", what, rank);
  }
  size_t block = n / size;
  gl_p2p_part *parts = calloc((size_t)c->n * size * 2 + 1, sizeof *parts);
  gl_slice *views = calloc((size_t)c->n * size * 2 + 1, sizeof *views);
  if (!parts || !views) {
    free(parts), free(views);
    return gl_fail_nomem(rt, NULL);
  }
  int np = 0, loc = gl_site_loc(rt, site);
  size_t es = gl_dtypes[dt].size;
  for (int i = 0; i < c->n; i++)
    for (int dir = 0; dir < 2; dir++)
      for (size_t r = 0; r < size; r++) {
        gl_slice *v = &views[np], *whole = dir == 0 ? send[i] : recv[i];
        *v = *whole; /* block r of it */
        v->offset += r * block;
        v->count = block;
        v->lo = whole->lo + r * block * es;
        v->hi = v->lo + block * es;
        v->is_view = 1;
        parts[np] = (gl_p2p_part){i, (int)r, dir == 0, v, streams[i], 0, loc, what};
        np++;
      }
  if (c->check) gl_comm_check_publish(c, GL_CHECK_ALL_TO_ALL, (int)dt, n, -1, -1, what, site);
  int rc = block ? queue_parts(c, what, parts, np, site, 0) : 0;
  free(parts), free(views);
  return rc;
}

int gl_comm_barrier(gl_comm *c, const char *what, gl_site *site) {
  gl_runtime *rt = c->rt;
  if (prelude(c, what, 0) != 0) return -1;
  CUdeviceptr buf[GL_MAX_LOCAL_RANKS] = {0};
  gl_stream *streams[GL_MAX_LOCAL_RANKS];
  CUresult cr = CUDA_SUCCESS;
  int i = 0;
  for (; i < c->n && cr == CUDA_SUCCESS; i++) {
    streams[i] = c->devs[i]->main;
    if (gl_stream_check(streams[i]) != 0) cr = CUDA_ERROR_INVALID_VALUE;
    else {
      gl_set_ctx(c->devs[i]);
      cr = gld_drv.cuMemAllocAsync(&buf[i], 4, streams[i]->cu);
      if (cr == CUDA_SUCCESS) cr = gld_drv.cuMemsetD32Async(buf[i], 0, 1, streams[i]->cu);
      if (cr != CUDA_SUCCESS) gl_fail_cu(rt, c->devs[i], cr, "cuMemAllocAsync", site);
    }
  }
  gld_ncclResult r = GL_NCCL_SUCCESS, end = GL_NCCL_SUCCESS;
  if (cr == CUDA_SUCCESS && c->check && gl_comm_check_enter(c, what) != 0) cr = CUDA_ERROR_INVALID_VALUE;
  if (cr == CUDA_SUCCESS) {
    if (c->check) gl_comm_check_publish(c, GL_CHECK_BARRIER, GL_I32, 1, -1, -1, what, site);
    r = gld_nc.ncclGroupStart();
    for (int j = 0; j < c->n && r == GL_NCCL_SUCCESS; j++) {
      gl_set_ctx(c->devs[j]);
      r = gld_nc.ncclAllReduce((void *)(uintptr_t)buf[j], (void *)(uintptr_t)buf[j], 1, GL_NCCL_INT32, GL_NCCL_SUM,
                               c->nc[j], streams[j]->cu);
    }
    end = gld_nc.ncclGroupEnd();
    if (c->check) gl_comm_check_leave(c);
  }
  for (int j = 0; j < i; j++)
    if (buf[j]) {
      gl_set_ctx(c->devs[j]);
      gld_drv.cuMemFreeAsync(buf[j], streams[j]->cu);
    }
  if (cr != CUDA_SUCCESS) return -1;
  if (r != GL_NCCL_SUCCESS || end != GL_NCCL_SUCCESS) {
    gl_buf_free(&c->poison);
    gl_buf_printf(&c->poison, "%s: %s failed: %s", what, r != GL_NCCL_SUCCESS ? "ncclAllReduce" : "ncclGroupEnd",
                  gl_comm_nccl_text(r != GL_NCCL_SUCCESS ? r : end));
    return gl_fail(rt, "%s", gl_buf_str(&c->poison));
  }
  if (c->n > 1 || c->check) { /* every rank here, or checked: watched until done, a fault or verdict ends the wait */
    if (gl_comm_mark_inflight(c, streams) != 0) return -1;
    if (gl_comm_settle(rt, c->devs[0], site) != 0) return -1;
    return c->poison.n ? gl_fail(rt, "%s: %s", what, gl_buf_str(&c->poison)) : 0;
  }
  gl_set_ctx(c->devs[0]);
  cr = gld_drv.cuStreamSynchronize(streams[0]->cu);
  if (cr != CUDA_SUCCESS) return gl_fail_cu(rt, c->devs[0], cr, "cuStreamSynchronize", site);
  return 0;
}
