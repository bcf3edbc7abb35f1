/*
 * hostmem.c -- host buffers (see hostmem.h).
 */
#include "hostmem.h"

#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "device.h"
#include "runtime.h"
#include "driver_ext.h"
#include "stream.h"

/* Pageable buffers this large come from mmap: zero pages, touched only when used. */
#define LAZY_ZERO_BYTES ((size_t)1 << 20)

void gl_hostbuf_describe(const gl_hostbuf *h, gl_buf *b) {
  gl_buf_printf(b, "host buffer %s[%zu]%s", gl_dtypes[h->dtype].name, h->count, h->m->pinned ? "" : " (pageable)");
}

int gl_hostbuf_check(gl_runtime *rt, const gl_hostbuf *h) {
  const char *dt = gl_dtypes[h->dtype].name;
  if (!h->m && h->expired)
    return gl_fail(rt, "a host view of a slice (%s[%zu]) is only valid during the host kernel call that received it",
                   dt, h->count);
  if (!h->m && h->released)
    return gl_fail(rt, "host buffer %s[%zu] is freed (at %s)", dt, h->count, gl_loc_text(rt, h->released_at));
  if (h->m && h->m->freed)
    return gl_fail(rt, "host buffer %s[%zu] (a view) is freed: its buffer was freed at %s", dt, h->count,
                   gl_loc_text(rt, h->m->freed_at));
  if (!h->m) return gl_fail(rt, "host buffer %s[%zu] is released (its finalizer has run)", dt, h->count);
  if (!h->m->ptr)
    return gl_fail(rt, "a host view of a slice (%s[%zu]) is only valid during the host kernel call that received it",
                   dt, h->count);
  return 0;
}

int gl_hostbuf_writable(const gl_hostbuf *h, const char *call, const char *role) {
  const gl_hostmem *m = h->m;
  gl_runtime *rt = m->rt;
  if (!m->readonly) return 0;
  gl_buf d = GL_BUF_INIT;
  if (call) gl_buf_printf(&d, "%s: ", call);
  if (role) gl_buf_printf(&d, "%s: ", role);
  if (m->path)
    gl_fail(rt, "%shost buffer %s[%zu]%s is a read-only mapping of %s: map it writable to write it (%s)",
            gl_buf_str(&d), gl_dtypes[h->dtype].name, h->count, h->is_view ? " (a view)" : "", m->path,
            rt->names.map_writable);
  else
    gl_fail(rt, "%sa host view of a slice (%s[%zu]) of a const argument is read-only: the kernel declared it const",
            gl_buf_str(&d), gl_dtypes[h->dtype].name, h->count);
  gl_buf_free(&d);
  return -1;
}

int gl_hostbuf_access(gl_hostbuf *h, size_t first, size_t n, int write, const char *call, gl_site *site) {
  gl_hostmem *m = h->m;
  gl_runtime *rt = m->rt;
  if (write && m->readonly) return gl_hostbuf_writable(h, call, NULL);
  if (rt->capture && m->graph == (const struct gl_graph *)rt->capture && m->graph_uses) {
    gl_buf d = GL_BUF_INIT;
    gl_hostbuf_describe(h, &d);
    gl_fail(rt, "%s: %s from %s at %s during the capture of graph '%s' (%s at %s), which copies it: the copy "
                "runs only at each %s, so touch the buffer before %s or after a replay",
            gl_buf_str(&d), write ? "written" : "read", rt->names.language, gl_loc_text(rt, gl_site_loc(rt, site)),
            rt->capture->name, rt->names.capture, gl_loc_text(rt, rt->capture->capture_loc),
            rt->names.launch_graph, rt->names.capture);
    gl_buf_free(&d);
    return -1;
  }
  if (m->acc.n == 0 || n == 0) return 0; /* an empty range touches nothing */
  size_t sz = gl_dtypes[h->dtype].size;
  uint64_t lo = gl_hostbuf_lo(h) + first * sz;
  gl_conflict c;
  if (!gl_access_conflict_host(&m->acc, lo, lo + n * sz, write, &c) || rt->policy == GL_POLICY_OFF) return 0;
  if (rt->policy == GL_POLICY_AUTO) return gl_access_wait_all(&m->acc, 1, site);
  gl_buf d = GL_BUF_INIT;
  gl_hostbuf_describe(h, &d);
  gl_fail(rt, "%s: %s from Lua at %s while stream '%s' of device %d may still %s it (copy queued at %s); "
              "sync the stream, an event after the copy, or the device first",
          gl_buf_str(&d), write ? "written" : "read", gl_loc_text(rt, gl_site_loc(rt, site)), c.other->name,
          c.other->dev->ordinal, c.other_writes ? "write" : "read", gl_loc_text(rt, c.other_loc));
  gl_buf_free(&d);
  return -1;
}

int gl_hostbuf_readable_now(gl_hostbuf *h, size_t n, const gl_stream **other) {
  gl_hostmem *m = h->m;
  gl_runtime *rt = m->rt;
  *other = NULL;
  if (rt->capture && m->graph == (const struct gl_graph *)rt->capture && m->graph_uses) return 0;
  if (m->acc.n == 0 || n == 0 || rt->policy == GL_POLICY_OFF) return 1;
  uint64_t lo = gl_hostbuf_lo(h);
  gl_conflict c;
  if (!gl_access_conflict_host(&m->acc, lo, lo + n * gl_dtypes[h->dtype].size, 0, &c)) return 1;
  *other = c.other;
  return 0;
}

/* Give the memory back (the struct stays while handles refer to it). */
static void hostmem_release(gl_hostmem *m) {
  if (!m->ptr || m->borrowed) { /* expired, or device memory: not ours */
  } else if (m->registered) { /* a file's mapping, page-locked */
    gld_drv.cuMemHostUnregister(m->ptr);
    m->rt->pinned_held -= m->bytes;
    munmap(m->ptr, m->bytes);
  } else if (m->pinned) {
    gld_drv.cuMemFreeHost(m->ptr);
    m->rt->pinned_held -= m->bytes;
  } else if (m->mapped) {
    munmap(m->ptr, m->bytes);
  } else {
    free(m->ptr);
  }
  m->ptr = NULL;
}

static void hostmem_destroy(gl_hostmem *m) {
  hostmem_release(m);
  gl_access_clear(&m->acc);
  free(m->path);
  free(m);
}

static void hostmem_unref(gl_hostmem *m);

/* The retire list's reference goes once the copies have finished. */
static void retired(void *obj) {
  gl_hostmem *m = obj;
  hostmem_release(m);
  hostmem_unref(m);
}

static void defer(gl_hostmem *m) {
  m->refs++;
  gl_retire(m->rt, &m->retire, m, &m->acc, retired);
}

/* The last reference often goes in a finalizer: what the host knows
 * decides, without asking the driver (which on sim would run queued host
 * kernels from inside the finalizer); the retire list's reap asks later. */
static void hostmem_unref(gl_hostmem *m) {
  if (--m->refs > 0) return;
  if (m->ptr && !m->borrowed && !gl_access_known_finished(&m->acc)) {
    defer(m); /* the list takes the only reference (no second look: the copies may finish
               * in between, and then nothing would free the struct) */
    return;
  }
  hostmem_destroy(m);
}


/* The host's memory: available (MemAvailable) and total bytes; for pinned
 * memory on sim with GPULUA_SIM_HOST_MEMORY, that limit's. */
static size_t physical_bytes(void) {
  static size_t phys = (size_t)-1; /* a fact of the machine: the same for every runtime */
  if (phys == (size_t)-1) {
    long page = sysconf(_SC_PAGESIZE), pages = sysconf(_SC_PHYS_PAGES);
    phys = page > 0 && pages > 0 ? (size_t)page * (size_t)pages : 0;
  }
  return phys;
}

static void host_memory(int pinned, size_t *avail, size_t *total) {
  if (pinned && gld_drv_ext.host_memory && gld_drv_ext.host_memory(avail, total)) return;
  long page = sysconf(_SC_PAGESIZE), free_pages = sysconf(_SC_AVPHYS_PAGES);
  *total = physical_bytes();
  *avail = page > 0 && free_pages > 0 ? (size_t)page * (size_t)free_pages : 0;
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return;
  char line[128];
  unsigned long long kb;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
      *avail = (size_t)kb * 1024;
      break;
    }
  fclose(f);
}

int gl_host_larger_than_memory(size_t bytes) { return physical_bytes() && bytes > physical_bytes(); }

/* Pinned memory: a request larger than the host's memory fails at once (the
 * driver might try to pin page after page). */
static int alloc_pinned(gl_runtime *rt, gl_hostmem *m, gl_dtype dt, size_t count, const char *call) {
  const char *dn = gl_dtypes[dt].name;
  CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
  if (!gl_host_larger_than_memory(m->bytes)) {
    gl_device *d0;
    if (gl_device_open(rt, 0, rt->names.device, &d0) != 0) return -1; /* pinned memory needs a context */
    gl_set_ctx(d0);
    r = gld_drv.cuMemHostAlloc(&m->ptr, m->bytes, CU_MEMHOSTALLOC_PORTABLE);
  }
  if (r == CUDA_SUCCESS) {
    rt->pinned_held += m->bytes;
    return 0;
  }
  m->ptr = NULL;
  if (r != CUDA_ERROR_OUT_OF_MEMORY)
    return gl_fail_code(rt, r, "%s: could not allocate %zu bytes of pinned host memory (%s[%zu]): %s", call,
                        m->bytes, dn, count, gld_error_name(r));
  size_t avail = 0, total = 0;
  host_memory(1, &avail, &total);
  return gl_fail_code(rt, r,
                      "%s: out of pinned host memory: requested %s[%zu] (%zu bytes), %zu of %zu bytes of host "
                      "memory available, %zu bytes pinned by gpulua",
                      call, dn, count, m->bytes, avail, total, rt->pinned_held);
}

static int alloc_pageable(gl_runtime *rt, gl_hostmem *m, gl_dtype dt, size_t count, const char *call) {
  if (gl_host_larger_than_memory(m->bytes)) {
    m->ptr = NULL;
  } else if (m->bytes >= LAZY_ZERO_BYTES) { /* fresh pages: zero, and untouched until used */
    void *p = mmap(NULL, m->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    m->ptr = p == MAP_FAILED ? NULL : p;
    m->mapped = 1;
  } else {
    m->ptr = aligned_alloc(64, (m->bytes + 63) / 64 * 64);
  }
  if (m->ptr) return 0;
  size_t avail = 0, total = 0;
  host_memory(0, &avail, &total);
  return gl_fail_code(rt, CUDA_ERROR_OUT_OF_MEMORY,
                      "%s: out of host memory: requested %s[%zu] (%zu bytes), %zu of %zu bytes available", call,
                      gl_dtypes[dt].name, count, m->bytes, avail, total);
}

void gl_hostbuf_init(gl_hostbuf *h, gl_hostmem *m, gl_dtype dt, size_t count) {
  memset(h, 0, sizeof *h);
  h->m = m;
  h->count = count;
  h->dtype = dt;
  h->pinned = m->pinned;
  h->released_at = GL_LOC_NONE;
}

int gl_hostbuf_new(gl_runtime *rt, gl_dtype dt, size_t count, int pinned, int zero, const char *call, gl_hostbuf *h) {
  if (gl_retire_pending(rt)) gl_retire_reap(rt, 0);
  gl_hostmem *m = calloc(1, sizeof *m);
  if (!m) return gl_fail_nomem(rt, call);
  m->rt = rt;
  m->bytes = count * gl_dtypes[dt].size;
  m->pinned = pinned;
  if ((pinned ? alloc_pinned : alloc_pageable)(rt, m, dt, count, call) != 0) {
    free(m);
    return -1;
  }
  /* zeros: fresh mmap pages and a backend's zeroed pinned memory (the sim's)
   * already are (without touching every page of a large buffer); the
   * driver's pinned memory is resident anyway and is cleared here */
  if (zero && !m->mapped && !(m->pinned && gld_drv_ext.host_alloc_zeroed)) memset(m->ptr, 0, m->bytes);
  m->refs = 1;
  m->freed_at = GL_LOC_NONE;
  gl_hostbuf_init(h, m, dt, count);
  return 0;
}

void gl_hostbuf_view(gl_hostbuf *h, size_t offset, size_t count, gl_hostbuf *v) {
  memset(v, 0, sizeof *v);
  v->m = h->m;
  h->m->refs++;
  v->offset = h->offset + offset;
  v->count = count;
  v->dtype = h->dtype;
  v->is_view = 1;
  v->pinned = h->pinned;
  v->released_at = GL_LOC_NONE;
}

void gl_hostbuf_collect(gl_hostbuf *h) {
  gl_hostmem *m = h->m;
  if (!m) return;
  if (m->borrowed && m->borrower == h) m->borrower = NULL; /* the borrow list owns it */
  else hostmem_unref(m);
  h->m = NULL;
}

int gl_hostbuf_released(gl_runtime *rt, const gl_hostbuf *h, gl_buf *why) {
  const gl_hostmem *m = h->m;
  const char *dt = gl_dtypes[h->dtype].name;
  if (!m && h->released) gl_buf_printf(why, "host buffer %s[%zu] is already freed (at %s)", dt, h->count,
                                       gl_loc_text(rt, h->released_at));
  else if (m && m->freed)
    gl_buf_printf(why, "host buffer %s[%zu] (a view) is already freed: its buffer was freed at %s", dt, h->count,
                  gl_loc_text(rt, m->freed_at));
  else if (!m && h->expired) gl_buf_printf(why, "host buffer %s[%zu] is released", dt, h->count);
  else return 0;
  return 1;
}

/* Freeing the buffer that allocated the memory gives it back as soon as the
 * copies queued on it have finished (never earlier), and its views become
 * unusable; freeing a view releases only that view, like slices. A host
 * kernel's view is not freed: its <close> ends it (the handle expires). */
int gl_hostbuf_free(gl_runtime *rt, gl_hostbuf *h, int block, const char *call, gl_site *site) {
  gl_hostmem *m = h->m;
  const char *dt = gl_dtypes[h->dtype].name;
  if (m && m->borrowed && block) {
    if (m->borrower == h) { /* the borrow list owns it */
      h->expired = 1;
    } else { /* a view made from it holds a reference of its own */
      h->released = 1;
      h->released_at = gl_site_loc(rt, site);
      hostmem_unref(m);
    }
    h->m = NULL;
    return 0;
  }
  gl_buf why = GL_BUF_INIT;
  if (gl_hostbuf_released(rt, h, &why)) {
    gl_fail(rt, "%s: %s", call, gl_buf_str(&why));
    gl_buf_free(&why);
    return -1;
  }
  if (!m) return gl_fail(rt, "%s: host buffer %s[%zu] is released", call, dt, h->count);
  if (m->borrowed)
    return gl_fail(rt, "%s: a host view of a slice (%s[%zu]) belongs to the slice and cannot be freed", call, dt,
                   h->count);
  if (m->graph_uses && !h->is_view)
    return gl_fail(rt, "%s: host buffer %s[%zu] is used by graph '%s' (captured at %s): close the graph first (%s)",
                   call, dt, h->count, m->graph ? m->graph->name : "?",
                   m->graph ? gl_loc_text(rt, m->graph->capture_loc) : "?", rt->names.close_graph);
  int loc = gl_site_loc(rt, site);
  if (!h->is_view) {
    m->freed = 1;
    m->freed_at = loc;
    if (gl_access_finished(&m->acc)) hostmem_release(m);
    else defer(m);
  }
  h->released = 1;
  h->released_at = loc;
  h->m = NULL;
  hostmem_unref(m);
  return 0;
}

int gl_hostbuf_borrow(gl_runtime *rt, gl_dtype dt, void *ptr, size_t count, int readonly, gl_hostbuf *h) {
  gl_hostmem *m = calloc(1, sizeof *m);
  if (!m) return gl_fail_nomem(rt, NULL);
  m->rt = rt;
  m->refs = 1; /* the borrow list's */
  m->ptr = ptr;
  m->bytes = count * gl_dtypes[dt].size;
  m->borrowed = 1;
  m->readonly = readonly;
  m->freed_at = GL_LOC_NONE;
  m->next = rt->borrows;
  rt->borrows = m;
  m->borrower = h;
  gl_hostbuf_init(h, m, dt, count);
  return 0;
}

void gl_hostmem_graph_use(gl_hostmem *m, const struct gl_graph *g) {
  m->refs++;
  m->graph_uses++;
  m->graph = g;
}

void gl_hostmem_graph_rename(gl_hostmem *m, const struct gl_graph *from, const struct gl_graph *to) {
  if (m->graph == from) m->graph = to;
}

void gl_hostmem_graph_release(gl_hostmem *m, const struct gl_graph *g) {
  if (m->graph == g) m->graph = NULL;
  m->graph_uses--;
  hostmem_unref(m);
}

void gl_hostmem_end_borrows(gl_runtime *rt) {
  while (rt->borrows) {
    gl_hostmem *m = rt->borrows;
    rt->borrows = m->next;
    if (m->borrower) { /* later use is an error, never a stray access */
      m->borrower->m = NULL;
      m->borrower->expired = 1;
    }
    m->ptr = NULL; /* and for the views made from it, which keep m */
    hostmem_unref(m);
  }
}
