/*
 * types.h -- the core's object types, declared once so that each header can
 * name the others (the definitions are in the header of the file that owns
 * each: runtime.h, device.h, stream.h, event.h, memory.h, hostmem.h,
 * module.h, checker.h, site.h).
 *
 * The core (src/core) knows nothing of Lua: it is driven through plain C
 * calls and reports failure as `-1` with the runtime's error set (error.h).
 */
#ifndef GPULUA_CORE_TYPES_H
#define GPULUA_CORE_TYPES_H

#include <stddef.h>
#include <stdint.h>

typedef struct gl_runtime gl_runtime;
typedef struct gl_device gl_device;
typedef struct gl_stream gl_stream;
typedef struct gl_event gl_event;
typedef struct gl_alloc gl_alloc;
typedef struct gl_slice gl_slice;
typedef struct gl_hostmem gl_hostmem;
typedef struct gl_hostbuf gl_hostbuf;
typedef struct gl_module gl_module;
typedef struct gl_kernel gl_kernel;
typedef struct gl_accesses gl_accesses;
typedef struct gl_site gl_site;
typedef struct gl_trace gl_trace;

typedef enum { GL_POLICY_STRICT, GL_POLICY_AUTO, GL_POLICY_OFF } gl_policy;

/* The kinds of queued operation (queue.h), as the trace shows them; a
 * graph's replay (graph.h) is traced as one operation of its own kind. */
typedef enum { GL_OP_H2D, GL_OP_D2H, GL_OP_D2D, GL_OP_PEER, GL_OP_FILL, GL_OP_LAUNCH, GL_OP_GRAPH, GL_OP_GEMM, GL_OP_COLL } gl_op_kind;

#endif
