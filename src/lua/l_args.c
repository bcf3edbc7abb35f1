/*
 * l_args.c -- arguments at the edge: options tables, "got X" descriptions,
 * view ranges; the caller's script location; raising the core's errors.
 */
#include "bindings.h"

#include "graph.h"

#include <stdio.h>
#include <string.h>

int gll_lua_loc(gl_runtime *rt, void *ctx) { return gll_lua_loc_from(rt, ctx, 1); }

int gll_lua_loc_from(gl_runtime *rt, lua_State *L, int first) {
  lua_Debug ar;
  for (int level = first; lua_getstack(L, level, &ar); level++) {
    if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0) continue;
    /* a small cache: the same call site again costs a compare */
    unsigned h = ((unsigned)(uintptr_t)ar.source >> 4 ^ (unsigned)ar.currentline * 2654435761u) & 63u;
    gl_locations *t = &rt->locs;
    if (t->cache[h].source == ar.source && t->cache[h].line == ar.currentline && t->cache[h].loc >= 0 &&
        t->cache[h].loc < t->n)
      return t->cache[h].loc;
    char buf[LUA_IDSIZE + 24];
    snprintf(buf, sizeof buf, "%s:%d", ar.short_src, ar.currentline);
    int loc = gl_intern(rt, buf);
    t->cache[h].source = ar.source;
    t->cache[h].line = ar.currentline;
    t->cache[h].loc = loc;
    return loc;
  }
  return gl_intern(rt, "?");
}

int gll_refuse_in_capture(lua_State *L, gl_runtime *rt, const char *call) {
  gl_site site = GL_SITE(L);
  gl_capture_refuse(rt, call, &site);
  return gll_raise(L, rt);
}

int gll_refuse_in_host_kernel(lua_State *L, const char *prefix, const char *what) {
  lua_Debug ar;
  const char *name = "?";
  if (!what && lua_getstack(L, 0, &ar) && lua_getinfo(L, "n", &ar) && ar.name) name = ar.name;
  if (what) return luaL_error(L, "%s cannot be called from inside a host kernel (k:host): a host kernel may only read "
                                 "and write its own argument views", what);
  return luaL_error(L, "%s%s cannot be called from inside a host kernel (k:host): a host kernel may only read and "
                       "write its own argument views", prefix, name);
}

int gll_raise(lua_State *L, gl_runtime *rt) {
  gll_push_error(L, rt);
  return lua_error(L);
}

void gll_push_error(lua_State *L, gl_runtime *rt) { gll_push_error_at(L, rt, 1); }

void gll_push_error_at(lua_State *L, gl_runtime *rt, int level) {
  luaL_where(L, level);
  const char *msg = gl_error_message(rt);
  lua_pushstring(L, msg);
  int n = 2;
  gl_graph *g = rt->capture;
  if (g) { /* every error inside a capture says which (unless it does already) */
    char named[GL_GRAPH_NAME_MAX + 16];
    snprintf(named, sizeof named, "graph '%s'", g->name);
    if (!strstr(msg, named)) {
      lua_pushfstring(L, " (during the capture of graph '%s', s:capture at %s)", g->name,
                      gl_loc_text(rt, g->capture_loc));
      n = 3;
    }
  }
  lua_concat(L, n);
}

const char *gll_opt_name(lua_State *L, int idx, const char *fname, int max) {
  if (lua_isnoneornil(L, idx)) return NULL;
  lua_getfield(L, idx, "name");
  const char *name = NULL;
  const char *sep = fname ? ": " : "";
  if (!fname) fname = "";
  if (!lua_isnil(L, -1)) {
    if (lua_type(L, -1) != LUA_TSTRING)
      luaL_error(L, "%s%soption 'name' expected a string, got %s", fname, sep, gll_given(L, -1));
    name = lua_tostring(L, -1);
    if (strlen(name) == 0 || strlen(name) > (size_t)max)
      luaL_error(L, "%s%soption 'name' must be 1 to %d characters long", fname, sep, max);
  }
  lua_pop(L, 1); /* the string stays reachable from the options table */
  return name;
}

int gll_check_options(lua_State *L, int idx, const char *fname, const char *const keys[]) {
  if (lua_isnoneornil(L, idx)) return 0;
  luaL_checktype(L, idx, LUA_TTABLE);
  idx = lua_absindex(L, idx);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1); /* the value */
    if (lua_type(L, -1) == LUA_TSTRING) {
      const char *k = lua_tostring(L, -1);
      int i = 0;
      while (keys[i] && strcmp(keys[i], k) != 0) i++;
      if (keys[i]) continue;
    }
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int i = 0; keys[i]; i++) {
      if (i) luaL_addstring(&b, ", ");
      luaL_addstring(&b, keys[i]);
    }
    luaL_pushresult(&b);
    const char *accepted = lua_tostring(L, -1);
    if (lua_type(L, -2) == LUA_TSTRING)
      return luaL_error(L, "%s: unknown option '%s' (the options are: %s)", fname, lua_tostring(L, -2), accepted);
    return luaL_error(L, "%s: unknown option [%s] (the options are: %s; each is a string key)", fname,
                      luaL_tolstring(L, -2, NULL), accepted);
  }
  return 1;
}

const char *gll_given(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  if (lua_type(L, idx) == LUA_TNUMBER) {
    lua_Number v = lua_tonumber(L, idx);
    if (v != v) return lua_pushliteral(L, "number NaN"); /* tostring's "-nan" or "nan" says a sign NaN lacks */
    lua_pushvalue(L, idx);
    return lua_pushfstring(L, "number %s", lua_tostring(L, -1)); /* from a copy: the original stays a number */
  }
  if (luaL_getmetafield(L, idx, "__name") == LUA_TSTRING) return lua_tostring(L, -1);
  return luaL_typename(L, idx);
}

void gll_check_view(lua_State *L, size_t total, const char *what, size_t *off, size_t *cnt) {
  lua_Integer o = luaL_checkinteger(L, 2);
  if (o < 0 || (uint64_t)o > total)
    luaL_argerror(L, 2, lua_pushfstring(L, "offset %I is outside the %s's %I elements", (LUAI_UACINT)o, what,
                                        (LUAI_UACINT)total));
  lua_Integer c = luaL_optinteger(L, 3, (lua_Integer)(total - (size_t)o)); /* o is checked: no overflow */
  if (c < 0 || (uint64_t)c > total - (size_t)o)
    luaL_argerror(L, 3, lua_pushfstring(L, "count %I from offset %I runs past the %s's %I elements", (LUAI_UACINT)c,
                                        (LUAI_UACINT)o, what, (LUAI_UACINT)total));
  *off = (size_t)o;
  *cnt = (size_t)c;
}
