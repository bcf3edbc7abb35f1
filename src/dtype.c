/*
 * dtype.c -- element types and conversions between Lua values and bytes.
 */
#include "dtype.h"

#include <lauxlib.h>
#include <math.h>
#include <string.h>

const gl_dtype_info gl_dtypes[GL_NDTYPES] = {
  {"i8", 1, 'i'},  {"u8", 1, 'u'},  {"i16", 2, 'i'},  {"u16", 2, 'u'},
  {"i32", 4, 'i'}, {"u32", 4, 'u'}, {"i64", 8, 'i'},  {"u64", 8, 'u'},
  {"f16", 2, 'f'}, {"bf16", 2, 'f'}, {"f32", 4, 'f'}, {"f64", 8, 'f'},
};

int gl_dtype_parse(const char *name) {
  for (int i = 0; i < GL_NDTYPES; i++)
    if (strcmp(name, gl_dtypes[i].name) == 0) return i;
  return -1;
}

gl_dtype gl_check_dtype(lua_State *L, int arg) {
  if (lua_type(L, arg) != LUA_TSTRING)
    luaL_argerror(L, arg, lua_pushfstring(L, "expected a dtype (i8 u8 i16 u16 i32 u32 i64 u64 f16 bf16 f32 f64), got %s",
                                          luaL_typename(L, arg)));
  const char *s = lua_tostring(L, arg);
  int d = gl_dtype_parse(s);
  if (d < 0)
    luaL_argerror(L, arg, lua_pushfstring(L, "unknown dtype '%s' (expected i8 u8 i16 u16 i32 u32 i64 u64 f16 bf16 f32 f64)", s));
  return (gl_dtype)d;
}

/* IEEE half precision, round to nearest even; overflow goes to infinity. */
uint16_t gl_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t exp = (x >> 23) & 0xff;
  uint32_t man = x & 0x7fffff;
  if (exp == 0xff) return (uint16_t)(sign | 0x7c00 | (man ? 0x200 | (man >> 13) : 0));
  int e = (int)exp - 127 + 15;
  if (e >= 31) return (uint16_t)(sign | 0x7c00);
  if (e <= 0) { /* subnormal half or zero */
    if (e < -10) return (uint16_t)sign;
    man |= 0x800000;
    int shift = 14 - e;
    uint32_t half = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) half++;
    return (uint16_t)(sign | half);
  }
  uint32_t h = sign | ((uint32_t)e << 10) | (man >> 13);
  uint32_t rem = man & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++; /* may carry into inf: correct */
  return (uint16_t)h;
}

float gl_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ff;
  uint32_t x;
  if (exp == 0) {
    if (man == 0) x = sign;
    else { /* subnormal: normalise */
      int e = -1;
      do { man <<= 1; e++; } while (!(man & 0x400));
      x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000 | (man << 13);
  } else {
    x = sign | ((exp - 15 + 127) << 23) | (man << 13);
  }
  float f;
  memcpy(&f, &x, 4);
  return f;
}

uint16_t gl_f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40); /* quiet NaN */
  uint32_t rounding = 0x7fff + ((x >> 16) & 1);
  return (uint16_t)((x + rounding) >> 16);
}

float gl_bf16_to_f32(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

void gl_dtype_push(lua_State *L, gl_dtype dt, const void *p) {
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
  case GL_F16: { uint16_t v; memcpy(&v, p, 2); lua_pushnumber(L, gl_f16_to_f32(v)); break; }
  case GL_BF16: { uint16_t v; memcpy(&v, p, 2); lua_pushnumber(L, gl_bf16_to_f32(v)); break; }
  case GL_F32: { float v; memcpy(&v, p, 4); lua_pushnumber(L, v); break; }
  case GL_F64: { double v; memcpy(&v, p, 8); lua_pushnumber(L, v); break; }
  default: lua_pushnil(L); break;
  }
}

const char *gl_dtype_encode(lua_State *L, int idx, gl_dtype dt, void *out) {
  if (lua_type(L, idx) != LUA_TNUMBER) return "expected a number";
  const gl_dtype_info *info = &gl_dtypes[dt];
  if (info->kind == 'f') {
    double d = lua_tonumber(L, idx);
    switch (dt) {
    case GL_F64: memcpy(out, &d, 8); break;
    case GL_F32: { float f = (float)d; memcpy(out, &f, 4); break; }
    case GL_F16: { uint16_t h = gl_f32_to_f16((float)d); memcpy(out, &h, 2); break; }
    default: { uint16_t h = gl_f32_to_bf16((float)d); memcpy(out, &h, 2); break; }
    }
    return NULL;
  }
  /* integers: the value must be integral and in range */
  lua_Integer i = 0;
  int is_int = lua_isinteger(L, idx);
  if (is_int) {
    i = lua_tointeger(L, idx);
  } else {
    double d = lua_tonumber(L, idx);
    if (d != d) return "NaN is not an integer";
    if (floor(d) != d) return "expected an integer value";
    if (dt == GL_U64 && d >= 9223372036854775808.0 && d < 18446744073709551616.0) {
      uint64_t u = (uint64_t)d;
      memcpy(out, &u, 8);
      return NULL;
    }
    if (d < -9223372036854775808.0 || d >= 9223372036854775808.0) return "out of range";
    i = (lua_Integer)d;
  }
  int64_t lo, hi;
  switch (dt) {
  case GL_I8: lo = INT8_MIN; hi = INT8_MAX; break;
  case GL_U8: lo = 0; hi = UINT8_MAX; break;
  case GL_I16: lo = INT16_MIN; hi = INT16_MAX; break;
  case GL_U16: lo = 0; hi = UINT16_MAX; break;
  case GL_I32: lo = INT32_MIN; hi = INT32_MAX; break;
  case GL_U32: lo = 0; hi = UINT32_MAX; break;
  case GL_I64: lo = INT64_MIN; hi = INT64_MAX; break;
  default: lo = 0; hi = INT64_MAX; break; /* u64 */
  }
  if (i < lo || i > hi) return "out of range";
  switch (info->size) {
  case 1: { uint8_t v = (uint8_t)i; memcpy(out, &v, 1); break; }
  case 2: { uint16_t v = (uint16_t)i; memcpy(out, &v, 2); break; }
  case 4: { uint32_t v = (uint32_t)i; memcpy(out, &v, 4); break; }
  default: { int64_t v = i; memcpy(out, &v, 8); break; }
  }
  return NULL;
}
