/*
 * builtins.c -- the built-in kernel library: its table (names, signatures,
 * which parameters count elements) and the C host implementations the sim
 * backend runs. The CUDA source is kernels/builtins.cu, embedded at build time.
 */
#include "builtins.h"

#include "device.h"

#include <stdint.h>
#include <string.h>

#include "builtins_source.h" /* generated: gl_builtins_source[] */

const char *gl_builtins_cuda_source(void) { return gl_builtins_source; }

#define P(i, T) (*(T *)l->params[i])
#define PTR(i, T) ((T *)(uintptr_t)P(i, unsigned long long))

#define HOST_IMPLS(T, S)                                                                  \
  static int axpy_##S(void *u, const gl_sim_launch *l) {                                  \
    (void)u;                                                                              \
    T a = P(0, T);                                                                        \
    const T *x = PTR(1, T);                                                               \
    T *y = PTR(2, T);                                                                     \
    for (unsigned long long i = 0, n = P(3, unsigned long long); i < n; i++) y[i] = a * x[i] + y[i]; \
    return 0;                                                                             \
  }                                                                                       \
  static int scale_##S(void *u, const gl_sim_launch *l) {                                 \
    (void)u;                                                                              \
    T a = P(0, T);                                                                        \
    const T *x = PTR(1, T);                                                               \
    T *y = PTR(2, T);                                                                     \
    for (unsigned long long i = 0, n = P(3, unsigned long long); i < n; i++) y[i] = a * x[i]; \
    return 0;                                                                             \
  }                                                                                       \
  static int fill_##S(void *u, const gl_sim_launch *l) {                                  \
    (void)u;                                                                              \
    T *y = PTR(0, T);                                                                     \
    T v = P(1, T);                                                                        \
    for (unsigned long long i = 0, n = P(2, unsigned long long); i < n; i++) y[i] = v;    \
    return 0;                                                                             \
  }                                                                                       \
  static int add_##S(void *u, const gl_sim_launch *l) {                                   \
    (void)u;                                                                              \
    const T *a = PTR(0, T), *b = PTR(1, T);                                               \
    T *c = PTR(2, T);                                                                     \
    for (unsigned long long i = 0, n = P(3, unsigned long long); i < n; i++) c[i] = a[i] + b[i]; \
    return 0;                                                                             \
  }                                                                                       \
  static int mul_##S(void *u, const gl_sim_launch *l) {                                   \
    (void)u;                                                                              \
    const T *a = PTR(0, T), *b = PTR(1, T);                                               \
    T *c = PTR(2, T);                                                                     \
    for (unsigned long long i = 0, n = P(3, unsigned long long); i < n; i++) c[i] = a[i] * b[i]; \
    return 0;                                                                             \
  }                                                                                       \
  static int copy_##S(void *u, const gl_sim_launch *l) {                                  \
    (void)u;                                                                              \
    const T *x = PTR(0, T);                                                               \
    unsigned long long incx = P(1, unsigned long long);                                   \
    T *y = PTR(2, T);                                                                     \
    unsigned long long incy = P(3, unsigned long long);                                   \
    for (unsigned long long i = 0, n = P(4, unsigned long long); i < n; i++) y[i * incy] = x[i * incx]; \
    return 0;                                                                             \
  }                                                                                       \
  static int sum_##S(void *u, const gl_sim_launch *l) {                                   \
    (void)u;                                                                              \
    const T *x = PTR(0, T);                                                               \
    T *out = PTR(1, T);                                                                   \
    T acc = 0;                                                                            \
    for (unsigned long long i = 0, n = P(2, unsigned long long); i < n; i++) acc += x[i]; \
    out[0] += acc;                                                                        \
    return 0;                                                                             \
  }

HOST_IMPLS(float, f32)
HOST_IMPLS(double, f64)

/* Signatures use T for the element type. `counts` names the parameters that
 * are element counts and, for each pointer, which count bounds it; `stride`
 * the parameter whose stride multiplies it (copy). */
const gl_builtin gl_builtins[] = {
  {"axpy", "T, const T*, T*, u64", "y[i] = a * x[i] + y[i] for i < n", {axpy_f32, axpy_f64},
   {{1, 3, -1}, {2, 3, -1}}, 2, 0, 3},
  {"scale", "T, const T*, T*, u64", "y[i] = a * x[i] for i < n", {scale_f32, scale_f64},
   {{1, 3, -1}, {2, 3, -1}}, 2, 0, 2},
  {"fill", "T*, T, u64", "y[i] = v for i < n", {fill_f32, fill_f64}, {{0, 2, -1}}, 1, 0, 1},
  {"add", "const T*, const T*, T*, u64", "c[i] = a[i] + b[i] for i < n", {add_f32, add_f64},
   {{0, 3, -1}, {1, 3, -1}, {2, 3, -1}}, 3, 0, 3},
  {"mul", "const T*, const T*, T*, u64", "c[i] = a[i] * b[i] for i < n", {mul_f32, mul_f64},
   {{0, 3, -1}, {1, 3, -1}, {2, 3, -1}}, 3, 0, 3},
  {"copy", "const T*, u64, T*, u64, u64", "y[i * incy] = x[i * incx] for i < n", {copy_f32, copy_f64},
   {{0, 4, 1}, {2, 4, 3}}, 2, 0, 2},
  {"sum", "const T*, T*, u64", "out[0] += the sum of x[i] for i < n (zero out first)", {sum_f32, sum_f64},
   {{0, 2, -1}}, 1, 1, 1},
};

const int gl_nbuiltins = (int)(sizeof gl_builtins / sizeof gl_builtins[0]);

_Static_assert(sizeof gl_builtins / sizeof gl_builtins[0] <= GL_MAX_BUILTINS, "GL_MAX_BUILTINS is too small");
