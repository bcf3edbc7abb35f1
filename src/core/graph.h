/*
 * graph.h -- CUDA graphs: the work a script queues on a stream inside
 * s:capture(fn) becomes one graph, replayed with one driver call.
 *
 * During a capture nothing runs; the checker records nothing either: each
 * queued operation's accesses (memory, byte range, read or write, the
 * script line) go into the graph's use list instead, and every replay
 * (g:launch(s2)) is checked and recorded on s2 exactly as if that work were
 * queued there, at once. Calls that cannot be captured (host waits and
 * reads, allocations and frees, work on another stream) are refused before
 * the driver sees them (gl_capture_refuse), and the capture is then
 * abandoned cleanly. A graph keeps its memory and modules alive until it is
 * closed; the driver's objects go once its replays are known finished.
 *
 * This first form captures one stream (forks inside a capture are refused).
 */
#ifndef GPULUA_CORE_GRAPH_H
#define GPULUA_CORE_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "checker.h"
#include "driver.h"
#include "queue.h"
#include "types.h"

#define GL_GRAPH_NAME_MAX 63

typedef struct gl_graph_use {
  gl_alloc *a;            /* device memory (a use: a->graph_uses), or */
  gl_hostmem *m;          /* host memory (a reference and a use) */
  uint64_t lo, hi;
  int write;
  int loc;                /* where the node was captured */
} gl_graph_use;

typedef struct gl_graph gl_graph;
struct gl_graph {
  gl_device *dev;
  gl_stream *origin;      /* the capturing stream (a reference) while capturing */
  char name[GL_GRAPH_NAME_MAX + 1];
  int capture_loc;        /* where s:capture was called */
  CUgraph graph;
  CUgraphExec exec;
  size_t nodes;
  gl_graph_use *use;
  int nuse, capuse;
  gl_module **mods;       /* references */
  int nmods, capmods;
  void (**cleanup)(void *); /* run when the driver's objects go (after the replays) */
  void **cleanup_arg;
  int ncleanup, capcleanup;
  gl_accesses replays;    /* the streams and positions of its replays */
  int closed;
  gl_graph *next_deferred;
};

/* Begin capturing s (rt->capture is the graph until it ends). */
int gl_graph_begin(gl_stream *s, const char *name, gl_site *site, gl_graph **out);
/* End the capture: ok, the graph is instantiated; not ok (the script's
 * function failed), the capture is discarded and the graph released. */
int gl_graph_end(gl_graph *g, int ok, gl_site *site);
/* During a capture: an error naming the call, the graph and where the
 * capture began (and the capture fails); 0 when no capture runs. */
int gl_capture_refuse(gl_runtime *rt, const char *call, gl_site *site);
/* queue.c, during a capture: the operand's use, instead of a record. */
int gl_graph_add_use(gl_graph *g, gl_accesses *acc, const gl_operand *o, int loc);
int gl_graph_add_module(gl_graph *g, gl_module *m);
int gl_graph_add_cleanup(gl_graph *g, void (*fn)(void *), void *arg);
/* g:launch(s): checked and recorded on s like the captured work, then replayed. */
int gl_graph_launch(gl_graph *g, gl_stream *s, gl_site *site);
/* g:close(), <close>, __gc: the memory and modules are let go now; the
 * driver's objects and g itself once the replays have finished (at once,
 * or at a later reap). g must not be used after. */
void gl_graph_close(gl_graph *g);
/* Destroy the closed graphs whose replays have finished (wait: all). */
void gl_graph_reap(gl_runtime *rt, int wait);

#endif
