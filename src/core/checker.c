/*
 * checker.c -- access records (see checker.h): per stream a lane of
 * disjoint spans sorted by byte range.
 */
#include "checker.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "comm.h"
#include "device.h"
#include "runtime.h"
#include "stream.h"
#include "driver_ext.h"

static uint64_t max2(uint64_t a, uint64_t b) { return a > b ? a : b; }
static uint64_t span_last(const gl_span *p) { return max2(p->wseq, p->rseq); }
static uint64_t lane_last(const gl_lane *l) { return max2(max2(l->wmax, l->rmax), l->blind); }

/* Is t's access at position seq ordered before s's next work (s NULL: the
 * host; has it seen it finish)? A position of 0 is no access. */
static int known(const gl_stream *s, const gl_stream *t, uint64_t seq) {
  if (!seq) return 1;
  return s ? gl_ordered_before(s, t, seq) : t->done_seq >= seq;
}

static void drop_lane(gl_accesses *acc, int i) {
  gl_stream_unref(acc->lanes[i].s);
  free(acc->lanes[i].v);
  acc->lanes[i] = acc->lanes[--acc->n];
}

/* Forget the lanes the host has seen finish. */
static void prune(gl_accesses *acc) {
  for (int i = 0; i < acc->n;) {
    if (acc->lanes[i].s->done_seq >= lane_last(&acc->lanes[i])) drop_lane(acc, i);
    else i++;
  }
}

/* The first span of l that ends after byte lo (l->n when none): a search
 * that starts at the lane's finger (where the last one ended) and gallops
 * away from it, so that accesses moving along the memory (batches,
 * windows) cost O(1), and any other O(log r). */
static int first_after(gl_lane *l, uint64_t lo) {
  int n = l->n, f = l->finger < n ? l->finger : n;
  int a, b; /* the answer is in [a, b] */
  if (f < n && l->v[f].hi <= lo) { /* ahead of the finger */
    int step = 1;
    a = f + 1;
    while (a + step <= n && l->v[a + step - 1].hi <= lo) a += step, step *= 2;
    b = a + step - 1 < n ? a + step - 1 : n;
  } else { /* at or behind it */
    int step = 1;
    b = f;
    while (b - step >= 0 && l->v[b - step].hi > lo) b -= step, step *= 2;
    a = b - step + 1 > 0 ? b - step + 1 : 0;
  }
  while (a < b) {
    int m = (a + b) / 2;
    if (l->v[m].hi <= lo) a = m + 1;
    else b = m;
  }
  l->finger = a;
  return a;
}

static int found(gl_stream *t, int bad_write, int loc, gl_conflict *c) {
  c->other = t;
  c->other_writes = bad_write;
  c->other_loc = loc;
  return 1;
}

/* Does an access of [lo, hi) by s (NULL: the host) conflict with lane l? */
static int lane_conflict(gl_lane *l, const gl_stream *s, uint64_t lo, uint64_t hi, int write,
                         gl_conflict *c) {
  const gl_stream *t = l->s;
  if (!known(s, t, l->blind)) return found(l->s, 1, l->blind_loc, c);
  if (known(s, t, l->wmax) && (!write || known(s, t, l->rmax))) return 0; /* the whole lane */
  for (int i = first_after(l, lo); i < l->n && l->v[i].lo < hi; i++) {
    const gl_span *p = &l->v[i];
    int bad_w = !known(s, t, p->wseq);
    int bad_r = write && !known(s, t, p->rseq);
    if (bad_w || bad_r) return found(l->s, bad_w, bad_w ? p->wloc : p->rloc, c);
  }
  return 0;
}

int gl_access_conflict(gl_accesses *acc, const gl_stream *s, uint64_t lo, uint64_t hi, int write,
                       gl_conflict *c) {
  if (lo == hi) return 0;
  for (int i = 0; i < acc->n; i++)
    if (acc->lanes[i].s != s && lane_conflict(&acc->lanes[i], s, lo, hi, write, c)) return 1;
  return 0;
}

int gl_access_conflict_host(gl_accesses *acc, uint64_t lo, uint64_t hi, int write, gl_conflict *c) {
  if (acc->n == 0 || lo == hi) return 0;
  prune(acc);
  for (int i = 0; i < acc->n; i++)
    if (lane_conflict(&acc->lanes[i], NULL, lo, hi, write, c)) return 1;
  return 0;
}

int gl_access_reserve_slow(gl_accesses *acc, int k) {
  /* the lanes the host has seen finish go first; a memory used by one stream
   * alone keeps its lane (lane_put sweeps its finished spans) */
  if (acc->n > 1 || acc->n + k > acc->cap) prune(acc);
  if (acc->n + k <= acc->cap) return 0;
  int cap = acc->cap ? acc->cap : 2;
  while (cap < acc->n + k) cap *= 2;
  gl_lane *v = realloc(acc->lanes, (size_t)cap * sizeof *v);
  if (!v) return -1;
  acc->lanes = v;
  acc->cap = cap;
  return 0;
}

static gl_lane *lane_of(gl_accesses *acc, gl_stream *s) {
  for (int i = 0; i < acc->n; i++)
    if (acc->lanes[i].s == s) return &acc->lanes[i];
  gl_lane *l = &acc->lanes[acc->n++]; /* gl_access_reserve made room */
  memset(l, 0, sizeof *l);
  l->s = s;
  gl_stream_ref(s);
  l->blind_loc = GL_LOC_NONE;
  return l;
}

/* Forget the spans the host has seen finish. */
static void sweep(gl_lane *l) {
  uint64_t done = l->s->done_seq;
  int w = 0;
  for (int k = 0; k < l->n; k++)
    if (span_last(&l->v[k]) > done) l->v[w++] = l->v[k];
  l->n = w;
  l->swept = w;
  l->last = 0;
}

/* May touching spans a and b of one stream be kept as one? When they agree;
 * or when they have the same kinds of access (a write, a read) and all their
 * positions are past the latest one anything has learned of the stream
 * (learned): no one, now or later, can then tell them apart (clock.h), and
 * the later position of each kind stands for both. */
static int mergeable(const gl_span *a, const gl_span *b, uint64_t learned) {
  if (a->wseq == b->wseq && a->rseq == b->rseq && a->wloc == b->wloc && a->rloc == b->rloc) return 1;
  if (!a->wseq != !b->wseq || !a->rseq != !b->rseq) return 0;
  return (!a->wseq || (a->wseq > learned && b->wseq > learned)) &&
         (!a->rseq || (a->rseq > learned && b->rseq > learned));
}

/* a absorbs b (mergeable, touching on either side) */
static void absorb(gl_span *a, const gl_span *b) {
  if (b->lo < a->lo) a->lo = b->lo;
  if (b->hi > a->hi) a->hi = b->hi;
  if (b->wseq > a->wseq) a->wseq = b->wseq, a->wloc = b->wloc;
  if (b->rseq > a->rseq) a->rseq = b->rseq, a->rloc = b->rloc;
}

/* Append piece p to the list, merged into the last one when they touch and may be one. */
static void add_piece(gl_span *out, int *np, gl_span p, uint64_t learned) {
  if (p.lo == p.hi) return;
  if (*np && out[*np - 1].hi == p.lo && mergeable(&out[*np - 1], &p, learned)) absorb(&out[*np - 1], &p);
  else out[(*np)++] = p;
}

/* The spans of l that replace spans i..j-1 once an access of [lo, hi)
 * (seq, loc) by l's stream is recorded. A write supersedes the stream's own
 * earlier records of the range: whatever is ordered after it is ordered
 * after them, and whatever is not conflicts with the write itself. A read
 * keeps each piece's write and gives all of them its own position. */
static int pieces(const gl_lane *l, int i, int j, uint64_t lo, uint64_t hi, int write, uint64_t seq, int loc,
                  gl_span *out) {
  uint64_t cap = l->s->learned;
  int np = 0;
  if (i < j && l->v[i].lo < lo) { /* what lies before lo */
    gl_span left = l->v[i];
    left.hi = lo;
    add_piece(out, &np, left, cap);
  }
  if (write) {
    add_piece(out, &np, (gl_span){lo, hi, seq, 0, loc, GL_LOC_NONE}, cap);
  } else {
    uint64_t at = lo;
    for (int k = i; k < j; k++) {
      const gl_span *p = &l->v[k];
      uint64_t a = max2(p->lo, lo), b = p->hi < hi ? p->hi : hi;
      add_piece(out, &np, (gl_span){at, a, 0, seq, GL_LOC_NONE, loc}, cap); /* a gap: no write */
      add_piece(out, &np, (gl_span){a, b, p->wseq, seq, p->wloc, loc}, cap);
      at = b;
    }
    add_piece(out, &np, (gl_span){at, hi, 0, seq, GL_LOC_NONE, loc}, cap);
  }
  if (i < j && l->v[j - 1].hi > hi) { /* what lies after hi */
    gl_span right = l->v[j - 1];
    right.lo = hi;
    add_piece(out, &np, right, cap);
  }
  return np;
}

/* Record an access of [lo, hi) in l's spans; -1 when out of memory (the
 * spans are then unchanged). */
static int lane_put(gl_lane *l, uint64_t lo, uint64_t hi, int write, uint64_t seq, int loc) {
  gl_span *c = l->last < l->n ? &l->v[l->last] : NULL;
  if (c && c->lo == lo && c->hi == hi) { /* the same range as the last record: the usual case */
    if (write) *c = (gl_span){lo, hi, seq, 0, loc, GL_LOC_NONE};
    else c->rseq = seq, c->rloc = loc;
    return 0;
  }
  if (c && c->lo <= lo && hi <= c->hi) { /* inside the last record's span, which may take it whole */
    gl_span piece = write ? (gl_span){lo, hi, seq, 0, loc, GL_LOC_NONE} : (gl_span){lo, hi, c->wseq, seq, c->wloc, loc};
    if (mergeable(c, &piece, l->s->learned)) {
      absorb(c, &piece);
      return 0;
    }
  }
  if (l->n >= 64 && l->n >= 2 * l->swept) sweep(l);
  int i = first_after(l, lo), j = i;
  while (j < l->n && l->v[j].lo < hi) j++;
  uint64_t cap = l->s->learned;
  if (j == i + 1 && l->v[i].lo <= lo && hi <= l->v[i].hi) { /* inside one span that may take it whole */
    gl_span *p = &l->v[i];
    gl_span piece = write ? (gl_span){lo, hi, seq, 0, loc, GL_LOC_NONE} : (gl_span){lo, hi, p->wseq, seq, p->wloc, loc};
    if (mergeable(p, &piece, cap)) { /* what splitting and merging again would give */
      absorb(p, &piece);
      l->last = i;
      return 0;
    }
  }
  gl_span small[16], *out = small;
  int most = 2 * (j - i) + 3;
  if (most > (int)(sizeof small / sizeof small[0]) && !(out = malloc((size_t)most * sizeof *out))) return -1;
  int np = pieces(l, i, j, lo, hi, write, seq, loc, out);
  /* merge with the neighbours the pieces touch */
  if (i > 0 && l->v[i - 1].hi == out[0].lo && mergeable(&l->v[i - 1], &out[0], cap)) absorb(&out[0], &l->v[--i]);
  if (j < l->n && out[np - 1].hi == l->v[j].lo && mergeable(&out[np - 1], &l->v[j], cap))
    absorb(&out[np - 1], &l->v[j++]);
  int n = l->n - (j - i) + np;
  if (n > l->cap) {
    int cap = l->cap ? 2 * l->cap : 4;
    while (cap < n) cap *= 2;
    gl_span *v = realloc(l->v, (size_t)cap * sizeof *v);
    if (!v) {
      if (out != small) free(out);
      return -1;
    }
    l->v = v;
    l->cap = cap;
  }
  memmove(&l->v[i + np], &l->v[j], (size_t)(l->n - j) * sizeof *l->v);
  memcpy(&l->v[i], out, (size_t)np * sizeof *out);
  l->n = n;
  l->last = i;
  for (int k = i; k < i + np; k++)
    if (l->v[k].lo == lo && l->v[k].hi == hi) l->last = k;
  if (out != small) free(out);
  return 0;
}

/* A write of [lo, hi) by s supersedes the other streams' spans it covers
 * that s is ordered after: whatever is ordered after the write is ordered
 * after them, and whatever is not conflicts with the write. Spans are
 * dropped or trimmed, never split (which could need memory); a lane left
 * with nothing is dropped (the streams ordered after it stand for it in
 * frees and host waits). */
static void cover_others(gl_accesses *acc, const gl_stream *s, uint64_t lo, uint64_t hi) {
  for (int li = 0; li < acc->n;) {
    gl_lane *l = &acc->lanes[li];
    if (l->s == s || l->n == 0) {
      li++;
      continue;
    }
    int i = first_after(l, lo), w = i, k = i;
    for (; k < l->n && l->v[k].lo < hi; k++) {
      gl_span p = l->v[k];
      if (gl_ordered_before(s, l->s, span_last(&p))) {
        if (p.lo >= lo && p.hi <= hi) continue; /* covered: dropped */
        if (p.lo < lo && p.hi > hi) {
        } else if (p.lo < lo) {
          p.hi = lo;
        } else {
          p.lo = hi;
        }
      }
      l->v[w++] = p;
    }
    if (w != k) {
      memmove(&l->v[w], &l->v[k], (size_t)(l->n - k) * sizeof *l->v);
      l->n -= k - w;
      l->last = 0;
      if (l->swept > l->n) l->swept = l->n;
    }
    if (l->n == 0 && !l->blind && gl_ordered_before(s, l->s, lane_last(l))) drop_lane(acc, li);
    else li++;
  }
}

void gl_access_record(gl_accesses *acc, gl_stream *s, uint64_t lo, uint64_t hi, int write, int loc) {
  if (lo == hi) return;
  uint64_t seq = s->seq;
  if (write && s->dev->rt->policy != GL_POLICY_OFF && acc->n > 1) cover_others(acc, s, lo, hi);
  gl_lane *l = lane_of(acc, s);
  if (write) l->wmax = seq;
  else l->rmax = seq;
  if (s->dev->rt->policy == GL_POLICY_OFF || lane_put(l, lo, hi, write, seq, loc) != 0) {
    l->blind = seq; /* off reads no ranges; without memory, the whole memory stands for the range */
    l->blind_loc = loc;
  }
}

int gl_access_admit(gl_accesses *acc, gl_stream *s, uint64_t lo, uint64_t hi, int write, gl_conflict *c,
                    gl_site *site) {
  gl_policy policy = s->dev->rt->policy;
  if (policy == GL_POLICY_OFF) return 0;
  while (gl_access_conflict(acc, s, lo, hi, write, c)) {
    if (policy == GL_POLICY_STRICT) return 1;
    if (gl_stream_join(s, c->other, 1, site) != 0) return -1;
  }
  return 0;
}

void gl_access_mark(gl_accesses *acc, gl_stream *s) {
  gl_lane *l = acc->n && acc->lanes[0].s == s ? &acc->lanes[0] : lane_of(acc, s);
  l->rmax = s->seq;
}

int gl_access_order_all(gl_accesses *acc, gl_stream *waiter, gl_site *site) {
  for (int i = 0; i < acc->n; i++) {
    gl_lane *l = &acc->lanes[i];
    if (gl_ordered_before(waiter, l->s, lane_last(l))) continue;
    if (gl_stream_order_after(waiter, l->s, 0, site) != 0) return -1;
  }
  return 0;
}

int gl_access_wait_all(gl_accesses *acc, int learn, gl_site *site) {
  for (int i = 0; i < acc->n; i++) {
    gl_stream *s = acc->lanes[i].s;
    if (s->done_seq >= lane_last(&acc->lanes[i]) || !s->dev->opened) continue;
    /* A poisoned device's queued work may still run: one poisoned by a rank's
     * fault elsewhere goes on once its aborted collectives end, and a faulted
     * one drains at once. A wait that learns reports the poison; one that
     * does not (a release's) waits, so that nothing is freed under that work. */
    if (gl_device_poisoned(s->dev)) {
      if (learn) return gl_device_check(s->dev);
    } else if (gl_comm_settle(s->dev->rt, s->dev, site) != 0) { /* a collective that cannot complete poisoned it */
      if (learn) return -1;
    }
    gl_set_ctx(s->dev);
    uint64_t seq = s->seq;
    CUresult r = s->cu ? gld_drv.cuStreamSynchronize(s->cu)
                       : s->final_ev ? gld_drv.cuEventSynchronize(s->final_ev) : CUDA_SUCCESS;
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
    gl_stream *s = acc->lanes[i].s;
    if (s->done_seq >= lane_last(&acc->lanes[i]) || !s->dev->opened) continue; /* poisoned: as gl_access_wait_all */
    gl_set_ctx(s->dev);
    int q = gld_drv_quiet(1); /* bookkeeping: moves no clock */
    CUresult r = s->cu ? gld_drv.cuStreamQuery(s->cu) : s->final_ev ? gld_drv.cuEventQuery(s->final_ev) : CUDA_SUCCESS;
    gld_drv_quiet(q);
    if (r == CUDA_ERROR_NOT_READY) return 0;
  }
  return 1;
}

int gl_access_known_finished(const gl_accesses *acc) {
  for (int i = 0; i < acc->n; i++)
    if (acc->lanes[i].s->done_seq < lane_last(&acc->lanes[i])) return 0;
  return 1;
}

void gl_access_clear(gl_accesses *acc) {
  while (acc->n) drop_lane(acc, acc->n - 1);
  free(acc->lanes);
  acc->lanes = NULL;
  acc->n = acc->cap = 0;
}

int gl_access_spans(const gl_accesses *acc) {
  int n = 0;
  for (int i = 0; i < acc->n; i++) n += acc->lanes[i].n;
  return n;
}
