/*
 * builtins.c -- the built-in kernel library: its table (names, signatures,
 * which parameters count elements) and the C host implementations of the
 * elementwise kernels that the sim backend runs, for every dtype, computing
 * what kernels/builtins.cu computes to the last bit: integers in unsigned
 * arithmetic (they wrap), axpy as one fused multiply-add (fmaf, fma), f16 and
 * bf16 in f32, rounded to nearest even at the store with a NaN as 0x7fff. The
 * reductions are builtins_reduce.c's. The CUDA source is kernels/builtins.cu,
 * embedded at build time.
 */
#include "builtins.h"

#include "device.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "builtins_source.h" /* generated: gl_builtins_source[] */

const char *gl_builtins_cuda_source(void) { return gl_builtins_source; }

const char *gl_builtins_cuda_option(gl_dtype dt) {
  static const char *const opt[GL_NDTYPES] = {
    "-DGL_DTYPE_i8", "-DGL_DTYPE_u8", "-DGL_DTYPE_i16", "-DGL_DTYPE_u16", "-DGL_DTYPE_i32", "-DGL_DTYPE_u32",
    "-DGL_DTYPE_i64", "-DGL_DTYPE_u64", "-DGL_DTYPE_f16", "-DGL_DTYPE_bf16", "-DGL_DTYPE_f32", "-DGL_DTYPE_f64"};
  return opt[dt];
}

/* ---- arithmetic per dtype: add_N, mul_N, axpy_N ---------------------------- */

#define INT_AR(N, T, U)                                                                                     \
  static inline T add_##N(T a, T b) { return (T)((U)a + (U)b); }                                            \
  static inline T mul_##N(T a, T b) { return (T)((U)a * (U)b); }                                            \
  static inline T axpy_##N(T a, T x, T y) { return (T)((U)a * (U)x + (U)y); }
INT_AR(i8, int8_t, uint32_t)
INT_AR(u8, uint8_t, uint32_t)
INT_AR(i16, int16_t, uint32_t)
INT_AR(u16, uint16_t, uint32_t)
INT_AR(i32, int32_t, uint32_t)
INT_AR(u32, uint32_t, uint32_t)
INT_AR(i64, int64_t, uint64_t)
INT_AR(u64, uint64_t, uint64_t)

static inline float add_f32(float a, float b) { return a + b; }
static inline float mul_f32(float a, float b) { return a * b; }
static inline float axpy_f32(float a, float x, float y) { return fmaf(a, x, y); }
static inline double add_f64(double a, double b) { return a + b; }
static inline double mul_f64(double a, double b) { return a * b; }
static inline double axpy_f64(double a, double x, double y) { return fma(a, x, y); }

#define HALF_AR(N, IN, OUT)                                                                                 \
  static inline uint16_t add_##N(uint16_t a, uint16_t b) { return OUT(IN(a) + IN(b)); }                     \
  static inline uint16_t mul_##N(uint16_t a, uint16_t b) { return OUT(IN(a) * IN(b)); }                     \
  static inline uint16_t axpy_##N(uint16_t a, uint16_t x, uint16_t y) { return OUT(fmaf(IN(a), IN(x), IN(y))); }
HALF_AR(f16, gl_f16_to_f32, gl_builtin_f16)
HALF_AR(bf16, gl_bf16_to_f32, gl_builtin_bf16)

/* ---- the elementwise kernels ------------------------------------------------ */

#define P(i, T) (*(T *)l->params[i])
#define PTR(i, T) ((T *)(uintptr_t)P(i, unsigned long long))

#define HOST_EW(N, T)                                                                                       \
  static int h_axpy_##N(void *u, const gl_sim_launch *l) {                                                  \
    (void)u;                                                                                                \
    T a = P(0, T);                                                                                          \
    const T *x = PTR(1, T);                                                                                 \
    T *y = PTR(2, T);                                                                                       \
    for (uint64_t i = 0, n = P(3, uint64_t); i < n; i++) y[i] = axpy_##N(a, x[i], y[i]);                    \
    return 0;                                                                                               \
  }                                                                                                         \
  static int h_scale_##N(void *u, const gl_sim_launch *l) {                                                 \
    (void)u;                                                                                                \
    T a = P(0, T);                                                                                          \
    const T *x = PTR(1, T);                                                                                 \
    T *y = PTR(2, T);                                                                                       \
    for (uint64_t i = 0, n = P(3, uint64_t); i < n; i++) y[i] = mul_##N(a, x[i]);                           \
    return 0;                                                                                               \
  }                                                                                                         \
  static int h_fill_##N(void *u, const gl_sim_launch *l) {                                                  \
    (void)u;                                                                                                \
    T *y = PTR(0, T);                                                                                       \
    T v = P(1, T);                                                                                          \
    for (uint64_t i = 0, n = P(2, uint64_t); i < n; i++) y[i] = v;                                          \
    return 0;                                                                                               \
  }                                                                                                         \
  static int h_add_##N(void *u, const gl_sim_launch *l) {                                                   \
    (void)u;                                                                                                \
    const T *a = PTR(0, T), *b = PTR(1, T);                                                                 \
    T *c = PTR(2, T);                                                                                       \
    for (uint64_t i = 0, n = P(3, uint64_t); i < n; i++) c[i] = add_##N(a[i], b[i]);                        \
    return 0;                                                                                               \
  }                                                                                                         \
  static int h_mul_##N(void *u, const gl_sim_launch *l) {                                                   \
    (void)u;                                                                                                \
    const T *a = PTR(0, T), *b = PTR(1, T);                                                                 \
    T *c = PTR(2, T);                                                                                       \
    for (uint64_t i = 0, n = P(3, uint64_t); i < n; i++) c[i] = mul_##N(a[i], b[i]);                        \
    return 0;                                                                                               \
  }                                                                                                         \
  static int h_copy_##N(void *u, const gl_sim_launch *l) {                                                  \
    (void)u;                                                                                                \
    const T *x = PTR(0, T);                                                                                 \
    uint64_t incx = P(1, uint64_t);                                                                         \
    T *y = PTR(2, T);                                                                                       \
    uint64_t incy = P(3, uint64_t);                                                                         \
    for (uint64_t i = 0, n = P(4, uint64_t); i < n; i++) y[i * incy] = x[i * incx];                         \
    return 0;                                                                                               \
  }

HOST_EW(i8, int8_t)
HOST_EW(u8, uint8_t)
HOST_EW(i16, int16_t)
HOST_EW(u16, uint16_t)
HOST_EW(i32, int32_t)
HOST_EW(u32, uint32_t)
HOST_EW(i64, int64_t)
HOST_EW(u64, uint64_t)
HOST_EW(f16, uint16_t)
HOST_EW(bf16, uint16_t)
HOST_EW(f32, float)
HOST_EW(f64, double)

/* each kernel's implementations in gl_dtype's order */
#define BY_DTYPE(K)                                                                                         \
  static const gl_sim_kernel_fn K##_host[GL_NDTYPES] = {h_##K##_i8,  h_##K##_u8,  h_##K##_i16,  h_##K##_u16, \
                                                        h_##K##_i32, h_##K##_u32, h_##K##_i64,  h_##K##_u64, \
                                                        h_##K##_f16, h_##K##_bf16, h_##K##_f32, h_##K##_f64};
BY_DTYPE(axpy)
BY_DTYPE(scale)
BY_DTYPE(fill)
BY_DTYPE(add)
BY_DTYPE(mul)
BY_DTYPE(copy)

/* Signatures use T for the element type. `bounds` names, for each pointer,
 * the count parameter that bounds it, and the stride that multiplies it
 * (copy), or a count of -1 for a reduction's out (its first element: at least
 * one); the first bound's count and pointer size the timing model's bytes. */
const gl_builtin gl_builtins[] = {
  {"axpy", "T, const T*, T*, u64", "y[i] = a * x[i] + y[i] for i < n", axpy_host, {{1, 3, -1}, {2, 3, -1}}, 2, 0, 3},
  {"scale", "T, const T*, T*, u64", "y[i] = a * x[i] for i < n", scale_host, {{1, 3, -1}, {2, 3, -1}}, 2, 0, 2},
  {"fill", "T*, T, u64", "y[i] = v for i < n", fill_host, {{0, 2, -1}}, 1, 0, 1},
  {"add", "const T*, const T*, T*, u64", "c[i] = a[i] + b[i] for i < n", add_host,
   {{0, 3, -1}, {1, 3, -1}, {2, 3, -1}}, 3, 0, 3},
  {"mul", "const T*, const T*, T*, u64", "c[i] = a[i] * b[i] for i < n", mul_host,
   {{0, 3, -1}, {1, 3, -1}, {2, 3, -1}}, 3, 0, 3},
  {"copy", "const T*, u64, T*, u64, u64", "y[i * incy] = x[i * incx] for i < n", copy_host,
   {{0, 4, 1}, {2, 4, 3}}, 2, 0, 2},
  {"sum", "const T*, T*, u64", "out's first element = the sum of x[i] for i < n (0 for n = 0)", gl_sum_host, {{0, 2, -1}, {1, -1, -1}}, 2, 1, 1},
  {"dot", "const T*, const T*, T*, u64", "out's first element = the sum of x[i] * y[i] for i < n (0 for n = 0)", gl_dot_host,
   {{0, 3, -1}, {1, 3, -1}, {2, -1, -1}}, 3, 1, 2},
  {"min", "const T*, T*, u64", "out's first element = the least x[i] for i < n (a NaN if any is; for n = 0 +inf, or the type's largest value)",
   gl_min_host, {{0, 2, -1}, {1, -1, -1}}, 2, 1, 1},
  {"max", "const T*, T*, u64",
   "out's first element = the greatest x[i] for i < n (a NaN if any is; for n = 0 -inf, or the type's smallest value)", gl_max_host,
   {{0, 2, -1}, {1, -1, -1}}, 2, 1, 1},
};

const int gl_nbuiltins = (int)(sizeof gl_builtins / sizeof gl_builtins[0]);

_Static_assert(sizeof gl_builtins / sizeof gl_builtins[0] <= GL_MAX_BUILTINS, "GL_MAX_BUILTINS is too small");
