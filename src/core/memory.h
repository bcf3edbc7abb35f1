/*
 * memory.h -- device memory: allocations, and slices (the handles scripts
 * hold: a whole allocation or a view of it).
 *
 * Ownership: an allocation is shared by the slice that allocated it and all
 * its views; each holds a reference (`refs`), and each that is not yet freed
 * counts as `live`. Freeing the slice that allocated it frees the memory at
 * once and every view becomes unusable ("freed at ..."); freeing a view only
 * releases that view. The memory goes when its last live handle goes. A free
 * is stream-ordered after every recorded access on every stream, so memory is
 * never reused while queued work still touches it. A slice's own memory (the
 * struct) belongs to its caller: a Lua userdata.
 *
 * A module variable's memory (gl_module_global) belongs to its module: each
 * handle on it holds a reference to the module as well, no handle frees it
 * (x:free() on the variable's slice is an error), and it goes with the
 * module, once the accesses recorded on it have finished.
 */
#ifndef GPULUA_CORE_MEMORY_H
#define GPULUA_CORE_MEMORY_H

#include "checker.h"
#include "driver.h"
#include "dtype.h"
#include "error.h"
#include "types.h"

struct gl_alloc {
  int refs;             /* handles that point here, released ones included */
  int live;             /* handles not yet freed: the memory goes at zero */
  gl_device *dev;
  CUdeviceptr ptr;
  size_t bytes;
  gl_stream *home;      /* the stream it was allocated on (a reference) */
  int freed;
  int freed_at;         /* a location */
  gl_accesses acc;      /* recorded accesses, for the checker and for frees */
  int graph_uses;       /* live graphs that use it (graph.h): no free meanwhile */
  const struct gl_graph *graph; /* the latest of them, for messages (NULL: it was closed) */
  int free_pending;     /* its last handle went while a graph used it */
  gl_module *owner;     /* a module variable's memory (module.h: gl_module_global), else NULL */
  char *var;            /* ... the variable's name */
  gl_alloc *next_var;   /* ... the module's next variable */
  int var_const;        /* ... a __constant__ one: kernels read it (others they may write) */
  char *var_what;       /* ... its words in messages: "variable 'v' of module 'k.cu'" */
  gl_dtype dtype;       /* the allocating slice's dtype ... */
  int alloc_at;         /* ... and where it was allocated (a location) */
  gl_alloc *prev_dev, *next_dev; /* the device's allocations (gl_alloc_at) */
};

struct gl_slice {
  gl_alloc *a;          /* NULL once the handle is released */
  size_t offset;        /* elements from the start of the allocation */
  size_t count;
  gl_dtype dtype;
  uint64_t lo, hi;      /* the bytes it covers in the allocation (offset and count times the dtype's size) */
  int is_view;
  int released;         /* this handle was freed or closed ... */
  int released_at;      /* ... there (a location) */
};

/* Allocate n elements (zero: and zero-fill them) on stream s, into the
 * zeroed slice x, for `call` (the call's name as the caller wrote it,
 * "dev:zeros": errors begin with it, and the zero fill is named so). Out
 * of device memory fails with the code CUDA_ERROR_OUT_OF_MEMORY (the caller
 * may reclaim and try again). The allocation counts as a write on s. */
int gl_slice_new(gl_stream *s, gl_dtype dt, size_t n, int zero, const char *call, gl_site *site, gl_slice *x);
/* The same for gpulua's own memory (workspaces, scratch), named as the
 * runtime's allocation call (rt->names.alloc, names.h). */
int gl_slice_alloc(gl_stream *s, gl_dtype dt, size_t n, int zero, gl_site *site, gl_slice *x);
/* The live allocation of device d's memory that starts at ptr, or NULL. */
gl_alloc *gl_alloc_at(gl_device *d, CUdeviceptr ptr);
/* The words for a's memory in a message: "slice f32[100] allocated at
 * job.lua:8" (and its device, when it is not `on`). */
void gl_alloc_describe(const gl_alloc *a, const gl_device *on, gl_buf *b);
/* v (zeroed) becomes a view of count elements of x from offset. */
void gl_slice_view(gl_slice *x, size_t offset, size_t count, gl_slice *v);
/* x may be used: initialised, not released, its memory not freed, its
 * device open (gl_slice_check_as says why not). */
int gl_slice_alive(const gl_slice *x);
/* 0 when x may be used; -2 when it is not initialised (no message). The
 * message names x as bad argument #arg of the call. */
int gl_slice_check(const gl_slice *x, int arg);
/* The same, the message naming x as `who` ("s:gemm: a"). */
int gl_slice_check_as(const gl_slice *x, const char *who);
/* A graph starts and stops using the memory (graph.c). */
void gl_alloc_graph_use(gl_alloc *a, const struct gl_graph *g);
void gl_alloc_graph_release(gl_alloc *a, const struct gl_graph *g);
/* g:update moved the use from graph `from` to `to` (for messages). */
void gl_alloc_graph_rename(gl_alloc *a, const struct gl_graph *from, const struct gl_graph *to);
/* The handle's release by its owner (x:free(), a <close> variable): on the
 * slice that allocated the memory, the memory is freed; on a view, only the
 * view is released. block: a <close> variable's release at its block's end,
 * which lets the memory of a slice a live graph uses go with the graph
 * rather than failing. Freeing a released slice fails (gl_slice_released
 * tells beforehand). */
int gl_slice_free(gl_slice *x, int block, const char *call, gl_site *site);
/* Whether x was released already (its own free, or its memory's): 1, with
 * what to say in why ("slice f32[4] on device 0 is already freed (at
 * job.lua:3)"); else 0. */
int gl_slice_released(const gl_slice *x, gl_buf *why);
/* The handle's end (a finalizer): never fails; a failing release is kept
 * for the device's next call (gl_device_keep_error). x holds nothing after. */
void gl_slice_collect(gl_slice *x);

void gl_slice_describe(const gl_slice *x, gl_buf *b);
/* Bytes [lo, hi) of x's allocation (hi > lo), in elements of x's dtype: "elements
 * 1 to 7 of f32[8] on device 0"; `again`: "elements 0 to 6 of it" (for the second
 * of two ranges of one allocation). */
void gl_slice_range(const gl_slice *x, uint64_t lo, uint64_t hi, int again, gl_buf *b);
/* Whether bytes [alo, ahi) of a's allocation and [blo, bhi) of b's share a byte. */
static inline int gl_ranges_overlap(const gl_slice *a, uint64_t alo, uint64_t ahi, const gl_slice *b, uint64_t blo,
                                    uint64_t bhi) {
  return a->a == b->a && alo < ahi && blo < bhi && alo < bhi && blo < ahi;
}
static inline size_t gl_slice_bytes(const gl_slice *x) { return (size_t)(x->hi - x->lo); }
/* The first byte x covers in its allocation, and its device address. */
static inline uint64_t gl_slice_lo(const gl_slice *x) { return x->lo; }
static inline CUdeviceptr gl_slice_ptr(const gl_slice *x) { return x->a->ptr + (CUdeviceptr)x->lo; }

#endif
