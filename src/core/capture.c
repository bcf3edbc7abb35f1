/*
 * capture.c -- the calls a capture refuses (graph.h): host waits and reads,
 * allocations and frees, work on a stream outside the capture, waits across
 * its edge, events that time or wait for outside work. Each error names
 * the call (as its caller gives it), its line, the graph and where its
 * capture began; the other calls it points at are the runtime's names
 * (names.h).
 */
#include "graph.h"

#include "event.h"
#include "runtime.h"
#include "stream.h"

static int is_member(const gl_graph *g, const gl_stream *s) { return s->capture == g; }

int gl_capture_refuse(gl_runtime *rt, const char *call, gl_site *site) {
  gl_graph *g = rt->capture;
  if (!g) return 0;
  return gl_fail(rt,
                 "%s at %s: not allowed during the capture of graph '%s' (%s at %s): nothing runs while a "
                 "graph is captured, so host waits and reads, allocations and frees go before or after %s",
                 call, gl_loc_text(rt, gl_site_loc(rt, site)), g->name, rt->names.capture,
                 gl_loc_text(rt, g->capture_loc), rt->names.capture);
}

int gl_capture_check_stream(gl_runtime *rt, gl_stream *s, const char *call, gl_site *site) {
  gl_graph *g = rt->capture;
  if (!g || is_member(g, s)) return 0;
  if (s->dev != g->dev)
    return gl_fail(rt,
                   "%s on stream '%s' (device %d) at %s: graph '%s' is being captured on device %d (%s at "
                   "%s): a graph's work is on one device",
                   call, s->name, s->dev->ordinal, gl_loc_text(rt, gl_site_loc(rt, site)), g->name, g->dev->ordinal,
                   rt->names.capture, gl_loc_text(rt, g->capture_loc));
  return gl_fail(rt,
                 "%s on stream '%s' at %s: the stream is not part of the capture of graph '%s' (%s of stream "
                 "'%s' at %s): only the capturing stream and streams forked from it inside the capture (%s) "
                 "queue work while it runs",
                 call, s->name, gl_loc_text(rt, gl_site_loc(rt, site)), g->name, rt->names.capture,
                 g->origin ? g->origin->name : "?", gl_loc_text(rt, g->capture_loc), rt->names.fork);
}

int gl_capture_check_order(gl_runtime *rt, gl_stream *waiter, gl_stream *t, const char *call, gl_site *site) {
  gl_graph *g = rt->capture;
  if (!g) return 0;
  int wm = is_member(g, waiter), tm = is_member(g, t);
  if (wm == tm) return 0; /* inside the capture, or wholly outside it */
  if (wm)
    return gl_fail(rt,
                   "%s at %s: stream '%s' is being captured into graph '%s' (%s at %s) and cannot wait for "
                   "work outside the capture (stream '%s'): order the streams before %s (each %s is "
                   "then checked against that work like any other)",
                   call, gl_loc_text(rt, gl_site_loc(rt, site)), waiter->name, g->name, rt->names.capture,
                   gl_loc_text(rt, g->capture_loc), t->name, rt->names.capture, rt->names.launch_graph);
  return gl_capture_check_stream(rt, waiter, call, site);
}

int gl_capture_check_record(gl_runtime *rt, gl_stream *s, int timing, unsigned *capture, const char *call,
                            gl_site *site) {
  gl_graph *g = rt->capture;
  *capture = 0;
  if (!g || !is_member(g, s)) return 0;
  if (timing)
    return gl_fail(rt,
                   "%s on stream '%s' at %s: inside the capture of graph '%s' (%s at %s) "
                   "nothing runs, so there is nothing to time: record timing events around %s",
                   call, s->name, gl_loc_text(rt, gl_site_loc(rt, site)), g->name, rt->names.capture,
                   gl_loc_text(rt, g->capture_loc), rt->names.launch_graph);
  *capture = g->id;
  return 0;
}

int gl_capture_check_wait(gl_runtime *rt, gl_stream *s, const gl_event *e, const char *call, gl_site *site) {
  gl_graph *g = rt->capture;
  if (e->capture && (!g || g->id != e->capture))
    return gl_fail(rt,
                   "%s on stream '%s' at %s: the event was recorded inside the capture of a graph and marks no "
                   "work that runs: record it again (%s) outside the capture",
                   call, s->name, gl_loc_text(rt, gl_site_loc(rt, site)), rt->names.record_again);
  if (!g) return 0;
  if (is_member(g, s) && e->capture != g->id)
    return gl_fail(rt,
                   "%s on stream '%s' at %s: stream '%s' is being captured into graph '%s' (%s at %s) and "
                   "cannot wait for an event recorded outside the capture: order the streams before %s (each "
                   "%s is then checked against that work like any other)",
                   call, s->name, gl_loc_text(rt, gl_site_loc(rt, site)), s->name, g->name, rt->names.capture,
                   gl_loc_text(rt, g->capture_loc), rt->names.capture, rt->names.launch_graph);
  if (!is_member(g, s) && e->capture == g->id) return gl_capture_check_stream(rt, s, call, site);
  return 0;
}

int gl_capture_check_event(gl_runtime *rt, const gl_event *e, const char *call, gl_site *site) {
  if (gl_capture_refuse(rt, call, site) != 0) return -1;
  if (e->capture)
    return gl_fail(rt, "%s at %s: the event was recorded inside the capture of a graph and marks no work that runs: "
                       "record it again (%s) outside the capture",
                   call, gl_loc_text(rt, gl_site_loc(rt, site)), rt->names.record_again);
  return 0;
}
