/*
 * l_hostbuf.c -- host buffers: gpu.host(dtype, n or table, {pinned = true}),
 * 1-based indexing with bounds and range checks, totable, fill, view.
 *
 * Host memory that queued copies read or write is guarded: touching it from
 * Lua while such a copy may still run is an error under the strict policy
 * (auto waits for the copy, off lets it race), and the memory is released
 * only after those copies have finished.
 */
#include "core.h"
#include "checker.h"

#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

gl_hostbuf *gl_test_hostbuf(lua_State *L, int idx) { return gl_testudata(L, idx, GL_HOST_MT); }

/* The error for a handle freed by h:free(), or a view whose buffer was;
   `prefix` names the caller ("" or "h:free: "), `is` is "is" or "is already". */
static void raise_if_freed(lua_State *L, const gl_hostbuf *h, const char *prefix, const char *is) {
  if (!h->m && h->released)
    luaL_error(L, "%shost buffer %s[%I] %s freed (at %s)", prefix, gl_dtypes[h->dtype].name, (LUAI_UACINT)h->count,
               is, gl_loc_text(h->released_at));
  if (h->m && h->m->freed)
    luaL_error(L, "%shost buffer %s[%I] (a view) %s freed: its buffer was freed at %s", prefix,
               gl_dtypes[h->dtype].name, (LUAI_UACINT)h->count, is, gl_loc_text(h->m->freed_at));
}

gl_hostbuf *gl_check_hostbuf(lua_State *L, int idx) {
  gl_hostbuf *h = gl_test_hostbuf(L, idx);
  if (!h) luaL_typeerror(L, idx, "gpulua host buffer");
  if (!h->m && h->expired)
    luaL_error(L, "a host view of a slice (%s[%I]) is only valid during the host kernel call that received it",
               gl_dtypes[h->dtype].name, (LUAI_UACINT)h->count);
  raise_if_freed(L, h, "", "is");
  if (!h->m)
    luaL_error(L, "host buffer %s[%I] is released (its finalizer has run)", gl_dtypes[h->dtype].name, (LUAI_UACINT)h->count);
  if (!h->m->ptr)
    luaL_error(L, "a host view of a slice (%s[%I]) is only valid during the host kernel call that received it",
               gl_dtypes[h->dtype].name, (LUAI_UACINT)h->count);
  return h;
}

void *gl_hostbuf_ptr(gl_hostbuf *h) { return (char *)h->m->ptr + h->offset * gl_dtypes[h->dtype].size; }

size_t gl_hostbuf_bytes(gl_hostbuf *h) { return h->count * gl_dtypes[h->dtype].size; }

void gl_hostbuf_describe(gl_hostbuf *h, char *buf, size_t len) {
  snprintf(buf, len, "host buffer %s[%zu]%s", gl_dtypes[h->dtype].name, h->count,
           h->m->pinned ? "" : " (pageable)");
}

gl_accesses *gl_hostbuf_accesses(gl_hostbuf *h) { return &h->m->acc; }

uint64_t gl_hostbuf_offset_bytes(gl_hostbuf *h) { return (uint64_t)h->offset * gl_dtypes[h->dtype].size; }

/* Lua is about to read (write = 0) or write elements [first, first + n) of h. */
static void host_access(lua_State *L, gl_hostbuf *h, size_t first, size_t n, int write) {
  if (h->m->acc.n == 0) return;
  char d[128];
  gl_hostbuf_describe(h, d, sizeof d);
  size_t sz = gl_dtypes[h->dtype].size;
  uint64_t lo = gl_hostbuf_offset_bytes(h) + first * sz;
  gl_access_check_host(L, &h->m->acc, lo, lo + n * sz, write, d);
}

/* Bytes of pinned host memory that gpulua holds (for out-of-memory messages). */
static size_t pinned_held;

/* Give the memory back (the struct stays while handles refer to it). */
static void hostmem_release(gl_hostmem *m) {
  if (!m->ptr || m->borrowed) { /* expired, or device memory: not ours */
  } else if (m->pinned) {
    gl_drv.cuMemFreeHost(m->ptr);
    pinned_held -= m->bytes;
  } else {
    if (m->mapped) munmap(m->ptr, m->bytes);
    else free(m->ptr);
  }
  m->ptr = NULL;
}

static void hostmem_destroy(gl_hostmem *m) {
  hostmem_release(m);
  gl_access_clear(&m->acc);
  free(m);
}

/* Host memory that is freed, or whose last handle is gone, while queued
 * copies may still use it: released once they have finished. The list holds
 * a reference. A finalizer never blocks (it may run anywhere, even inside a
 * sim host kernel whose stream it would wait for). */
static gl_hostmem *deferred;

static void hostmem_unref(gl_hostmem *m);

static void defer(gl_hostmem *m) {
  m->refs++;
  m->next_borrow = deferred; /* the link is free: a buffer of our own is never borrowed */
  deferred = m;
}

static void hostmem_release_when_done(gl_hostmem *m) {
  if (gl_access_finished(&m->acc)) hostmem_release(m);
  else defer(m);
}

void gl_hostbuf_reap(int wait) {
  for (gl_hostmem **pp = &deferred; *pp;) {
    gl_hostmem *m = *pp;
    if (wait) gl_access_wait_all(&m->acc, 0);
    if (wait || gl_access_finished(&m->acc)) {
      *pp = m->next_borrow;
      hostmem_release(m);
      hostmem_unref(m);
    } else {
      pp = &m->next_borrow;
    }
  }
}

static void hostmem_unref(gl_hostmem *m) {
  if (--m->refs > 0) return;
  if (m->ptr && !m->borrowed && !gl_access_finished(&m->acc)) {
    defer(m); /* the list takes the only reference (no second look: the copies may finish
               * in between, and then nothing would free the struct) */
    return;
  }
  hostmem_destroy(m);
}

static gl_hostbuf *new_handle(lua_State *L);

/* Views handed to the running host kernel. The borrow list, not the handle,
 * owns each: a host kernel can run while lua_close runs finalizers (teardown
 * drains the sim's streams), and handles made then are never finalized. */
static gl_hostmem *borrows;

void gl_hostbuf_borrow(lua_State *L, gl_dtype dt, void *ptr, size_t count) {
  gl_hostbuf *h = new_handle(L);
  gl_hostmem *m = calloc(1, sizeof *m);
  if (!m) luaL_error(L, "out of host memory");
  m->refs = 1; /* the borrow list's */
  m->ptr = ptr;
  m->bytes = count * gl_dtypes[dt].size;
  m->borrowed = 1;
  m->next_borrow = borrows;
  borrows = m;
  m->borrower = h;
  h->m = m;
  h->count = count;
  h->dtype = dt;
}

void gl_hostbuf_end_borrows(lua_State *L) {
  (void)L;
  while (borrows) {
    gl_hostmem *m = borrows;
    borrows = m->next_borrow;
    if (m->borrower) { /* later use is an error, never a stray access */
      m->borrower->m = NULL;
      m->borrower->expired = 1;
    }
    hostmem_unref(m);
  }
}

static gl_hostbuf *new_handle(lua_State *L) {
  gl_hostbuf *h = lua_newuserdatauv(L, sizeof *h, 0);
  memset(h, 0, sizeof *h);
  gl_setmetatable(L, GL_HOST_MT);
  return h;
}

/* The host's memory: available (MemAvailable) and total bytes; for pinned
 * memory on sim with GPULUA_SIM_HOST_MEMORY, that limit's. */
static size_t physical_bytes(void);

/* Pageable buffers this large come from mmap: zero pages, touched only when used. */
#define LAZY_ZERO_BYTES ((size_t)1 << 20)

static void host_memory(int pinned, size_t *avail, size_t *total) {
  if (pinned && gl_is_sim && gl_sim_host_memory(avail, total)) return;
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

/* The host's physical memory in bytes (0 if unknown): no buffer can be larger. */
static size_t physical_bytes(void) {
  static size_t phys = (size_t)-1;
  if (phys == (size_t)-1) {
    long page = sysconf(_SC_PAGESIZE), pages = sysconf(_SC_PHYS_PAGES);
    phys = page > 0 && pages > 0 ? (size_t)page * (size_t)pages : 0;
  }
  return phys;
}

static int larger_than_host(size_t bytes) { return physical_bytes() && bytes > physical_bytes(); }

/* Pinned memory: a request larger than the host's memory fails at once (the
 * driver might try to pin page after page); on out of memory, collect
 * garbage, release what finished copies no longer use and try once more. */
static CUresult alloc_pinned(lua_State *L, void **ptr, size_t bytes) {
  if (larger_than_host(bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
  gl_device *d0 = gl_device_open(L, 0); /* pinned memory needs a context */
  gl_set_ctx(d0);
  CUresult r = gl_drv.cuMemHostAlloc(ptr, bytes, CU_MEMHOSTALLOC_PORTABLE);
  if (r == CUDA_ERROR_OUT_OF_MEMORY && gl_host_kernel_depth == 0 && lua_gc(L, LUA_GCISRUNNING)) {
    lua_gc(L, LUA_GCCOLLECT);
    gl_hostbuf_reap(0);
    gl_set_ctx(d0);
    r = gl_drv.cuMemHostAlloc(ptr, bytes, CU_MEMHOSTALLOC_PORTABLE);
  }
  return r;
}

gl_hostbuf *gl_hostbuf_new(lua_State *L, gl_dtype dt, size_t count, int pinned) {
  if (deferred) gl_hostbuf_reap(0);
  gl_hostbuf *h = new_handle(L);
  size_t bytes = count * gl_dtypes[dt].size;
  gl_hostmem *m = calloc(1, sizeof *m);
  if (!m) luaL_error(L, "gpu.host: out of host memory");
  if (pinned) {
    CUresult r = alloc_pinned(L, &m->ptr, bytes);
    if (r != CUDA_SUCCESS) {
      free(m);
      if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        size_t avail = 0, total = 0;
        host_memory(1, &avail, &total);
        luaL_error(L, "gpu.host: out of pinned host memory: requested %s[%I] (%I bytes), %I of %I bytes of host "
                      "memory available, %I bytes pinned by gpulua",
                   gl_dtypes[dt].name, (LUAI_UACINT)count, (LUAI_UACINT)bytes, (LUAI_UACINT)avail,
                   (LUAI_UACINT)total, (LUAI_UACINT)pinned_held);
      }
      luaL_error(L, "gpu.host: could not allocate %I bytes of pinned host memory (%s[%I]): %s",
                 (LUAI_UACINT)bytes, gl_dtypes[dt].name, (LUAI_UACINT)count, gl_error_name(r));
    }
    pinned_held += bytes;
  } else {
    if (larger_than_host(bytes)) {
      m->ptr = NULL;
    } else if (bytes >= LAZY_ZERO_BYTES) { /* fresh pages: zero, and untouched until used */
      void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      m->ptr = p == MAP_FAILED ? NULL : p;
      m->mapped = 1;
    } else {
      m->ptr = aligned_alloc(64, (bytes + 63) / 64 * 64);
    }
    if (!m->ptr) {
      free(m);
      size_t avail = 0, total = 0;
      host_memory(0, &avail, &total);
      luaL_error(L, "gpu.host: out of host memory: requested %s[%I] (%I bytes), %I of %I bytes available",
                 gl_dtypes[dt].name, (LUAI_UACINT)count, (LUAI_UACINT)bytes, (LUAI_UACINT)avail,
                 (LUAI_UACINT)total);
    }
  }
  m->refs = 1;
  m->bytes = bytes;
  m->pinned = pinned;
  h->m = m;
  h->count = count;
  h->dtype = dt;
  return h;
}

/* A new buffer's memory reads as zeros: fresh mmap pages and the sim's pinned
 * memory already do (without touching every page of a large buffer); the
 * driver's pinned memory is resident anyway and is cleared here. */
static void zero_new(gl_hostmem *m) {
  if (m->mapped || (m->pinned && gl_is_sim)) return;
  memset(m->ptr, 0, m->bytes);
}

/* gpu.host(dtype, n or {values}, {pinned = true}) */
int gl_host_new(lua_State *L) {
  gl_dtype dt = gl_check_dtype(L, 1);
  int pinned = 1;
  if (!lua_isnoneornil(L, 3)) {
    luaL_checktype(L, 3, LUA_TTABLE);
    lua_getfield(L, 3, "pinned");
    if (!lua_isnil(L, -1)) {
      if (!lua_isboolean(L, -1))
        return luaL_error(L, "gpu.host: option 'pinned' expected a boolean, got %s", luaL_typename(L, -1));
      pinned = lua_toboolean(L, -1);
    }
    lua_pop(L, 1);
  }
  size_t n;
  int from_table = lua_istable(L, 2);
  if (from_table) {
    lua_Integer len = luaL_len(L, 2);
    if (len < 1) return luaL_argerror(L, 2, "the table of values is empty");
    n = (size_t)len;
  } else {
    int ok;
    lua_Integer c = lua_tointegerx(L, 2, &ok);
    if (!ok) {
      if (lua_type(L, 2) == LUA_TNUMBER)
        return luaL_argerror(L, 2, lua_pushfstring(L, "expected an integer element count or a table of numbers, got %s",
                                                   lua_tostring(L, 2)));
      return luaL_typeerror(L, 2, "integer element count or table of numbers");
    }
    if (c < 1) return luaL_argerror(L, 2, lua_pushfstring(L, "element count must be positive, got %I", (LUAI_UACINT)c));
    if ((uint64_t)c > ((uint64_t)1 << 46) / gl_dtypes[dt].size)
      return luaL_argerror(L, 2, lua_pushfstring(L, "element count %I is too large", (LUAI_UACINT)c));
    n = (size_t)c;
  }
  gl_hostbuf *h = gl_hostbuf_new(L, dt, n, pinned);
  if (!from_table) zero_new(h->m); /* zeros, on every backend */
  if (from_table) {
    char *p = h->m->ptr;
    size_t sz = gl_dtypes[dt].size;
    for (size_t i = 0; i < n; i++) {
      lua_geti(L, 2, (lua_Integer)i + 1);
      const char *why = gl_dtype_encode(L, -1, dt, p + i * sz);
      if (why) { /* the type first: lua_tostring turns a number on the stack into a string */
        int isnum = lua_type(L, -1) == LUA_TNUMBER;
        const char *tname = luaL_typename(L, -1);
        return luaL_error(L, "gpu.host: element %I of the table: %s for %s, got %s%s%s", (LUAI_UACINT)i + 1, why,
                          gl_dtypes[dt].name, tname, isnum ? " " : "", isnum ? lua_tostring(L, -1) : "");
      }
      lua_pop(L, 1);
    }
  }
  return 1;
}

static size_t check_index(lua_State *L, gl_hostbuf *h, int idx) {
  lua_Integer i = lua_tointeger(L, idx);
  if (i < 1 || (size_t)i > h->count)
    luaL_error(L, "host buffer %s[%I]: index %I is out of range (1 to %I)", gl_dtypes[h->dtype].name,
               (LUAI_UACINT)h->count, (LUAI_UACINT)i, (LUAI_UACINT)h->count);
  return (size_t)i - 1;
}

static int h_totable(lua_State *L) {
  gl_hostbuf *h = gl_check_hostbuf(L, 1);
  host_access(L, h, 0, h->count, 0);
  if (h->count > (size_t)INT32_MAX) return luaL_error(L, "h:totable: the buffer is too large for a table");
  lua_createtable(L, (int)h->count, 0);
  const char *p = gl_hostbuf_ptr(h);
  size_t sz = gl_dtypes[h->dtype].size;
  for (size_t i = 0; i < h->count; i++) {
    gl_dtype_push(L, h->dtype, p + i * sz);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

static int h_fill(lua_State *L) {
  gl_hostbuf *h = gl_check_hostbuf(L, 1);
  unsigned char v[8];
  luaL_checkany(L, 2);
  const char *why = gl_dtype_encode(L, 2, h->dtype, v);
  if (why) return luaL_argerror(L, 2, lua_pushfstring(L, "%s for %s, got %s", why, gl_dtypes[h->dtype].name,
                                                      lua_type(L, 2) == LUA_TNUMBER ? lua_tostring(L, 2)
                                                                                    : luaL_typename(L, 2)));
  host_access(L, h, 0, h->count, 1);
  char *p = gl_hostbuf_ptr(h);
  size_t sz = gl_dtypes[h->dtype].size;
  for (size_t i = 0; i < h->count; i++) memcpy(p + i * sz, v, sz);
  lua_settop(L, 1);
  return 1;
}

/* h:view(offset, count): offset 0-based like device views. */
static int h_view(lua_State *L) {
  gl_hostbuf *h = gl_check_hostbuf(L, 1);
  size_t off, cnt;
  gl_check_view(L, h->count, "buffer", &off, &cnt);
  gl_hostbuf *v = new_handle(L);
  v->m = h->m;
  h->m->refs++;
  v->offset = h->offset + off;
  v->count = cnt;
  v->dtype = h->dtype;
  v->is_view = 1;
  return 1;
}

static int h_index(lua_State *L) {
  gl_hostbuf *h = gl_test_hostbuf(L, 1);
  if (!h) return luaL_typeerror(L, 1, "gpulua host buffer");
  if (lua_type(L, 2) != LUA_TSTRING) gl_check_hostbuf(L, 1); /* fields and methods stay reachable once freed */
  if (lua_type(L, 2) == LUA_TNUMBER) {
    if (!lua_isinteger(L, 2)) {
      lua_Number f = lua_tonumber(L, 2);
      if (f != (lua_Number)(lua_Integer)f)
        return luaL_error(L, "host buffer index must be an integer, got %f", (LUAI_UACNUMBER)f);
    }
    size_t i = check_index(L, h, 2);
    host_access(L, h, i, 1, 0);
    gl_dtype_push(L, h->dtype, (char *)gl_hostbuf_ptr(h) + i * gl_dtypes[h->dtype].size);
    return 1;
  }
  if (lua_type(L, 2) == LUA_TSTRING) {
    const char *k = lua_tostring(L, 2);
    if (strcmp(k, "dtype") == 0) lua_pushstring(L, gl_dtypes[h->dtype].name);
    else if (strcmp(k, "bytes") == 0) lua_pushinteger(L, (lua_Integer)gl_hostbuf_bytes(h));
    else if (strcmp(k, "pinned") == 0) lua_pushboolean(L, gl_check_hostbuf(L, 1)->m->pinned);
    else {
      lua_getmetatable(L, 1);
      lua_getfield(L, -1, "methods");
      if (lua_getfield(L, -1, k) == LUA_TNIL) goto no_such_key;
    }
    return 1;
  }
no_such_key: /* h["1"] or h.lenght: an error, not a silent nil */
  return luaL_error(L, "host buffer %s[%I]: no element or field %s %s (elements are h[1] to h[%I] with integer "
                       "indices; fields: dtype, bytes, pinned)",
                    gl_dtypes[h->dtype].name, (LUAI_UACINT)h->count, luaL_typename(L, 2),
                    luaL_tolstring(L, 2, NULL), (LUAI_UACINT)h->count);
}

static int h_newindex(lua_State *L) {
  gl_hostbuf *h = gl_check_hostbuf(L, 1);
  if (lua_type(L, 2) != LUA_TNUMBER)
    return luaL_error(L, "host buffer: cannot set field '%s' (only elements 1 to #h can be assigned)",
                      luaL_tolstring(L, 2, NULL));
  if (!lua_isinteger(L, 2)) {
    lua_Number f = lua_tonumber(L, 2);
    if (f != (lua_Number)(lua_Integer)f)
      return luaL_error(L, "host buffer index must be an integer, got %f", (LUAI_UACNUMBER)f);
  }
  size_t i = check_index(L, h, 2);
  unsigned char v[8];
  const char *why = gl_dtype_encode(L, 3, h->dtype, v);
  if (why) {
    const char *given = lua_type(L, 3) == LUA_TNUMBER ? lua_tostring(L, 3) : luaL_typename(L, 3);
    return luaL_error(L, "host buffer %s[%I]: element %I: %s for %s, got %s", gl_dtypes[h->dtype].name,
                      (LUAI_UACINT)h->count, (LUAI_UACINT)i + 1, why, gl_dtypes[h->dtype].name, given);
  }
  host_access(L, h, i, 1, 1);
  memcpy((char *)gl_hostbuf_ptr(h) + i * gl_dtypes[h->dtype].size, v, gl_dtypes[h->dtype].size);
  return 0;
}

static int h_len(lua_State *L) {
  gl_hostbuf *h = gl_check_hostbuf(L, 1);
  lua_pushinteger(L, (lua_Integer)h->count);
  return 1;
}

/* h:free(), __close and __gc (gl_release_mode says which). Freeing the buffer
 * that allocated the memory gives it back as soon as the copies queued on it
 * have finished (never earlier), and its views become unusable; freeing a
 * view releases only that view, like slices. */
static int h_release(lua_State *L) {
  gl_hostbuf *h = gl_checkudata(L, 1, GL_HOST_MT);
  int mode = gl_release_mode(L);
  gl_hostmem *m = h->m;
  if (m && m->borrowed && mode != GL_RELEASE_METHOD) { /* the borrow list owns it */
    if (mode == GL_RELEASE_GC) m->borrower = NULL;
    else h->expired = 1;
    h->m = NULL;
    return 0;
  }
  if (mode == GL_RELEASE_GC || (mode == GL_RELEASE_CLOSE && (!m || m->freed))) {
    if (m) hostmem_unref(m);
    h->m = NULL;
    return 0;
  }
  raise_if_freed(L, h, "h:free: ", "is already");
  if (!m)
    return luaL_error(L, "h:free: host buffer %s[%I] is released", gl_dtypes[h->dtype].name,
                      (LUAI_UACINT)h->count);
  if (m->borrowed)
    return luaL_error(L, "h:free: a host view of a slice (%s[%I]) belongs to the slice and cannot be freed",
                      gl_dtypes[h->dtype].name, (LUAI_UACINT)h->count);
  int loc = gl_loc_here(L);
  if (!h->is_view) {
    m->freed = 1;
    m->freed_at = loc;
    hostmem_release_when_done(m);
  }
  h->released = 1;
  h->released_at = loc;
  h->m = NULL;
  hostmem_unref(m);
  return 0;
}

static int h_tostring(lua_State *L) {
  gl_hostbuf *h = gl_checkudata(L, 1, GL_HOST_MT);
  if (!h->m || h->m->freed) {
    lua_pushliteral(L, "gpulua.HostBuffer (freed)");
    return 1;
  }
  char d[128];
  gl_hostbuf_describe(h, d, sizeof d);
  lua_pushfstring(L, "gpulua.HostBuffer(%s)", d + strlen("host buffer "));
  return 1;
}

void gl_open_hostbuf(lua_State *L) {
  if (!gl_newmetatable(L, GL_HOST_MT)) {
    lua_pop(L, 1);
    return;
  }
  static const luaL_Reg methods[] = {
    {"totable", h_totable}, {"fill", h_fill}, {"view", h_view}, {NULL, NULL}};
  luaL_newlib(L, methods);
  gl_set_release(L, h_release, "free");
  lua_setfield(L, -2, "methods");
  static const luaL_Reg meta[] = {
    {"__index", h_index}, {"__newindex", h_newindex}, {"__len", h_len}, {"__tostring", h_tostring}, {NULL, NULL}};
  luaL_setfuncs(L, meta, 0);
  lua_pop(L, 1);
}
