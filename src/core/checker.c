/*
 * checker.c -- access records (see checker.h).
 */
#include "checker.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "device.h"
#include "stream.h"

static uint64_t last_seq(const gl_access *r) { return r->wseq > r->rseq ? r->wseq : r->rseq; }

/* r conflicts: fill the record (the write, when it is the write that conflicts). */
static int found(const gl_access *r, int bad_write, gl_conflict *c) {
  c->other = r->s;
  c->other_writes = bad_write;
  c->other_loc = bad_write ? r->wloc : r->rloc;
  return 1;
}

static void drop(gl_accesses *acc, int i) {
  gl_stream_unref(acc->v[i].s);
  acc->v[i] = acc->v[--acc->n];
}

/* Forget records the host has seen complete. */
static void prune(gl_accesses *acc) {
  for (int i = 0; i < acc->n;) {
    if (acc->v[i].s->done_seq >= last_seq(&acc->v[i])) drop(acc, i);
    else i++;
  }
}

int gl_access_conflict(const gl_accesses *acc, const gl_stream *s, uint64_t lo, uint64_t hi, int write,
                       gl_conflict *c) {
  if (lo == hi) return 0;
  for (int i = 0; i < acc->n; i++) {
    const gl_access *r = &acc->v[i];
    if (r->s == s || r->hi <= lo || hi <= r->lo) continue;
    int bad_w = r->wseq && !gl_ordered_before(s, r->s, r->wseq);
    int bad_r = write && r->rseq && !gl_ordered_before(s, r->s, r->rseq);
    if (bad_w || bad_r) return found(r, bad_w, c);
  }
  return 0;
}

int gl_access_conflict_host(gl_accesses *acc, uint64_t lo, uint64_t hi, int write, gl_conflict *c) {
  if (acc->n == 0) return 0;
  prune(acc);
  for (int i = 0; i < acc->n; i++) {
    const gl_access *r = &acc->v[i];
    if (r->hi <= lo || hi <= r->lo) continue;
    int bad_w = r->wseq && r->s->done_seq < r->wseq;
    int bad_r = write && r->rseq && r->s->done_seq < r->rseq;
    if (bad_w || bad_r) return found(r, bad_w, c);
  }
  return 0;
}

int gl_access_reserve(gl_accesses *acc, int k) {
  if (acc->n + k <= acc->cap) return 0;
  prune(acc);
  if (acc->n + k <= acc->cap) return 0;
  int cap = acc->cap ? acc->cap : 4;
  while (cap < acc->n + k) cap *= 2;
  gl_access *v = realloc(acc->v, (size_t)cap * sizeof *v);
  if (!v) return -1;
  acc->v = v;
  acc->cap = cap;
  return 0;
}

void gl_access_record(gl_accesses *acc, gl_stream *s, uint64_t lo, uint64_t hi, int write, int loc) {
  if (lo == hi) return;
  uint64_t seq = s->seq;
  gl_access *same = NULL;
  for (int i = 0; i < acc->n;) {
    gl_access *r = &acc->v[i];
    if (r->s == s && r->lo == lo && r->hi == hi) {
      same = r;
      i++;
      continue;
    }
    /* a write over a whole record supersedes it when it is ordered after it:
     * anything ordered after this write is ordered after that record too */
    if (write && lo <= r->lo && r->hi <= hi && gl_ordered_before(s, r->s, last_seq(r))) {
      drop(acc, i);
      if (same == &acc->v[acc->n]) same = &acc->v[i]; /* moved by drop */
      continue;
    }
    i++;
  }
  if (!same) { /* gl_access_reserve made room */
    same = &acc->v[acc->n++];
    memset(same, 0, sizeof *same);
    same->s = s;
    gl_stream_ref(s);
    same->lo = lo;
    same->hi = hi;
    same->wloc = same->rloc = -1;
  }
  if (write) {
    same->wseq = seq;
    same->wloc = loc;
  } else {
    same->rseq = seq;
    same->rloc = loc;
  }
}

int gl_access_order_all(gl_accesses *acc, gl_stream *waiter, gl_site *site) {
  gl_stream *done[16]; /* the streams waited for already (the checker learns nothing here) */
  int ndone = 0;
  for (int i = 0; i < acc->n; i++) {
    gl_access *a = &acc->v[i];
    if (gl_ordered_before(waiter, a->s, last_seq(a))) continue;
    int seen = 0;
    for (int j = 0; j < ndone && !seen; j++) seen = done[j] == a->s;
    if (seen) continue;
    if (gl_stream_order_after(waiter, a->s, 0, site) != 0) return -1;
    if (ndone < (int)(sizeof done / sizeof done[0])) done[ndone++] = a->s;
  }
  return 0;
}

int gl_access_wait_all(gl_accesses *acc, int learn, gl_site *site) {
  for (int i = 0; i < acc->n; i++) {
    gl_stream *s = acc->v[i].s;
    if (s->done_seq >= last_seq(&acc->v[i]) || !s->dev->opened) continue;
    if (gl_device_poisoned(s->dev)) {
      if (learn) return gl_device_check(s->dev);
      continue;
    }
    gl_set_ctx(s->dev);
    uint64_t seq = s->seq;
    CUresult r = s->cu ? gl_drv.cuStreamSynchronize(s->cu)
                       : s->final_ev ? gl_drv.cuEventSynchronize(s->final_ev) : CUDA_SUCCESS;
    if (r != CUDA_SUCCESS) {
      if (learn) return gl_fail_cu(s->dev->rt, s->dev, r, s->cu ? "cuStreamSynchronize" : "cuEventSynchronize", site);
      continue;
    }
    if (learn) gl_clock_host_reached(s, seq);
  }
  if (learn) prune(acc);
  return 0;
}

int gl_access_finished(gl_accesses *acc) {
  for (int i = 0; i < acc->n; i++) {
    gl_stream *s = acc->v[i].s;
    if (s->done_seq >= last_seq(&acc->v[i]) || !s->dev->opened || gl_device_poisoned(s->dev)) continue;
    gl_set_ctx(s->dev);
    CUresult r = s->cu ? gl_drv.cuStreamQuery(s->cu) : s->final_ev ? gl_drv.cuEventQuery(s->final_ev) : CUDA_SUCCESS;
    if (r == CUDA_ERROR_NOT_READY) return 0;
  }
  return 1;
}

int gl_access_known_finished(const gl_accesses *acc) {
  for (int i = 0; i < acc->n; i++)
    if (acc->v[i].s->done_seq < last_seq(&acc->v[i])) return 0;
  return 1;
}

void gl_access_clear(gl_accesses *acc) {
  for (int i = 0; i < acc->n; i++) gl_stream_unref(acc->v[i].s);
  free(acc->v);
  acc->v = NULL;
  acc->n = acc->cap = 0;
}
