/*
 * hostmem.h -- host memory: buffers (pinned by default, or pageable), files
 * mapped as buffers (hostmap.c), their views, and the host views of device
 * memory a sim host kernel receives.
 *
 * Host memory that queued copies read or write is guarded: touching it from
 * Lua while such a copy may still run conflicts (strict: an error; auto:
 * the host waits for the copy; off: it races), and the memory is released
 * only after those copies have finished. A finalizer never blocks: memory
 * whose copies are still queued goes on the runtime's retire list (retire.h)
 * and is released once they finish.
 *
 * Ownership: the memory (gl_hostmem) is reference counted by its handles
 * (gl_hostbuf, a Lua userdata's contents), plus one while on the retire
 * list. A borrowed view (of sim device memory, lent to a host kernel) is
 * owned by the runtime's borrow list and expires when the kernel returns.
 */
#ifndef GPULUA_CORE_HOSTMEM_H
#define GPULUA_CORE_HOSTMEM_H

#include "checker.h"
#include "dtype.h"
#include "error.h"
#include "retire.h"
#include "types.h"

struct gl_hostmem {
  gl_runtime *rt;
  int refs;             /* handles, plus one while retired; a borrowed view's: the borrow list */
  void *ptr;            /* NULL once a borrowed view has expired or the memory is released */
  size_t bytes;
  int pinned;
  int mapped;           /* memory from mmap (large pageable buffers, files): munmap it */
  int registered;       /* a file's mapping page-locked (cuMemHostRegister): unregister it first */
  int borrowed;         /* a view of (sim) device memory: not ours to free */
  int readonly;         /* ... of a const T* argument, or a file mapped read-only: only read it */
  char *path;           /* a file's mapping: the file, as given */
  int freed;            /* h:free() on the buffer that allocated it ... */
  int freed_at;         /* ... there (a location) */
  gl_hostmem *next;     /* on the borrow list */
  gl_retiree retire;    /* on the retire list */
  gl_hostbuf *borrower; /* a borrowed view's handle (not a reference), NULL once it is collected */
  gl_accesses acc;      /* copies that read or write it */
  int graph_uses;       /* live graphs that use it (graph.h): no free meanwhile */
  const struct gl_graph *graph; /* the latest of them, for messages (NULL: it was closed) */
};

struct gl_hostbuf {
  gl_hostmem *m;        /* NULL once released (free, close or collected) */
  size_t offset, count;
  gl_dtype dtype;
  int is_view;
  int pinned;           /* the memory's, kept for when the handle no longer has it */
  int released;         /* by h:free() or <close> ... */
  int released_at;      /* ... there (a location) */
  int expired;          /* a host kernel's view after the call */
};

/* In these calls `call` is the call's name as the caller wrote it
 * ("gpu.host", "h:free"): the errors begin with it. */

/* A buffer of count elements into the zeroed handle h; zero: its contents
 * read as zeros. Out of memory fails with the code CUDA_ERROR_OUT_OF_MEMORY
 * (the caller may collect garbage, gl_retire_reap, and try again). */
int gl_hostbuf_new(gl_runtime *rt, gl_dtype dt, size_t count, int pinned, int zero, const char *call, gl_hostbuf *h);
/* v (zeroed) becomes a view of count elements of h from offset. */
void gl_hostbuf_view(gl_hostbuf *h, size_t offset, size_t count, gl_hostbuf *v);
/* 0 when h may be used: not freed, not released, not an expired view. */
int gl_hostbuf_check(gl_runtime *rt, const gl_hostbuf *h);
/* The handle's release by its owner (h:free(), a <close> variable; block:
 * the latter, which ends a host kernel's view rather than refusing it).
 * Freeing a released handle fails (gl_hostbuf_released tells beforehand). */
int gl_hostbuf_free(gl_runtime *rt, gl_hostbuf *h, int block, const char *call, gl_site *site);
/* Whether h was released already (freed, its buffer freed, or a host
 * kernel's view ended): 1, with what to say in why; else 0. */
int gl_hostbuf_released(gl_runtime *rt, const gl_hostbuf *h, gl_buf *why);
/* The handle's end (a finalizer): never fails; h holds nothing after. */
void gl_hostbuf_collect(gl_hostbuf *h);
/* Lua is about to read (write = 0) or write elements [first, first + n),
 * for `call` (NULL: none to name). */
int gl_hostbuf_access(gl_hostbuf *h, size_t first, size_t n, int write, const char *call, gl_site *site);
/* 0 when h's memory may be written (by Lua or a copy), else -1 with an error
 * beginning with call (and role: "dst"), saying why it is read-only. */
int gl_hostbuf_writable(const gl_hostbuf *h, const char *call, const char *role);
/* Whether Lua may read elements [0, n) now with no wait and no error (for
 * display: gl_hostbuf_access would then pass); if not because a stream may
 * still write or read them, *other names it (else NULL). Records nothing. */
int gl_hostbuf_readable_now(gl_hostbuf *h, size_t n, const gl_stream **other);

void gl_hostbuf_describe(const gl_hostbuf *h, gl_buf *b);
static inline size_t gl_hostbuf_bytes(const gl_hostbuf *h) { return h->count * gl_dtypes[h->dtype].size; }
static inline uint64_t gl_hostbuf_lo(const gl_hostbuf *h) { return (uint64_t)h->offset * gl_dtypes[h->dtype].size; }
static inline void *gl_hostbuf_ptr(const gl_hostbuf *h) { return (char *)h->m->ptr + gl_hostbuf_lo(h); }

/* The file at path mapped as a buffer of dt into the zeroed handle h: shared
 * (writable: its writes, Lua's and copies', land in the file; else it is
 * read-only), page-locked where the driver can register it, else pageable
 * (h->pinned says which). The file's size must be a whole, non-zero number
 * of elements. Released like any buffer: unregistered and unmapped once its
 * copies have finished. hostmap.c. */
int gl_hostbuf_map(gl_runtime *rt, const char *path, gl_dtype dt, int writable, const char *call, gl_hostbuf *h);
/* For hostmap.c: h becomes the handle of all of m (count elements of dt);
 * whether bytes is more than the host's physical memory. */
void gl_hostbuf_init(gl_hostbuf *h, gl_hostmem *m, gl_dtype dt, size_t count);
int gl_host_larger_than_memory(size_t bytes);

/* A host view of count elements of (sim) device memory at ptr, into the
 * zeroed handle h (readonly: of a const T* argument): valid, with every view
 * made from it, until gl_hostmem_end_borrows. */
int gl_hostbuf_borrow(gl_runtime *rt, gl_dtype dt, void *ptr, size_t count, int readonly, gl_hostbuf *h);
void gl_hostmem_end_borrows(gl_runtime *rt);
/* A graph starts (a reference) and stops using the memory (graph.c). */
void gl_hostmem_graph_use(gl_hostmem *m, const struct gl_graph *g);
void gl_hostmem_graph_release(gl_hostmem *m, const struct gl_graph *g);
void gl_hostmem_graph_rename(gl_hostmem *m, const struct gl_graph *from, const struct gl_graph *to);

#endif
