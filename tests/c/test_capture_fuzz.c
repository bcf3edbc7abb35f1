/*
 * test_capture_fuzz.c -- the checker's differential fuzz: random histories
 * on real sim streams against an independent happens-before model
 * (hb_model.h), which knows nothing of vector clocks.
 *
 * A history mixes eager fills and copies on two memories, new streams,
 * forks, joins, events (recorded, waited for, synced), stream and device
 * syncs, closes, and graphs: captures and g:update with forks, joins, events
 * and work inside (sometimes a fork left unjoined, a function that fails, a
 * call on a stream outside the capture), replays on any stream, closes; the
 * policy switches between strict and auto. The model's rules: a stream's
 * new work is ordered after what it waited for; a fork made outside a
 * capture after its parent's work, one made inside after nothing (its wait
 * went into the graph); inside a capture the graph's own order; a replay is
 * one piece of work on the launching stream; g:update waits on the host for
 * the graph's earlier replays.
 *
 * Checked at every step: an operation (a fill, a copy, a replay, captured
 * work) is refused under strict exactly when the model sees a conflict, and
 * under auto it leaves none (the waits auto inserts are read back and given
 * to the model); a capture ends well exactly when the model sees every fork
 * joined back; then every stream's and the host's verdict on many ranges of
 * both memories is the model's (inside a capture: each member's on the
 * capture's own records).
 *
 * test_capture_fuzz [first_seed [seeds [steps]]]; a mismatch names its seed
 * and step.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checker.h"
#include "device.h"
#include "event.h"
#include "graph.h"
#include "hb_model.h"
#include "memory.h"
#include "ops.h"
#include "options.h"
#include "runtime.h"
#include "stream.h"

#include "check.h"

#define MEMS 2
#define BYTES 64
#define MAXS 12 /* streams, main included (at most HB_STREAMS) */
#define NEV 3
#define NGRAPH 3
#define GACC 256

typedef struct {
  gl_stream *s;
  int open, member, own; /* own: the test holds its reference */
} fstream;

typedef struct {
  gl_graph *g;
  hb_access acc[GACC];
  int nacc;
  int last_replay[HB_STREAMS]; /* the model's node of its latest replay on each stream, -1 */
} fgraph;

typedef struct {
  gl_event e;
  int live;
  hb_set set;
} fevent;

static struct {
  gl_runtime *rt;
  gl_device *dev;
  gl_slice mem[MEMS];
  fstream S[MAXS];
  int ns;
  fgraph G[NGRAPH];
  fevent E[NEV], CE[NEV]; /* events recorded outside captures, and inside the running one */
  hb_model real, cap;     /* the queues' order; the running capture's */
  gl_graph *capg;
  hb_access capacc[GACC];
  int ncapacc;
  unsigned rng;
  int seed, step, bad;
  long compared;
} F;

static struct {
  long refused, waits, captures, failed, updates, replays;
} stats; /* what the histories exercised, over all seeds */

static unsigned rnd(unsigned n) {
  F.rng ^= F.rng << 13;
  F.rng ^= F.rng >> 17;
  F.rng ^= F.rng << 5;
  return n ? F.rng % n : 0;
}

static int mismatch(const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  CHECK(0, "seed %d, step %d: %s", F.seed, F.step, msg);
  F.bad = 1;
  return -1;
}

static int verbose;
#define NOTE(...) (verbose ? (void)(fprintf(stderr, "  [%d] ", F.step), fprintf(stderr, __VA_ARGS__), fputc('\n', stderr)) : (void)0)

static const char *err(void) { return gl_error_message(F.rt); }
static const char *name(int i) { return F.S[i].s->name; }

/* A random stream: open (and a member of the running capture, or not). */
static int pick(int member) {
  int c[MAXS], n = 0;
  for (int i = 0; i < F.ns; i++)
    if (F.S[i].open && (member < 0 || F.S[i].member == member)) c[n++] = i;
  return n ? c[rnd((unsigned)n)] : -1;
}

/* A fill of one memory's range, or a copy between the two. */
typedef struct {
  int copy, dst;
  uint64_t dlo, slo, len;
} fop;

static fop random_op(void) {
  fop o = {(int)rnd(2), (int)rnd(MEMS), 0, 0, 0};
  o.len = 1 + rnd(rnd(3) ? 12 : BYTES);
  o.dlo = rnd((unsigned)(BYTES - o.len + 1));
  o.slo = rnd((unsigned)(BYTES - o.len + 1));
  return o;
}

static int accesses(const fop *o, hb_access *a) {
  a[0] = (hb_access){o->dst, o->dlo, o->dlo + o->len, 1};
  if (!o->copy) return 1;
  a[1] = (hb_access){1 - o->dst, o->slo, o->slo + o->len, 0};
  return 2;
}

static gl_slice range(int m, uint64_t lo, uint64_t len) {
  gl_slice v = F.mem[m]; /* a view in all but its reference: the test's base slices outlive it */
  v.offset = lo;
  v.count = len;
  v.lo = lo;
  v.hi = lo + len;
  v.is_view = 1;
  return v;
}

static int queue(int si, const fop *o) {
  gl_slice d = range(o->dst, o->dlo, o->len);
  if (!o->copy) {
    gl_fill_req f = {.call = "s:fill", .s = F.S[si].s, .x = &d};
    f.value[0] = (unsigned char)rnd(256);
    return gl_fill_submit(&f);
  }
  gl_slice s = range(1 - o->dst, o->slo, o->len);
  gl_copy_req c = {.call = "s:copy", .s = F.S[si].s, .dst = {&d, NULL}, .src = {&s, NULL}};
  return gl_copy_submit(&c);
}

static int conflicts(hb_model *m, int si, const hb_access *a, int n) {
  hb_set known = hb_known(m, si);
  for (int k = 0; k < n; k++)
    if (hb_conflict(m, &known, a[k].mem, a[k].lo, a[k].hi, a[k].write)) return 1;
  return 0;
}

static uint64_t clock_of(const gl_stream *s, const gl_stream *t) {
  return t->id < s->nclock ? s->clock[t->id] : 0;
}

/* What auto did before queueing on stream si: a wait for each stream that
 * si's clock now holds at its latest position and did not before; each is
 * given to the model (with a node inside a capture, where waits are the
 * graph's). Their count must be the positions si gained beyond `queued`. */
typedef struct {
  uint64_t clock[MAXS], seq;
} before_t;

static before_t before(int si) {
  before_t b = {{0}, F.S[si].s->seq};
  for (int j = 0; j < F.ns; j++) b.clock[j] = clock_of(F.S[si].s, F.S[j].s);
  return b;
}

static int auto_waits(hb_model *m, int si, const before_t *b, uint64_t queued, int nodes) {
  gl_stream *s = F.S[si].s;
  uint64_t waits = s->seq - b->seq - queued;
  int joined = 0;
  for (int j = 0; j < F.ns; j++) {
    uint64_t now = clock_of(s, F.S[j].s);
    if (j == si || now <= b->clock[j] || now != F.S[j].s->seq) continue;
    hb_union(&m->after[si], &m->after[j]);
    joined++;
    stats.waits++;
    if (nodes) hb_node(m, si, NULL, 0);
  }
  if ((waits > 0) != (joined > 0))
    return mismatch("auto on stream '%s': %llu waits queued, %d streams learned", name(si),
                    (unsigned long long)waits, joined);
  return 0;
}

/* Work with accesses a[0 .. n) was just handed to the checker on stream si
 * (rc: its answer); model m has not seen it yet. 1 when it was queued (the
 * caller adds its node), 0 when refused as the model wants, -1 on a
 * mismatch. */
static int admitted(hb_model *m, int si, const hb_access *a, int n, int rc, const before_t *b, int nodes,
                    const char *what) {
  int want = conflicts(m, si, a, n);
  if (F.rt->policy == GL_POLICY_STRICT) {
    if ((rc != 0) != want)
      return mismatch("%s on stream '%s': checker %s, model %s (%s)", what, name(si), rc ? "refused" : "admitted",
                      want ? "conflict" : "none", rc ? err() : "");
    stats.refused += rc != 0;
    return rc == 0;
  }
  if (rc != 0) return mismatch("%s on stream '%s' refused under auto: %s", what, name(si), err());
  if (auto_waits(m, si, b, 1, nodes) != 0) return -1;
  if (conflicts(m, si, a, n)) return mismatch("%s on stream '%s': auto left a conflict", what, name(si));
  return 1;
}

/* Every stream's (and the host's) verdict on the real records against the model. */
static int compare_real(void) {
  for (int si = -1; si < F.ns; si++) {
    if (si >= 0 && !F.S[si].open) continue;
    hb_set known = si < 0 ? F.real.host : hb_known(&F.real, si);
    for (int m = 0; m < MEMS; m++)
      for (uint64_t lo = 0; lo < BYTES; lo += 5)
        for (uint64_t hi = lo + 1; hi <= BYTES; hi += 7)
          for (int w = 0; w < 2; w++) {
            gl_conflict c;
            gl_accesses *acc = &F.mem[m].a->acc;
            int got = si < 0 ? gl_access_conflict_host(acc, lo, hi, w, &c)
                             : gl_access_conflict(acc, F.S[si].s, lo, hi, w, &c);
            int want = hb_conflict(&F.real, &known, m, lo, hi, w);
            F.compared++;
            if (got != want) {
              int n = hb_conflict_node(&F.real, &known, m, lo, hi, w);
              return mismatch("%s%s%s, memory %d [%llu, %llu) %s: checker %d (stream '%s'), model %d (node %d of "
                              "stream '%s')",
                              si < 0 ? "the host" : "stream '", si < 0 ? "" : name(si), si < 0 ? "" : "'", m,
                              (unsigned long long)lo, (unsigned long long)hi, w ? "write" : "read", got,
                              got ? c.other->name : "", want, n, n >= 0 ? name(F.real.node_stream[n]) : "");
            }
          }
  }
  return 0;
}

/* Each member's verdict on the running capture's own records. */
static int compare_capture(void) {
  for (int si = 0; si < F.ns; si++) {
    if (!F.S[si].member) continue;
    hb_set known = hb_known(&F.cap, si);
    for (int m = 0; m < MEMS; m++) {
      gl_accesses *local = NULL;
      for (int i = 0; i < F.capg->nmem; i++)
        if (F.capg->mem[i].acc == &F.mem[m].a->acc) local = &F.capg->mem[i].local;
      for (uint64_t lo = 0; lo < BYTES; lo += 5)
        for (uint64_t hi = lo + 1; hi <= BYTES; hi += 7)
          for (int w = 0; w < 2; w++) {
            gl_conflict c;
            int got = local && gl_access_conflict(local, F.S[si].s, lo, hi, w, &c);
            int want = hb_conflict(&F.cap, &known, m, lo, hi, w);
            F.compared++;
            if (got != want)
              return mismatch("inside the capture, stream '%s', memory %d [%llu, %llu) %s: checker %d, model %d",
                              name(si), m, (unsigned long long)lo, (unsigned long long)hi, w ? "write" : "read",
                              got, want);
          }
    }
  }
  return 0;
}

static int add_stream(gl_stream *t, int member) {
  int j = F.ns++;
  F.S[j] = (fstream){t, 1, member, 1};
  memset(&F.real.after[j], 0, sizeof F.real.after[j]);
  return j;
}

/* Fill or copy on stream si; inside a capture, against the capture's records. */
static int step_work(int si) {
  int in = F.capg != NULL;
  hb_model *m = in ? &F.cap : &F.real;
  fop o = random_op();
  hb_access a[2];
  int n = accesses(&o, a);
  before_t b = before(si);
  int rc = queue(si, &o);
  NOTE("%s%s on '%s': mem %d [%llu, %llu)%s -> %d", in ? "captured " : "", o.copy ? "copy" : "fill", name(si), o.dst,
       (unsigned long long)o.dlo, (unsigned long long)(o.dlo + o.len), o.copy ? " from the other" : "", rc);
  int ok = admitted(m, si, a, n, rc, &b, in, o.copy ? "a copy" : "a fill");
  if (ok <= 0) return ok;
  if (hb_node(m, si, a, n) < 0) return 1; /* the model is full: the history ends */
  for (int k = 0; in && k < n && F.ncapacc < GACC; k++) F.capacc[F.ncapacc++] = a[k];
  return 0;
}

static int join(hb_model *m, int a, int b, int node) {
  NOTE("'%s':join('%s')", name(a), name(b));
  if (gl_stream_join(F.S[a].s, F.S[b].s, 0, NULL) != 0)
    return mismatch("'%s':join('%s') refused: %s", name(a), name(b), err());
  hb_union(&m->after[a], &m->after[b]);
  if (node) hb_node(m, a, NULL, 0);
  return 0;
}

/* One step inside the capture. */
static int captured_step(void) {
  unsigned r = rnd(100);
  int a = pick(1), b = pick(1), out = pick(0);
  if (r < 50) return step_work(a);
  if (r < 54 && out >= 0) { /* work on a stream outside the capture: refused */
    fop o = random_op();
    if (queue(out, &o) == 0) return mismatch("work on stream '%s' outside the capture was queued", name(out));
    return 0;
  }
  if (r < 68 && F.ns < MAXS) { /* a fork: a branch of the graph */
    gl_stream *t;
    if (gl_stream_fork(F.S[a].s, NULL, 0, &t, "fork", NULL) != 0) return mismatch("fork inside the capture: %s", err());
    int j = add_stream(t, 1); /* its own queue: ordered after nothing */
    NOTE("captured fork '%s' of '%s'", name(j), name(a));
    F.cap.after[j] = F.cap.after[a];
    hb_node(&F.cap, j, NULL, 0);
    return 0;
  }
  if (r < 84) return a != b ? join(&F.cap, a, b, 1) : 0;
  fevent *e = &F.CE[rnd(NEV)];
  if (r < 92) {
    if (e->live) gl_event_release(&e->e);
    memset(&e->e, 0, sizeof e->e);
    if (gl_event_record(&e->e, F.S[a].s, 0, "record", NULL) != 0)
      return mismatch("record inside the capture: %s", err());
    e->live = 1;
    e->set = F.cap.after[a];
    NOTE("captured record on '%s'", name(a));
    return 0;
  }
  if (!e->live) return 0;
  NOTE("captured wait of '%s' for an event of '%s'", name(a), e->e.s->name);
  if (gl_stream_wait_event(F.S[a].s, &e->e, "wait", NULL) != 0) return mismatch("wait inside the capture: %s", err());
  hb_union(&F.cap.after[a], &e->set);
  hb_node(&F.cap, a, NULL, 0);
  return 0;
}

/* s:capture (gi < 0) or g:update on a random stream, with work inside. */
static int step_capture(int gi) {
  int o = pick(-1);
  gl_graph *fresh = NULL;
  int rc = gi < 0 ? gl_graph_begin(F.S[o].s, "fuzz", "capture", NULL, &fresh)
                  : gl_graph_begin_update(F.G[gi].g, F.S[o].s, "update", NULL, &fresh);
  if (rc != 0) return mismatch("a capture on '%s' refused: %s", name(o), err());
  F.capg = fresh;
  F.S[o].member = 1;
  NOTE("%s %d on '%s'", gi < 0 ? "capture" : "update", gi, name(o));
  hb_reset(&F.cap);
  F.ncapacc = 0;
  int steps = 1 + (int)rnd(10);
  for (int k = 0; k < steps && !F.bad; k++)
    if (captured_step() != 0 || (!F.bad && compare_capture() != 0)) break;
  if (F.bad) return -1;
  unsigned how = rnd(20);
  int ok = how != 0; /* the script's function failed: discarded */
  for (int j = 0; how >= 3 && j < F.ns; j++)
    if (F.S[j].member && j != o && !hb_has(&F.cap.after[o], F.cap.tail[j]) && join(&F.cap, o, j, 1) != 0) return -1;
  int unjoined = 0;
  for (int j = 0; j < F.ns; j++)
    if (F.S[j].member && j != o && !hb_has(&F.cap.after[o], F.cap.tail[j])) unjoined = 1;
  int order[MAXS], norder = 0; /* the streams an update waits for, in the order it takes them */
  for (int i = 0; gi >= 0 && i < F.G[gi].g->replays.n; i++)
    for (int j = 0; j < F.ns; j++)
      if (F.S[j].s == F.G[gi].g->replays.lanes[i].s) order[norder++] = j;
  int rebuilt;
  rc = gi < 0 ? gl_graph_end(&fresh, ok, "capture", NULL)
              : gl_graph_end_update(F.G[gi].g, fresh, ok, &rebuilt, "update", NULL);
  int good = ok && rc == 0;
  stats.captures++;
  stats.failed += !good;
  stats.updates += gi >= 0;
  NOTE("capture end (ok %d): %s", ok, good ? "made" : err());
  if (good != (ok && !unjoined))
    return mismatch("the capture on '%s' %s, the model has %s fork unjoined (%s)", name(o), good ? "ended" : "failed",
                    unjoined ? "a" : "no", good ? "" : err());
  F.capg = NULL;
  for (int j = 0; j < F.ns; j++) F.S[j].member = 0;
  for (int k = 0; k < NEV; k++)
    if (F.CE[k].live) gl_event_release(&F.CE[k].e), F.CE[k].live = 0;
  if (!good) return 0;
  fgraph *g = NULL;
  if (gi < 0) {
    for (int k = 0; k < NGRAPH && !g; k++)
      if (!F.G[k].g) g = &F.G[k];
    g->g = fresh;
    for (int j = 0; j < HB_STREAMS; j++) g->last_replay[j] = -1;
  } else { /* the update waited on the host for the earlier replays */
    g = &F.G[gi];
    for (int i = 0; i < norder; i++) {
      int j = order[i];
      if (g->last_replay[j] >= 0 && !hb_has(&F.real.host, g->last_replay[j])) {
        NOTE("the update of graph %d waits for '%s'", gi, name(j));
        hb_union(&F.real.host, &F.real.after[j]);
      }
    }
  }
  memcpy(g->acc, F.capacc, (size_t)F.ncapacc * sizeof *g->acc);
  g->nacc = F.ncapacc;
  return 0;
}

static int step_launch(fgraph *g) {
  int si = pick(-1);
  before_t b = before(si);
  int rc = gl_graph_launch(g->g, F.S[si].s, "launch", NULL);
  NOTE("replay of graph %d on '%s' -> %d", (int)(g - F.G), name(si), rc);
  int ok = admitted(&F.real, si, g->acc, g->nacc, rc, &b, 0, "a replay");
  if (ok <= 0) return ok;
  stats.replays++;
  int node = hb_node(&F.real, si, g->acc, g->nacc);
  if (node < 0) return 1;
  g->last_replay[si] = node;
  return 0;
}

static fgraph *some_graph(void) {
  fgraph *g = &F.G[rnd(NGRAPH)];
  return g->g ? g : NULL;
}

static int free_graph_slot(void) {
  for (int k = 0; k < NGRAPH; k++)
    if (!F.G[k].g) return 1;
  return 0;
}

/* One step outside captures. */
static int step(void) {
  unsigned r = rnd(100);
  int a = pick(-1), b = pick(-1);
  fevent *e = &F.E[rnd(NEV)];
  fgraph *g = some_graph();
  if (r < 36) return step_work(a);
  if (r < 44) return a != b ? join(&F.real, a, b, 0) : 0;
  if (r < 48 && F.ns < MAXS) {
    gl_stream *t;
    if (r < 46) {
      if (gl_stream_new(F.dev, NULL, 0, 0, &t, NULL) != 0) return mismatch("dev:stream: %s", err());
      int j = add_stream(t, 0);
      NOTE("new stream '%s'", name(j));
    } else {
      if (gl_stream_fork(F.S[a].s, NULL, 0, &t, "fork", NULL) != 0) return mismatch("fork: %s", err());
      int j = add_stream(t, 0);
      F.real.after[j] = F.real.after[a];
      NOTE("fork '%s' of '%s'", name(j), name(a));
    }
    return 0;
  }
  if (r < 52) {
    if (e->live) gl_event_release(&e->e);
    memset(&e->e, 0, sizeof e->e);
    if (gl_event_record(&e->e, F.S[a].s, 0, "record", NULL) != 0) return mismatch("record: %s", err());
    e->live = 1;
    e->set = F.real.after[a];
    NOTE("record on '%s'", name(a));
    return 0;
  }
  if (r < 56) {
    if (!e->live) return 0;
    NOTE("'%s' waits for an event of '%s'", name(a), e->e.s->name);
    if (gl_stream_wait_event(F.S[a].s, &e->e, "wait", NULL) != 0) return mismatch("wait: %s", err());
    hb_union(&F.real.after[a], &e->set);
    return 0;
  }
  if (r < 60) {
    NOTE("'%s':sync()", name(a));
    if (gl_stream_sync(F.S[a].s, "sync", NULL) != 0) return mismatch("sync: %s", err());
    hb_union(&F.real.host, &F.real.after[a]);
    return 0;
  }
  if (r < 62) {
    if (!e->live) return 0;
    NOTE("e:sync() of an event of '%s'", e->e.s->name);
    if (gl_event_sync(&e->e, "event_sync", NULL) != 0) return mismatch("e:sync: %s", err());
    hb_union(&F.real.host, &e->set);
    return 0;
  }
  if (r < 63) {
    NOTE("dev:sync()");
    if (gl_device_sync(F.dev, NULL) != 0) return mismatch("dev:sync: %s", err());
    for (int j = 0; j < F.ns; j++) hb_union(&F.real.host, &F.real.after[j]);
    return 0;
  }
  if (r < 66) {
    if (a == 0) return 0; /* main lives as long as the device */
    NOTE("'%s':close()", name(a));
    if (gl_stream_close(F.S[a].s, GL_LOC_NONE, 1) != 0) return mismatch("close: %s", err());
    F.S[a].open = 0;
    hb_union(&F.real.after[0], &F.real.after[a]); /* main waits for its work */
    return 0;
  }
  if (r < 74) return free_graph_slot() ? step_capture(-1) : 0;
  if (r < 86) return g ? step_launch(g) : 0;
  if (r < 91) return g ? step_capture((int)(g - F.G)) : 0;
  if (r < 93) {
    if (g) NOTE("close graph %d", (int)(g - F.G)), gl_graph_close(g->g), g->g = NULL;
    return 0;
  }
  F.rt->policy = F.rt->policy == GL_POLICY_STRICT ? GL_POLICY_AUTO : GL_POLICY_STRICT;
  NOTE("policy %s", F.rt->policy == GL_POLICY_AUTO ? "auto" : "strict");
  return 0;
}

static void run(int seed, int steps) {
  memset(&F, 0, sizeof F);
  F.seed = seed;
  F.rng = 2463534242u ^ (unsigned)seed * 2654435761u;
  hb_reset(&F.real);
  gl_buf why = GL_BUF_INIT;
  F.rt = gl_runtime_new(&why);
  if (!F.rt || gl_device_open(F.rt, 0, "open", &F.dev) != 0) {
    CHECK(0, "no sim device: %s", F.rt ? err() : gl_buf_str(&why));
    return;
  }
  F.rt->policy = GL_POLICY_STRICT;
  F.S[F.ns++] = (fstream){F.dev->main, 1, 0, 0};
  for (int m = 0; m < MEMS; m++) {
    if (gl_slice_alloc(F.dev->main, GL_U8, BYTES, 0, NULL, &F.mem[m]) != 0) {
      CHECK(0, "alloc: %s", err());
      return;
    }
    hb_node(&F.real, 0, &(hb_access){m, 0, BYTES, 1}, 1); /* an allocation is a write on its stream */
  }
  for (F.step = 0; F.step < steps && !F.bad; F.step++)
    if (step() != 0 || (!F.bad && compare_real() != 0)) break;
  for (int k = 0; k < NEV; k++)
    if (F.E[k].live) gl_event_release(&F.E[k].e);
  for (int k = 0; k < NGRAPH; k++)
    if (F.G[k].g) gl_graph_close(F.G[k].g);
  gl_device_sync(F.dev, NULL);
  for (int m = 0; m < MEMS; m++) gl_slice_collect(&F.mem[m]);
  for (int j = 0; j < F.ns; j++) {
    if (F.S[j].open && F.S[j].own) gl_stream_close(F.S[j].s, GL_LOC_NONE, 0);
    if (F.S[j].own) gl_stream_unref(F.S[j].s);
  }
  gl_runtime_free(F.rt);
  gl_buf_free(&why);
}

int main(int argc, char **argv) {
  int first = argc > 1 ? atoi(argv[1]) : 1, seeds = argc > 2 ? atoi(argv[2]) : 6;
  int steps = argc > 3 ? atoi(argv[3]) : 400;
  setenv("GPULUA_BACKEND", "sim", 1);
  verbose = getenv("FUZZ_VERBOSE") != NULL;
  gl_buf why = GL_BUF_INIT;
  if (gl_backend_choose(&why) != 0) {
    fprintf(stderr, "%s\n", gl_buf_str(&why));
    return 1;
  }
  long compared = 0;
  for (int seed = first; seed < first + seeds; seed++) {
    run(seed, steps);
    compared += F.compared;
  }
  printf("%d seeds of %d steps: %ld captures (%ld of them updates, %ld refused or discarded), %ld replays, %ld "
         "operations refused under strict, %ld waits inserted by auto; %ld verdicts compared: %d mismatches\n",
         seeds, steps, stats.captures, stats.updates, stats.failed, stats.replays, stats.refused, stats.waits, compared,
         failures);
  return failures != 0;
}
