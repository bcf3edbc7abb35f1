/*
 * trace.h -- the trace of a run: every copy, fill and launch with its
 * duration (from timing events, pooled), and the waits between streams, as
 * Chrome trace event JSON (Perfetto, chrome://tracing), as a text timeline
 * and as an SVG timeline. One trace per runtime (rt->trace, NULL when not
 * recording).
 */
#ifndef GPULUA_CORE_TRACE_H
#define GPULUA_CORE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "types.h"

/* Around one queued operation on s: begin before queueing it, end after. */
void gl_trace_begin(gl_stream *s);
void gl_trace_end(gl_stream *s, gl_op_kind kind, const char *name, size_t bytes);
/* s's later work waits for stream t's work up to position seq; kind names
 * the flow: "wait" (s:wait), "join", "fork", "auto wait", "close". */
void gl_trace_wait(gl_stream *s, gl_stream *t, uint64_t seq, const char *kind);

/* Start tracing (file may be NULL: the timeline only). A file that cannot be
 * written is an error now, with the system's reason (`what` names the caller
 * in it). Already tracing into a file: that trace is written first, then a
 * new one starts into `file`. */
int gl_trace_start(gl_runtime *rt, const char *what, const char *file, int timeline);
/* Write the SVG timeline to svg at finish (recording starts if it has not):
 * a file that cannot be written is an error now, as for gl_trace_start. */
int gl_trace_start_svg(gl_runtime *rt, const char *what, const char *svg);
/* The timeline of the work recorded so far, waiting for nothing: finished
 * operations are drawn, those still queued counted as pending. svg (may be
 * NULL): the SVG written to that file; else the text timeline is appended
 * to text (may be NULL). When nothing records, recording starts (for the
 * timeline only: no file, nothing at exit): text then gets one line saying
 * so, and 1 is returned; else 0, or -1 with the error (`what` names the
 * caller in it). */
int gl_trace_timeline(gl_runtime *rt, const char *what, gl_buf *text, const char *svg);
/* The trace file, or NULL when not tracing or tracing without one. */
const char *gl_trace_file(const gl_runtime *rt);
/* Wait for the traced operations' times and write the file now (`call`:
 * the call's name as the caller wrote it, which the errors begin with).
 * Recording that cannot begin for lack of memory is named rt->names.trace. */
int gl_trace_write(gl_runtime *rt, const char *call);
/* Write the file, the SVG and the text timeline (stderr), and stop. Also at
 * teardown. */
void gl_trace_finish(gl_runtime *rt);

#endif
