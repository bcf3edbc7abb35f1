/*
 * l_slice.c -- slice userdata: dev:alloc, dev:zeros, views, split, read,
 * free. The core slice (core/memory.h) lives in the userdata; an allocation
 * is shared by the slice that allocated it and its views.
 */
#include "l_async.h"

#include <string.h>

#include "ops.h"

void gll_check_slice_alive(lua_State *L, gl_slice *x, int arg) {
  int rc = gl_slice_check(x, arg);
  if (rc == -2) luaL_error(L, "bad argument #%d: slice is not initialised", arg);
  if (rc != 0) gll_raise(L, x->a->dev->rt);
}

gl_slice *gll_check_slice(lua_State *L, int idx) {
  gl_slice *x = gll_test_slice(L, idx);
  if (!x) luaL_typeerror(L, idx, "gpulua.Slice");
  if (x->a) GL_NOT_IN_HOST_KERNEL(L, "x:");
  gll_check_slice_alive(L, x, idx);
  return x;
}

static size_t check_count(lua_State *L, int arg, gl_dtype dt) {
  int ok;
  lua_Integer n = lua_tointegerx(L, arg, &ok);
  if (!ok) {
    if (lua_type(L, arg) == LUA_TNUMBER) /* NaN, inf, 1.5, 2^63: the value as given */
      luaL_argerror(L, arg, lua_pushfstring(L, "expected an integer element count, got %s", gll_given(L, arg)));
    luaL_typeerror(L, arg, "integer element count");
  }
  if (n <= 0) luaL_argerror(L, arg, lua_pushfstring(L, "element count must be positive, got %I", (LUAI_UACINT)n));
  if ((uint64_t)n > ((uint64_t)1 << 50) / gl_dtypes[dt].size)
    luaL_argerror(L, arg, lua_pushfstring(L, "element count %I is too large", (LUAI_UACINT)n));
  return (size_t)n;
}

static gl_slice *new_handle(lua_State *L) {
  return gll_newudata(L, sizeof(gl_slice), 0, &gll_slice_type);
}

static const char *const alloc_options[] = {"stream", NULL};

/* dev:alloc(dtype, n, {stream =}) and dev:zeros: out of device memory, a
 * full garbage collection (slices nobody refers to queue their frees), a
 * wait for the device and a trim of its pool come before one more try. */
static int alloc_impl(lua_State *L, int zero) {
  const char *fname = zero ? "dev:zeros" : "dev:alloc";
  gl_device *dev = gll_check_device(L, 1);
  GL_NOT_IN_CAPTURE(L, dev->rt, fname);
  if (gl_device_check(dev) != 0) return gll_raise(L, dev->rt);
  gl_dtype dt = gll_check_dtype(L, 2);
  size_t n = check_count(L, 3, dt);
  gll_check_options(L, 4, fname, alloc_options);
  gl_stream *s = gll_opt_stream(L, 4, dev, fname);
  if (s->dev != dev)
    return luaL_error(L, "%s: option 'stream' ('%s') is on device %d, but the memory is on device %d", fname, s->name,
                      s->dev->ordinal, dev->ordinal);
  gl_runtime *rt = dev->rt;
  gl_slice *x = new_handle(L);
  gl_site site = GL_SITE(L);
  if (gl_slice_new(s, dt, n, zero, fname, &site, x) == 0) return 1;
  if (gl_error_code(rt) != CUDA_ERROR_OUT_OF_MEMORY || x->a || !gll_can_collect(L)) return gll_raise(L, rt);
  lua_gc(L, LUA_GCCOLLECT);
  if (gl_device_reclaim(dev, &site) != 0 || gl_slice_new(s, dt, n, zero, fname, &site, x) != 0) return gll_raise(L, rt);
  return 1;
}

int gll_dev_alloc(lua_State *L) { return alloc_impl(L, 0); }
int gll_dev_zeros(lua_State *L) { return alloc_impl(L, 1); }

/* x:view(offset, count): offset is 0-based, count defaults to the rest. */
int gll_slice_view(lua_State *L) {
  gl_slice *x = gll_check_slice(L, 1);
  size_t off, cnt;
  gll_check_view(L, x->count, "slice", &off, &cnt);
  gl_slice_view(x, off, cnt, new_handle(L));
  return 1;
}

/* x:split(k) -> k views of near-equal size covering x (the first ones one longer). */
int gll_slice_split(lua_State *L) {
  gl_slice *x = gll_check_slice(L, 1);
  lua_Integer k = luaL_checkinteger(L, 2);
  if (k < 1 || (size_t)k > x->count)
    return luaL_argerror(L, 2, lua_pushfstring(L, "part count must be from 1 to #x (%I), got %I",
                                               (LUAI_UACINT)x->count, (LUAI_UACINT)k));
  size_t base = x->count / (size_t)k, extra = x->count % (size_t)k, off = 0;
  lua_createtable(L, (int)k, 0);
  for (lua_Integer i = 0; i < k; i++) {
    size_t c = base + ((size_t)i < extra ? 1 : 0);
    gl_slice_view(x, off, c, new_handle(L));
    lua_rawseti(L, -2, i + 1);
    off += c;
  }
  return 1;
}

static const char *const read_options[] = {"stream", NULL};

/* A task's x:read, resumed: the buffer is on top. */
static int read_done(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  gll_task_resumed(L, ctx);
  return 1;
}

/* x:read{stream = s} -> host buffer with x's contents; waits for the copy
 * (in a task: yields until it finished). */
int gll_slice_read(lua_State *L) {
  gl_slice *x = gll_check_slice(L, 1);
  gl_device *dev = x->a->dev;
  GL_NOT_IN_CAPTURE(L, dev->rt, "x:read");
  if (gl_device_check(dev) != 0) return gll_raise(L, dev->rt);
  gll_check_options(L, 2, "x:read", read_options);
  gl_stream *s = gll_opt_stream(L, 2, dev, "x:read");
  int task = gll_in_task(L); /* queue the copy, yield until it finished: into pinned memory, so as not to block */
  gl_hostbuf *h = gll_push_hostbuf(L, x->dtype, x->count, task, 0);
  gl_site site = GL_SITE(L);
  gl_read_req r = {.call = "x:read", .x = x, .s = s, .h = h, .site = &site, .no_wait = task};
  if (gl_read_submit(&r) != 0) return gll_raise(L, dev->rt);
  if (task) return gll_task_await_stream(L, s, "x:read", read_done);
  gll_safe_point(L);
  return 1;
}

/* x:free(), __close and __gc, through gll_release */
static gl_runtime *x_held(void *o) {
  gl_slice *x = o;
  return x->a ? x->a->dev->rt : NULL;
}

static int x_released(lua_State *L, void *o) {
  gl_buf why = GL_BUF_INIT;
  int released = gl_slice_released(o, &why);
  if (released) lua_pushstring(L, gl_buf_str(&why));
  gl_buf_free(&why);
  return released;
}

static int x_close(lua_State *L, void *o, int block) {
  gl_slice *x = o;
  gl_runtime *rt = x->a->dev->rt;
  gl_site site = GL_SITE(L);
  if (gl_slice_free(x, block, "x:free", &site) != 0) return gll_raise(L, rt);
  return 0;
}

static void x_collect(lua_State *L, void *o) {
  (void)L;
  gl_slice_collect(o);
}

static const gll_release_ops slice_release = {
  .type = &gll_slice_type,
  .call = "x:free",
  .collected = "the slice is freed already",
  .block = "freeing a slice (<close>)",
  .held = x_held,
  .released = x_released,
  .close = x_close,
  .collect = x_collect,
};

int gll_slice_release(lua_State *L) { return gll_release(L, &slice_release, gll_release_how(L)); }

int gll_slice_field(lua_State *L) {
  gl_slice *x = gll_checkudata(L, 1, &gll_slice_type);
  const char *k = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : "";
  if (strcmp(k, "dtype") == 0) lua_pushstring(L, gl_dtypes[x->dtype].name);
  else if (strcmp(k, "bytes") == 0) lua_pushinteger(L, (lua_Integer)gl_slice_bytes(x));
  else if (strcmp(k, "device") == 0 && x->a) gll_push_device(L, x->a->dev);
  else if (strcmp(k, "device") == 0) lua_pushnil(L); /* released: its finalizer ran */
  else return 0;
  return 1;
}

int gll_slice_len(lua_State *L) {
  gl_slice *x = gll_checkudata(L, 1, &gll_slice_type);
  lua_pushinteger(L, (lua_Integer)x->count);
  return 1;
}

int gll_slice_tostring(lua_State *L) {
  gl_slice *x = gll_checkudata(L, 1, &gll_slice_type);
  if (!x->a) {
    lua_pushliteral(L, "gpulua.Slice (released)");
    return 1;
  }
  gl_buf d = GL_BUF_INIT;
  gl_slice_describe(x, &d);
  const gl_stream *home = x->a->home;
  lua_pushfstring(L, "gpulua.Slice(%s%s%s%s)", gl_buf_str(&d) + strlen("slice "), home ? ", home stream " : "",
                  home ? home->name : "", x->released || x->a->freed ? ", freed" : "");
  gl_buf_free(&d);
  return 1;
}
