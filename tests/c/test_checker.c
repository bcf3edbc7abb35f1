/*
 * test_checker.c -- the checker's records against a model that forgets
 * nothing: random accesses, joins, event waits and host syncs on a few
 * streams, and after each step every possible check (each stream and the
 * host, read and write, many ranges) must give the model's answer. Then the
 * bounds: a window sliding along one stream keeps a few spans; disjoint
 * views keep one span each until the host has seen them finish, then none.
 * Links gpulua_core (no Lua); the streams are real sim streams, whose
 * positions the test advances by hand (nothing is queued).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checker.h"
#include "clock.h"
#include "device.h"
#include "options.h"
#include "runtime.h"
#include "stream.h"

#include "check.h"

#define NS 4      /* streams */
#define BYTES 48  /* the memory's size */
#define MAXACC 4096

typedef struct {
  int s;
  uint64_t lo, hi, seq;
  int write;
} access;

static access model[MAXACC];
static int nmodel;
static gl_stream *S[NS];

/* The model's verdict: an access of [lo, hi) by stream si (-1: the host). */
static int model_conflict(int si, uint64_t lo, uint64_t hi, int write) {
  if (lo == hi) return 0;
  for (int i = 0; i < nmodel; i++) {
    const access *a = &model[i];
    if (a->s == si || a->hi <= lo || hi <= a->lo || !(a->write || write)) continue;
    int ordered = si < 0 ? S[a->s]->done_seq >= a->seq : gl_ordered_before(S[si], S[a->s], a->seq);
    if (!ordered) return 1;
  }
  return 0;
}

static unsigned rng = 12345;
static unsigned next(void) {
  rng = rng * 1103515245u + 12345u;
  return (rng >> 16) & 0x7fff;
}

/* every check against the model: each stream and the host, read and write, many ranges */
static int compare_all(gl_accesses *acc, int step) {
  int bad = 0;
  for (int si = -1; si < NS && !bad; si++)
    for (uint64_t lo = 0; lo < BYTES && !bad; lo += 5)
      for (uint64_t hi = lo + 1; hi <= BYTES && !bad; hi += 7)
        for (int w = 0; w < 2 && !bad; w++) {
          gl_conflict c;
          int got = si < 0 ? gl_access_conflict_host(acc, lo, hi, w, &c)
                           : gl_access_conflict(acc, S[si], lo, hi, w, &c);
          int want = model_conflict(si, lo, hi, w);
          if (got != want) {
            CHECK(got == want, "step %d: %s %d, [%llu, %llu) %s: checker %d, model %d", step,
                  si < 0 ? "host" : "stream", si, (unsigned long long)lo, (unsigned long long)hi,
                  w ? "write" : "read", got, want);
            bad = 1;
          }
        }
  return bad;
}

static void test_against_model(void) {
  gl_accesses acc;
  memset(&acc, 0, sizeof acc);
  nmodel = 0;
  uint64_t *snap = NULL;
  uint32_t *gens = NULL;
  int nsnap = 0;
  for (int step = 0; step < 700 && nmodel < MAXACC; step++) {
    int what = (int)(next() % 20), si = (int)(next() % NS);
    gl_stream *s = S[si];
    if (what < 13) { /* an access: mostly small ranges, sometimes windows or the whole */
      uint64_t lo = next() % BYTES, len = what < 3 ? BYTES - lo : 1 + next() % 8;
      uint64_t hi = lo + len > BYTES ? BYTES : lo + len;
      int write = (int)(next() % 2);
      s->seq++;
      if (gl_access_reserve(&acc, 1) != 0) {
        CHECK(0, "out of memory");
        return;
      }
      gl_access_record(&acc, s, lo, hi, write, (int)step);
      model[nmodel++] = (access){si, lo, hi, s->seq, write};
    } else if (what < 15) { /* a join */
      int ti = (int)(next() % NS);
      if (ti != si) {
        gl_clock_join(s, S[ti]);
        s->seq++;
      }
    } else if (what < 17) { /* an event recorded (its snapshot kept), or waited for */
      if (snap && next() % 2) {
        gl_clock_merge(s, snap, gens, nsnap);
        s->seq++;
      } else {
        free(snap);
        free(gens);
        nsnap = gl_clock_snapshot_len(s);
        snap = malloc((size_t)nsnap * sizeof *snap);
        gens = malloc((size_t)nsnap * sizeof *gens);
        if (!snap || !gens) return;
        gl_clock_snapshot(s, snap, gens, nsnap);
      }
    } else if (what < 18) { /* the host syncs the event */
      if (snap) gl_clock_host_reached_snapshot(s->dev->rt, snap, gens, nsnap);
    } else if (what < 19) { /* the host syncs a stream */
      gl_clock_host_reached(s, s->seq);
    } else { /* an order_all's real wait: teaches nothing */
    }
    if (compare_all(&acc, step)) break;
  }
  CHECK(1, "compared");
  free(snap);
  free(gens);
  gl_access_clear(&acc);
}

static void test_sliding_window_stays_small(gl_runtime *rt) {
  gl_accesses acc;
  memset(&acc, 0, sizeof acc);
  gl_stream *s = S[0];
  for (int i = 0; i < 10000; i++) {
    s->seq++;
    gl_access_reserve(&acc, 1);
    gl_access_record(&acc, s, (uint64_t)i * 4, (uint64_t)i * 4 + 256, 1, 0);
  }
  CHECK(gl_access_spans(&acc) <= 2, "10,000 windows along one stream keep %d spans", gl_access_spans(&acc));
  gl_conflict c;
  CHECK(gl_access_conflict(&acc, S[1], 0, 4, 0, &c) == 1 && c.other == s, "the oldest byte still conflicts");
  /* once something has learned the stream's position, what came before is kept apart */
  gl_clock_join(S[1], s);
  uint64_t joined = s->seq;
  for (int i = 0; i < 100; i++) {
    s->seq++;
    gl_access_reserve(&acc, 1);
    gl_access_record(&acc, s, 40000 + (uint64_t)i * 4, 40000 + (uint64_t)i * 4 + 256, 1, 0);
  }
  CHECK(gl_access_conflict(&acc, S[1], 0, 4, 1, &c) == 0, "S1 joined: the old windows are ordered before it");
  CHECK(gl_access_conflict(&acc, S[1], 40000, 40004, 1, &c) == 1, "the new ones are not");
  CHECK(gl_access_spans(&acc) <= 4, "still a few spans: %d", gl_access_spans(&acc));
  (void)joined;
  (void)rt;
  gl_access_clear(&acc);
}

static void test_disjoint_views_until_synced(void) {
  gl_accesses acc;
  memset(&acc, 0, sizeof acc);
  for (int b = 0; b < 4000; b++) {
    gl_stream *s = S[b % NS];
    s->seq++;
    gl_access_reserve(&acc, 1);
    gl_access_record(&acc, s, (uint64_t)b * 64, (uint64_t)b * 64 + 64, 1, 0);
  }
  CHECK(gl_access_spans(&acc) == 4000, "unordered views each keep their span: %d", gl_access_spans(&acc));
  gl_conflict c;
  CHECK(gl_access_conflict(&acc, S[1], 0, 64, 0, &c) == 1 && c.other == S[0], "batch 1's view is S0's");
  CHECK(gl_access_conflict(&acc, S[1], 64, 128, 1, &c) == 0, "batch 2's is S1's own");
  for (int i = 0; i < NS; i++) gl_clock_host_reached(S[i], S[i]->seq);
  CHECK(gl_access_conflict_host(&acc, 0, 64 * 4000, 1, &c) == 0, "all finished");
  CHECK(gl_access_spans(&acc) == 0 && gl_access_none(&acc), "and forgotten: %d spans", gl_access_spans(&acc));
  gl_access_clear(&acc);
}

static void test_off_keeps_positions_only(gl_runtime *rt) {
  gl_accesses acc;
  memset(&acc, 0, sizeof acc);
  rt->policy = GL_POLICY_OFF;
  for (int i = 0; i < 1000; i++) {
    S[2]->seq++;
    gl_access_reserve(&acc, 1);
    gl_access_record(&acc, S[2], (uint64_t)i, (uint64_t)i + 8, 1, 0);
  }
  rt->policy = GL_POLICY_STRICT;
  CHECK(gl_access_spans(&acc) == 0, "off records no ranges: %d spans", gl_access_spans(&acc));
  CHECK(!gl_access_known_finished(&acc), "but the stream's position, for frees and host waits");
  gl_conflict c;
  CHECK(gl_access_conflict(&acc, S[3], 5000, 5008, 0, &c) == 1 && c.other == S[2],
        "after a switch to strict, off's work counts as a write of the whole memory");
  gl_clock_host_reached(S[2], S[2]->seq);
  CHECK(gl_access_known_finished(&acc) && gl_access_conflict(&acc, S[3], 0, 8, 1, &c) == 0, "until finished");
  gl_access_clear(&acc);
}

int main(void) {
  setenv("GPULUA_BACKEND", "sim", 1);
  gl_buf why = GL_BUF_INIT;
  if (gl_backend_choose(&why) != 0) {
    fprintf(stderr, "%s\n", gl_buf_str(&why));
    return 1;
  }
  gl_runtime *rt = gl_runtime_new(&why);
  gl_device *dev;
  if (!rt || gl_device_open(rt, 0, "open", &dev) != 0) {
    fprintf(stderr, "%s\n", rt ? gl_error_message(rt) : gl_buf_str(&why));
    return 1;
  }
  for (int i = 0; i < NS; i++) {
    char name[8];
    snprintf(name, sizeof name, "s%d", i);
    if (gl_stream_new(dev, name, 0, 0, &S[i], NULL) != 0) {
      fprintf(stderr, "%s\n", gl_error_message(rt));
      return 1;
    }
  }
  test_against_model();
  for (int seed = 1; seed <= 5; seed++) { /* more histories */
    rng = (unsigned)seed * 7919u;
    test_against_model();
  }
  test_sliding_window_stays_small(rt);
  test_disjoint_views_until_synced();
  test_off_keeps_positions_only(rt);
  for (int i = 0; i < NS; i++) {
    S[i]->seq = S[i]->done_seq; /* nothing was really queued */
    gl_stream_unref(S[i]);
  }
  gl_runtime_free(rt);
  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures != 0;
}
