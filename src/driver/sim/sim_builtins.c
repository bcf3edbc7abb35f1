/*
 * sim_builtins.c -- the sim's C implementations of the elementwise built-in
 * kernels (kernels/builtins.cu) for every dtype, computing what the CUDA
 * kernels compute to the last bit: integers in unsigned arithmetic (they
 * wrap), axpy as one fused multiply-add (fmaf, fma), f16 and bf16 in f32,
 * rounded to nearest even at the store with a NaN as 0x7fff. The reductions
 * are sim_builtins_reduce.c's. And the lookup of a kernel's implementation
 * by the kernel's and the dtype's names. Under GPULUA_SIM_BUILTINS=ptx the
 * sim runs the CUDA kernels' PTX instead; tests/spec/builtins_ptx_spec.lua
 * checks that both give the same bits.
 */
#include "sim_builtins.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

const char *const sim_dtype_names[SIM_NDTYPES] = {"i8",  "u8",  "i16", "u16",  "i32", "u32",
                                                  "i64", "u64", "f16", "bf16", "f32", "f64"};

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
HALF_AR(f16, gld_f16_to_f32, sim_store_f16)
HALF_AR(bf16, gld_bf16_to_f32, sim_store_bf16)

/* ---- the elementwise kernels ------------------------------------------------ */

#define P(i, T) (*(T *)l->params[i])
#define PTR(i, T) ((T *)(uintptr_t)P(i, unsigned long long))

#define HOST_EW(N, T)                                                                                       \
  static int h_axpy_##N(void *u, const gld_sim_launch *l) {                                                  \
    (void)u;                                                                                                \
    T a = P(0, T);                                                                                          \
    const T *x = PTR(1, T);                                                                                 \
    T *y = PTR(2, T);                                                                                       \
    for (uint64_t i = 0, n = P(3, uint64_t); i < n; i++) y[i] = axpy_##N(a, x[i], y[i]);                    \
    return 0;                                                                                               \
  }                                                                                                         \
  static int h_scale_##N(void *u, const gld_sim_launch *l) {                                                 \
    (void)u;                                                                                                \
    T a = P(0, T);                                                                                          \
    const T *x = PTR(1, T);                                                                                 \
    T *y = PTR(2, T);                                                                                       \
    for (uint64_t i = 0, n = P(3, uint64_t); i < n; i++) y[i] = mul_##N(a, x[i]);                           \
    return 0;                                                                                               \
  }                                                                                                         \
  static int h_fill_##N(void *u, const gld_sim_launch *l) {                                                  \
    (void)u;                                                                                                \
    T *y = PTR(0, T);                                                                                       \
    T v = P(1, T);                                                                                          \
    for (uint64_t i = 0, n = P(2, uint64_t); i < n; i++) y[i] = v;                                          \
    return 0;                                                                                               \
  }                                                                                                         \
  static int h_add_##N(void *u, const gld_sim_launch *l) {                                                   \
    (void)u;                                                                                                \
    const T *a = PTR(0, T), *b = PTR(1, T);                                                                 \
    T *c = PTR(2, T);                                                                                       \
    for (uint64_t i = 0, n = P(3, uint64_t); i < n; i++) c[i] = add_##N(a[i], b[i]);                        \
    return 0;                                                                                               \
  }                                                                                                         \
  static int h_mul_##N(void *u, const gld_sim_launch *l) {                                                   \
    (void)u;                                                                                                \
    const T *a = PTR(0, T), *b = PTR(1, T);                                                                 \
    T *c = PTR(2, T);                                                                                       \
    for (uint64_t i = 0, n = P(3, uint64_t); i < n; i++) c[i] = mul_##N(a[i], b[i]);                        \
    return 0;                                                                                               \
  }                                                                                                         \
  static int h_copy_##N(void *u, const gld_sim_launch *l) {                                                  \
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
  static const gld_sim_kernel_fn K##_host[SIM_NDTYPES] = {h_##K##_i8,  h_##K##_u8,  h_##K##_i16,  h_##K##_u16, \
                                                         h_##K##_i32, h_##K##_u32, h_##K##_i64,  h_##K##_u64, \
                                                         h_##K##_f16, h_##K##_bf16, h_##K##_f32, h_##K##_f64};
BY_DTYPE(axpy)
BY_DTYPE(scale)
BY_DTYPE(fill)
BY_DTYPE(add)
BY_DTYPE(mul)
BY_DTYPE(copy)

/* each built-in's implementations, by the kernel's name in kernels/builtins.cu */
static const struct {
  const char *name;
  const gld_sim_kernel_fn *host;
} kernels[] = {
  {"axpy", axpy_host}, {"scale", scale_host}, {"fill", fill_host},  {"add", add_host},
  {"mul", mul_host},   {"copy", copy_host},   {"sum", sim_sum_host}, {"dot", sim_dot_host},
  {"min", sim_min_host}, {"max", sim_max_host},
};

gld_sim_kernel_fn sim_builtin_host(const char *kernel, const char *dtype) {
  for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
    if (strcmp(kernels[i].name, kernel) != 0) continue;
    for (int t = 0; t < SIM_NDTYPES; t++)
      if (strcmp(sim_dtype_names[t], dtype) == 0) return kernels[i].host[t];
    return NULL;
  }
  return NULL;
}
