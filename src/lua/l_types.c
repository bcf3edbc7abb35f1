/*
 * l_types.c -- the registration of gpulua's object types (bindings.h): one
 * style for every type, as liolib's createmeta: the metatable in the
 * registry (under its name, and under the type's address), a methods table
 * as __index's upvalue, the type's fields after it, then the metamethods.
 * Objects carry a tag word naming their type (gll_newudata), which is what
 * a type check compares. An own_methods type's objects each get a copy of
 * that metatable whose __index is a table: the methods, the object itself
 * (under object_key), and a metatable whose __index serves the fields.
 */
#include "bindings.h"
#include "gpulua.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static int by_name(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

const char *gll_push_methods(lua_State *L) {
  const char *names[64]; /* the methods' names stay in the methods table */
  int n = 0;
  lua_pushnil(L);
  while (lua_next(L, lua_upvalueindex(1))) {
    lua_pop(L, 1);
    if (lua_type(L, -1) == LUA_TSTRING && n < 64) names[n++] = lua_tostring(L, -1);
  }
  qsort(names, (size_t)n, sizeof names[0], by_name);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  if (n == 0) luaL_addstring(&b, "none");
  for (int i = 0; i < n; i++) {
    if (i) luaL_addstring(&b, ", ");
    luaL_addstring(&b, names[i]);
  }
  luaL_pushresult(&b);
  return lua_tostring(L, -1);
}

const char *gll_push_fields(lua_State *L, const gll_type *t) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  if (!t->fields || !t->fields[0]) luaL_addstring(&b, "none");
  for (int i = 0; t->fields && t->fields[i]; i++) {
    if (i) luaL_addstring(&b, ", ");
    luaL_addstring(&b, t->fields[i]);
  }
  luaL_pushresult(&b);
  return lua_tostring(L, -1);
}

/* Indexing an object with a field it does not have is an error: the key,
 * then the type's fields and methods (or what to do instead of x[1]). */
static int no_field(lua_State *L, const gll_type *t) {
  if (lua_type(L, 2) == LUA_TNUMBER && t->hint) return luaL_error(L, "%s: [%s]: %s", t->name, lua_tostring(L, 2), t->hint);
  const char *key = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : luaL_tolstring(L, 2, NULL);
  const char *fields = gll_push_fields(L, t);
  const char *methods = gll_push_methods(L);
  return luaL_error(L, "%s has no field '%s' (fields: %s; methods: %s)", t->name, key, fields, methods);
}

/* __index: methods first (one raw lookup for s:launch), then the fields. */
static int type_index(lua_State *L) {
  if (lua_type(L, 2) == LUA_TSTRING) {
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
    lua_pop(L, 1);
  }
  const gll_type *t = lua_touserdata(L, lua_upvalueindex(2));
  if (t->field && t->field(L) > 0) return 1;
  return no_field(L, t);
}

/* An own_methods object's methods table holds the object under this key. */
static const char object_key;

/* __index of an own_methods object's methods table (the key missed it): the
 * object's field, or the error. */
static int own_index(lua_State *L) {
  lua_rawgetp(L, 1, &object_key);
  lua_replace(L, 1);
  const gll_type *t = lua_touserdata(L, lua_upvalueindex(2));
  if (t->field && t->field(L) > 0) return 1;
  return no_field(L, t);
}

/* The registry holds a type's metatable under t; an own_methods type's
 * methods table under &t->methods and its methods tables' metatable under
 * &t->own_methods. */
static void register_own(lua_State *L, const gll_type *t) { /* the methods table on top */
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &t->methods);
  lua_createtable(L, 0, 1);
  lua_pushvalue(L, -2);
  lua_pushlightuserdata(L, (void *)t);
  lua_pushcclosure(L, own_index, 2);
  lua_setfield(L, -2, "__index");
  lua_rawsetp(L, LUA_REGISTRYINDEX, &t->own_methods);
}

/* t[k] = v for each pair of the table at from into the table on top. */
static void copy_pairs(lua_State *L, int from) {
  lua_pushnil(L);
  while (lua_next(L, from)) {
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, -4);
  }
}

/* The metatable of an own_methods object (on top): the type's metatable
 * copied, __index its own methods table. */
static void set_own_metatable(lua_State *L, const gll_type *t) {
  int obj = lua_gettop(L);
  lua_rawgetp(L, LUA_REGISTRYINDEX, t);
  lua_createtable(L, 0, 8);
  copy_pairs(L, obj + 1);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &t->methods);
  lua_createtable(L, 0, 16);
  copy_pairs(L, obj + 3);
  lua_pushvalue(L, obj);
  lua_rawsetp(L, -2, &object_key);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &t->own_methods);
  lua_setmetatable(L, -2);
  lua_setfield(L, obj + 2, "__index");
  lua_pop(L, 1);
  lua_setmetatable(L, obj);
  lua_pop(L, 1);
}

/* __close(obj, err): the type's release (upvalue 2, a closure whose upvalue
 * is GL_RELEASE_CLOSE, as upvalue 1 is here). Ending a block normally, it runs
 * as the release itself, so its errors name the block's line. With an error
 * in flight (err), the block's frames are gone, so a failure would carry no
 * script line and would hide that error. When that error already says what
 * the release says (the device's fault, raised again), it goes on alone;
 * otherwise the failure is raised at the first Lua frame still there, naming
 * the object and the error that ended the block. */
static int close_release(lua_State *L) {
  if (lua_isnoneornil(L, 2)) return lua_tocfunction(L, lua_upvalueindex(2))(L);
  lua_settop(L, 2);
  lua_pushvalue(L, lua_upvalueindex(2));
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  if (lua_pcall(L, 2, 0, 0) == LUA_OK) return 0;
  const char *closing = luaL_tolstring(L, 3, NULL);
  const char *ended = luaL_tolstring(L, 2, NULL);
  if (lua_type(L, 3) == LUA_TSTRING && strstr(ended, closing)) return 0;
  lua_Debug ar;
  int level = 1;
  while (lua_getstack(L, level, &ar) && lua_getinfo(L, "l", &ar) && ar.currentline <= 0) level++;
  luaL_where(L, level); /* "" when no Lua frame is left (the main chunk's error) */
  if (luaL_getmetafield(L, 1, "__name") != LUA_TSTRING) {
    lua_pop(L, lua_isnil(L, -1) ? 0 : 1);
    lua_pushstring(L, luaL_typename(L, 1));
  }
  lua_pushfstring(L, "%s%s (closing a to-be-closed %s while an error ended its block: %s)", lua_tostring(L, -2),
                  closing, lua_tostring(L, -1), ended);
  return lua_error(L);
}

static void set_release(lua_State *L, const gll_type *t) {
  static const gll_release_how how[] = {GL_RELEASE_METHOD, GL_RELEASE_GC, GL_RELEASE_CLOSE};
  static const char *const where[] = {NULL, "__gc", "__close"};
  for (int i = 0; i < 3; i++) {
    lua_pushinteger(L, how[i]);
    lua_pushcclosure(L, t->release, 1);
    if (how[i] == GL_RELEASE_CLOSE) {
      lua_pushinteger(L, how[i]);
      lua_insert(L, -2);
      lua_pushcclosure(L, close_release, 2);
    }
    lua_setfield(L, i == 0 ? -2 : -3, i == 0 ? t->release_method : where[i]); /* methods, or the metatable */
  }
}

/* package.loaded[t->name] = the methods table on top, so that an error
 * raised in a method called as a plain function (pcall(s.sync, s)) names it
 * 'gpulua.Stream.sync' rather than '?' (luaL looks for it there). Done at
 * every luaopen: a test runner that unloads modules (busted's insulation)
 * drops the entry with the module. */
static void publish_methods(lua_State *L, const gll_type *t) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_pushvalue(L, -2);
  lua_setfield(L, -2, t->name);
  lua_pop(L, 1);
}

/* The methods of t into the table on top, then the release closures. */
static void fill_methods(lua_State *L, const gll_type *t) {
  if (t->methods) gll_setfuncs_safe(L, t->methods);
  if (t->release) set_release(L, t);
}

/* Finalizers that run during a capture (a script's collectgarbage() inside
 * s:capture's function: the collector is stopped, a full collection is not)
 * would queue frees, waits and closes into the graph, or refuse them: so the
 * object is kept in this registry list and released when the capture has
 * ended (gll_release_deferred). */
static const char deferred_key;

int gll_gc_defer(lua_State *L, const gl_runtime *rt) {
  if (!rt || !rt->capture) return 0;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &deferred_key) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &deferred_key);
  }
  lua_pushvalue(L, 1);
  lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
  lua_pop(L, 1);
  return 1;
}

void gll_release_deferred(lua_State *L) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &deferred_key) != LUA_TTABLE) {
    lua_pop(L, 1);
    return;
  }
  lua_pushnil(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &deferred_key);
  for (lua_Integer i = 1, n = (lua_Integer)lua_rawlen(L, -1); i <= n; i++) {
    lua_rawgeti(L, -1, i);
    if (luaL_getmetafield(L, -1, "__gc") != LUA_TNIL) {
      lua_insert(L, -2);
      lua_call(L, 1, 0);
    } else {
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
}

void gll_register_all(lua_State *L, const gll_type *const *types) {
  if (!luaL_newmetatable(L, types[0]->name)) { /* this state has them already: publish the methods again */
    lua_pop(L, 1);
    for (int i = 0; i < GL_NTYPES; i++) {
      lua_rawgetp(L, LUA_REGISTRYINDEX, types[i]);
      if (lua_getfield(L, -1, "__index") == LUA_TFUNCTION && lua_getupvalue(L, -1, 1)) {
        publish_methods(L, types[i]);
        lua_pop(L, 1);
      }
      lua_pop(L, 2);
    }
    return;
  }
  lua_pop(L, 1);
  for (int i = 0; i < GL_NTYPES; i++) {
    const gll_type *t = types[i];
    luaL_newmetatable(L, t->name);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, t);
    lua_newtable(L); /* methods */
    fill_methods(L, t);
    publish_methods(L, t);
    if (t->own_methods) register_own(L, t);
    lua_pushlightuserdata(L, (void *)t);
    lua_pushcclosure(L, type_index, 2);
    lua_setfield(L, -2, "__index");
    if (t->meta) luaL_setfuncs(L, t->meta, 0);
    lua_pop(L, 1);
  }
}

/* The tag word before each object (bindings.h): its type and its block's
 * address, mixed with a key drawn once per process, so that neither another
 * library's userdata nor a script's bytes can pass for a gpulua object. */
uintptr_t gll_tag_key;

static void draw_key(void) {
  uintptr_t k = 0;
  if (getrandom(&k, sizeof k, GRND_NONBLOCK) != (ssize_t)sizeof k) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    k = (uintptr_t)ts.tv_nsec * 0x9e3779b97f4a7c15u ^ (uintptr_t)&k ^ (uintptr_t)getpid();
  }
  gll_tag_key = k | 1;
}

void *gll_newudata(lua_State *L, size_t size, int nuvalue, const gll_type *t) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, draw_key);
  unsigned char *block = lua_newuserdatauv(L, GL_TAG_SIZE + size, nuvalue);
  uintptr_t tag = (uintptr_t)block ^ (uintptr_t)t ^ gll_tag_key;
  memcpy(block, &tag, sizeof tag);
  memset(block + GL_TAG_SIZE, 0, size);
  if (t->own_methods) {
    set_own_metatable(L, t);
  } else {
    lua_rawgetp(L, LUA_REGISTRYINDEX, t);
    lua_setmetatable(L, -2);
  }
  return block + GL_TAG_SIZE;
}

void *gll_checkudata(lua_State *L, int idx, const gll_type *t) {
  void *p = gll_testudata(L, idx, t);
  if (!p) luaL_typeerror(L, idx, t->name);
  return p;
}


/* gpulua.h: the names of a gpulua object's fields and methods, for the
 * REPL's completion. The type is found from the object's metatable's
 * __name (an own_methods object's metatable is a copy of its type's) and
 * checked against the object's tag. */
int gpulua_object_names(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  int top = lua_gettop(L);
  if (lua_type(L, idx) != LUA_TUSERDATA || luaL_getmetafield(L, idx, "__name") != LUA_TSTRING ||
      strncmp(lua_tostring(L, -1), "gpulua.", 7) != 0 || luaL_getmetatable(L, lua_tostring(L, -1)) != LUA_TTABLE ||
      lua_getfield(L, -1, "__index") != LUA_TFUNCTION || !lua_getupvalue(L, -1, 2) ||
      !lua_islightuserdata(L, -1)) {
    lua_settop(L, top);
    return 0;
  }
  const gll_type *t = lua_touserdata(L, -1);
  /* the light userdata is the type only if the registry holds that metatable under it */
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, t) != LUA_TTABLE || !lua_rawequal(L, -1, top + 2) || !gll_testudata(L, idx, t)) {
    lua_settop(L, top);
    return 0;
  }
  lua_getupvalue(L, top + 3, 1); /* the methods */
  lua_newtable(L);
  int names = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, names - 1)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) == LUA_TSTRING) {
      lua_pushvalue(L, -1);
      lua_pushliteral(L, "method");
      lua_rawset(L, names);
    }
  }
  for (int i = 0; t->fields && t->fields[i]; i++) {
    lua_pushstring(L, t->fields[i]);
    lua_pushliteral(L, "field");
    lua_rawset(L, names);
  }
  lua_replace(L, top + 1);
  lua_settop(L, top + 1);
  return 1;
}
