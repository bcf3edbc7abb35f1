/*
 * names.h -- the names of the calls that core's messages refer to.
 *
 * A message names the call that failed with the name its caller gives
 * (each core function that can fail takes `call`, "s:sync"). Some messages
 * also point at another call: where a capture began, how to close a graph,
 * how to start a trace. Those names are the runtime's vocabulary (rt->names),
 * filled by whoever makes the runtime: the Lua bindings with the names a
 * script writes (l_gpu.c); a runtime made from C (gl_runtime_new) starts
 * with gl_names_c, the core's own C functions, and its user may set others.
 */
#ifndef GPULUA_CORE_NAMES_H
#define GPULUA_CORE_NAMES_H

typedef struct gl_names {
  const char *device;   /* opens a device: a device opened for another call's sake is named so */
  const char *alloc;    /* allocates device memory: gpulua's own allocations are named so */
  const char *builtins; /* where scripts find the built-in kernels: their compile errors are named so */
  const char *trace;    /* the trace: recording that cannot begin is named so */
  const char *language; /* what the host program is written in: "a host buffer read from Lua" */
  const char *capture;  /* begins a capture: "(s:capture at x.lua:3)" */
  const char *update;   /* captures again into a graph */
  const char *launch_graph; /* replays a graph */
  const char *close_graph;  /* closes a graph, as a user would write the call: "(g:close())" */
  const char *fork;     /* makes a stream ordered after another (inside a capture: a branch) */
  const char *join;     /* orders a stream after another's work: a stream's wait is named so */
  const char *join_hint;    /* printf format, two strings: how stream '%s' waits for stream '%s' */
  const char *record_again; /* records an event again, as a user would write the call */
  const char *trace_start;  /* starts a trace to a file, as a user would write the call */
  const char *wait_on;      /* printf format, one string: stream '%s' waits for an event */
  const char *join_on;      /* printf format, one string: stream '%s' waits for another's work */
  const char *read_on;      /* printf format, one string: a slice read on stream '%s' */
  const char *read_default; /* a slice read on the device's main stream */
  const char *peer;         /* printf format, two ints: device %d grants device %d access */
  const char *set_host;     /* gives a kernel its host implementation (the sim runs no device code) */
  const char *host_alloc;   /* allocates a pinned host buffer */
  const char *map_writable; /* maps a file as a host buffer that may be written */
  const char *timeline;     /* the text timeline of the work so far */
} gl_names;

/* The default vocabulary: core's own C functions. */
extern const gl_names gl_names_c;

#endif
