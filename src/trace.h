/*
 * trace.h -- the trace of a run: every copy, fill and launch with its
 * duration (from timing events, pooled), and the waits between streams, as
 * Chrome trace event JSON (Perfetto, chrome://tracing) and as a text timeline.
 */
#ifndef GPULUA_TRACE_H
#define GPULUA_TRACE_H

#include "core.h"

typedef enum { GL_OP_H2D, GL_OP_D2H, GL_OP_D2D, GL_OP_PEER, GL_OP_FILL, GL_OP_LAUNCH } gl_op_kind;

/* Nonzero while the run is traced (a file or --timeline). */
extern int gl_tracing;

/* Around one queued operation on s: begin before queueing it, end after. */
void gl_trace_begin(gl_stream *s);
void gl_trace_end(gl_stream *s, gl_op_kind kind, const char *name, size_t bytes);
/* s's later work waits for stream t's work up to position seq
 * (inserted: by the auto policy). */
void gl_trace_wait(gl_stream *s, gl_stream *t, uint64_t seq, int inserted);

/* Start from the options (--trace, GPULUA_TRACE, --timeline). */
void gl_trace_init(lua_State *L);
/* gpu.trace([file]): start tracing to file, or write the trace now. */
int gl_trace_lua(lua_State *L);
/* At exit (also after an error): write the file and the timeline. */
void gl_trace_finish(gl_runtime *rt);

#endif
