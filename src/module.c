/*
 * module.c -- luaopen_gpulua and the functions of the `gpu` table.
 */

#include "core.h"
#include "gpulua.h"
#include "trace.h"

#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

void gl_runtime_create(lua_State *L);
int gl_runtime_exists(lua_State *L);
int gl_host_new(lua_State *L);
int gl_peer(lua_State *L);

static const char module_key = 'M';

static int l_backend(lua_State *L) {
  lua_pushstring(L, gl_backend_name);
  return 1;
}

static int l_count(lua_State *L) {
  lua_pushinteger(L, gl_rt(L)->ndev);
  return 1;
}

static int l_device(lua_State *L) {
  int isint;
  lua_Integer i = lua_tointegerx(L, 1, &isint);
  if (!isint)
    return luaL_argerror(L, 1, lua_pushfstring(L, "expected an integer device ordinal, got %s",
                                               lua_type(L, 1) == LUA_TNUMBER ? lua_tostring(L, 1)
                                                                             : luaL_typename(L, 1)));
  gl_runtime *rt = gl_rt(L);
  if (i < 0 || i >= rt->ndev)
    return luaL_error(L, "gpu.device: ordinal %I is out of range (%s has %d device%s: 0 to %d)",
                      (LUAI_UACINT)i, gl_backend_name, rt->ndev, rt->ndev == 1 ? "" : "s", rt->ndev - 1);
  gl_device *d = gl_device_open(L, (int)i);
  gl_push_device(L, d);
  return 1;
}

static int l_sync(lua_State *L) {
  gl_runtime *rt = gl_rt(L);
  for (int i = 0; i < rt->ndev; i++) {
    gl_device *d = &rt->devs[i];
    if (!d->opened) continue;
    gl_check_poison(L, d);
    gl_set_ctx(d);
    GL_CALL(L, d, cuCtxSynchronize);
    for (gl_stream *s = d->streams; s; s = s->next_open) gl_stream_mark_synced(s);
  }
  return 0;
}

/* gpu.clock(): seconds on a monotonic host clock (for timing from scripts) */
static int l_clock(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
  return 1;
}

static const char *const policy_names[] = {"strict", "auto", "off"};

static int l_policy(lua_State *L) {
  gl_runtime *rt = gl_rt(L);
  lua_pushstring(L, policy_names[rt->policy]);
  if (!lua_isnoneornil(L, 1)) {
    const char *p = luaL_checkstring(L, 1);
    int v = gl_policy_parse(p);
    if (v < 0) return luaL_argerror(L, 1, lua_pushfstring(L, "expected strict, auto or off, got '%s'", p));
    rt->policy = (gl_policy)v;
  }
  return 1; /* the policy in force before the call */
}

/* Put the project's Lua modules (lua/) on package.path: next to an installed
 * binary (<prefix>/share/lua/5.4) or, from a build tree, the source folder. */
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

static void add_lua_path(lua_State *L) {
  char dir[PATH_MAX] = "";
  Dl_info info;
  /* the host in <prefix>/bin, or the module in <prefix>/lib/lua/5.4 */
  if (!installed_dir("/proc/self/exe", "../", dir, sizeof dir) &&
      dladdr((void *)luaopen_gpulua, &info))
    installed_dir(info.dli_fname, "../../../", dir, sizeof dir);
#ifdef GPULUA_SOURCE_LUA_DIR
  if (!dir[0]) snprintf(dir, sizeof dir, "%s", GPULUA_SOURCE_LUA_DIR);
#endif
  if (!dir[0]) return;
  lua_getglobal(L, "package");
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    return;
  }
  lua_getfield(L, -1, "path");
  const char *old = lua_tostring(L, -1);
  lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;%s", dir, dir, old ? old : "");
  lua_setfield(L, -3, "path");
  lua_pop(L, 2);
}

/* When loaded as gpulua.so, stay loaded: the sim's worker threads may still
 * be finishing when lua_close unloads C modules. */
static void pin_library(void) {
  Dl_info info;
  if (dladdr((void *)luaopen_gpulua, &info) && info.dli_fname)
    dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
}

int luaopen_gpulua(lua_State *L) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &module_key) == LUA_TTABLE) return 1;
  lua_pop(L, 1);
  pin_library();
  gl_choose_backend(L);
  if (!gl_runtime_exists(L)) {
    gl_runtime_create(L);
    gl_trace_init(L);
  }
  gl_open_device(L);
  gl_open_stream(L);
  gl_open_event(L);
  gl_open_slice(L);
  gl_open_hostbuf(L);
  gl_open_kernel(L);
  add_lua_path(L);

  static const luaL_Reg funcs[] = {
    {"backend", l_backend}, {"count", l_count}, {"device", l_device}, {"sync", l_sync},
    {"policy", l_policy},   {"host", gl_host_new}, {"peer", gl_peer}, {"clock", l_clock}, {"trace", gl_trace_lua}, {NULL, NULL}};
  luaL_newlib(L, funcs);
  lua_pushliteral(L, GPULUA_VERSION);
  lua_setfield(L, -2, "version");
  gl_kernel_functions(L);
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &module_key);
  return 1;
}
