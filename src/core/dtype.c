/*
 * dtype.c -- element types, and conversions between numbers and their bytes.
 */
#include "dtype.h"

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

const char *gl_dtype_article(gl_dtype dt) {
  char c = gl_dtypes[dt].name[0];
  return c == 'f' || c == 'i' ? "an" : "a"; /* "eff", "eye"; "you", "bee" */
}

const char *gl_dtype_store_number(gl_dtype dt, double d, void *out) {
  switch (dt) {
  case GL_F64: memcpy(out, &d, 8); return NULL;
  case GL_F32: { float f = (float)d; memcpy(out, &f, 4); return NULL; }
  case GL_F16: { uint16_t h = gld_f64_to_f16(d); memcpy(out, &h, 2); return NULL; }
  case GL_BF16: { uint16_t h = gld_f64_to_bf16(d); memcpy(out, &h, 2); return NULL; }
  default: break;
  }
  /* integers: the value must be integral and in range */
  if (d != d) return "NaN is not an integer";
  if (floor(d) != d) return "expected an integer value";
  if (dt == GL_U64 && d >= 9223372036854775808.0 && d < 18446744073709551616.0) {
    uint64_t u = (uint64_t)d;
    memcpy(out, &u, 8);
    return NULL;
  }
  if (d < -9223372036854775808.0 || d >= 9223372036854775808.0) return "out of range";
  return gl_dtype_store_integer(dt, (long long)d, out);
}

const char *gl_dtype_store_integer(gl_dtype dt, long long i, void *out) {
  if (gl_dtypes[dt].kind == 'f') return gl_dtype_store_number(dt, (double)i, out);
  int64_t lo, hi;
  switch (dt) {
  case GL_I8: lo = INT8_MIN; hi = INT8_MAX; break;
  case GL_U8: lo = 0; hi = UINT8_MAX; break;
  case GL_I16: lo = INT16_MIN; hi = INT16_MAX; break;
  case GL_U16: lo = 0; hi = UINT16_MAX; break;
  case GL_I32: lo = INT32_MIN; hi = INT32_MAX; break;
  case GL_U32: lo = 0; hi = UINT32_MAX; break;
  case GL_I64: lo = INT64_MIN; hi = INT64_MAX; break;
  default: lo = INT64_MIN; hi = INT64_MAX; break; /* u64: any integer, modulo 2^64, as it reads back */
  }
  if (i < lo || i > hi) return "out of range";
  switch (gl_dtypes[dt].size) {
  case 1: { uint8_t v = (uint8_t)i; memcpy(out, &v, 1); break; }
  case 2: { uint16_t v = (uint16_t)i; memcpy(out, &v, 2); break; }
  case 4: { uint32_t v = (uint32_t)i; memcpy(out, &v, 4); break; }
  default: { int64_t v = i; memcpy(out, &v, 8); break; }
  }
  return NULL;
}
