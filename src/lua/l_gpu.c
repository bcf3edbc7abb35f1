/*
 * l_gpu.c -- luaopen_gpulua, the runtime of a Lua state, and the functions
 * of the `gpu` table.
 *
 * The runtime (core/runtime.h) is created by the first luaopen_gpulua in a
 * state and held by a userdata anchored in the registry. That userdata is
 * the first gpulua object with a finalizer, and Lua runs finalizers in
 * reverse order of marking, so its finalizer (teardown) runs after those of
 * every stream, slice and buffer when the state closes.
 */
#include "bindings.h"
#include "gpulua.h"
#include "driver_ext.h"
#include "graph.h"
#include "l_kernel.h"
#include "options.h"

#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char runtime_key = 'R', module_key = 'M';

typedef struct {
  gl_runtime *rt;
} runtime_ud; /* uservalue 1: ordinal -> the device's userdata */

gl_runtime *gll_rt(lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &runtime_key);
  runtime_ud *u = lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (!u || !u->rt) luaL_error(L, "gpulua is not initialised in this Lua state");
  return u->rt;
}

gl_device *gll_open_device(lua_State *L, int ordinal) {
  gl_runtime *rt = gll_rt(L);
  gl_device *d;
  if (gl_device_open(rt, ordinal, "gpu.device", &d) != 0) gll_raise(L, rt);
  return d;
}

int gll_can_collect(lua_State *L) {
  return !gl_in_host_kernel() && lua_gc(L, LUA_GCISRUNNING);
}

void gll_push_device(lua_State *L, gl_device *dev) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &runtime_key);
  lua_getiuservalue(L, -1, 1);
  lua_remove(L, -2);
  if (lua_rawgeti(L, -1, dev->ordinal) == LUA_TNIL) {
    lua_pop(L, 1);
    gl_device **ud = gll_newudata(L, sizeof *ud, 1, &gll_device_type);
    *ud = dev;
    gll_push_stream(L, dev->main); /* dev.main: one userdata for the device's life */
    lua_setiuservalue(L, -2, 1);
    lua_pushvalue(L, -1);
    lua_rawseti(L, -3, dev->ordinal);
  }
  lua_remove(L, -2);
}

/* The state closes. Inside a capture (os.exit(code, true) in s:capture's or
 * g:update's function) the objects' finalizers, which ran first, were kept
 * for the capture's end (gll_gc_defer): the capture is discarded, then they
 * run, so that what they release is released before the teardown. */
static int runtime_gc(lua_State *L) {
  runtime_ud *u = lua_touserdata(L, 1);
  if (u->rt && u->rt->capture) gl_graph_close(u->rt->capture);
  gll_release_deferred(L);
  gl_runtime_free(u->rt);
  u->rt = NULL;
  return 0;
}

/* The calls core's messages refer to, as a script writes them (names.h). */
static const gl_names lua_names = {
    .device = "gpu.device",
    .alloc = "dev:alloc",
    .builtins = "gpu.kernels",
    .trace = "gpu.trace",
    .language = "Lua",
    .capture = "s:capture",
    .update = "g:update",
    .launch_graph = "g:launch",
    .close_graph = "g:close()",
    .fork = "s:fork",
    .join = "s:join",
    .join_hint = "%s:join(%s)",
    .record_again = "s:record(e)",
    .trace_start = "gpu.trace(\"run.json\")",
    .wait_on = "%s:wait",
    .join_on = "%s:join",
    .read_on = "x:read{stream = %s}",
    .read_default = "x:read()",
    .peer = "gpu.peer(%d, %d)",
    .set_host = "k:host(function(cfg, ...) end)",
    .host_alloc = "gpu.host(dtype, n)",
    .map_writable = "gpu.map(path, {dtype = ..., mode = \"rw\"})",
    .timeline = "gpu.timeline()",
};

static void create_runtime(lua_State *L) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &runtime_key) != LUA_TNIL) {
    lua_pop(L, 1);
    return;
  }
  lua_pop(L, 1);
  runtime_ud *u = lua_newuserdatauv(L, sizeof *u, 1);
  u->rt = NULL;
  lua_newtable(L);
  lua_setiuservalue(L, -2, 1);
  lua_newtable(L);
  lua_pushcfunction(L, runtime_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  gl_buf why = GL_BUF_INIT;
  u->rt = gl_runtime_new(&why);
  if (!u->rt) {
    lua_pushstring(L, gl_buf_str(&why));
    gl_buf_free(&why);
    luaL_error(L, "%s", lua_tostring(L, -1));
  }
  u->rt->names = lua_names;
  lua_rawsetp(L, LUA_REGISTRYINDEX, &runtime_key);
}

/* ---- gpu.* -------------------------------------------------------------- */

int gll_gpu_backend(lua_State *L) {
  lua_pushstring(L, gld_backend_name);
  return 1;
}

int gll_gpu_count(lua_State *L) {
  lua_pushinteger(L, gll_rt(L)->ndev);
  return 1;
}

static const char *range_message(lua_State *L, const char *fname, const char *what, lua_Integer i, int n) {
  return lua_pushfstring(L, "%s: %s %I is out of range (%s has %d device%s: 0 to %d)", fname, what, (LUAI_UACINT)i,
                         gld_backend_name, n, n == 1 ? "" : "s", n - 1);
}

int gll_gpu_device(lua_State *L) {
  GL_NOT_IN_HOST_KERNEL(L, "gpu.");
  int isint;
  lua_Integer i = lua_tointegerx(L, 1, &isint);
  if (!isint)
    return luaL_argerror(L, 1, lua_pushfstring(L, "expected an integer device ordinal, got %s", gll_given(L, 1)));
  gl_runtime *rt = gll_rt(L);
  if (i < 0 || i >= rt->ndev) return luaL_error(L, "%s", range_message(L, "gpu.device", "ordinal", i, rt->ndev));
  gll_push_device(L, gll_open_device(L, (int)i));
  return 1;
}

int gll_gpu_sync(lua_State *L) {
  gl_runtime *rt = gll_rt(L);
  GL_NOT_IN_HOST_KERNEL(L, "gpu.");
  GL_NOT_IN_CAPTURE(L, rt, "gpu.sync");
  gl_site site = GL_SITE(L);
  for (int i = 0; i < rt->ndev; i++)
    if (rt->devs[i].opened && gl_device_sync(&rt->devs[i], &site) != 0) return gll_raise(L, rt);
  gll_safe_point(L);
  return 0;
}

/* gpu.clock(): seconds on a monotonic host clock (for timing from scripts) */
int gll_gpu_clock(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
  return 1;
}

int gll_gpu_policy(lua_State *L) {
  gl_runtime *rt = gll_rt(L);
  lua_pushstring(L, gl_policy_name(rt->policy));
  if (!lua_isnoneornil(L, 1)) {
    GL_NOT_IN_HOST_KERNEL(L, "gpu.");
    const char *p = luaL_checkstring(L, 1);
    int v = gl_policy_parse(p);
    if (v < 0) return luaL_argerror(L, 1, lua_pushfstring(L, "expected strict, auto or off, got '%s'", p));
    rt->policy = (gl_policy)v;
  }
  return 1; /* the policy in force before the call */
}

/* gpu.peer(a, b): let work on device b use memory of device a. */
int gll_gpu_peer(lua_State *L) {
  gl_runtime *rt = gll_rt(L);
  GL_NOT_IN_HOST_KERNEL(L, "gpu.");
  lua_Integer a = luaL_checkinteger(L, 1), b = luaL_checkinteger(L, 2);
  for (int i = 0; i < 2; i++) {
    lua_Integer o = i ? b : a;
    if (o < 0 || o >= rt->ndev) return luaL_error(L, "%s", range_message(L, "gpu.peer", "device ordinal", o, rt->ndev));
  }
  if (gl_peer_grant(rt, (int)a, (int)b, "gpu.peer") != 0) return gll_raise(L, rt);
  return 0;
}

/* gpu.sim_model(): the name of the sim's timing model in use, or nil */
int gll_gpu_sim_model(lua_State *L) {
  const char *name = gld_drv_ext.model_name ? gld_drv_ext.model_name() : NULL;
  if (name) lua_pushstring(L, name);
  else lua_pushnil(L);
  return 1;
}

/* gpu.calibrate(file, opts): lua/gpulua/calibrate.lua's run */
int gll_gpu_calibrate(lua_State *L) {
  int n = lua_gettop(L);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "gpulua.calibrate");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "run");
  lua_replace(L, -2);
  lua_insert(L, 1);
  lua_call(L, n, LUA_MULTRET);
  return lua_gettop(L);
}

/* ---- the project's Lua modules: a searcher of their own -------------------- */

/* <file's folder>/<up>share/lua/5.4 when it holds the project's modules */
static int installed_dir(const char *file, const char *up, char *out, size_t outlen) {
  char self[PATH_MAX];
  if (!file || !*file || !realpath(file, self)) return 0;
  char candidate[PATH_MAX + 64];
  snprintf(candidate, sizeof candidate, "%s/%sshare/lua/5.4", dirname(self), up);
  char probe[PATH_MAX + 80];
  snprintf(probe, sizeof probe, "%s/gpulua", candidate);
  struct stat st;
  if (stat(probe, &st) != 0 || !S_ISDIR(st.st_mode) || strlen(candidate) >= outlen) return 0;
  memcpy(out, candidate, strlen(candidate) + 1);
  return 1;
}

/* package.searchers' entry for 'gpulua.NAME' (upvalue 1: the modules' folder):
 * FOLDER/gpulua/NAME.lua, then FOLDER/gpulua/NAME/init.lua. Any other name
 * is left to the other searchers. As Lua's own searcher, it returns the
 * loaded chunk and the file's name (require's second result). */
static int search_own(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  if (strncmp(name, "gpulua.", 7) != 0) return 0;
  const char *dir = lua_tostring(L, lua_upvalueindex(1));
  const char *rel = luaL_gsub(L, name, ".", "/");
  static const char *const forms[] = {"%s/%s.lua", "%s/%s/init.lua"};
  luaL_Buffer tried;
  luaL_buffinit(L, &tried);
  for (int i = 0; i < 2; i++) {
    const char *file = lua_pushfstring(L, forms[i], dir, rel);
    FILE *f = fopen(file, "r");
    if (f) {
      fclose(f);
      if (luaL_loadfile(L, file) != LUA_OK)
        return luaL_error(L, "error loading module '%s' from file '%s':\n\t%s", name, file, lua_tostring(L, -1));
      lua_pushstring(L, file);
      return 2;
    }
    luaL_addstring(&tried, i ? "\n\tno file '" : "no file '");
    luaL_addstring(&tried, file);
    luaL_addchar(&tried, '\'');
    lua_pop(L, 1);
  }
  luaL_pushresult(&tried);
  return 1;
}

/* The project's modules (gpulua.pipeline, ...) are found next to an installed
 * binary (<prefix>/share/lua/5.4) or, from a build tree, in the source
 * folder, by a searcher put after package.preload's: package.path is left
 * as Lua made it (LUA_PATH and LUA_PATH_5_4 included), and the modules are
 * those of this build, whatever the path holds. */
static void add_searcher(lua_State *L) {
  char dir[PATH_MAX] = "";
  Dl_info info;
  /* the host in <prefix>/bin, or the module in <prefix>/lib/lua/5.4 */
  if (!installed_dir("/proc/self/exe", "../", dir, sizeof dir) && dladdr((void *)luaopen_gpulua, &info))
    installed_dir(info.dli_fname, "../../../", dir, sizeof dir);
#ifdef GPULUA_SOURCE_LUA_DIR
  if (!dir[0]) snprintf(dir, sizeof dir, "%s", GPULUA_SOURCE_LUA_DIR);
#endif
  if (!dir[0]) return;
  int top = lua_gettop(L);
  if (lua_getglobal(L, "package") != LUA_TTABLE || lua_getfield(L, -1, "searchers") != LUA_TTABLE) {
    lua_settop(L, top); /* no package library: nothing to add to */
    return;
  }
  lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
  lua_Integer at = n >= 1 ? 2 : 1; /* after package.preload's */
  for (lua_Integer i = n; i >= at; i--) {
    lua_rawgeti(L, -1, i);
    lua_rawseti(L, -2, i + 1);
  }
  lua_pushstring(L, dir);
  lua_pushcclosure(L, search_own, 1);
  lua_rawseti(L, -2, at);
  lua_settop(L, top);
}

/* When loaded as gpulua.so, stay loaded: the sim's worker threads may still
 * be finishing when lua_close unloads C modules. */
static void pin_library(void) {
  Dl_info info;
  if (dladdr((void *)luaopen_gpulua, &info) && info.dli_fname)
    dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
}

int luaopen_gpulua(lua_State *L) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &module_key) == LUA_TTABLE) { /* a second require, after an unload */
    gll_register_all(L, gll_types);
    gll_internal_functions(L);
    return 1;
  }
  lua_pop(L, 1);
  pin_library();
  gl_buf why = GL_BUF_INIT;
  if (gl_backend_choose(&why) != 0) {
    lua_pushstring(L, gl_buf_str(&why));
    gl_buf_free(&why);
    return luaL_error(L, "%s", lua_tostring(L, -1));
  }
  create_runtime(L);
  gll_register_all(L, gll_types);
  gll_internal_functions(L);
  add_searcher(L);

  /* the gpu table (l_surface.c), with its values in their places */
  lua_createtable(L, 0, 24);
  gll_setfuncs_safe(L, gll_gpu_lib);
  lua_pushliteral(L, GPULUA_VERSION);
  lua_setfield(L, -2, "version");
  gll_push_builtins(L);
  lua_setfield(L, -2, "kernels");
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &module_key);
  return 1;
}
