/*
 * test_surface.c -- the Lua surface a script sees is the registration table
 * (src/lua/l_surface.c), name for name, on the sim backend. For every type
 * in gll_types, on one object of it:
 *   - the REPL's completion (gpulua_object_names) lists exactly the table's
 *     methods (its release method included) and fields, each as what it is;
 *   - the error of a missing field lists exactly those fields and methods;
 *   - the methods table holds exactly those methods, each the table's C
 *     function, and the metatable exactly the table's metamethods (__gc and
 *     __close for a closeable type);
 *   - every listed field is served by the type's __index;
 * and the gpu table and gpulua.internal hold exactly their tables' names.
 */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpulua.h"
#include "surface.h"

#include "check.h"

/* One object of each type, by the type's name: a type with no maker here
 * fails the test (add one when adding a type). */
static const struct {
  const char *type, *make;
} makers[] = {
  {"gpulua.Device", "return gpu.device(0)"},
  {"gpulua.Stream", "return gpu.device(0):stream{name = 'surface'}"},
  {"gpulua.Event", "return gpu.device(0).main:record{}"},
  {"gpulua.Slice", "return gpu.device(0):zeros('f32', 4)"},
  {"gpulua.HostBuffer", "return gpu.host('f32', 4)"},
  {"gpulua.Module", "return gpu.compile('extern \"C\" __global__ void surface() {}', {name = 'surface.cu'})"},
  {"gpulua.Kernel", "return gpu.kernels.axpy"},
  {"gpulua.Config", "return gpu.config{grid = 1, block = 32}"},
  {"gpulua.Graph", "return gpu.device(0).main:capture(function() end, {name = 'surface'})"},
  {"gpulua.Comm", "return gpu.comm{devices = {0}}"},
};

/* The names a type's table gives its objects: a table pushed, name ->
 * "method" or "field" (a name given twice is reported). */
static void push_expected(lua_State *L, const gll_type *t) {
  lua_newtable(L);
  for (const luaL_Reg *r = t->methods; r && r->name; r++) {
    lua_pushstring(L, "method");
    lua_setfield(L, -2, r->name);
  }
  if (t->release_method) {
    CHECK(lua_getfield(L, -1, t->release_method) == LUA_TNIL, "%s: release method '%s' also a method", t->name,
          t->release_method);
    lua_pop(L, 1);
    lua_pushstring(L, "method");
    lua_setfield(L, -2, t->release_method);
  }
  for (int i = 0; t->fields && t->fields[i]; i++) {
    CHECK(lua_getfield(L, -1, t->fields[i]) == LUA_TNIL, "%s: '%s' listed twice", t->name, t->fields[i]);
    lua_pop(L, 1);
    lua_pushstring(L, "field");
    lua_setfield(L, -2, t->fields[i]);
  }
}

/* Every key of the table at a is in the table at b with an equal value
 * (when `values`), and every key of b is in a. */
static void same_names(lua_State *L, int a, int b, int values, const char *what_a, const char *what_b,
                       const char *type) {
  a = lua_absindex(L, a);
  b = lua_absindex(L, b);
  for (int pass = 0; pass < 2; pass++) {
    int from = pass ? b : a, to = pass ? a : b;
    lua_pushnil(L);
    while (lua_next(L, from)) {
      lua_pushvalue(L, -2);
      int has = lua_rawget(L, to) != LUA_TNIL;
      CHECK(has, "%s: '%s' is in %s but not in %s", type, lua_tostring(L, -3), pass ? what_b : what_a,
            pass ? what_a : what_b);
      if (has && values && !pass)
        CHECK(lua_rawequal(L, -1, -2), "%s: '%s' is a %s in %s, a %s in %s", type, lua_tostring(L, -3),
              lua_tostring(L, -2), what_a, lua_tostring(L, -1), what_b);
      lua_pop(L, 2);
    }
  }
}

/* The names of a message's list "<label>: a, b, c" (up to ';' or ')'), as a
 * table name -> kind ("none": empty). */
static void push_listed(lua_State *L, const char *msg, const char *label, const char *kind) {
  lua_newtable(L);
  const char *p = strstr(msg, label);
  CHECK(p != NULL, "the message lists its %s: %s", label, msg);
  if (!p) return;
  p += strlen(label);
  size_t len = strcspn(p, ";)");
  while (len > 0) {
    size_t n = strcspn(p, ", ;)");
    if (n > 0 && !(n == 4 && strncmp(p, "none", 4) == 0)) {
      lua_pushlstring(L, p, n);
      lua_pushstring(L, kind);
      lua_rawset(L, -3);
    }
    size_t skip = n + strspn(p + n, ", ");
    if (skip >= len) break;
    p += skip;
    len -= skip;
  }
}

/* The C function a registered value at idx calls: a function and method
 * is a safe point's wrapper (l_after.c) whose upvalue 1 is the function. */
static lua_CFunction registered(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  lua_CFunction f = lua_tocfunction(L, idx);
  if (lua_getupvalue(L, idx, 1)) {
    if (lua_iscfunction(L, -1)) f = lua_tocfunction(L, -1);
    lua_pop(L, 1);
  }
  return f;
}

/* The table at idx holds the names of a registration (`reg`, with `also`
 * and `also2` added: NULL or a name), each reg's function (a NULL function:
 * any value but a function), `also` also_fn (when given), and no other name
 * (skip_dunder: no other metamethod). */
static void table_matches(lua_State *L, int idx, const luaL_Reg *reg, const char *also, lua_CFunction also_fn,
                          const char *also2, int skip_dunder, const char *what) {
  idx = lua_absindex(L, idx);
  int n = 0;
  for (const luaL_Reg *r = reg; r && r->name; r++, n++) {
    int type = lua_getfield(L, idx, r->name);
    if (r->func)
      CHECK(type == LUA_TFUNCTION && registered(L, -1) == r->func, "%s: '%s' is the table's function", what,
            r->name);
    else CHECK(type != LUA_TNIL && type != LUA_TFUNCTION, "%s: '%s' is a value (got %s)", what, r->name,
               lua_typename(L, type));
    lua_pop(L, 1);
  }
  if (also) {
    n++;
    int type = lua_getfield(L, idx, also);
    CHECK(type == LUA_TFUNCTION && (!also_fn || registered(L, -1) == also_fn), "%s: '%s' is there", what, also);
    lua_pop(L, 1);
  }
  if (also2) {
    CHECK(lua_getfield(L, idx, also2) == LUA_TFUNCTION, "%s: '%s' is there", what, also2);
    lua_pop(L, 1);
  }
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    const char *k = lua_tostring(L, -1);
    if (lua_type(L, -1) != LUA_TSTRING || (skip_dunder && strncmp(k, "__", 2) != 0)) continue;
    if (skip_dunder && (strcmp(k, "__name") == 0 || strcmp(k, "__index") == 0)) continue;
    int known = (also && strcmp(k, also) == 0) || (also2 && strcmp(k, also2) == 0);
    for (const luaL_Reg *r = reg; !known && r && r->name; r++) known = strcmp(k, r->name) == 0;
    CHECK(known, "%s: '%s' is there but not in the table", what, k);
  }
}

static void check_type(lua_State *L, const gll_type *t) {
  int top = lua_gettop(L);
  const char *make = NULL;
  for (size_t i = 0; i < sizeof makers / sizeof makers[0]; i++)
    if (strcmp(makers[i].type, t->name) == 0) make = makers[i].make;
  CHECK(make != NULL, "%s has a maker in test_surface.c", t->name);
  if (!make) return;
  if (luaL_dostring(L, make) != LUA_OK) {
    CHECK(0, "%s: %s: %s", t->name, make, lua_tostring(L, -1));
    lua_settop(L, top);
    return;
  }
  int obj = lua_gettop(L);
  CHECK(luaL_getmetafield(L, obj, "__name") == LUA_TSTRING && strcmp(lua_tostring(L, -1), t->name) == 0,
        "%s: the maker makes one", t->name);
  lua_settop(L, obj);

  push_expected(L, t);
  int expected = lua_gettop(L);

  /* what completion lists */
  CHECK(gpulua_object_names(L, obj) == 1, "%s: completion knows it", t->name);
  if (lua_gettop(L) == expected + 1)
    same_names(L, expected, expected + 1, 1, "the registration table", "completion's names", t->name);
  lua_settop(L, expected);

  /* what the error of a missing field lists */
  lua_getglobal(L, "pcall");
  luaL_loadstring(L, "local o = ... return o.no_such_name_for_surface");
  lua_pushvalue(L, obj);
  lua_call(L, 2, 2);
  CHECK(!lua_toboolean(L, -2), "%s: a missing field is an error", t->name);
  const char *msg = lua_tostring(L, -1) ? lua_tostring(L, -1) : "";
  push_listed(L, msg, "fields: ", "field");
  push_listed(L, msg, "methods: ", "method");
  lua_pushnil(L);
  while (lua_next(L, -2)) { /* one table of both */
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, -5);
  }
  lua_pop(L, 1);
  same_names(L, expected, -1, 1, "the registration table", "the missing field's message", t->name);
  lua_settop(L, expected);

  /* the methods table (package.loaded[name]), the metatable */
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  CHECK(lua_getfield(L, -1, t->name) == LUA_TTABLE, "%s: its methods table is published", t->name);
  char what[96];
  snprintf(what, sizeof what, "%s's methods table", t->name);
  if (lua_istable(L, -1)) table_matches(L, -1, t->methods, t->release_method, t->release, NULL, 0, what);
  lua_settop(L, expected);
  CHECK(luaL_getmetatable(L, t->name) == LUA_TTABLE, "%s: its metatable", t->name);
  snprintf(what, sizeof what, "%s's metatable", t->name);
  int mt = lua_gettop(L);
  table_matches(L, mt, t->meta, t->release ? "__gc" : NULL, t->release, t->release ? "__close" : NULL, 1, what);
  lua_settop(L, expected);

  /* every listed field is served */
  for (int i = 0; t->fields && t->fields[i]; i++) {
    lua_getglobal(L, "pcall");
    luaL_loadstring(L, "local o, f = ... return o[f]");
    lua_pushvalue(L, obj);
    lua_pushstring(L, t->fields[i]);
    lua_call(L, 3, 2);
    CHECK(lua_toboolean(L, -2), "%s: the field '%s' is served: %s", t->name, t->fields[i],
          lua_tostring(L, -1) ? lua_tostring(L, -1) : "");
    lua_settop(L, expected);
  }
  if (strcmp(t->name, "gpulua.Stream") == 0 || strcmp(t->name, "gpulua.Graph") == 0 ||
      strcmp(t->name, "gpulua.Comm") == 0) {
    luaL_loadstring(L, "local o = ... o:close()");
    lua_pushvalue(L, obj);
    CHECK(lua_pcall(L, 1, 0, 0) == LUA_OK, "%s: closes", t->name);
  }
  lua_settop(L, top);
}

int main(void) {
  setenv("GPULUA_BACKEND", "sim", 1);
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  luaL_requiref(L, "gpulua", luaopen_gpulua, 0);
  lua_setglobal(L, "gpu");

  for (int i = 0; i < GL_NTYPES; i++) check_type(L, gll_types[i]);

  lua_getglobal(L, "gpu");
  table_matches(L, -1, gll_gpu_lib, NULL, NULL, NULL, 0, "the gpu table");
  lua_pop(L, 1);
  CHECK(luaL_dostring(L, "return (require 'gpulua.internal')") == LUA_OK, "gpulua.internal loads");
  table_matches(L, -1, gll_internal_lib, NULL, NULL, NULL, 0, "gpulua.internal");
  lua_settop(L, 0);
  lua_close(L);

  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures ? 1 : 0;
}
