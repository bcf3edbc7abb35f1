/*
 * l_hostbuf.c -- host buffer userdata: gpu.host(dtype, n or table,
 * {pinned = true}), gpu.map(path, {dtype =, mode =}), 1-based indexing
 * with bounds and range checks, totable, fill, view, read_from and
 * write_to (a Lua file handle), free. The core handle (core/hostmem.h)
 * lives in the userdata; every Lua read or write of the memory is checked
 * against queued copies.
 */
#include "bindings.h"

#include <errno.h>
#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

gl_hostbuf *gll_test_hostbuf(lua_State *L, int idx) { return gll_testudata(L, idx, &gll_host_type); }

gl_hostbuf *gll_check_hostbuf(lua_State *L, int idx) {
  gl_hostbuf *h = gll_test_hostbuf(L, idx);
  if (!h) luaL_typeerror(L, idx, "gpulua.HostBuffer");
  gl_runtime *rt = h->m ? h->m->rt : gll_rt(L); /* the hot path needs no registry lookup */
  if (gl_hostbuf_check(rt, h) != 0) gll_raise(L, rt);
  if (gl_in_host_kernel() && !h->m->borrowed)
    gll_refuse_in_host_kernel(L, NULL, "a host buffer that is not one of the kernel's argument views");
  return h;
}

static gl_hostbuf *new_handle(lua_State *L) {
  return gll_newudata(L, sizeof(gl_hostbuf), 0, &gll_host_type);
}

/* Out of pinned memory: collect garbage, release what finished copies no
 * longer use, and try once more. */
gl_hostbuf *gll_push_hostbuf(lua_State *L, gl_dtype dt, size_t count, int pinned, int zero) {
  gl_runtime *rt = gll_rt(L);
  gl_hostbuf *h = new_handle(L);
  if (gl_hostbuf_new(rt, dt, count, pinned, zero, "gpu.host", h) == 0) return h;
  if (!pinned || gl_error_code(rt) != CUDA_ERROR_OUT_OF_MEMORY || !gll_can_collect(L)) gll_raise(L, rt);
  lua_gc(L, LUA_GCCOLLECT);
  gl_retire_reap(rt, 0);
  if (gl_hostbuf_new(rt, dt, count, pinned, zero, "gpu.host", h) != 0) gll_raise(L, rt);
  return h;
}

/* Lua is about to read (write = 0) or write elements [first, first + n) of h, for call. */
static void host_access(lua_State *L, gl_hostbuf *h, size_t first, size_t n, int write, const char *call) {
  if (h->m->acc.n == 0 && !(write && h->m->readonly) && !h->m->graph_uses) return;
  gl_site site = GL_SITE(L);
  if (gl_hostbuf_access(h, first, n, write, call, &site) != 0) gll_raise(L, h->m->rt);
}

static const char *const host_options[] = {"pinned", NULL};

/* gpu.host(dtype, n or {values}, {pinned = true}) */
int gll_host_new(lua_State *L) {
  GL_NOT_IN_HOST_KERNEL(L, "gpu.");
  GL_NOT_IN_CAPTURE(L, gll_rt(L), "gpu.host");
  gl_dtype dt = gll_check_dtype(L, 1);
  int pinned = 1;
  if (gll_check_options(L, 3, "gpu.host", host_options)) {
    lua_getfield(L, 3, "pinned");
    if (!lua_isnil(L, -1)) {
      if (!lua_isboolean(L, -1))
        return luaL_error(L, "gpu.host: option 'pinned' expected a boolean, got %s", gll_given(L, -1));
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
                                                   gll_given(L, 2)));
      return luaL_typeerror(L, 2, "integer element count or table of numbers");
    }
    if (c < 1) return luaL_argerror(L, 2, lua_pushfstring(L, "element count must be positive, got %I", (LUAI_UACINT)c));
    if ((uint64_t)c > ((uint64_t)1 << 46) / gl_dtypes[dt].size)
      return luaL_argerror(L, 2, lua_pushfstring(L, "element count %I is too large", (LUAI_UACINT)c));
    n = (size_t)c;
  }
  gl_hostbuf *h = gll_push_hostbuf(L, dt, n, pinned, !from_table); /* zeros, on every backend */
  if (from_table) {
    char *p = h->m->ptr;
    size_t sz = gl_dtypes[dt].size;
    for (size_t i = 0; i < n; i++) {
      lua_geti(L, 2, (lua_Integer)i + 1);
      const char *why = gll_dtype_encode(L, -1, dt, p + i * sz);
      if (why)
        return luaL_error(L, "gpu.host: element %I of the table: %s for %s, got %s", (LUAI_UACINT)i + 1, why,
                          gl_dtypes[dt].name, gll_given(L, -1));
      lua_pop(L, 1);
    }
  }
  return 1;
}

static const char *const map_options[] = {"dtype", "mode", NULL};

/* gpu.map(path, {dtype = "f32", mode = "r"}): the options checked here, the
 * file by the core (core/hostmap.c). */
int gll_host_map(lua_State *L) {
  GL_NOT_IN_HOST_KERNEL(L, "gpu.");
  gl_runtime *rt = gll_rt(L);
  GL_NOT_IN_CAPTURE(L, rt, "gpu.map");
  if (lua_type(L, 1) != LUA_TSTRING)
    return luaL_error(L, "gpu.map: path (argument #1) expected a string, got %s", gll_given(L, 1));
  const char *path = lua_tostring(L, 1);
  if (!lua_isnoneornil(L, 2) && !lua_istable(L, 2))
    return luaL_error(L, "gpu.map: options (argument #2) expected a table {dtype =, mode =}, got %s", gll_given(L, 2));
  if (!gll_check_options(L, 2, "gpu.map", map_options))
    return luaL_error(L, "gpu.map: expected an options table with the dtype (gpu.map(path, {dtype = \"f32\"}))");
  int t = lua_getfield(L, 2, "dtype");
  if (t == LUA_TNIL) return luaL_error(L, "gpu.map: option 'dtype' is missing (the file's element type: \"f32\", ...)");
  int dt = t == LUA_TSTRING ? gl_dtype_parse(lua_tostring(L, -1)) : -1;
  if (t != LUA_TSTRING)
    return luaL_error(L, "gpu.map: option 'dtype' expected a dtype (" GL_DTYPE_NAMES "), got %s", gll_given(L, -1));
  if (dt < 0)
    return luaL_error(L, "gpu.map: option 'dtype': unknown dtype '%s' (expected " GL_DTYPE_NAMES ")", lua_tostring(L, -1));
  int writable = 0;
  t = lua_getfield(L, 2, "mode");
  if (t == LUA_TSTRING && strcmp(lua_tostring(L, -1), "rw") == 0) writable = 1;
  else if (t == LUA_TSTRING && strcmp(lua_tostring(L, -1), "r") != 0)
    return luaL_error(L, "gpu.map: option 'mode' expected \"r\" or \"rw\", got \"%s\"", lua_tostring(L, -1));
  else if (t != LUA_TSTRING && t != LUA_TNIL)
    return luaL_error(L, "gpu.map: option 'mode' expected \"r\" or \"rw\", got %s", gll_given(L, -1));
  lua_settop(L, 1); /* the path stays for the message */
  gl_hostbuf *h = new_handle(L);
  if (gl_hostbuf_map(rt, path, (gl_dtype)dt, writable, "gpu.map", h) != 0) return gll_raise(L, rt);
  return 1;
}

/* h[i]'s 0-based element: i is an integer (or an integral float) from 1 to #h */
static size_t check_index(lua_State *L, gl_hostbuf *h, int idx) {
  int ok;
  lua_Integer i = lua_tointegerx(L, idx, &ok);
  const char *dt = gl_dtypes[h->dtype].name;
  if (!ok) {
    lua_Number f = lua_tonumber(L, idx);
    if (f != f || f != floor(f)) /* NaN, or with a fraction (infinities are whole, out of range) */
      luaL_error(L, "host buffer %s[%I]: an index must be an integer, got %s", dt, (LUAI_UACINT)h->count,
                 gll_given(L, idx));
    luaL_error(L, "host buffer %s[%I]: index %s is out of range (1 to %I)", dt, (LUAI_UACINT)h->count,
               lua_tostring(L, idx), (LUAI_UACINT)h->count);
  }
  if (i < 1 || (size_t)i > h->count)
    luaL_error(L, "host buffer %s[%I]: index %I is out of range (1 to %I)", dt, (LUAI_UACINT)h->count,
               (LUAI_UACINT)i, (LUAI_UACINT)h->count);
  return (size_t)i - 1;
}

int gll_hostbuf_totable(lua_State *L) {
  gl_hostbuf *h = gll_check_hostbuf(L, 1);
  host_access(L, h, 0, h->count, 0, "h:totable");
  if (h->count > (size_t)INT32_MAX) return luaL_error(L, "h:totable: the buffer is too large for a table");
  lua_createtable(L, (int)h->count, 0);
  const char *p = gl_hostbuf_ptr(h);
  size_t sz = gl_dtypes[h->dtype].size;
  for (size_t i = 0; i < h->count; i++) {
    gll_dtype_push(L, h->dtype, p + i * sz);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

int gll_hostbuf_fill(lua_State *L) {
  gl_hostbuf *h = gll_check_hostbuf(L, 1);
  unsigned char v[8];
  luaL_checkany(L, 2);
  const char *why = gll_dtype_encode(L, 2, h->dtype, v);
  if (why)
    return luaL_argerror(L, 2, lua_pushfstring(L, "%s for %s, got %s", why, gl_dtypes[h->dtype].name, gll_given(L, 2)));
  host_access(L, h, 0, h->count, 1, "h:fill");
  char *p = gl_hostbuf_ptr(h);
  size_t sz = gl_dtypes[h->dtype].size;
  for (size_t i = 0; i < h->count; i++) memcpy(p + i * sz, v, sz);
  lua_settop(L, 1);
  return 1;
}

/* The open file of a Lua file handle at idx, for `call` (h:read_from or
 * h:write_to): an error naming what was given otherwise. */
static FILE *check_file(lua_State *L, int idx, const char *call) {
  luaL_Stream *p = luaL_testudata(L, idx, LUA_FILEHANDLE);
  if (!p)
    luaL_error(L, "%s: expected a file handle (from io.open), got %s", call, gll_given(L, idx));
  if (!p->closef || !p->f) luaL_error(L, "%s: the file is closed", call);
  return p->f;
}

/* h:read_from(file): one fread of the buffer's bytes; the number of whole
 * elements read (fewer at the file's end, 0 there) */
int gll_hostbuf_read_from(lua_State *L) {
  gl_hostbuf *h = gll_check_hostbuf(L, 1);
  FILE *f = check_file(L, 2, "h:read_from");
  size_t sz = gl_dtypes[h->dtype].size, bytes = h->count * sz;
  host_access(L, h, 0, h->count, 1, "h:read_from");
  clearerr(f);
  errno = 0;
  size_t got = fread(gl_hostbuf_ptr(h), 1, bytes, f);
  if (got < bytes && ferror(f)) {
    int e = errno;
    return luaL_error(L, "h:read_from: %s", e == EBADF ? "the file is not open for reading (io.open(path, \"rb\"))"
                                                       : e ? strerror(e) : "the read failed");
  }
  lua_pushinteger(L, (lua_Integer)(got / sz));
  return 1;
}

/* h:write_to(file): one fwrite of the buffer's bytes; its element count */
int gll_hostbuf_write_to(lua_State *L) {
  gl_hostbuf *h = gll_check_hostbuf(L, 1);
  FILE *f = check_file(L, 2, "h:write_to");
  size_t bytes = h->count * gl_dtypes[h->dtype].size;
  host_access(L, h, 0, h->count, 0, "h:write_to");
  clearerr(f);
  errno = 0;
  if (fwrite(gl_hostbuf_ptr(h), 1, bytes, f) < bytes) {
    int e = errno;
    return luaL_error(L, "h:write_to: %s", e == EBADF ? "the file is not open for writing (io.open(path, \"wb\"))"
                                                      : e ? strerror(e) : "the write failed");
  }
  lua_pushinteger(L, (lua_Integer)h->count);
  return 1;
}

/* h:view(offset, count): offset 0-based like device views. */
int gll_hostbuf_view(lua_State *L) {
  gl_hostbuf *h = gll_check_hostbuf(L, 1);
  size_t off, cnt;
  gll_check_view(L, h->count, "buffer", &off, &cnt);
  gl_hostbuf_view(h, off, cnt, new_handle(L));
  return 1;
}

/* h[i] and the fields (the methods were looked up first) */
int gll_hostbuf_field(lua_State *L) {
  gl_hostbuf *h = gll_test_hostbuf(L, 1);
  if (!h) return luaL_typeerror(L, 1, "gpulua.HostBuffer");
  if (lua_type(L, 2) != LUA_TSTRING) gll_check_hostbuf(L, 1); /* fields stay reachable once freed */
  if (lua_type(L, 2) == LUA_TNUMBER) {
    size_t i = check_index(L, h, 2);
    host_access(L, h, i, 1, 0, NULL);
    gll_dtype_push(L, h->dtype, (char *)gl_hostbuf_ptr(h) + i * gl_dtypes[h->dtype].size);
    return 1;
  }
  if (lua_type(L, 2) == LUA_TSTRING) {
    const char *k = lua_tostring(L, 2);
    if (strcmp(k, "dtype") == 0) lua_pushstring(L, gl_dtypes[h->dtype].name);
    else if (strcmp(k, "bytes") == 0) lua_pushinteger(L, (lua_Integer)gl_hostbuf_bytes(h));
    else if (strcmp(k, "pinned") == 0) lua_pushboolean(L, h->pinned);
    else goto no_such_key;
    return 1;
  }
no_such_key: /* h["1"] or h.lenght: an error, not a silent nil */
  {
    const char *key = luaL_tolstring(L, 2, NULL), *fields = gll_push_fields(L, &gll_host_type);
    const char *methods = gll_push_methods(L);
    return luaL_error(L, "host buffer %s[%I]: no element or field %s %s (elements are h[1] to h[%I] with integer "
                         "indices; fields: %s; methods: %s)",
                      gl_dtypes[h->dtype].name, (LUAI_UACINT)h->count, luaL_typename(L, 2), key,
                      (LUAI_UACINT)h->count, fields, methods);
  }
}

int gll_hostbuf_newindex(lua_State *L) {
  gl_hostbuf *h = gll_check_hostbuf(L, 1);
  if (lua_type(L, 2) != LUA_TNUMBER)
    return luaL_error(L, "host buffer: cannot set field '%s' (only elements 1 to #h can be assigned)",
                      luaL_tolstring(L, 2, NULL));
  size_t i = check_index(L, h, 2);
  unsigned char v[8];
  const char *why = gll_dtype_encode(L, 3, h->dtype, v);
  if (why)
    return luaL_error(L, "host buffer %s[%I]: element %I: %s for %s, got %s", gl_dtypes[h->dtype].name,
                      (LUAI_UACINT)h->count, (LUAI_UACINT)i + 1, why, gl_dtypes[h->dtype].name, gll_given(L, 3));
  host_access(L, h, i, 1, 1, "h[i] = v");
  memcpy((char *)gl_hostbuf_ptr(h) + i * gl_dtypes[h->dtype].size, v, gl_dtypes[h->dtype].size);
  return 0;
}

int gll_hostbuf_len(lua_State *L) { /* answers for a freed buffer too, like the fields */
  gl_hostbuf *h = gll_test_hostbuf(L, 1);
  if (!h) return luaL_typeerror(L, 1, "gpulua.HostBuffer");
  if (h->expired || (h->m && h->m->borrowed && !h->m->ptr)) gll_check_hostbuf(L, 1); /* a host kernel's, after it */
  lua_pushinteger(L, (lua_Integer)h->count);
  return 1;
}

/* h:free(), __close and __gc, through gll_release. A finalizer of a released
 * handle needs no runtime (it may already be gone). A host kernel's views
 * are ended by their <close> inside the kernel. */
static gl_runtime *h_held(void *o) {
  gl_hostbuf *h = o;
  return h->m ? h->m->rt : NULL;
}

static int h_released(lua_State *L, void *o) {
  gl_hostbuf *h = o;
  gl_buf why = GL_BUF_INIT;
  int released = gl_hostbuf_released(h->m ? h->m->rt : gll_rt(L), h, &why);
  if (released) lua_pushstring(L, gl_buf_str(&why));
  gl_buf_free(&why);
  return released;
}

static int h_close(lua_State *L, void *o, int block) {
  gl_hostbuf *h = o;
  gl_runtime *rt = h->m->rt;
  gl_site site = GL_SITE(L);
  if (gl_hostbuf_free(rt, h, block, "h:free", &site) != 0) return gll_raise(L, rt);
  return 0;
}

static void h_collect(lua_State *L, void *o) {
  (void)L;
  gl_hostbuf_collect(o);
}

static const gll_release_ops host_release = {
  .type = &gll_host_type,
  .call = "h:free",
  .collected = "the host buffer is freed already",
  .block = "h:free",
  .allowed = GL_RELEASE_IN_HOST_KERNEL,
  .held = h_held,
  .released = h_released,
  .close = h_close,
  .collect = h_collect,
};

int gll_hostbuf_release(lua_State *L) { return gll_release(L, &host_release, gll_release_how(L)); }

int gll_hostbuf_tostring(lua_State *L) {
  gl_hostbuf *h = gll_checkudata(L, 1, &gll_host_type);
  if (!h->m || h->m->freed) {
    lua_pushliteral(L, "gpulua.HostBuffer (freed)");
    return 1;
  }
  gl_buf d = GL_BUF_INIT;
  gl_hostbuf_describe(h, &d);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  lua_pushfstring(L, "gpulua.HostBuffer(%s", gl_buf_str(&d) + strlen("host buffer "));
  gl_buf_free(&d);
  luaL_addvalue(&b);
  /* its first elements, as h[i] gives them, when h[i] would give them now
   * (printing never waits, and is never an error) */
  enum { SHOWN = 8 };
  size_t n = h->count < SHOWN ? h->count : SHOWN;
  const gl_stream *other = NULL;
  if (h->expired || (h->m->borrowed && !h->m->ptr)) {
    luaL_addstring(&b, ", expired");
    n = 0;
  } else if (!gl_hostbuf_readable_now(h, n, &other)) {
    if (other) lua_pushfstring(L, ", in use by stream '%s' (device %d): sync it to read", other->name, other->dev->ordinal);
    else lua_pushstring(L, ", in use by the capture");
    luaL_addvalue(&b);
    n = 0;
  }
  for (size_t i = 1; i <= n; i++) {
    luaL_addstring(&b, i == 1 ? ": " : ", ");
    lua_geti(L, 1, (lua_Integer)i);
    if (lua_isinteger(L, -1)) lua_pushfstring(L, "%I", (LUAI_UACINT)lua_tointeger(L, -1));
    else {
      char num[32];
      snprintf(num, sizeof num, h->dtype == GL_F64 ? "%.15g" : "%.7g", (double)lua_tonumber(L, -1));
      lua_pushstring(L, num);
    }
    lua_remove(L, -2);
    luaL_addvalue(&b);
  }
  if (n > 0 && h->count > n) luaL_addstring(&b, ", ...");
  luaL_addchar(&b, ')');
  luaL_pushresult(&b);
  return 1;
}
