/*
 * dtype.h -- the element types of slices and host buffers, and conversion
 * between numbers and their bytes (f16 and bf16 included). Reading Lua
 * values is the Lua layer's (src/lua/l_dtype.c).
 */
#ifndef GPULUA_DTYPE_H
#define GPULUA_DTYPE_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
  GL_I8, GL_U8, GL_I16, GL_U16, GL_I32, GL_U32, GL_I64, GL_U64,
  GL_F16, GL_BF16, GL_F32, GL_F64, GL_NDTYPES
} gl_dtype;

typedef struct {
  const char *name;
  size_t size;
  char kind; /* 'i' signed, 'u' unsigned, 'f' floating */
} gl_dtype_info;

extern const gl_dtype_info gl_dtypes[GL_NDTYPES];

/* The dtypes' names, in order, for messages. */
#define GL_DTYPE_NAMES "i8 u8 i16 u16 i32 u32 i64 u64 f16 bf16 f32 f64"

/* -1 when `name` is not a dtype */
int gl_dtype_parse(const char *name);
/* "a" or "an" as spoken before the dtype's name: an f32, an i8, a u64, a bf16 */
const char *gl_dtype_article(gl_dtype dt);
/* Store a number (an integer) as one element of dt at out: NULL, or why it
 * does not fit ("out of range", "expected an integer value", ...). Floats
 * round to the nearest (even) value of their type; integers must be exact.
 * u64 takes any integer modulo 2^64: values from 2^63 up read back as
 * negative integers (as string.unpack("J") gives them) and are written back
 * in that form. */
const char *gl_dtype_store_number(gl_dtype dt, double d, void *out);
const char *gl_dtype_store_integer(gl_dtype dt, long long i, void *out);

#include "halfprec.h" /* gld_f32_to_f16 and the others (driver layer) */

#endif
