/*
 * graph.h -- CUDA graphs: the work a script queues on a stream inside
 * s:capture(fn), and on the streams forked from it there, becomes one graph,
 * replayed with one driver call.
 *
 * During a capture nothing runs. The checker still checks the captured work
 * against itself: each memory the capture touches gets capture-local records
 * (gl_graph_mem.local), so that two branches of the graph that race are an
 * error (strict) or get a dependency (auto) at the line that queued them;
 * the memory's real records are neither read nor changed, since the work
 * runs only at a replay. At the end the accesses are merged into a short
 * use list per memory (byte ranges read, byte ranges written, the line of
 * the first node of each), and each replay (g:launch(s2)) is checked and
 * recorded on s2 exactly as if that work were queued there at once. Each
 * captured operand is also kept as given (its range, line, call and memory
 * described as at capture), so that a replay's conflict names the node and
 * the memory as an eager conflict would.
 *
 * A stream forked inside the capture is a branch of the graph: there its
 * clock orders the branch after the capture's work before the fork, and
 * that ordering is the graph's. Its own queue starts empty, so when the
 * capture ends its clock is emptied: it is then ordered after nothing.
 *
 * Calls that cannot be captured (host waits and reads, allocations and
 * frees, work on a stream outside the capture, waits for work outside it)
 * are refused before the driver sees them (capture.c: gl_capture_refuse and
 * the checks that queue.c and stream.c call); the capture then continues
 * or, when the error leaves s:capture, is ended and discarded, and the
 * streams are usable. A live graph keeps its memory and modules (a free is
 * refused, naming the graph); closing it lets them go, and the driver's
 * objects go once its replays are known finished, without blocking the
 * host. A graph closed during a capture lets its memory go when that
 * capture ends (its frees may have to wait for other streams).
 */
#ifndef GPULUA_CORE_GRAPH_H
#define GPULUA_CORE_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "checker.h"
#include "driver.h"
#include "queue.h"
#include "retire.h"
#include "types.h"

#define GL_GRAPH_NAME_MAX 63

/* One piece of memory the graph uses: held (a reference) while it lives. */
typedef struct gl_graph_mem {
  gl_accesses *acc;       /* its real records */
  gl_alloc *a;            /* device memory, or */
  gl_hostmem *m;          /* host memory */
  gl_accesses local;      /* during the capture: the captured work's records */
} gl_graph_mem;

/* A byte range of one memory that the graph reads or writes. */
typedef struct gl_graph_use {
  int mem;                /* index in gl_graph.mem */
  uint64_t lo, hi;
  int write;
  int loc;                /* where its first node was captured */
  int first;              /* that node's place in the capture */
  int what, role;         /* interned, for messages: the memory as the node's call named it ("slice
                           * f32[1000] on device 0"), and the call ("s:fill"); in the merged list,
                           * the first node's */
} gl_graph_use;

typedef struct gl_graph gl_graph;
struct gl_graph {
  gl_device *dev;
  gl_stream *origin;      /* the capturing stream (a reference) while capturing */
  gl_stream **members;    /* the streams forked from it inside the capture (references) */
  int nmembers, capmembers;
  unsigned id;            /* the capture's number in the runtime (events recorded in it) */
  char name[GL_GRAPH_NAME_MAX + 1];
  int capture_loc;        /* where s:capture was called */
  CUgraph graph;
  CUgraphExec exec;
  size_t nodes;
  gl_graph_mem *mem;
  int nmem, capmem;
  gl_graph_use *use;      /* merged at the capture's end: what a replay checks and records */
  int nuse, capuse;
  gl_graph_use *node;     /* each captured operand as it was given: what a replay's messages name */
  int nnode, capnode;
  gl_module **mods;       /* references, kept until the driver's graph goes (after its replays) */
  int nmods, capmods;
  struct gl_graph_cleanup {
    void (*fn)(void *);
    void *arg;
  } *cleanup;             /* run when the driver's objects go (after the replays) */
  int ncleanup, capcleanup;
  gl_accesses replays;    /* the streams and positions of its replays */
  uint64_t launches;
  int closed;
  int broken;             /* something of the capture was lost (out of memory): it cannot end well */
  gl_graph **handle;      /* the script's handle to g, cleared when the runtime goes first */
  gl_graph *updates;      /* a capture made by g:update: the graph it updates */
  gl_graph *next_live, **prev_live; /* the runtime's graphs not yet closed */
  gl_retiree retire;      /* on the runtime's retire list: closed, its replays or a capture to end */
};

/* In these calls `call` is the call's name as the caller wrote it
 * ("s:capture", "g:launch"): the errors begin with it. The other calls a
 * message points at are the runtime's names (names.h). */

/* Begin capturing s (rt->capture is the graph until it ends). */
int gl_graph_begin(gl_stream *s, const char *name, const char *call, gl_site *site, gl_graph **out);
/* End the capture. ok: the graph is checked complete (every fork joined
 * back) and instantiated; on failure, or when not ok (the script's function
 * failed), the capture is discarded and the graph released (*g = NULL). */
int gl_graph_end(gl_graph **g, int ok, const char *call, gl_site *site);
/* Capture again into g (g:update): on success g replays the new work (the
 * executable updated in place when the topology is the same, rebuilt when
 * not); on failure g is as it was. The new capture is begun by begin_update
 * and ended by end_update. */
int gl_graph_begin_update(gl_graph *g, gl_stream *s, const char *call, gl_site *site, gl_graph **fresh);
int gl_graph_end_update(gl_graph *g, gl_graph *fresh, int ok, int *rebuilt, const char *call, gl_site *site);

/* During a capture: an error naming the call, the graph and where the
 * capture began; 0 when no capture runs. */
int gl_capture_refuse(gl_runtime *rt, const char *call, gl_site *site);
/* During a capture: may s queue work (a member), and may it be ordered
 * after t (both members, or t outside the capture only when allow_outside)?
 * Errors name the call. */
int gl_capture_check_stream(gl_runtime *rt, gl_stream *s, const char *call, gl_site *site);
int gl_capture_check_order(gl_runtime *rt, gl_stream *waiter, gl_stream *t, const char *call, gl_site *site);
/* s:record on s (timing: a timing event): refused for a timing event on a
 * member; returns the id of the capture the record goes into, or 0. */
int gl_capture_check_record(gl_runtime *rt, gl_stream *s, int timing, unsigned *capture, const char *call,
                            gl_site *site);
/* s:wait(e): an event recorded inside a capture orders work inside that
 * capture only; a member waits only for such an event. */
int gl_capture_check_wait(gl_runtime *rt, gl_stream *s, const gl_event *e, const char *call, gl_site *site);
/* e:sync, e:query, e:elapsed (call): refused during a capture, and for an
 * event recorded inside one. */
int gl_capture_check_event(gl_runtime *rt, const gl_event *e, const char *call, gl_site *site);
/* s:fork inside a capture: t becomes a member. */
int gl_capture_add_member(gl_graph *g, gl_stream *t, const char *call);
/* queue.c, during a capture: the capture-local records of the operand's
 * memory (held by the graph from now on), or NULL (out of memory). The
 * pointer lasts until the next call adds a memory (the list may move). */
gl_accesses *gl_graph_local(gl_graph *g, const gl_operand *o);
/* ... and the use of operand o of op, after op was captured. */
int gl_graph_add_use(gl_graph *g, const gl_op *op, const gl_operand *o, int loc);
int gl_graph_add_module(gl_graph *g, gl_module *m);
int gl_graph_add_cleanup(gl_graph *g, void (*fn)(void *), void *arg);
/* g:launch(s): checked and recorded on s like the captured work, then replayed. */
int gl_graph_launch(gl_graph *g, gl_stream *s, const char *call, gl_site *site);
/* g:close() and <close> (not the collector's): refused inside g's own
 * g:update (the update still captures into g), naming both lines. */
int gl_graph_check_close(gl_graph *g, const char *call, gl_site *site);
/* g:close(), <close>, __gc: the memory is let go now; the driver's objects,
 * the modules and g itself once the replays have finished (at once, or from
 * the retire list, retire.h). Inside a capture (of another graph) g is closed at once, but
 * its memory is let go when that capture ends: a free may have to wait for
 * another stream, which a capture refuses. g must not be used after. */
void gl_graph_close(gl_graph *g);
/* The runtime's end: a capture still running is discarded, every graph is
 * closed (its handle cleared) and destroyed once its replays finish. */
void gl_graph_teardown(gl_runtime *rt);

#endif
