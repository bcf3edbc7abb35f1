/*
 * dtype.h -- the element types of slices and host buffers, and conversion
 * between Lua values and their bytes (f16 and bf16 included).
 */
#ifndef GPULUA_DTYPE_H
#define GPULUA_DTYPE_H

#include <lua.h>
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

/* -1 when `name` is not a dtype */
int gl_dtype_parse(const char *name);
/* The dtype named by argument `arg`, or an error listing the dtypes. */
gl_dtype gl_check_dtype(lua_State *L, int arg);
/* Push the element at p. */
void gl_dtype_push(lua_State *L, gl_dtype dt, const void *p);
/* Convert the Lua value at idx into one element at out. Returns NULL on
 * success, else a message saying why the value does not fit. */
const char *gl_dtype_encode(lua_State *L, int idx, gl_dtype dt, void *out);

uint16_t gl_f32_to_f16(float f);
float gl_f16_to_f32(uint16_t h);
uint16_t gl_f32_to_bf16(float f);
float gl_bf16_to_f32(uint16_t h);

#endif
