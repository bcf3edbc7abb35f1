/*
 * l_slice.c -- device memory: dev:alloc, dev:zeros, views, split, read, free.
 *
 * An allocation (gl_alloc) is shared by the slice that allocated it and all
 * its views; each holds a reference. x:free() (or <close>) on the slice that
 * allocated it frees the allocation at once, and every view of it becomes
 * unusable ("freed at ..."); on a view it only releases that view. __gc
 * releases the handle, and the allocation goes with its last handle.
 *
 * A free is stream-ordered after the work of every stream that used the
 * allocation, so memory is never reused while queued work still touches it.
 */
#include "core.h"
#include "checker.h"
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Queue the free of `a` after every recorded use. Returns the driver's result. */
static CUresult alloc_free(gl_alloc *a, const char *where) {
  a->freed = 1;
  snprintf(a->freed_at, sizeof a->freed_at, "%s", where);
  gl_device *d = a->dev;
  if (!d->opened || !d->main || d->poison[0]) return CUDA_SUCCESS;
  gl_stream *fs = a->home->cu ? a->home : d->main;
  CUresult r = gl_access_order_all(&a->acc, fs);
  gl_set_ctx(d);
  if (r == CUDA_SUCCESS) r = gl_drv.cuMemFreeAsync(a->ptr, fs->cu);
  if (r == CUDA_SUCCESS) fs->seq++;
  return r;
}

/* A handle stops using the memory (freed, closed or collected). */
static CUresult alloc_release(gl_alloc *a, const char *where) {
  if (--a->live > 0 || a->freed) return CUDA_SUCCESS;
  return alloc_free(a, where);
}

static void alloc_unref(gl_alloc *a) {
  if (--a->refs > 0) return;
  gl_access_clear(&a->acc);
  gl_stream_unref(a->home);
  free(a);
}

/* Give the pool's unused memory back to the driver. A failed allocation can
 * leave the pool holding nearly all free memory (seen on an H200: 5 MB free
 * after a failed 90 GB request), which would starve every other process. */
static void trim_pool(gl_device *dev) {
  CUmemoryPool pool;
  gl_set_ctx(dev);
  if (gl_drv.cuDeviceGetDefaultMemPool(&pool, dev->cu) == CUDA_SUCCESS) gl_drv.cuMemPoolTrimTo(pool, 0);
}

/* Out of device memory: before giving up, collect garbage (slices nobody
 * refers to any more queue their frees), wait for the device so every queued
 * free has happened, and give the pool's cached memory back to the driver, so
 * that memory freed on any stream can serve a retry. Not inside a sim host
 * kernel (its own stream could not finish) nor while the script has stopped
 * the collector. The checker's verdicts do not change: no stream is marked as
 * synchronised. Returns CUDA_SUCCESS when a retry is worthwhile,
 * CUDA_ERROR_OUT_OF_MEMORY when nothing was tried, or the wait's error. */
static CUresult reclaim(lua_State *L, gl_device *dev) {
  if (gl_host_kernel_depth > 0 || !lua_gc(L, LUA_GCISRUNNING)) return CUDA_ERROR_OUT_OF_MEMORY;
  lua_gc(L, LUA_GCCOLLECT);
  gl_set_ctx(dev);
  CUresult r = gl_drv.cuCtxSynchronize();
  if (r != CUDA_SUCCESS) return r;
  trim_pool(dev);
  return CUDA_SUCCESS;
}

gl_slice *gl_test_slice(lua_State *L, int idx) { return gl_testudata(L, idx, GL_SLICE_MT); }

size_t gl_slice_bytes(gl_slice *x) { return x->count * gl_dtypes[x->dtype].size; }

CUdeviceptr gl_slice_ptr(gl_slice *x) {
  return x->a->ptr + (CUdeviceptr)(x->offset * gl_dtypes[x->dtype].size);
}

void gl_slice_describe(gl_slice *x, char *buf, size_t len) {
  size_t total = x->a->bytes / gl_dtypes[x->dtype].size;
  if (x->is_view)
    snprintf(buf, len, "slice %s[%zu] (view at offset %zu of %s[%zu]) on device %d",
             gl_dtypes[x->dtype].name, x->count, x->offset, gl_dtypes[x->dtype].name, total,
             x->a->dev->ordinal);
  else
    snprintf(buf, len, "slice %s[%zu] on device %d", gl_dtypes[x->dtype].name, x->count,
             x->a->dev->ordinal);
}

void gl_slice_check_alive(lua_State *L, gl_slice *x, int arg) {
  if (!x->a) luaL_error(L, "bad argument #%d: slice is not initialised", arg);
  if (x->released || x->a->freed) {
    char d[200];
    gl_slice_describe(x, d, sizeof d);
    if (x->released)
      luaL_error(L, "bad argument #%d: use of a freed %s (freed at %s)", arg, d, x->released_at);
    luaL_error(L, "bad argument #%d: use of a freed %s (its memory was freed at %s)", arg, d,
               x->a->freed_at);
  }
  if (!x->a->dev->opened) luaL_error(L, "gpulua has been shut down");
}

gl_slice *gl_check_slice(lua_State *L, int idx) {
  gl_slice *x = gl_test_slice(L, idx);
  if (!x) luaL_typeerror(L, idx, "gpulua slice");
  gl_slice_check_alive(L, x, idx);
  return x;
}

static size_t check_count(lua_State *L, int arg, gl_dtype dt) {
  int ok;
  lua_Integer n = lua_tointegerx(L, arg, &ok);
  if (!ok) {
    if (lua_type(L, arg) == LUA_TNUMBER)
      luaL_argerror(L, arg, "expected an integer element count, got a non-integral number");
    luaL_typeerror(L, arg, "integer element count");
  }
  if (n <= 0) luaL_argerror(L, arg, lua_pushfstring(L, "element count must be positive, got %I", (LUAI_UACINT)n));
  if ((uint64_t)n > ((uint64_t)1 << 50) / gl_dtypes[dt].size)
    luaL_argerror(L, arg, lua_pushfstring(L, "element count %I is too large", (LUAI_UACINT)n));
  return (size_t)n;
}

static gl_slice *new_handle(lua_State *L) {
  gl_slice *x = lua_newuserdatauv(L, sizeof *x, 0);
  memset(x, 0, sizeof *x);
  gl_setmetatable(L, GL_SLICE_MT);
  return x;
}

static int alloc_impl(lua_State *L, int zero) {
  gl_device *dev = gl_check_device(L, 1);
  gl_check_poison(L, dev);
  gl_dtype dt = gl_check_dtype(L, 2);
  size_t n = check_count(L, 3, dt);
  gl_stream *s = gl_opt_stream(L, 4, dev);
  if (s->dev != dev)
    return luaL_error(L, "dev:%s: option 'stream' ('%s') is on device %d, but the memory is on device %d",
                      zero ? "zeros" : "alloc", s->name, s->dev->ordinal, dev->ordinal);
  size_t bytes = n * gl_dtypes[dt].size;
  gl_slice *x = new_handle(L);
  gl_alloc *a = calloc(1, sizeof *a);
  if (!a) return luaL_error(L, "gpulua: out of host memory");
  gl_set_ctx(dev);
  CUresult r = gl_drv.cuMemAllocAsync(&a->ptr, bytes, s->cu);
  const char *call = "cuMemAllocAsync";
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    CUresult rr = reclaim(L, dev);
    if (rr == CUDA_SUCCESS) r = gl_drv.cuMemAllocAsync(&a->ptr, bytes, s->cu);
    else if (rr != CUDA_ERROR_OUT_OF_MEMORY) r = rr, call = "cuCtxSynchronize";
    if (r == CUDA_ERROR_OUT_OF_MEMORY) trim_pool(dev); /* and the free bytes reported are real */
  }
  if (r != CUDA_SUCCESS) {
    free(a);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      size_t free_ = 0, total = 0;
      gl_drv.cuMemGetInfo(&free_, &total);
      return luaL_error(L, "dev:%s: out of memory on device %d: requested %s[%I] (%I bytes), %I of %I bytes free",
                        zero ? "zeros" : "alloc", dev->ordinal, gl_dtypes[dt].name, (LUAI_UACINT)n,
                        (LUAI_UACINT)bytes, (LUAI_UACINT)free_, (LUAI_UACINT)total);
    }
    gl_check(L, dev, r, call);
  }
  a->refs = 1;
  a->live = 1;
  a->dev = dev;
  a->bytes = bytes;
  a->home = s;
  gl_stream_ref(s);
  x->a = a;
  x->count = n;
  x->dtype = dt;
  s->seq++;
  if (zero) {
    GL_CALL(L, dev, cuMemsetD8Async, a->ptr, 0, bytes, s->cu);
    s->seq++;
  }
  /* the memory exists in s's order: its allocation counts as a write on s */
  gl_access_record(dev->rt, &a->acc, s, 0, bytes, 1, gl_loc_here(L));
  return 1;
}

int gl_dev_alloc(lua_State *L) { return alloc_impl(L, 0); }
int gl_dev_zeros(lua_State *L) { return alloc_impl(L, 1); }

static gl_slice *push_view(lua_State *L, gl_slice *x, size_t offset, size_t count) {
  gl_slice *v = new_handle(L);
  v->a = x->a;
  x->a->refs++;
  x->a->live++;
  v->offset = x->offset + offset;
  v->count = count;
  v->dtype = x->dtype;
  v->is_view = 1;
  return v;
}

/* x:view(offset, count): offset is 0-based, count defaults to the rest. */
static int x_view(lua_State *L) {
  gl_slice *x = gl_check_slice(L, 1);
  size_t off, cnt;
  gl_check_view(L, x->count, "slice", &off, &cnt);
  push_view(L, x, off, cnt);
  return 1;
}

/* x:split(k) -> k views of near-equal size covering x (the first ones one longer). */
static int x_split(lua_State *L) {
  gl_slice *x = gl_check_slice(L, 1);
  lua_Integer k = luaL_checkinteger(L, 2);
  if (k < 1 || (size_t)k > x->count)
    return luaL_argerror(L, 2, lua_pushfstring(L, "part count must be from 1 to #x (%I), got %I",
                                               (LUAI_UACINT)x->count, (LUAI_UACINT)k));
  size_t base = x->count / (size_t)k, extra = x->count % (size_t)k, off = 0;
  lua_createtable(L, (int)k, 0);
  for (lua_Integer i = 0; i < k; i++) {
    size_t c = base + ((size_t)i < extra ? 1 : 0);
    push_view(L, x, off, c);
    lua_rawseti(L, -2, i + 1);
    off += c;
  }
  return 1;
}

/* x:read{stream = s} -> host buffer with x's contents; waits for the copy. */
static int x_read(lua_State *L) {
  gl_slice *x = gl_check_slice(L, 1);
  gl_device *dev = x->a->dev;
  gl_check_poison(L, dev);
  gl_stream *s = gl_opt_stream(L, 2, dev);
  if (s->dev != dev)
    return luaL_error(L, "x:read: stream '%s' is on device %d, but the slice is on device %d", s->name,
                      s->dev->ordinal, dev->ordinal);
  uint64_t lo = (uint64_t)(gl_slice_ptr(x) - x->a->ptr), hi = lo + gl_slice_bytes(x);
  gl_access_desc desc = {x, NULL, "x:read", NULL, 0};
  gl_access_check(L, &x->a->acc, s, lo, hi, 0, &desc);
  gl_hostbuf *h = gl_hostbuf_new(L, x->dtype, x->count, 0);
  gl_set_ctx(dev);
  gl_trace_begin(s);
  GL_CALL(L, dev, cuMemcpyDtoHAsync, gl_hostbuf_ptr(h), gl_slice_ptr(x), gl_slice_bytes(x), s->cu);
  s->seq++;
  gl_trace_end(s, GL_OP_D2H, "x:read", gl_slice_bytes(x));
  gl_access_record(dev->rt, &x->a->acc, s, lo, hi, 0, gl_loc_here(L));
  GL_CALL(L, dev, cuEventRecord, s->tail_ev, s->cu);
  GL_CALL(L, dev, cuEventSynchronize, s->tail_ev);
  gl_clock_host_reached(s, s->seq);
  return 1;
}

/* x:free(), __close and __gc (gl_release_mode says which) */
static int x_release(lua_State *L) {
  gl_slice *x = gl_checkudata(L, 1, GL_SLICE_MT);
  int mode = gl_release_mode(L);
  gl_alloc *a = x->a;
  if (!a) return 0;
  if (mode == GL_RELEASE_GC) {
    if (!x->released) alloc_release(a, "garbage collection");
    x->a = NULL;
    alloc_unref(a);
    return 0;
  }
  if (x->released || a->freed) {
    if (mode == GL_RELEASE_CLOSE) return 0;
    char d[200];
    gl_slice_describe(x, d, sizeof d);
    return luaL_error(L, "x:free: %s is already freed (at %s)", d,
                      x->released ? x->released_at : a->freed_at);
  }
  char where[GL_WHERE_MAX];
  gl_where(L, where, sizeof where);
  x->released = 1;
  snprintf(x->released_at, sizeof x->released_at, "%s", where);
  CUresult r = x->is_view ? alloc_release(a, where) : (a->live--, alloc_free(a, where));
  if (r != CUDA_SUCCESS) gl_check(L, a->dev, r, "cuMemFreeAsync");
  return 0;
}

static int x_index(lua_State *L) {
  gl_slice *x = gl_checkudata(L, 1, GL_SLICE_MT);
  const char *k = luaL_checkstring(L, 2);
  if (!x->a) return 0;
  if (strcmp(k, "dtype") == 0) lua_pushstring(L, gl_dtypes[x->dtype].name);
  else if (strcmp(k, "bytes") == 0) lua_pushinteger(L, (lua_Integer)(x->count * gl_dtypes[x->dtype].size));
  else if (strcmp(k, "device") == 0) gl_push_device(L, x->a->dev);
  else {
    lua_getmetatable(L, 1);
    lua_getfield(L, -1, "methods");
    lua_getfield(L, -1, k);
  }
  return 1;
}

static int x_len(lua_State *L) {
  gl_slice *x = gl_checkudata(L, 1, GL_SLICE_MT);
  lua_pushinteger(L, (lua_Integer)x->count);
  return 1;
}

static int x_tostring(lua_State *L) {
  gl_slice *x = gl_checkudata(L, 1, GL_SLICE_MT);
  if (!x->a) {
    lua_pushliteral(L, "gpulua.Slice (released)");
    return 1;
  }
  char d[200];
  gl_slice_describe(x, d, sizeof d);
  lua_pushfstring(L, "gpulua.Slice(%s%s)", d + strlen("slice "),
                  x->released || x->a->freed ? ", freed" : "");
  return 1;
}

void gl_open_slice(lua_State *L) {
  if (!gl_newmetatable(L, GL_SLICE_MT)) {
    lua_pop(L, 1);
    return;
  }
  static const luaL_Reg methods[] = {
    {"view", x_view}, {"split", x_split}, {"read", x_read}, {NULL, NULL}};
  luaL_newlib(L, methods);
  gl_set_release(L, x_release, "free");
  lua_setfield(L, -2, "methods");
  lua_pushcfunction(L, x_index);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, x_len);
  lua_setfield(L, -2, "__len");
  lua_pushcfunction(L, x_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
}
