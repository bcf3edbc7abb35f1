/*
 * clock.c -- stream ids and vector clocks (see clock.h).
 */
#include "clock.h"

#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "runtime.h"
#include "stream.h"

int gl_clock_stream_new(gl_runtime *rt, gl_stream *s) {
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
      if (!v) return -1;
      rt->by_id = v;
      uint32_t *g = realloc(rt->gen, (size_t)cap * sizeof *g);
      if (!g) return -1;
      rt->gen = g;
      memset(g + rt->capids, 0, (size_t)(cap - rt->capids) * sizeof *g);
      rt->capids = cap;
    }
    s->id = rt->nids++;
  }
  rt->by_id[s->id] = s;
  s->clock = NULL;
  s->nclock = 0;
  return 0;
}

void gl_clock_stream_free(gl_stream *s) {
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

/* Raise s's knowledge of stream id to seq; -1 when out of memory (the
 * knowledge is then lost, never gained). */
static int clock_raise(gl_stream *s, int id, uint64_t seq) {
  if (id >= s->nclock) {
    if (seq == 0) return 0;
    int n = id + 8;
    uint64_t *c = realloc(s->clock, (size_t)n * sizeof *c);
    if (!c) return -1;
    memset(c + s->nclock, 0, (size_t)(n - s->nclock) * sizeof *c);
    s->clock = c;
    s->nclock = n;
  }
  if (s->clock[id] < seq) s->clock[id] = seq;
  return 0;
}

static int same_gen(const gl_runtime *rt, const uint32_t *gens, int i) {
  return !gens || (i < rt->nids && rt->gen[i] == gens[i]);
}

void gl_clock_reset(gl_stream *s) {
  if (s->nclock) memset(s->clock, 0, (size_t)s->nclock * sizeof *s->clock);
}

int gl_clock_merge(gl_stream *s, const uint64_t *clock, const uint32_t *gens, int n) {
  gl_runtime *rt = s->dev->rt;
  int rc = 0;
  for (int i = 0; i < n; i++)
    if (clock[i] && i != s->id && same_gen(rt, gens, i) && clock_raise(s, i, clock[i]) != 0) rc = -1;
  return rc;
}

void gl_clock_learn(gl_stream *t, uint64_t seq) {
  if (seq > t->learned) t->learned = seq;
}

int gl_clock_join(gl_stream *s, gl_stream *t) {
  if (s == t) return 0;
  gl_clock_learn(t, t->seq);
  int rc = gl_clock_merge(s, t->clock, NULL, t->nclock);
  return clock_raise(s, t->id, t->seq) != 0 ? -1 : rc;
}

int gl_clock_snapshot_len(const gl_stream *s) { return s->nclock > s->id + 1 ? s->nclock : s->id + 1; }

void gl_clock_snapshot(gl_stream *s, uint64_t *clock, uint32_t *gens, int len) {
  gl_runtime *rt = s->dev->rt;
  gl_clock_learn(s, s->seq);
  int n = s->nclock < len ? s->nclock : len;
  if (n) memcpy(clock, s->clock, (size_t)n * sizeof *clock);
  if (len > n) memset(clock + n, 0, (size_t)(len - n) * sizeof *clock);
  clock[s->id] = s->seq;
  int known = len < rt->nids ? len : rt->nids;
  if (known > 0) memcpy(gens, rt->gen, (size_t)known * sizeof *gens);
  for (int i = known; i < len; i++) gens[i] = 0;
}

void gl_clock_host_reached_snapshot(gl_runtime *rt, const uint64_t *clock, const uint32_t *gens, int n) {
  for (int i = 0; i < n && i < rt->nids; i++) {
    gl_stream *t = rt->by_id[i];
    if (t && clock[i] > t->done_seq && same_gen(rt, gens, i)) t->done_seq = clock[i];
  }
}

void gl_clock_host_reached(gl_stream *s, uint64_t seq) {
  gl_clock_learn(s, seq);
  if (seq != s->seq) { /* a part of the stream: only its own position is known */
    if (seq > s->done_seq) s->done_seq = seq;
    return;
  }
  s->done_seq = s->seq;
  gl_clock_host_reached_snapshot(s->dev->rt, s->clock, NULL, s->nclock);
}

int gl_ordered_before(const gl_stream *s, const gl_stream *t, uint64_t seq) {
  if (s == t || t->done_seq >= seq) return 1;
  return t->id < s->nclock && s->clock[t->id] >= seq;
}
