/*
 * sim_model.c -- the sim's timing model (see sim_model.h): model nodes and
 * streams, and the discrete-event simulation that gives each node its start
 * and end on the virtual clock.
 *
 * Ownership: a node is held by its stream's queue until it has run, by the
 * mark of a record (sim_mark.mn), and by the wait that waits for it; a model
 * stream is held by its sim stream until that is destroyed, then by the
 * model until its queue is empty. Everything here runs with sim_S.mu held.
 */
#include "sim_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { N_QUEUED, N_READY, N_LATENCY, N_RUNNING, N_DONE };

/* The engines work runs on: a node that depends on work of another engine
 * (the previous node of its stream, or the record it waits for, whichever
 * ended last) pays switch_us, as a GPU's engines signal each other. */
enum { ENG_NONE, ENG_H2D, ENG_D2H, ENG_COMPUTE };

static int engine_of(enum sim_mclass c) {
  return c == MC_H2D ? ENG_H2D : c == MC_D2H || c == MC_PEER ? ENG_D2H : c == MC_MEM ? ENG_COMPUTE : ENG_NONE;
}


struct sim_mnode {
  struct sim_mnode *next;   /* in its stream's queue */
  struct sim_mstream *ms;   /* (not a reference: the queue's node keeps its stream) */
  struct sim_mnode *waits;  /* the record a wait waits for (a reference) */
  int refs;
  int state;
  int pool;                 /* the engine pool a copy takes (0: none, 1: h2d, 2: d2h and peer) */
  int eng;                  /* the engine its work runs on (ENG_*); an instant: that of what it waited for */
  sim_mwork w;
  double earliest;          /* the host's virtual clock when it was queued */
  double ready, lat_end, left, end;
  double fin;               /* running: when it ends at the current rates */
  double extra;             /* the switch it pays (after work of another engine) */
};

struct sim_mstream {
  struct sim_mstream *next, **prev; /* in the model's list */
  struct sim_mnode *head, *tail;    /* queued nodes not yet ended */
  double last_end;                  /* when the last node that left the queue ended */
  int last_eng;                     /* ... and the engine it ran on */
  int ordinal;
  int gone;                         /* its sim stream was destroyed */
};

/* the engines a device's copies take (pool 1: host to device; pool 2:
 * device to host and peer; with copy_engines 1, one pool for all) */
typedef struct {
  int busy[3];
} dev_engines;

static struct {
  double t;          /* the simulation's clock: everything before it is decided */
  double host;       /* the host's virtual clock */
  struct sim_mstream *streams;
  long pending;      /* nodes queued and not ended */
  dev_engines eng[SIM_MAX_DEVICES];
} M;

const gld_sim_model *sim_model;
static gld_sim_model model_store;

#define EPS 1e-9
#define PENDING_MAX 4096 /* nodes queued and not ended before the host waits */

/* ---- the model's figures and the work of an operation ----------------- */

void gld_sim_model_use(const gld_sim_model *m) {
  pthread_mutex_lock(&sim_S.mu);
  if (m) {
    model_store = *m;
    sim_model = &model_store;
  } else {
    sim_model = NULL;
  }
  pthread_mutex_unlock(&sim_S.mu);
}

int gld_sim_model_active(void) { return sim_model != NULL; }

const char *gld_sim_model_name(void) { return sim_model ? sim_model->name : NULL; }

/* gigabytes per second as bytes per microsecond */
static double per_us(double gbps) { return gbps * 1e3; }

sim_mwork sim_model_copy(enum sim_mclass cls, size_t n) {
  sim_mwork w = {MC_NONE, 0, 0};
  if (!sim_model) return w;
  w.cls = cls;
  w.lat = sim_model->copy_latency_us;
  w.work = cls == MC_MEM ? (double)n / per_us(sim_model->d2d_gbps) : (double)n;
  return w;
}

sim_mwork sim_model_fill(size_t n) {
  sim_mwork w = {MC_NONE, 0, 0};
  if (!sim_model) return w;
  w.cls = MC_MEM;
  w.lat = sim_model->launch_us;
  w.work = (double)n / per_us(sim_model->mem_gbps);
  return w;
}

sim_mwork sim_model_launch(double mem_bytes, double us) {
  sim_mwork w = {MC_NONE, 0, 0};
  double bytes = mem_bytes > 0 ? mem_bytes : 0;
  if (us < 0) us = 0;
  if (!sim_model) return w;
  w.cls = MC_MEM;
  w.lat = sim_model->launch_us;
  w.work = us + bytes / per_us(sim_model->mem_gbps);
  return w;
}

/* ---- streams and nodes ------------------------------------------------ */

struct sim_mstream *sim_model_stream_new(int ordinal) {
  struct sim_mstream *ms = calloc(1, sizeof *ms);
  if (!ms) return NULL;
  ms->ordinal = ordinal;
  ms->last_end = M.host; /* nothing on it can start before it exists */
  ms->next = M.streams;
  if (M.streams) M.streams->prev = &ms->next;
  ms->prev = &M.streams;
  M.streams = ms;
  return ms;
}

static void stream_free_if_done(struct sim_mstream *ms) {
  if (!ms->gone || ms->head) return;
  *ms->prev = ms->next;
  if (ms->next) ms->next->prev = ms->prev;
  free(ms);
}

void sim_model_stream_gone(struct sim_mstream *ms) {
  if (!ms) return;
  ms->gone = 1;
  stream_free_if_done(ms);
}

void sim_model_node_ref(struct sim_mnode *n) {
  if (n) n->refs++;
}

void sim_model_node_unref(struct sim_mnode *n) {
  while (n && --n->refs == 0) {
    struct sim_mnode *w = n->waits;
    free(n);
    n = w; /* the record it waited for, iteratively */
  }
}

static void run_until_host(void);
static int step(double limit);

struct sim_mnode *sim_model_enqueue(struct sim_mstream *ms, const sim_mwork *w, struct sim_mnode *waits, int keep) {
  if (!ms) return NULL;
  struct sim_mnode *n = calloc(1, sizeof *n);
  if (!n) return NULL;
  n->ms = ms;
  n->w = *w;
  n->refs = 1 + (keep != 0); /* the queue's, the caller's */
  n->state = N_QUEUED;
  n->end = -1;
  n->earliest = M.host;
  n->waits = waits;
  sim_model_node_ref(waits);
  n->eng = engine_of(w->cls);
  if (w->cls == MC_H2D) n->pool = 1;
  else if (w->cls == MC_D2H || w->cls == MC_PEER) n->pool = 2;
  if (ms->tail) ms->tail->next = n;
  else ms->head = n;
  ms->tail = n;
  M.pending++;
  /* the host's time to queue it: work only (a record or a wait, which the
   * trace adds around every operation, is not what host_us measured) */
  if (w->cls != MC_NONE) M.host += sim_model->host_us;
  /* a script that never syncs: decide what no later node can change (all
   * before the host's clock), so the queues stay short; and when the GPU is
   * that far behind the host, the host waits for it, as a driver's full
   * queue makes it wait */
  if (M.pending > PENDING_MAX) {
    run_until_host();
    while (M.pending > PENDING_MAX / 2 && step(INFINITY)) {
    }
    if (M.t > M.host) M.host = M.t;
  }
  return n;
}

/* ---- the simulation ----------------------------------------------------- */

static int pool_of(int copy_engines, int pool) { return copy_engines <= 1 ? 1 : pool; }

static int pool_size(int pool) {
  int e = sim_model->copy_engines;
  if (e <= 1) return 1;
  return pool == 1 ? e / 2 : e - e / 2;
}

/* The head node of ms leaves the queue (it has ended). */
static void pop(struct sim_mstream *ms) {
  struct sim_mnode *n = ms->head;
  ms->head = n->next;
  if (!ms->head) ms->tail = NULL;
  ms->last_end = n->end;
  ms->last_eng = n->eng;
  M.pending--;
  if (n->pool) M.eng[ms->ordinal].busy[pool_of(sim_model->copy_engines, n->pool)]--;
  n->next = NULL;
  sim_model_node_unref(n);
  stream_free_if_done(ms);
}

/* Heads whose dependencies have ended become ready; ready heads whose time
 * has come start (a copy when an engine of its pool is free, the earliest
 * ready first); nodes without work end at once. Repeats until nothing
 * changes at time M.t. */
static void settle(void) {
  for (int changed = 1; changed;) {
    changed = 0;
    for (struct sim_mstream *ms = M.streams, *next; ms; ms = next) {
      next = ms->next; /* ms may be freed */
      struct sim_mnode *n = ms->head;
      if (!n || n->state != N_QUEUED) continue;
      if (n->waits && n->waits->state != N_DONE) continue;
      /* the dependency that ends last, and its engine */
      double dep = ms->last_end;
      int dep_eng = ms->last_eng;
      if (n->waits && n->waits->end > dep) {
        dep = n->waits->end;
        dep_eng = n->waits->eng;
      }
      if (n->eng == ENG_NONE) n->eng = dep_eng; /* an instant stands for what it followed */
      /* after work of another engine that had not ended when the host queued
       * this node: a kernel starts switch_us later; a copy takes its engine
       * at once and holds it through the switch, as a copy engine waits on
       * the semaphore of the work it follows (work already done when queued
       * is no wait) */
      n->extra = dep_eng != ENG_NONE && n->w.cls != MC_NONE && dep_eng != n->eng && dep > n->earliest
                     ? sim_model->switch_us : 0;
      double r = fmax(n->earliest, dep + (n->pool ? 0 : n->extra));
      n->ready = fmax(r, M.t);
      n->state = N_READY;
      changed = 1;
    }
    for (;;) { /* start ready heads, the earliest ready first (engines are taken in that order) */
      struct sim_mnode *best = NULL;
      for (struct sim_mstream *ms = M.streams; ms; ms = ms->next) {
        struct sim_mnode *n = ms->head;
        if (!n || n->state != N_READY || n->ready > M.t + EPS) continue;
        if (n->pool) {
          int p = pool_of(sim_model->copy_engines, n->pool);
          if (M.eng[ms->ordinal].busy[p] >= pool_size(p)) continue;
        }
        if (!best || n->ready < best->ready) best = n;
      }
      if (!best) break;
      changed = 1;
      if (best->w.cls == MC_NONE) {
        best->state = N_DONE;
        best->end = M.t;
        pop(best->ms);
        continue;
      }
      if (best->pool) M.eng[best->ms->ordinal].busy[pool_of(sim_model->copy_engines, best->pool)]++;
      best->state = N_LATENCY;
      best->lat_end = M.t + best->w.lat + (best->pool ? best->extra : 0);
      best->left = best->w.work;
    }
  }
}

/* The rate at which each running node drains its work now (bytes or
 * microseconds per microsecond), from the running nodes of its device. */
static double rate_of(const struct sim_mnode *n, const int count[][5]) {
  const int *c = count[n->ms->ordinal];
  const gld_sim_model *m = sim_model;
  switch (n->w.cls) {
  case MC_H2D:
  case MC_D2H: {
    double h = per_us(m->h2d_gbps), d = per_us(m->d2h_gbps);
    if (c[MC_H2D] && c[MC_D2H] && h + d > per_us(m->bidir_gbps)) { /* both ways at once share the link */
      double k = per_us(m->bidir_gbps) / (h + d);
      h *= k;
      d *= k;
    }
    return n->w.cls == MC_H2D ? h / c[MC_H2D] : d / c[MC_D2H];
  }
  case MC_PEER:
    return per_us(m->peer_gbps) / c[MC_PEER];
  case MC_MEM:
    return 1.0 / c[MC_MEM];
  default:
    return 1.0;
  }
}

/* One step: settle, then advance M.t to the next change (a latency ending, a
 * node ending, a ready node's time), but not past `limit`. 0 when nothing
 * is left to happen before limit. */
static int step(double limit) {
  settle();
  static int count[SIM_MAX_DEVICES][5];
  memset(count, 0, sizeof count);
  for (struct sim_mstream *ms = M.streams; ms; ms = ms->next)
    if (ms->head && ms->head->state == N_RUNNING) count[ms->ordinal][ms->head->w.cls]++;
  double next = INFINITY;
  for (struct sim_mstream *ms = M.streams; ms; ms = ms->next) {
    struct sim_mnode *n = ms->head;
    if (!n) continue;
    if (n->state == N_LATENCY) next = fmin(next, n->lat_end);
    else if (n->state == N_RUNNING) next = fmin(next, n->fin = M.t + n->left / rate_of(n, (const int(*)[5])count));
    else if (n->state == N_READY && n->ready > M.t + EPS) next = fmin(next, n->ready);
  }
  if (next == INFINITY) return 0;
  if (next > limit) next = limit;
  if (next < M.t) next = M.t;
  double dt = next - M.t;
  for (struct sim_mstream *ms = M.streams; ms; ms = ms->next) {
    struct sim_mnode *n = ms->head;
    if (n && n->state == N_RUNNING) n->left -= dt * rate_of(n, (const int(*)[5])count);
  }
  M.t = next;
  /* what ends now: by its end time, within rounding (a remainder too small
   * to move the clock ends too, or the clock would stall) */
  double tol = EPS * fmax(1.0, fabs(M.t));
  int moved = 0;
  for (struct sim_mstream *ms = M.streams, *nx; ms; ms = nx) {
    nx = ms->next;
    struct sim_mnode *n = ms->head;
    if (!n) continue;
    if (n->state == N_LATENCY && n->lat_end <= M.t + tol) {
      n->state = N_RUNNING;
      n->fin = INFINITY; /* its rate is known at the next step (work 0 ends at once, below) */
      moved = 1;
    }
    if (n->state == N_RUNNING && (n->left <= EPS * (1 + n->w.work) || n->fin <= M.t + tol)) {
      n->state = N_DONE;
      n->end = M.t;
      pop(ms);
      moved = 1;
    }
  }
  return moved || dt > 0;
}

/* Everything that happens before the host's clock: no node queued later can
 * start before it. */
static void run_until_host(void) {
  while (M.t < M.host - EPS && step(M.host)) {
  }
  settle();
}

double sim_model_observe_node(struct sim_mnode *n) {
  if (!n || !sim_model) return M.host;
  while (n->state != N_DONE && step(INFINITY)) {
  }
  if (n->state == N_DONE && n->end > M.host) M.host = n->end;
  return n->state == N_DONE ? n->end : M.host;
}

double sim_model_observe_stream(struct sim_mstream *ms) {
  if (!ms || !sim_model) return M.host;
  while (ms->head && step(INFINITY)) {
  }
  if (!ms->head && ms->last_end > M.host) M.host = ms->last_end;
  return ms->last_end;
}

int sim_model_node_done_by_host(struct sim_mnode *n) {
  if (!n || !sim_model) return 1;
  run_until_host();
  return n->state == N_DONE;
}

int sim_model_stream_done_by_host(struct sim_mstream *ms) {
  if (!ms || !sim_model) return 1;
  run_until_host();
  return ms->head == NULL;
}

double sim_model_host_clock(void) { return M.host; }
