/*
 * l_device.c -- device userdata: attributes, dev.main, streams, memory.
 * One userdata per device and Lua state (gpu.device(i) returns the same one).
 */
#include "core.h"

#include <stdio.h>
#include <string.h>

int gl_dev_stream(lua_State *L);
int gl_dev_alloc(lua_State *L);
int gl_dev_zeros(lua_State *L);

gl_device *gl_check_device(lua_State *L, int idx) {
  gl_device **ud = gl_testudata(L, idx, GL_DEVICE_MT);
  if (!ud) luaL_typeerror(L, idx, "gpulua device");
  if (!(*ud)->opened) luaL_error(L, "gpulua has been shut down");
  return *ud;
}

static int d_sync(lua_State *L) {
  gl_device *d = gl_check_device(L, 1);
  gl_check_poison(L, d);
  gl_set_ctx(d);
  GL_CALL(L, d, cuCtxSynchronize);
  for (gl_stream *s = d->streams; s; s = s->next_open) gl_stream_mark_synced(s);
  lua_settop(L, 1);
  return 1;
}

static int d_free_memory(lua_State *L) {
  gl_device *d = gl_check_device(L, 1);
  gl_check_poison(L, d);
  gl_set_ctx(d);
  size_t free_ = 0, total = 0;
  GL_CALL(L, d, cuMemGetInfo, &free_, &total);
  lua_pushinteger(L, (lua_Integer)free_);
  return 1;
}

static int d_index(lua_State *L) {
  gl_device *d = gl_check_device(L, 1);
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "ordinal") == 0) lua_pushinteger(L, d->ordinal);
  else if (strcmp(k, "name") == 0) lua_pushstring(L, d->name);
  else if (strcmp(k, "memory") == 0) lua_pushinteger(L, (lua_Integer)d->memory);
  else if (strcmp(k, "cc") == 0) lua_pushfstring(L, "%d.%d", d->cc_major, d->cc_minor);
  else if (strcmp(k, "sms") == 0) lua_pushinteger(L, d->sms);
  else if (strcmp(k, "main") == 0) lua_getiuservalue(L, 1, 1);
  else {
    lua_getmetatable(L, 1);
    lua_getfield(L, -1, "methods");
    lua_getfield(L, -1, k);
  }
  return 1;
}

static int d_tostring(lua_State *L) {
  gl_device **ud = gl_checkudata(L, 1, GL_DEVICE_MT);
  gl_device *d = *ud;
  if (!d->opened) lua_pushliteral(L, "gpulua.Device (shut down)");
  else lua_pushfstring(L, "gpulua.Device(%d: %s, cc %d.%d)", d->ordinal, d->name, d->cc_major, d->cc_minor);
  return 1;
}

void gl_open_device(lua_State *L) {
  if (!gl_newmetatable(L, GL_DEVICE_MT)) {
    lua_pop(L, 1);
    return;
  }
  static const luaL_Reg methods[] = {
    {"stream", gl_dev_stream}, {"alloc", gl_dev_alloc}, {"zeros", gl_dev_zeros},
    {"sync", d_sync},          {"free_memory", d_free_memory}, {NULL, NULL}};
  luaL_newlib(L, methods);
  lua_setfield(L, -2, "methods");
  lua_pushcfunction(L, d_index);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, d_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
}
