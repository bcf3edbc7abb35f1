/*
 * graph.c -- CUDA graphs (see graph.h).
 */
#include "graph.h"

#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "hostmem.h"
#include "memory.h"
#include "module.h"
#include "queue.h"
#include "runtime.h"
#include "stream.h"

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

int gl_graph_begin(gl_stream *s, const char *name, gl_site *site, gl_graph **out) {
  gl_device *dev = s->dev;
  gl_runtime *rt = dev->rt;
  *out = NULL;
  if (rt->capture)
    return gl_fail(rt, "s:capture: graph '%s' is being captured already (since %s): captures do not nest",
                   rt->capture->name, gl_loc_text(rt, rt->capture->capture_loc));
  if (!s->cu) return gl_fail(rt, "s:capture: stream '%s' is closed", s->name);
  gl_graph_reap(rt, 0);
  gl_graph *g = calloc(1, sizeof *g);
  if (!g) return gl_fail_nomem(rt, "s:capture");
  g->dev = dev;
  snprintf(g->name, sizeof g->name, "%s", name && *name ? name : "graph");
  g->capture_loc = gl_site_loc(rt, site);
  gl_set_ctx(dev);
  /* thread-local: another thread's unrelated CUDA calls (a library's) never break this
   * capture, and this thread's calls that cannot be captured are gpulua's to refuse first */
  CUresult r = gl_drv.cuStreamBeginCapture(s->cu, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  if (r != CUDA_SUCCESS) {
    free(g);
    return gl_fail_cu(rt, dev, r, "cuStreamBeginCapture", site);
  }
  g->origin = s;
  gl_stream_ref(s);
  s->capture = g;
  rt->capture = g;
  *out = g;
  return 0;
}

/* Let go of the memory and modules (the graph no longer uses them). */
static void release_uses(gl_graph *g) {
  for (int i = 0; i < g->nuse; i++) {
    if (g->use[i].a) gl_alloc_graph_release(g->use[i].a);
    if (g->use[i].m) gl_hostmem_graph_release(g->use[i].m);
  }
  free(g->use);
  g->use = NULL;
  g->nuse = g->capuse = 0;
  for (int i = 0; i < g->nmods; i++) gl_module_unref(g->mods[i]);
  free(g->mods);
  g->mods = NULL;
  g->nmods = g->capmods = 0;
}

/* The driver's objects and what they point at (their replays have finished). */
static void destroy(gl_graph *g) {
  if (g->dev->opened) {
    gl_set_ctx(g->dev);
    if (g->exec) gl_drv.cuGraphExecDestroy(g->exec);
    if (g->graph) gl_drv.cuGraphDestroy(g->graph);
  }
  for (int i = 0; i < g->ncleanup; i++) g->cleanup[i](g->cleanup_arg[i]);
  free(g->cleanup);
  free(g->cleanup_arg);
  gl_access_clear(&g->replays);
  free(g);
}

static void end_capture_state(gl_graph *g) {
  gl_runtime *rt = g->dev->rt;
  if (rt->capture == g) rt->capture = NULL;
  if (g->origin) {
    g->origin->capture = NULL;
    gl_stream_unref(g->origin);
    g->origin = NULL;
  }
}

int gl_graph_end(gl_graph *g, int ok, gl_site *site) {
  gl_runtime *rt = g->dev->rt;
  gl_set_ctx(g->dev);
  CUgraph graph = NULL;
  CUresult r = gl_drv.cuStreamEndCapture(g->origin->cu, &graph);
  end_capture_state(g);
  g->graph = graph;
  gl_device *dev = g->dev;
  if (!ok || r != CUDA_SUCCESS) { /* discarded: the stream is usable again */
    release_uses(g);
    destroy(g);
    return ok ? gl_fail_cu(rt, dev, r, "cuStreamEndCapture", site) : 0;
  }
  r = gl_drv.cuGraphInstantiateWithFlags(&g->exec, g->graph, 0);
  if (r == CUDA_SUCCESS) r = gl_drv.cuGraphGetNodes(g->graph, NULL, &g->nodes);
  if (r != CUDA_SUCCESS) {
    release_uses(g);
    destroy(g);
    return gl_fail_cu(rt, dev, r, "cuGraphInstantiateWithFlags", site);
  }
  return 0;
}

int gl_capture_refuse(gl_runtime *rt, const char *call, gl_site *site) {
  gl_graph *g = rt->capture;
  if (!g) return 0;
  return gl_fail(rt, "%s cannot be called during the capture of graph '%s' (s:capture at %s), at %s: nothing runs "
                     "while a graph is captured (host waits and reads, allocations and frees happen outside "
                     "s:capture)",
                 call, g->name, gl_loc_text(rt, g->capture_loc), gl_loc_text(rt, gl_site_loc(rt, site)));
}

int gl_graph_add_use(gl_graph *g, gl_accesses *acc, const gl_operand *o, int loc) {
  (void)acc;
  if (grow((void **)&g->use, &g->capuse, g->nuse + 1, sizeof *g->use) != 0) return -1;
  gl_graph_use *u = &g->use[g->nuse++];
  memset(u, 0, sizeof *u);
  u->lo = o->lo;
  u->hi = o->hi;
  u->write = o->write;
  u->loc = loc;
  if (o->x) gl_alloc_graph_use(u->a = o->x->a, g);
  else gl_hostmem_graph_use(u->m = o->h->m, g);
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
  int cap = g->capcleanup;
  if (grow((void **)&g->cleanup, &cap, g->ncleanup + 1, sizeof *g->cleanup) != 0) return -1;
  int cap2 = g->capcleanup;
  if (grow((void **)&g->cleanup_arg, &cap2, g->ncleanup + 1, sizeof *g->cleanup_arg) != 0) return -1;
  g->capcleanup = cap < cap2 ? cap : cap2;
  g->cleanup[g->ncleanup] = fn;
  g->cleanup_arg[g->ncleanup++] = arg;
  return 0;
}

static gl_accesses *use_acc(const gl_graph_use *u) { return u->a ? &u->a->acc : &u->m->acc; }

int gl_graph_launch(gl_graph *g, gl_stream *s, gl_site *site) {
  gl_device *dev = s->dev;
  gl_runtime *rt = dev->rt;
  if (gl_capture_refuse(rt, "g:launch", site) != 0) return -1;
  if (g->closed) return gl_fail(rt, "g:launch: graph '%s' is closed", g->name);
  if (dev != g->dev)
    return gl_fail(rt, "g:launch: graph '%s' was captured on device %d, but stream '%s' is on device %d", g->name,
                   g->dev->ordinal, s->name, dev->ordinal);
  if (gl_stream_check(s) != 0) return -1;
  /* checked as if the captured work were queued on s now */
  for (int i = 0; rt->policy != GL_POLICY_OFF && i < g->nuse; i++) {
    const gl_graph_use *u = &g->use[i];
    gl_conflict c;
    while (gl_access_conflict(use_acc(u), s, u->lo, u->hi, u->write, &c)) {
      if (rt->policy == GL_POLICY_STRICT)
        return gl_fail(rt,
                       "g:launch of graph '%s' on stream '%s' (device %d) at %s: its node captured at %s %s memory "
                       "that stream '%s' (device %d) may still %s (queued at %s); order the streams first (%s:wait "
                       "on an event recorded after that, %s:join, or a host sync of stream '%s')",
                       g->name, s->name, dev->ordinal, gl_loc_text(rt, gl_site_loc(rt, site)),
                       gl_loc_text(rt, u->loc), u->write ? "writes" : "reads", c.other->name,
                       c.other->dev->ordinal, c.other_writes ? "be writing" : "be reading",
                       gl_loc_text(rt, c.other_loc), s->name, s->name, c.other->name);
      if (gl_stream_join(s, c.other, 1, site) != 0) return -1;
    }
  }
  for (int i = 0; i < g->nuse; i++)
    if (gl_access_reserve(use_acc(&g->use[i]), 1) != 0) return gl_fail_nomem(rt, NULL);
  if (gl_access_reserve(&g->replays, 1) != 0) return gl_fail_nomem(rt, NULL);
  gl_set_ctx(dev);
  CUresult r = gl_drv.cuGraphLaunch(g->exec, s->cu);
  if (r != CUDA_SUCCESS) return gl_fail_cu(rt, dev, r, "cuGraphLaunch", site);
  s->seq++;
  for (int i = 0; i < g->nuse; i++) {
    const gl_graph_use *u = &g->use[i];
    gl_access_record(use_acc(u), s, u->lo, u->hi, u->write, u->loc);
  }
  gl_access_record(&g->replays, s, 0, 1, 0, GL_LOC_NONE);
  for (int i = 0; i < g->nmods; i++) { /* a module stays loaded until the replay finishes */
    if (gl_access_reserve(&g->mods[i]->uses, 1) == 0) gl_access_record(&g->mods[i]->uses, s, 0, 1, 0, GL_LOC_NONE);
  }
  return 0;
}

void gl_graph_close(gl_graph *g) {
  gl_runtime *rt = g->dev->rt;
  if (g->origin) { /* closed while capturing (an error unwinding): the capture is discarded */
    CUgraph graph = NULL;
    gl_set_ctx(g->dev);
    gl_drv.cuStreamEndCapture(g->origin->cu, &graph);
    g->graph = graph;
    end_capture_state(g);
  }
  g->closed = 1;
  release_uses(g);
  if (!g->dev->opened || gl_access_known_finished(&g->replays)) {
    destroy(g);
    return;
  }
  g->next_deferred = rt->deferred_graphs;
  rt->deferred_graphs = g;
}

void gl_graph_reap(gl_runtime *rt, int wait) {
  for (gl_graph **pp = &rt->deferred_graphs; *pp;) {
    gl_graph *g = *pp;
    if (wait) gl_access_wait_all(&g->replays, 0, NULL);
    if (wait || !g->dev->opened || gl_access_finished(&g->replays)) {
      *pp = g->next_deferred;
      destroy(g);
    } else {
      pp = &g->next_deferred;
    }
  }
}
