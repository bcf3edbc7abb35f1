/*
 * scratch.h -- each stream's scratch memory for the built-in reductions (sum,
 * dot, min, max: kernels/builtins.cu says how they use it).
 *
 * Layout: a ticket (a u32 the blocks count themselves on, zero between
 * reductions) at byte 0, then GL_REDUCE_BLOCKS partial slots of 8 bytes from
 * byte GL_SCRATCH_PARTS. A reduction's grid is capped at GL_REDUCE_BLOCKS
 * (launch.c), so the scratch is always large enough for it.
 *
 * Ownership: as cuBLAS's workspace (blas.h). A stream that runs a reduction
 * gets a scratch of its own at its first reduction outside a capture: an
 * allocation on that stream whose ticket is zeroed there, so kernels of one
 * stream, which run one after the other, share it, and two streams never do.
 * Scripts never see it; every reduction records a write of it, so the checker
 * sees a graph that captured one replayed where it could overlap the stream's
 * own reductions, and the graph holds the memory. When the stream closes, the
 * scratch is released (its free ordered after its uses). A capture cannot
 * allocate: once the device has reduced, each capture begins with
 * GL_SCRATCH_SPARES spares made, for the capturing stream and those forked
 * inside it that have none: made on the device's spares stream, which the
 * host then waits for (gl_stream_spares), so that they are ready for any
 * stream and no stream needs ordering after their making.
 */
#ifndef GPULUA_CORE_SCRATCH_H
#define GPULUA_CORE_SCRATCH_H

#include "memory.h"
#include "stream.h"
#include "types.h"

#define GL_REDUCE_BLOCKS 4096
#define GL_SCRATCH_PARTS 256 /* the partials' first byte */
#define GL_SCRATCH_BYTES (GL_SCRATCH_PARTS + 8 * GL_REDUCE_BLOCKS)
#define GL_SCRATCH_SPARES 4
#define GL_SCRATCH_SPARES_TEXT "4"

typedef struct gl_scratch {
  gl_slice mem;                        /* an allocation of the stream's (u8) */
  char what[GL_STREAM_NAME_MAX + 48]; /* "the reduction scratch of stream 'x'", for messages */
} gl_scratch;

/* s's scratch, made at its first reduction (outside a capture; inside one, a
 * spare its device made before the capture) for `call` (the launch's, for
 * messages). 0, or -1 with the error. */
int gl_scratch_of(gl_stream *s, const char *call, gl_site *site, gl_scratch **out);
static inline CUdeviceptr gl_scratch_ticket(const gl_scratch *c) { return gl_slice_ptr(&c->mem); }
static inline CUdeviceptr gl_scratch_parts(const gl_scratch *c) { return gl_slice_ptr(&c->mem) + GL_SCRATCH_PARTS; }

/* Before s begins a capture (graph.c): when its device has reduced, the
 * device keeps GL_SCRATCH_SPARES spares made (on its spares stream). */
int gl_scratch_capture_prepare(gl_stream *s, gl_site *site);
/* s closes: its scratch released, freed after its uses. */
void gl_scratch_stream_close(gl_stream *s);
/* The device closes: every stream's scratch and the spares released. */
void gl_scratch_device_close(gl_device *d);

#endif
