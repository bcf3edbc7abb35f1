/*
 * builtins.c -- the built-in kernel library: its table (names, signatures,
 * which parameters count elements). The CUDA source is kernels/builtins.cu,
 * embedded at build time; a backend that runs no device code has its own
 * host implementations of them (gld_drv_ext.func_set_builtin).
 */
#include "builtins.h"

#include "device.h"

#include "builtins_source.h" /* generated: gl_builtins_source[] */

const char *gl_builtins_cuda_source(void) { return gl_builtins_source; }

const char *gl_builtins_cuda_option(gl_dtype dt) {
  static const char *const opt[GL_NDTYPES] = {
    "-DGL_DTYPE_i8", "-DGL_DTYPE_u8", "-DGL_DTYPE_i16", "-DGL_DTYPE_u16", "-DGL_DTYPE_i32", "-DGL_DTYPE_u32",
    "-DGL_DTYPE_i64", "-DGL_DTYPE_u64", "-DGL_DTYPE_f16", "-DGL_DTYPE_bf16", "-DGL_DTYPE_f32", "-DGL_DTYPE_f64"};
  return opt[dt];
}

/* Signatures use T for the element type. `bounds` names, for each pointer,
 * the count parameter that bounds it, and the stride that multiplies it
 * (copy), or a count of -1 for a reduction's out (its first element: at least
 * one); the first bound's count and pointer size the timing model's bytes. */
const gl_builtin gl_builtins[] = {
  {"axpy", "T, const T*, T*, u64", "y[i] = a * x[i] + y[i] for i < n", {{1, 3, -1}, {2, 3, -1}}, 2, 0, 3},
  {"scale", "T, const T*, T*, u64", "y[i] = a * x[i] for i < n", {{1, 3, -1}, {2, 3, -1}}, 2, 0, 2},
  {"fill", "T*, T, u64", "y[i] = v for i < n", {{0, 2, -1}}, 1, 0, 1},
  {"add", "const T*, const T*, T*, u64", "c[i] = a[i] + b[i] for i < n",
   {{0, 3, -1}, {1, 3, -1}, {2, 3, -1}}, 3, 0, 3},
  {"mul", "const T*, const T*, T*, u64", "c[i] = a[i] * b[i] for i < n",
   {{0, 3, -1}, {1, 3, -1}, {2, 3, -1}}, 3, 0, 3},
  {"copy", "const T*, u64, T*, u64, u64", "y[i * incy] = x[i * incx] for i < n",
   {{0, 4, 1}, {2, 4, 3}}, 2, 0, 2},
  {"sum", "const T*, T*, u64", "out's first element = the sum of x[i] for i < n (0 for n = 0)", {{0, 2, -1}, {1, -1, -1}}, 2, 1, 1},
  {"dot", "const T*, const T*, T*, u64", "out's first element = the sum of x[i] * y[i] for i < n (0 for n = 0)",
   {{0, 3, -1}, {1, 3, -1}, {2, -1, -1}}, 3, 1, 2},
  {"min", "const T*, T*, u64", "out's first element = the least x[i] for i < n (a NaN if any is; for n = 0 +inf, or the type's largest value)",
   {{0, 2, -1}, {1, -1, -1}}, 2, 1, 1},
  {"max", "const T*, T*, u64",
   "out's first element = the greatest x[i] for i < n (a NaN if any is; for n = 0 -inf, or the type's smallest value)",
   {{0, 2, -1}, {1, -1, -1}}, 2, 1, 1},
};

const int gl_nbuiltins = (int)(sizeof gl_builtins / sizeof gl_builtins[0]);

_Static_assert(sizeof gl_builtins / sizeof gl_builtins[0] <= GL_MAX_BUILTINS, "GL_MAX_BUILTINS is too small");
