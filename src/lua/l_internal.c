/*
 * l_internal.c -- require "gpulua.internal": what gpulua's own Lua modules
 * (the files of lua/gpulua) need from C and Lua cannot do. Not an API: scripts use
 * gpu, its objects and those modules.
 *
 *   given(v)                  -> what v is, as gpulua's messages say "got X"
 *                                ("number 1.5", "number NaN", "gpulua.Slice")
 *   isatty(fd)                -> whether file descriptor fd is a terminal
 *   peek(e)                   -> whether event e's work has finished, without
 *                                telling the checker (gl_event_peek): a
 *                                progress display never changes a verdict
 *   contents(v, level, fname, name)
 *                             -> a host buffer holding v's elements, v's
 *                                description, and the name of the stream it
 *                                was read on (nil for a host buffer)
 *   dtype_names()             -> "i8 u8 ... f64": the dtypes, as messages list them
 *
 * contents reads a slice on its home stream (the stream it was allocated
 * on; the device's main stream once that is closed), as x:read{stream =}
 * would, and checks a host buffer for a Lua read of all its elements, as
 * indexing it would. Its messages and the locations the checker records are
 * those of the script line `level` levels up the stack (1: the Lua function
 * calling contents, as error() counts), so that an assertion's read is
 * located at the line of the assertion, not inside gpulua/assert.lua. The
 * messages begin with "fname: name" ("assert.slice_equal: x").
 */
#include "bindings.h"

#include <limits.h>
#include <unistd.h>

#include "graph.h"
#include "ops.h"

int gll_internal_given(lua_State *L) {
  luaL_checkany(L, 1);
  lua_pushstring(L, gll_given(L, 1));
  return 1;
}

int gll_internal_isatty(lua_State *L) {
  lua_Integer fd = luaL_checkinteger(L, 1);
  lua_pushboolean(L, fd >= 0 && fd <= INT_MAX && isatty((int)fd));
  return 1;
}

int gll_internal_dtype_names(lua_State *L) {
  lua_pushliteral(L, GL_DTYPE_NAMES);
  return 1;
}

int gll_internal_peek(lua_State *L) {
  gl_event *e = gll_testudata(L, 1, &gll_event_type);
  if (!e) return luaL_typeerror(L, 1, "gpulua.Event");
  lua_pushboolean(L, gl_event_peek(e));
  return 1;
}

typedef struct {
  lua_State *L;
  int level;
} at_level;

static int loc_at_level(gl_runtime *rt, void *ctx) {
  at_level *a = ctx;
  return gll_lua_loc_from(rt, a->L, a->level);
}

/* The runtime's error, raised at `level`, with "fname: name: "
 * before it unless it begins with fname already. */
static int raise_at(lua_State *L, gl_runtime *rt, int level, const char *fname, const char *who) {
  luaL_where(L, level);
  if (strncmp(gl_error_message(rt), fname, strlen(fname)) == 0) lua_pushliteral(L, "");
  else lua_pushfstring(L, "%s: ", who);
  gll_push_error_at(L, rt, 0); /* level 0, this C function: no position */
  lua_concat(L, 3);
  return lua_error(L);
}

int gll_internal_contents(lua_State *L) {
  int level = (int)luaL_checkinteger(L, 2);
  const char *fname = luaL_checkstring(L, 3), *name = luaL_checkstring(L, 4);
  lua_settop(L, 4);
  lua_pushfstring(L, "%s: %s", fname, name);
  const char *who = lua_tostring(L, 5);
  gl_runtime *rt = gll_rt(L);
  at_level ctx = {L, level};
  gl_site site = {loc_at_level, &ctx, GL_LOC_UNRESOLVED};
  if (gl_in_host_kernel()) {
    luaL_where(L, level);
    lua_pushfstring(L, "%s cannot be called from inside a host kernel (k:host): a host kernel may only read and "
                       "write its own argument views", fname);
    lua_concat(L, 2);
    return lua_error(L);
  }
  gl_hostbuf *hb = gll_test_hostbuf(L, 1);
  if (hb) {
    if (gl_hostbuf_check(rt, hb) != 0) return raise_at(L, rt, level, fname, who);
    if ((hb->m->acc.n != 0 || hb->m->graph_uses) && gl_hostbuf_access(hb, 0, hb->count, 0, NULL, &site) != 0)
      return raise_at(L, rt, level, fname, who);
    gl_buf d = GL_BUF_INIT;
    gl_hostbuf_describe(hb, &d);
    lua_pushvalue(L, 1);
    lua_pushstring(L, gl_buf_str(&d));
    gl_buf_free(&d);
    return 2;
  }
  gl_slice *x = gll_test_slice(L, 1);
  if (!x) {
    const char *given = gll_given(L, 1);
    luaL_where(L, level);
    lua_pushfstring(L, "%s expected a gpulua.Slice or gpulua.HostBuffer, got %s", who, given);
    lua_concat(L, 2);
    return lua_error(L);
  }
  int rc = gl_slice_check_as(x, who);
  if (rc == -2) {
    luaL_where(L, level);
    lua_pushfstring(L, "%s: the slice has been released (its finalizer ran)", who);
    lua_concat(L, 2);
    return lua_error(L);
  }
  if (rc != 0) return raise_at(L, rt, level, fname, who);
  gl_device *dev = x->a->dev;
  if (rt->capture) {
    gl_capture_refuse(rt, fname, &site);
    return raise_at(L, rt, level, fname, who);
  }
  if (gl_device_check(dev) != 0) return raise_at(L, rt, level, fname, who);
  gl_stream *s = x->a->home && x->a->home->cu ? x->a->home : dev->main; /* a module variable has no home */
  gl_hostbuf *h = gll_push_hostbuf(L, x->dtype, x->count, 0, 0);
  gl_read_req r = {.call = "x:read", .x = x, .s = s, .h = h, .site = &site};
  if (gl_read_submit(&r) != 0) {
    luaL_where(L, level);
    lua_pushfstring(L, "%s: ", who);
    gll_push_error_at(L, rt, 0);
    lua_pushfstring(L, " (%s reads %s on its home stream, where it was allocated, or on its device's main stream "
                       "once that is closed)", fname, name);
    lua_concat(L, 4);
    return lua_error(L);
  }
  gl_buf d = GL_BUF_INIT;
  gl_slice_describe(x, &d);
  lua_pushstring(L, gl_buf_str(&d));
  gl_buf_free(&d);
  lua_pushstring(L, s->name);
  return 3;
}

static const char internal_key = 'I';

static int open_internal(lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &internal_key);
  return 1;
}

void gll_internal_functions(lua_State *L) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &internal_key) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    luaL_setfuncs(L, gll_internal_lib, 0);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &internal_key);
  }
  lua_pop(L, 1);
  /* package.preload, not package.loaded: a test runner that unloads the
   * modules a spec file loaded (busted's insulation) leaves preload alone */
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, open_internal);
  lua_setfield(L, -2, "gpulua.internal");
  lua_pop(L, 1);
}
