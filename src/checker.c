/*
 * checker.c -- vector clocks, access records and the policies (see checker.h).
 */
#include "checker.h"
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- streams and clocks ---------------------------------------------- */

void gl_checker_stream_new(gl_runtime *rt, gl_stream *s) {
  s->id = -1;
  for (int i = 0; i < rt->nids; i++) /* reuse a free id */
    if (!rt->by_id[i]) {
      s->id = i;
      break;
    }
  if (s->id < 0) {
    if (rt->nids == rt->capids) {
      int cap = rt->capids ? 2 * rt->capids : 16;
      gl_stream **v = realloc(rt->by_id, (size_t)cap * sizeof *v);
      uint32_t *g = v ? realloc(rt->gen, (size_t)cap * sizeof *g) : NULL;
      if (!v || !g) abort(); /* a few words: cannot fail in practice */
      rt->by_id = v;
      rt->gen = g;
      memset(g + rt->capids, 0, (size_t)(cap - rt->capids) * sizeof *g);
      rt->capids = cap;
    }
    s->id = rt->nids++;
  }
  rt->by_id[s->id] = s;
  s->clock = NULL;
  s->nclock = 0;
}

void gl_checker_stream_free(gl_stream *s) {
  gl_runtime *rt = s->dev->rt;
  if (rt && s->id >= 0 && s->id < rt->nids && rt->by_id[s->id] == s) {
    rt->by_id[s->id] = NULL;
    rt->gen[s->id]++; /* snapshots that name the old stream no longer match */
    /* a reused id must not inherit what others knew of this stream */
    for (int i = 0; i < rt->nids; i++) {
      gl_stream *o = rt->by_id[i];
      if (o && s->id < o->nclock) o->clock[s->id] = 0;
    }
  }
  free(s->clock);
  s->clock = NULL;
  s->nclock = 0;
}

static void clock_raise(gl_stream *s, int id, uint64_t seq) {
  if (id >= s->nclock) {
    if (seq == 0) return;
    int n = id + 8;
    uint64_t *c = realloc(s->clock, (size_t)n * sizeof *c);
    if (!c) abort();
    memset(c + s->nclock, 0, (size_t)(n - s->nclock) * sizeof *c);
    s->clock = c;
    s->nclock = n;
  }
  if (s->clock[id] < seq) s->clock[id] = seq;
}

static int same_gen(gl_runtime *rt, const uint32_t *gens, int i) {
  return !gens || (i < rt->nids && rt->gen[i] == gens[i]);
}

void gl_clock_merge(gl_stream *s, const uint64_t *clock, const uint32_t *gens, int n) {
  gl_runtime *rt = s->dev->rt;
  for (int i = 0; i < n; i++)
    if (clock[i] && i != s->id && same_gen(rt, gens, i)) clock_raise(s, i, clock[i]);
}

void gl_clock_join(gl_stream *s, gl_stream *t) {
  if (s == t) return;
  gl_clock_merge(s, t->clock, NULL, t->nclock);
  clock_raise(s, t->id, t->seq);
}

uint64_t *gl_clock_snapshot(gl_stream *s, uint32_t **gens, int *n) {
  gl_runtime *rt = s->dev->rt;
  int len = s->nclock > s->id + 1 ? s->nclock : s->id + 1;
  uint64_t *c = calloc((size_t)len, sizeof *c);
  uint32_t *g = calloc((size_t)len, sizeof *g);
  if (!c || !g) {
    free(c);
    free(g);
    *gens = NULL;
    *n = 0;
    return NULL;
  }
  if (s->nclock) memcpy(c, s->clock, (size_t)s->nclock * sizeof *c);
  c[s->id] = s->seq;
  for (int i = 0; i < len && i < rt->nids; i++) g[i] = rt->gen[i];
  *gens = g;
  *n = len;
  return c;
}

void gl_clock_host_reached_snapshot(gl_runtime *rt, const uint64_t *clock, const uint32_t *gens, int n) {
  for (int i = 0; i < n && i < rt->nids; i++) {
    gl_stream *t = rt->by_id[i];
    if (t && clock[i] > t->done_seq && same_gen(rt, gens, i)) t->done_seq = clock[i];
  }
}

void gl_clock_host_reached(gl_stream *s, uint64_t seq) {
  if (seq != s->seq) { /* a part of the stream: only its own position is known */
    if (seq > s->done_seq) s->done_seq = seq;
    return;
  }
  s->done_seq = s->seq;
  gl_clock_host_reached_snapshot(s->dev->rt, s->clock, NULL, s->nclock);
}

int gl_ordered_before(gl_stream *s, gl_stream *t, uint64_t seq) {
  if (s == t || t->done_seq >= seq) return 1;
  return t->id < s->nclock && s->clock[t->id] >= seq;
}

/* ---- locations ---------------------------------------------------------- */

static struct {
  char **text;
  int n, cap;
  int *slot; /* hash -> index + 1 */
  int nslot;
} locs;

static unsigned hash_str(const char *s) {
  unsigned h = 2166136261u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

static int intern(const char *text) {
  if (locs.n * 2 >= locs.nslot) { /* grow the table */
    int ns = locs.nslot ? 2 * locs.nslot : 256;
    int *slot = calloc((size_t)ns, sizeof *slot);
    if (!slot) return 0;
    for (int i = 0; i < locs.n; i++) {
      unsigned j = hash_str(locs.text[i]) & (unsigned)(ns - 1);
      while (slot[j]) j = (j + 1) & (unsigned)(ns - 1);
      slot[j] = i + 1;
    }
    free(locs.slot);
    locs.slot = slot;
    locs.nslot = ns;
  }
  unsigned j = hash_str(text) & (unsigned)(locs.nslot - 1);
  while (locs.slot[j]) {
    if (strcmp(locs.text[locs.slot[j] - 1], text) == 0) return locs.slot[j] - 1;
    j = (j + 1) & (unsigned)(locs.nslot - 1);
  }
  if (locs.n == locs.cap) {
    int cap = locs.cap ? 2 * locs.cap : 256;
    char **t = realloc(locs.text, (size_t)cap * sizeof *t);
    if (!t) return 0;
    locs.text = t;
    locs.cap = cap;
  }
  char *copy = strdup(text);
  if (!copy) return 0;
  locs.text[locs.n] = copy;
  locs.slot[j] = locs.n + 1;
  return locs.n++;
}

int gl_loc_here(lua_State *L) {
  lua_Debug ar;
  for (int level = 1; lua_getstack(L, level, &ar); level++) {
    if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0) continue;
    /* a small cache: the same call site again costs a compare */
    static struct { const char *source; int line; int loc; } cache[64];
    unsigned h = ((unsigned)(uintptr_t)ar.source >> 4 ^ (unsigned)ar.currentline * 2654435761u) & 63u;
    if (cache[h].source == ar.source && cache[h].line == ar.currentline && cache[h].loc >= 0 &&
        cache[h].loc < locs.n)
      return cache[h].loc;
    char buf[GL_WHERE_MAX];
    snprintf(buf, sizeof buf, "%s:%d", ar.short_src, ar.currentline);
    int loc = intern(buf);
    cache[h].source = ar.source;
    cache[h].line = ar.currentline;
    cache[h].loc = loc;
    return loc;
  }
  return intern("?");
}

int gl_intern(const char *text) { return intern(text); }

const char *gl_loc_text(int loc) { return loc >= 0 && loc < locs.n ? locs.text[loc] : "?"; }

/* ---- records ------------------------------------------------------------ */

static void drop(gl_accesses *acc, int i) {
  gl_stream_unref(acc->v[i].s);
  acc->v[i] = acc->v[--acc->n];
}

/* Forget records the host has seen complete. */
static void prune(gl_accesses *acc) {
  for (int i = 0; i < acc->n;) {
    gl_access *r = &acc->v[i];
    uint64_t last = r->wseq > r->rseq ? r->wseq : r->rseq;
    if (r->s->done_seq >= last) drop(acc, i);
    else i++;
  }
}

static void conflict(lua_State *L, gl_stream *s, const gl_access *r, int write, int prev_write,
                     const gl_access_desc *d) {
  int here = gl_loc_here(L);
  char what[200], op[200];
  if (d->x) gl_slice_describe(d->x, what, sizeof what);
  else if (d->h) gl_hostbuf_describe(d->h, what, sizeof what);
  else snprintf(what, sizeof what, "memory");
  if (d->op) snprintf(op, sizeof op, "%s", d->op);
  else snprintf(op, sizeof op, "s:launch of '%s' argument %d", d->kernel, d->arg);
  luaL_error(L,
             "%s: %s %s on stream '%s' (device %d) at %s, while stream '%s' (device %d) may still %s it "
             "(queued at %s); order the streams first (%s:wait on an event recorded after that, %s:join, a "
             "fork, or a host sync of stream '%s')",
             op, what, write ? "is written" : "is read", s->name, s->dev->ordinal, gl_loc_text(here),
             r->s->name, r->s->dev->ordinal, prev_write ? "be writing" : "be reading",
             gl_loc_text(prev_write ? r->wloc : r->rloc), s->name, s->name, r->s->name);
}

void gl_access_check(lua_State *L, gl_accesses *acc, gl_stream *s, uint64_t lo, uint64_t hi, int write,
                     const gl_access_desc *d) {
  gl_policy policy = s->dev->rt->policy;
  if (policy == GL_POLICY_OFF || lo == hi) return;
  for (int i = 0; i < acc->n; i++) {
    gl_access *r = &acc->v[i];
    if (r->s == s || r->hi <= lo || hi <= r->lo) continue;
    int bad_w = r->wseq && !gl_ordered_before(s, r->s, r->wseq);
    int bad_r = write && r->rseq && !gl_ordered_before(s, r->s, r->rseq);
    if (!bad_w && !bad_r) continue;
    if (policy == GL_POLICY_STRICT) conflict(L, s, r, write, bad_w, d);
    /* auto: s waits for everything queued on the other stream so far */
    gl_trace_wait(s, r->s, r->s->seq, 1);
    gl_check(L, s->dev, gl_stream_order_after(s, r->s), "cuStreamWaitEvent");
    gl_clock_join(s, r->s);
  }
}

void gl_access_record(gl_runtime *rt, gl_accesses *acc, gl_stream *s, uint64_t lo, uint64_t hi, int write, int loc) {
  (void)rt;
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
    if (write && lo <= r->lo && r->hi <= hi && gl_ordered_before(s, r->s, r->wseq > r->rseq ? r->wseq : r->rseq)) {
      drop(acc, i);
      if (same == &acc->v[acc->n]) same = &acc->v[i]; /* moved by drop */
      continue;
    }
    i++;
  }
  if (!same) {
    if (acc->n == acc->cap) {
      prune(acc);
      if (acc->n == acc->cap) {
        int cap = acc->cap ? 2 * acc->cap : 4;
        gl_access *v = realloc(acc->v, (size_t)cap * sizeof *v);
        if (!v) abort();
        acc->v = v;
        acc->cap = cap;
      }
    }
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

void gl_access_check_host(lua_State *L, gl_accesses *acc, uint64_t lo, uint64_t hi, int write, const char *what) {
  if (acc->n == 0) return;
  prune(acc);
  gl_runtime *rt = gl_rt(L);
  for (int i = 0; i < acc->n; i++) {
    gl_access *r = &acc->v[i];
    if (r->hi <= lo || hi <= r->lo) continue;
    int bad_w = r->wseq && r->s->done_seq < r->wseq;
    int bad_r = write && r->rseq && r->s->done_seq < r->rseq;
    if (!bad_w && !bad_r) continue;
    if (rt->policy == GL_POLICY_OFF) continue;
    if (rt->policy == GL_POLICY_AUTO) {
      gl_access_wait_all(acc, 1);
      return;
    }
    luaL_error(L, "%s: %s from Lua at %s while stream '%s' of device %d may still %s it (copy queued at %s); "
                  "sync the stream, an event after the copy, or the device first",
               what, write ? "written" : "read", gl_loc_text(gl_loc_here(L)), r->s->name, r->s->dev->ordinal,
               bad_w ? "write" : "read", gl_loc_text(bad_w ? r->wloc : r->rloc));
  }
}

CUresult gl_access_order_all(gl_accesses *acc, gl_stream *waiter) {
  CUresult r = CUDA_SUCCESS;
  for (int i = 0; i < acc->n && r == CUDA_SUCCESS; i++) {
    gl_access *a = &acc->v[i];
    uint64_t last = a->wseq > a->rseq ? a->wseq : a->rseq;
    if (!gl_ordered_before(waiter, a->s, last)) r = gl_stream_order_after(waiter, a->s);
  }
  return r;
}

void gl_access_wait_all(gl_accesses *acc, int learn) {
  for (int i = 0; i < acc->n; i++) {
    gl_stream *s = acc->v[i].s;
    uint64_t last = acc->v[i].wseq > acc->v[i].rseq ? acc->v[i].wseq : acc->v[i].rseq;
    if (s->done_seq >= last || !s->dev->opened || s->dev->poison[0]) continue;
    gl_set_ctx(s->dev);
    uint64_t seq = s->seq;
    CUresult r = s->cu ? gl_drv.cuStreamSynchronize(s->cu)
                       : s->final_ev ? gl_drv.cuEventSynchronize(s->final_ev) : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS && learn) gl_clock_host_reached(s, seq);
  }
  if (learn) prune(acc);
}

int gl_access_finished(gl_accesses *acc) {
  for (int i = 0; i < acc->n; i++) {
    gl_stream *s = acc->v[i].s;
    uint64_t last = acc->v[i].wseq > acc->v[i].rseq ? acc->v[i].wseq : acc->v[i].rseq;
    if (s->done_seq >= last || !s->dev->opened || s->dev->poison[0]) continue;
    gl_set_ctx(s->dev);
    CUresult r = s->cu ? gl_drv.cuStreamQuery(s->cu) : s->final_ev ? gl_drv.cuEventQuery(s->final_ev) : CUDA_SUCCESS;
    if (r == CUDA_ERROR_NOT_READY) return 0;
  }
  return 1;
}

void gl_access_clear(gl_accesses *acc) {
  for (int i = 0; i < acc->n; i++) gl_stream_unref(acc->v[i].s);
  free(acc->v);
  acc->v = NULL;
  acc->n = acc->cap = 0;
}
