/*
 * l_device.c -- device userdata: attributes, dev.main, streams, memory.
 * One userdata per device and Lua state (gpu.device(i) returns the same one);
 * its uservalue is dev.main's userdata.
 */
#include "bindings.h"

#include <string.h>

int gll_dev_stream(lua_State *L); /* l_stream.c */

static gl_device *to_device(lua_State *L, int idx) {
  gl_device **ud = gll_testudata(L, idx, &gll_device_type);
  if (!ud) luaL_typeerror(L, idx, "gpulua.Device");
  if (!(*ud)->opened) luaL_error(L, "gpulua has been shut down");
  return *ud;
}

gl_device *gll_check_device(lua_State *L, int idx) {
  gl_device *d = to_device(L, idx);
  GL_NOT_IN_HOST_KERNEL(L, "dev:");
  return d;
}

int gll_device_sync(lua_State *L) {
  gl_device *d = gll_check_device(L, 1);
  GL_NOT_IN_CAPTURE(L, d->rt, "dev:sync");
  gl_site site = GL_SITE(L);
  if (gl_device_sync(d, &site) != 0) return gll_raise(L, d->rt);
  gll_safe_point(L);
  lua_settop(L, 1);
  return 1;
}

int gll_device_free_memory(lua_State *L) {
  gl_device *d = gll_check_device(L, 1);
  size_t free_ = 0, total = 0;
  if (gl_device_free_memory(d, &free_, &total) != 0) return gll_raise(L, d->rt);
  lua_pushinteger(L, (lua_Integer)free_);
  return 1;
}

int gll_device_field(lua_State *L) {
  gl_device *d = to_device(L, 1); /* fields may be read anywhere, a host kernel included */
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "ordinal") == 0) lua_pushinteger(L, d->ordinal);
  else if (strcmp(k, "name") == 0) lua_pushstring(L, d->name);
  else if (strcmp(k, "memory") == 0) lua_pushinteger(L, (lua_Integer)d->memory);
  else if (strcmp(k, "cc") == 0) lua_pushfstring(L, "%d.%d", d->cc_major, d->cc_minor);
  else if (strcmp(k, "sms") == 0) lua_pushinteger(L, d->sms);
  else if (strcmp(k, "copy_engines") == 0) lua_pushinteger(L, d->copy_engines);
  else if (strcmp(k, "main") == 0) lua_getiuservalue(L, 1, 1);
  else return 0;
  return 1;
}

int gll_device_tostring(lua_State *L) {
  gl_device **ud = gll_checkudata(L, 1, &gll_device_type);
  gl_device *d = *ud;
  if (!d->opened) lua_pushliteral(L, "gpulua.Device (shut down)");
  else lua_pushfstring(L, "gpulua.Device(%d: %s, cc %d.%d)", d->ordinal, d->name, d->cc_major, d->cc_minor);
  return 1;
}
