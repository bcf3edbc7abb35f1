/*
 * l_dtype.c -- dtypes from and to Lua values: names as arguments, elements
 * as integers (the integer types) or floats.
 */
#include "bindings.h"

#include <string.h>

gl_dtype gll_check_dtype(lua_State *L, int arg) {
  if (lua_type(L, arg) != LUA_TSTRING)
    luaL_argerror(L, arg, lua_pushfstring(L, "expected a dtype (" GL_DTYPE_NAMES "), got %s",
                                          gll_given(L, arg)));
  const char *s = lua_tostring(L, arg);
  int d = gl_dtype_parse(s);
  if (d < 0)
    luaL_argerror(L, arg, lua_pushfstring(L, "unknown dtype '%s' (expected " GL_DTYPE_NAMES ")", s));
  return (gl_dtype)d;
}

void gll_dtype_push(lua_State *L, gl_dtype dt, const void *p) {
  switch (dt) {
  case GL_I8: { int8_t v; memcpy(&v, p, 1); lua_pushinteger(L, v); break; }
  case GL_U8: { uint8_t v; memcpy(&v, p, 1); lua_pushinteger(L, v); break; }
  case GL_I16: { int16_t v; memcpy(&v, p, 2); lua_pushinteger(L, v); break; }
  case GL_U16: { uint16_t v; memcpy(&v, p, 2); lua_pushinteger(L, v); break; }
  case GL_I32: { int32_t v; memcpy(&v, p, 4); lua_pushinteger(L, v); break; }
  case GL_U32: { uint32_t v; memcpy(&v, p, 4); lua_pushinteger(L, (lua_Integer)v); break; }
  case GL_I64: { int64_t v; memcpy(&v, p, 8); lua_pushinteger(L, (lua_Integer)v); break; }
  case GL_U64: { /* like string.unpack("J"): values past 2^63 wrap to negative integers */
    uint64_t v; memcpy(&v, p, 8); lua_pushinteger(L, (lua_Integer)v); break; }
  case GL_F16: { uint16_t v; memcpy(&v, p, 2); lua_pushnumber(L, gld_f16_to_f32(v)); break; }
  case GL_BF16: { uint16_t v; memcpy(&v, p, 2); lua_pushnumber(L, gld_bf16_to_f32(v)); break; }
  case GL_F32: { float v; memcpy(&v, p, 4); lua_pushnumber(L, v); break; }
  case GL_F64: { double v; memcpy(&v, p, 8); lua_pushnumber(L, v); break; }
  default: lua_pushnil(L); break;
  }
}

const char *gll_dtype_encode(lua_State *L, int idx, gl_dtype dt, void *out) {
  if (lua_type(L, idx) != LUA_TNUMBER) return "expected a number";
  if (lua_isinteger(L, idx)) return gl_dtype_store_integer(dt, (long long)lua_tointeger(L, idx), out);
  return gl_dtype_store_number(dt, (double)lua_tonumber(L, idx), out);
}
