/*
 * trace_internal.h -- the trace's records, shared by trace.c (recording and
 * the Chrome JSON), trace_text.c (the text timeline) and trace_svg.c (the
 * SVG timeline). Nothing outside those files includes it.
 *
 * Ownership: the trace (rt->trace) owns its arrays; each op_rec holds a
 * reference to its stream and each flow_rec one to its waiting stream, given
 * back when the records are dropped.
 */
#ifndef GPULUA_CORE_TRACE_INTERNAL_H
#define GPULUA_CORE_TRACE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "driver.h"
#include "error.h"
#include "types.h"

/* Recording for gpu.timeline() only (no file, nothing at exit, as the REPL
 * starts it) keeps about this many of the latest operations. */
enum { GL_TRACE_KEEP = 200000 };
/* Operations begun and not yet ended: one per stream, a collective's ranks
 * (GL_MAX_LOCAL_RANKS) at most. */
enum { GL_TRACE_PENDING = 64 };

typedef struct {
  gl_stream *s;          /* a reference */
  uint64_t seq;
  gl_op_kind kind;
  int name;              /* interned */
  size_t bytes;
  CUevent a, b;
  double ts, dur;        /* microseconds from the trace's start */
  int done;
} op_rec;

typedef struct {
  long from;             /* index of the op the wait is for, or -1 */
  gl_stream *to;         /* a reference */
  uint64_t to_seq;       /* the waiting stream's position at the wait */
  const char *kind;      /* "wait", "join", "fork", "auto wait", "close" */
} flow_rec;

typedef struct {
  const gl_stream *s;    /* not a reference: only compared */
  gl_device *dev;        /* s's, whose pool e goes back to */
  CUevent e;             /* the begin event of the operation being queued on s */
} pending_rec;

typedef struct {
  int ready;
  CUstream idle;
  CUevent base;
  double base_host;      /* host seconds when base was recorded */
} dev_state;

struct gl_trace {
  gl_runtime *rt;
  char file[1024];       /* the Chrome JSON, or "" */
  char svg[1024];        /* the SVG timeline written at finish, or "" */
  int timeline;          /* the text timeline on stderr at finish */
  double t0;
  op_rec *ops;
  long n, cap, harvested; /* ops[0 .. harvested) are all done */
  long dropped;          /* the oldest records no longer kept (GL_TRACE_KEEP) */
  flow_rec *flows;
  long nflows, capflows;
  dev_state *dev;
  int ndev;
  pending_rec pending[GL_TRACE_PENDING]; /* one per stream queueing (a collective: each rank's) */
  int npending;
};

/* The streams that appear in the trace, in order of first use (malloc'd). */
int gl_trace_streams(const gl_trace *T, gl_stream ***out);
/* The operations whose times are known (done), and the span they cover,
 * from the first one's start (*lo) to the last one's end (*hi); 0 for both
 * when there is none. */
long gl_trace_span(const gl_trace *T, double *lo, double *hi);
/* The first op of the waiting stream queued after the wait f, or NULL. */
const op_rec *gl_trace_flow_target(const gl_trace *T, const flow_rec *f);
/* Append the text timeline of the finished ops to out (trace_text.c); the
 * ops not done are counted as pending. */
void gl_trace_text(const gl_trace *T, gl_buf *out);
/* Write the timeline of the finished ops as SVG to path (trace_svg.c); the
 * ops not done are counted as pending in its title. -1 with errno set when
 * the file cannot be written. */
int gl_trace_svg_write(const gl_trace *T, const char *path);

#endif
