/*
 * graph.c -- CUDA graphs (see graph.h).
 */
#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "clock.h"
#include "device.h"
#include "event.h"
#include "hostmem.h"
#include "memory.h"
#include "module.h"
#include "retire.h"
#include "runtime.h"
#include "scratch.h"
#include "stream.h"
#include "trace.h"

static int grow(void **v, int *cap, int need, size_t size) {
  if (need <= *cap) return 0;
  int c = *cap ? 2 * *cap : 8;
  while (c < need) c *= 2;
  void *p = realloc(*v, (size_t)c * size);
  if (!p) return -1;
  *v = p;
  *cap = c;
  return 0;
}

static int capture_new(gl_stream *s, const char *name, const char *call, gl_site *site, gl_graph **out) {
  gl_device *dev = s->dev;
  gl_runtime *rt = dev->rt;
  *out = NULL;
  if (rt->capture)
    return gl_fail(rt, "%s: graph '%s' is being captured already (%s at %s): captures do not nest", call,
                   rt->capture->name, rt->names.capture, gl_loc_text(rt, rt->capture->capture_loc));
  if (gl_stream_check(s) != 0) return -1;
  gl_retire_reap(rt, 0);
  if (gl_blas_capture_prepare(s, call, site) != 0) return -1; /* spares for gemms on streams forked inside */
  if (gl_scratch_capture_prepare(s, site) != 0) return -1; /* and for reductions */
  gl_graph *g = calloc(1, sizeof *g);
  if (!g) return gl_fail_nomem(rt, call);
  g->dev = dev;
  snprintf(g->name, sizeof g->name, "%s", name && *name ? name : "graph");
  g->capture_loc = gl_site_loc(rt, site);
  g->id = ++rt->captures;
  gl_set_ctx(dev);
  /* thread-local: another thread's CUDA calls (a library's) never break this
   * capture, and this thread's calls that cannot be captured are refused by
   * gpulua before the driver sees them */
  CUresult r = gld_drv.cuStreamBeginCapture(s->cu, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  if (r != CUDA_SUCCESS) {
    free(g);
    return gl_fail_cu(rt, dev, r, "cuStreamBeginCapture", site);
  }
  g->origin = s;
  gl_stream_ref(s);
  s->capture = g;
  rt->capture = g;
  g->next_live = rt->graphs;
  if (rt->graphs) rt->graphs->prev_live = &g->next_live;
  g->prev_live = &rt->graphs;
  rt->graphs = g;
  *out = g;
  return 0;
}

static void unlink_live(gl_graph *g) {
  if (!g->prev_live) return;
  *g->prev_live = g->next_live;
  if (g->next_live) g->next_live->prev_live = g->prev_live;
  g->prev_live = NULL;
  g->next_live = NULL;
}

int gl_graph_begin(gl_stream *s, const char *name, const char *call, gl_site *site, gl_graph **out) {
  return capture_new(s, name, call, site, out);
}

static void release_modules(gl_graph *g) {
  for (int i = 0; i < g->nmods; i++) gl_module_unref(g->mods[i]);
  free(g->mods);
  g->mods = NULL;
  g->nmods = g->capmods = 0;
}

/* Let go of the memory (the graph no longer uses it). Its modules stay
 * until the driver's graph goes (destroy), after the replays: so a replay
 * needs no record of their use. */
static void release_uses(gl_graph *g) {
  for (int i = 0; i < g->nmem; i++) {
    gl_graph_mem *m = &g->mem[i];
    gl_access_clear(&m->local);
    if (m->a) gl_alloc_graph_release(m->a, g);
    if (m->m) gl_hostmem_graph_release(m->m, g);
  }
  free(g->mem);
  g->mem = NULL;
  g->nmem = g->capmem = 0;
  free(g->use);
  g->use = NULL;
  g->nuse = g->capuse = 0;
  free(g->node);
  g->node = NULL;
  g->nnode = g->capnode = 0;
}

static void run_cleanups(gl_graph *g) {
  for (int i = 0; i < g->ncleanup; i++) g->cleanup[i].fn(g->cleanup[i].arg);
  free(g->cleanup);
  g->cleanup = NULL;
  g->ncleanup = g->capcleanup = 0;
}

/* The driver's objects and what they point at (their replays have finished). */
static void destroy(gl_graph *g) {
  unlink_live(g);
  if (g->handle) *g->handle = NULL;
  if (g->dev->opened) {
    gl_set_ctx(g->dev);
    if (g->exec) gld_drv.cuGraphExecDestroy(g->exec);
    if (g->graph) gld_drv.cuGraphDestroy(g->graph);
  }
  run_cleanups(g);
  release_modules(g);
  gl_access_clear(&g->replays);
  free(g);
}

/* The capture's end, whatever its outcome: the streams are free again. */
static CUresult end_capture(gl_graph *g) {
  gl_runtime *rt = g->dev->rt;
  CUresult r = CUDA_SUCCESS;
  if (g->origin) {
    gl_set_ctx(g->dev);
    CUgraph graph = NULL;
    r = gld_drv.cuStreamEndCapture(g->origin->cu, &graph);
    g->graph = graph; /* NULL until now: a graph is made only here */
    g->origin->capture = NULL;
    gl_stream_unref(g->origin);
    g->origin = NULL;
  }
  /* A fork's clock described the graph's branch: its fork's wait (and any
   * other) went into the graph, and its own queue, which starts empty, is
   * ordered after nothing. The origin's clock stays: it learned only the
   * members' positions inside the capture, which cover no work of theirs
   * that runs outside a replay. */
  for (int i = 0; i < g->nmembers; i++) {
    g->members[i]->capture = NULL;
    gl_clock_reset(g->members[i]);
    gl_stream_unref(g->members[i]);
  }
  free(g->members);
  g->members = NULL;
  g->nmembers = g->capmembers = 0;
  for (int i = 0; i < g->nmem; i++) gl_access_clear(&g->mem[i].local);
  if (rt->capture == g) rt->capture = NULL;
  return r;
}

/* A fork not joined back into the capturing stream: its name, or NULL. */
static const gl_stream *unjoined(const gl_graph *g) {
  for (int i = 0; i < g->nmembers; i++) {
    const gl_stream *t = g->members[i];
    if (!gl_ordered_before(g->origin, t, t->seq)) return t;
  }
  return NULL;
}

/* Before a capture is discarded: every branch joined back, so that the
 * driver ends it cleanly (an unjoined fork would leave it invalidated). */
static void join_all(gl_graph *g) {
  for (int i = 0; i < g->nmembers; i++) {
    gl_stream *t = g->members[i];
    if (!gl_ordered_before(g->origin, t, t->seq)) gl_stream_order_after(g->origin, t, 1, NULL);
  }
}

static int by_range(const void *pa, const void *pb) {
  const gl_graph_use *a = pa, *b = pb;
  if (a->mem != b->mem) return a->mem < b->mem ? -1 : 1;
  if (a->write != b->write) return a->write < b->write ? -1 : 1;
  return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* The use list merged: per memory, its overlapping or adjacent ranges of
 * the same kind as one (the line of the first node captured among them). */
static void merge_uses(gl_graph *g) {
  if (g->nuse > 1) qsort(g->use, (size_t)g->nuse, sizeof *g->use, by_range);
  int n = 0;
  for (int i = 0; i < g->nuse; i++) {
    gl_graph_use *u = &g->use[i];
    if (n > 0) {
      gl_graph_use *p = &g->use[n - 1];
      if (p->mem == u->mem && p->write == u->write && u->lo <= p->hi) {
        if (u->hi > p->hi) p->hi = u->hi;
        if (u->first < p->first) {
          p->first = u->first;
          p->loc = u->loc;
          p->what = u->what;
          p->role = u->role;
        }
        continue;
      }
    }
    g->use[n++] = *u;
  }
  g->nuse = n;
}

static int instantiate(gl_graph *g, gl_stream *s, gl_site *site) {
  gl_runtime *rt = g->dev->rt;
  CUresult r = gld_drv.cuGraphInstantiateWithFlags(&g->exec, g->graph, 0);
  const char *call = "cuGraphInstantiateWithFlags";
  if (r == CUDA_SUCCESS) {
    call = "cuGraphGetNodes";
    r = gld_drv.cuGraphGetNodes(g->graph, NULL, &g->nodes);
  }
  if (r == CUDA_SUCCESS && s->cu) { /* the first replay pays no upload */
    call = "cuGraphUpload";
    r = gld_drv.cuGraphUpload(g->exec, s->cu);
  }
  if (r != CUDA_SUCCESS) {
    if (g->exec) gld_drv.cuGraphExecDestroy(g->exec);
    g->exec = NULL;
    return gl_fail_cu(rt, g->dev, r, call, site);
  }
  return 0;
}

/* The end of the capture into g (by `call`: the capture's, the update's): when
 * ok, checked complete (nothing lost, every fork joined back); the capture
 * is ended in any case, and on success the uses merged. *origin is the
 * capturing stream, with a reference for the caller. 0, or -1 (the error
 * set when ok). */
static int end_checked(gl_graph *g, int ok, const char *call, gl_stream **origin, gl_site *site) {
  gl_runtime *rt = g->dev->rt;
  gl_stream *o = *origin = g->origin;
  gl_stream_ref(o);
  int rc = 0;
  if (ok && g->broken) rc = gl_fail_nomem(rt, call);
  if (ok && rc == 0) {
    const gl_stream *t = unjoined(g);
    if (t) {
      gl_buf hint = GL_BUF_INIT;
      gl_buf_printf(&hint, rt->names.join_hint, o->name, t->name);
      rc = gl_fail(rt,
                   "%s of graph '%s' (%s at %s): stream '%s', forked from '%s' in the capture, was not joined "
                   "back before the function returned: %s after its last work",
                   call, g->name, rt->names.capture, gl_loc_text(rt, g->capture_loc), t->name, o->name,
                   gl_buf_str(&hint));
      gl_buf_free(&hint);
    }
  }
  if (!ok || rc != 0) join_all(g);
  CUresult r = end_capture(g);
  if (ok && rc == 0 && r != CUDA_SUCCESS) rc = gl_fail_cu(rt, g->dev, r, "cuStreamEndCapture", site);
  if (ok && rc == 0) merge_uses(g);
  return ok ? rc : -1;
}

/* The end of a capture: checked complete, then the graph made. */
static int capture_finish(gl_graph *g, int ok, const char *call, gl_site *site) {
  gl_stream *origin;
  int rc = end_checked(g, ok, call, &origin, site);
  if (rc == 0) rc = instantiate(g, origin, site);
  gl_stream_unref(origin);
  return rc;
}

int gl_graph_end(gl_graph **pg, int ok, const char *call, gl_site *site) {
  gl_graph *g = *pg;
  gl_runtime *rt = g->dev->rt;
  int rc = 0;
  if (capture_finish(g, ok, call, site) != 0) {
    release_uses(g);
    destroy(g);
    *pg = NULL;
    rc = ok ? -1 : 0;
  }
  gl_retire_reap(rt, 0); /* the graphs closed during the capture let their memory go */
  return rc;
}

int gl_graph_begin_update(gl_graph *g, gl_stream *s, const char *call, gl_site *site, gl_graph **fresh) {
  gl_runtime *rt = s->dev->rt;
  *fresh = NULL;
  if (g->closed) return gl_fail(rt, "%s: graph '%s' is closed", call, g->name);
  if (s->dev != g->dev)
    return gl_fail(rt, "%s: graph '%s' is on device %d, but stream '%s' is on device %d", call, g->name,
                   g->dev->ordinal, s->name, s->dev->ordinal);
  /* the new capture begins as any capture does, and its errors say so */
  if (capture_new(s, g->name, rt->names.capture, site, fresh) != 0) return -1;
  (*fresh)->updates = g;
  return 0;
}

static int end_update(gl_graph *g, gl_graph *fresh, int ok, int *rebuilt, const char *call, gl_site *site);

/* The update's end, then the graphs closed during it let their memory go
 * (g itself among them only when a caller closed it despite
 * gl_graph_check_close: its new work is let go with it). */
int gl_graph_end_update(gl_graph *g, gl_graph *fresh, int ok, int *rebuilt, const char *call, gl_site *site) {
  gl_runtime *rt = g->dev->rt;
  int rc = end_update(g, fresh, ok, rebuilt, call, site);
  gl_retire_reap(rt, 0);
  return rc;
}

static int end_update(gl_graph *g, gl_graph *fresh, int ok, int *rebuilt, const char *call, gl_site *site) {
  *rebuilt = 0;
  gl_stream *origin;
  int rc = end_checked(fresh, ok, call, &origin, site);
  /* the replays queued so far may use what the old work holds (its host
   * kernels' records, its modules): they finish first */
  if (rc == 0 && gl_access_wait_all(&g->replays, 1, site) != 0) rc = -1;
  if (rc == 0) {
    gl_set_ctx(g->dev);
    CUgraphExecUpdateResultInfo info;
    memset(&info, 0, sizeof info);
    if (gld_drv.cuGraphExecUpdate(g->exec, fresh->graph, &info) == CUDA_SUCCESS) {
      fresh->exec = g->exec;
      g->exec = NULL;
      /* the executable already runs the new work: the update cannot be undone, so a
       * count the driver will not give (a valid graph: it cannot refuse) is the old one */
      if (gld_drv.cuGraphGetNodes(fresh->graph, NULL, &fresh->nodes) != CUDA_SUCCESS) fresh->nodes = g->nodes;
    } else { /* another topology: made anew */
      *rebuilt = 1;
      rc = instantiate(fresh, origin, site);
      if (rc == 0) {
        gld_drv.cuGraphExecDestroy(g->exec);
        g->exec = NULL;
      }
    }
  }
  gl_stream_unref(origin);
  if (!ok || rc != 0) {
    if (fresh->exec == g->exec) fresh->exec = NULL;
    release_uses(fresh);
    destroy(fresh);
    return ok ? -1 : 0;
  }
  /* g takes the new work; the old goes with fresh's shell */
  release_uses(g);
  run_cleanups(g);
  release_modules(g);
  gl_set_ctx(g->dev);
  if (g->graph) gld_drv.cuGraphDestroy(g->graph);
  g->graph = fresh->graph;
  g->exec = fresh->exec;
  g->nodes = fresh->nodes;
  g->capture_loc = fresh->capture_loc;
#define TAKE(field) g->field = fresh->field, fresh->field = 0
  g->mem = fresh->mem, fresh->mem = NULL;
  g->use = fresh->use, fresh->use = NULL;
  g->node = fresh->node, fresh->node = NULL;
  g->mods = fresh->mods, fresh->mods = NULL;
  g->cleanup = fresh->cleanup, fresh->cleanup = NULL;
  TAKE(nmem);
  TAKE(capmem);
  TAKE(nuse);
  TAKE(capuse);
  TAKE(nnode);
  TAKE(capnode);
  TAKE(nmods);
  TAKE(capmods);
  TAKE(ncleanup);
  TAKE(capcleanup);
#undef TAKE
  for (int i = 0; i < g->nmem; i++) { /* the messages of frees name g now */
    if (g->mem[i].a) gl_alloc_graph_rename(g->mem[i].a, fresh, g);
    if (g->mem[i].m) gl_hostmem_graph_rename(g->mem[i].m, fresh, g);
  }
  fresh->graph = NULL;
  fresh->exec = NULL;
  destroy(fresh);
  return 0;
}

int gl_capture_add_member(gl_graph *g, gl_stream *t, const char *call) {
  if (grow((void **)&g->members, &g->capmembers, g->nmembers + 1, sizeof *g->members) != 0)
    return gl_fail_nomem(g->dev->rt, call);
  gl_stream_ref(t);
  g->members[g->nmembers++] = t;
  t->capture = g;
  return 0;
}

static int find_mem(gl_graph *g, const gl_accesses *acc) {
  for (int i = g->nmem - 1; i >= 0; i--)
    if (g->mem[i].acc == acc) return i;
  return -1;
}

gl_accesses *gl_graph_local(gl_graph *g, const gl_operand *o) {
  int i = find_mem(g, o->acc);
  if (i >= 0) return &g->mem[i].local;
  if (grow((void **)&g->mem, &g->capmem, g->nmem + 1, sizeof *g->mem) != 0) return NULL;
  gl_graph_mem *m = &g->mem[g->nmem++];
  memset(m, 0, sizeof *m);
  m->acc = o->acc;
  if (o->x) gl_alloc_graph_use(m->a = o->x->a, g);
  else gl_hostmem_graph_use(m->m = o->h->m, g);
  return &m->local;
}

int gl_graph_add_use(gl_graph *g, const gl_op *op, const gl_operand *o, int loc) {
  gl_runtime *rt = g->dev->rt;
  int i = find_mem(g, o->acc);
  if (i < 0 || grow((void **)&g->use, &g->capuse, g->nuse + 1, sizeof *g->use) != 0 ||
      grow((void **)&g->node, &g->capnode, g->nnode + 1, sizeof *g->node) != 0)
    return -1;
  gl_buf what = GL_BUF_INIT, role = GL_BUF_INIT;
  gl_operand_describe(op, o, &what, &role);
  /* interned: a description outlives the objects it names (a stream's workspace is freed with the
   * stream, the graph still holding the memory); out of memory, it reads "?" */
  gl_graph_use u = {i, o->lo, o->hi, o->write, loc, g->nuse, gl_intern(rt, gl_buf_str(&what)),
                    gl_intern(rt, gl_buf_str(&role))};
  gl_buf_free(&what);
  gl_buf_free(&role);
  g->use[g->nuse++] = u;
  g->node[g->nnode++] = u;
  return 0;
}

int gl_graph_add_module(gl_graph *g, gl_module *m) {
  for (int i = 0; i < g->nmods; i++)
    if (g->mods[i] == m) return 0;
  if (grow((void **)&g->mods, &g->capmods, g->nmods + 1, sizeof *g->mods) != 0) return -1;
  gl_module_ref(m);
  g->mods[g->nmods++] = m;
  return 0;
}

int gl_graph_add_cleanup(gl_graph *g, void (*fn)(void *), void *arg) {
  if (grow((void **)&g->cleanup, &g->capcleanup, g->ncleanup + 1, sizeof *g->cleanup) != 0) return -1;
  g->cleanup[g->ncleanup].fn = fn;
  g->cleanup[g->ncleanup++].arg = arg;
  return 0;
}

/* The strict policy's error at a replay: the graph, the node that conflicts
 * (its call, its capture line and its memory, named as when it was
 * captured), the other stream's work and line. u is a merged use; the node
 * is found among those it merged. */
static int replay_conflict(gl_graph *g, gl_stream *s, const gl_graph_use *u, gl_conflict *c, const char *call,
                           gl_site *site) {
  gl_runtime *rt = g->dev->rt;
  const gl_graph_use *n = u;
  gl_accesses *acc = g->mem[u->mem].acc;
  for (int i = 0; i < g->nnode; i++) {
    const gl_graph_use *v = &g->node[i];
    if (v->mem == u->mem && v->write == u->write && v->lo < u->hi && u->lo < v->hi &&
        gl_access_conflict(acc, s, v->lo, v->hi, v->write, c)) {
      n = v;
      break;
    }
  }
  gl_buf msg = GL_BUF_INIT;
  gl_buf_printf(&msg, "%s of graph '%s' on ", call, g->name);
  gl_conflict_stream(&msg, s, c);
  gl_buf_printf(&msg, " at %s: its node captured at %s (%s) %s %s", gl_loc_text(rt, gl_site_loc(rt, site)),
                gl_loc_text(rt, n->loc), gl_loc_text(rt, n->role), n->write ? "writes" : "reads",
                gl_loc_text(rt, n->what));
  gl_conflict_tail(&msg, s, c, 0);
  gl_fail(rt, "%s", gl_buf_str(&msg));
  gl_buf_free(&msg);
  return -1;
}

int gl_graph_launch(gl_graph *g, gl_stream *s, const char *call, gl_site *site) {
  gl_device *dev = s->dev;
  gl_runtime *rt = dev->rt;
  if (rt->capture && gl_capture_refuse(rt, call, site) != 0) return -1;
  if (g->closed) return gl_fail(rt, "%s: graph '%s' is closed", call, g->name);
  if (dev != g->dev)
    return gl_fail(rt, "%s: graph '%s' was captured on device %d, but stream '%s' is on device %d", call, g->name,
                   g->dev->ordinal, s->name, dev->ordinal);
  if (gl_stream_check(s) != 0) return -1;
  /* checked as if the captured work were queued on s now */
  for (int i = 0; rt->policy != GL_POLICY_OFF && i < g->nuse; i++) {
    const gl_graph_use *u = &g->use[i];
    gl_conflict c;
    int rc = gl_access_admit(g->mem[u->mem].acc, s, u->lo, u->hi, u->write, &c, site);
    if (rc > 0) return replay_conflict(g, s, u, &c, call, site);
    if (rc < 0) return -1;
  }
  for (int i = 0; i < g->nuse; i++)
    if (gl_access_reserve(g->mem[g->use[i].mem].acc, 1) != 0) return gl_fail_nomem(rt, NULL);
  if (gl_access_reserve(&g->replays, 1) != 0) return gl_fail_nomem(rt, NULL);
  gl_set_ctx(dev);
  if (rt->trace) gl_trace_begin(s);
  CUresult r = gld_drv.cuGraphLaunch(g->exec, s->cu);
  if (r != CUDA_SUCCESS) return gl_fail_cu(rt, dev, r, "cuGraphLaunch", site);
  s->seq++;
  s->last_kind = GL_OP_GRAPH + 1;
  g->launches++;
  if (rt->trace) gl_trace_end(s, GL_OP_GRAPH, g->name, g->nodes);
  for (int i = 0; i < g->nuse; i++) {
    const gl_graph_use *u = &g->use[i];
    gl_access_record(g->mem[u->mem].acc, s, u->lo, u->hi, u->write, u->loc);
  }
  gl_access_mark(&g->replays, s);
  return 0;
}

int gl_graph_check_close(gl_graph *g, const char *call, gl_site *site) {
  gl_runtime *rt = g->dev->rt;
  gl_graph *c = rt->capture;
  if (!c || c->updates != g) return 0;
  return gl_fail(rt,
                 "%s at %s: graph '%s' is being updated (%s at %s): a graph cannot be closed inside its own "
                 "update's function; close it after %s returns",
                 call, gl_loc_text(rt, gl_site_loc(rt, site)), g->name, rt->names.update,
                 gl_loc_text(rt, c->capture_loc), rt->names.update);
}

static void destroy_retired(void *obj) { destroy(obj); }

/* The part of a close that may queue work: the memory let go (a free
 * ordered after the memory's last users, which may be a wait), and the
 * driver's objects destroyed now, or once the replays are known finished.
 * A graph closed during a capture gets here from the retire list once that
 * capture has ended. */
static void close_release(void *obj) {
  gl_graph *g = obj;
  release_uses(g);
  if (!g->dev->opened || gl_access_known_finished(&g->replays)) {
    destroy(g);
    return;
  }
  gl_retire(g->dev->rt, &g->retire, g, &g->replays, destroy_retired);
}

void gl_graph_close(gl_graph *g) {
  gl_runtime *rt = g->dev->rt;
  int was_capture = g->origin != NULL;
  if (g->origin) join_all(g), end_capture(g); /* closed while capturing (an error unwinding): discarded */
  unlink_live(g);
  if (g->handle) *g->handle = NULL;
  g->handle = NULL;
  g->closed = 1;
  if (rt->capture) { /* a free that waits for another stream would be refused inside it */
    gl_retire(rt, &g->retire, g, NULL, close_release);
    return;
  }
  close_release(g);
  if (was_capture) gl_retire_reap(rt, 0); /* those closed during the capture g was */
}

void gl_graph_teardown(gl_runtime *rt) {
  if (rt->capture) gl_graph_close(rt->capture);
  while (rt->graphs) gl_graph_close(rt->graphs);
  gl_retire_reap(rt, 1);
}
