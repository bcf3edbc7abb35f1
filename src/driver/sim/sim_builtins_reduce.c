/*
 * sim_builtins_reduce.c -- the sim's C implementations of the built-in reductions
 * (sum, dot, min, max) for every dtype, in the order of operations of
 * kernels/builtins.cu for the launch's grid G and block B, so that a sim run
 * gives the GPU's bits:
 *
 *   - thread g of G * B takes the head's elements (those before the first
 *     16-byte boundary of x, when x and y share it; else all n) i = g,
 *     g + G * B, ...; then the 16-byte vectors j = g, g + G * B, ..., each
 *     element of a vector in order; then the tail's elements the same way,
 *     folding each into its accumulator (step);
 *   - block b joins its threads' accumulators with the shuffle tree of each
 *     warp (lane i takes lane i + 16, then + 8, + 4, + 2, + 1), then the warps'
 *     results with the same tree, and keeps the result in partial slot b of
 *     the stream's scratch;
 *   - thread t of the last block joins partials t, t + B, ... in order, the
 *     block's tree joins those, and the first element of out gets the result.
 *
 * Integer sums and dots wrap (unsigned arithmetic), so they are exact modulo
 * 2^bits whatever the order; the floats' order is what makes the bits agree.
 */
#include "sim_builtins.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define P(i, T) (*(T *)l->params[i])

/* Where thread g's elements are: the scalar head [0, head), the vectors
 * [0, nv) of V elements from element head, the scalar tail [rest, n). */
typedef struct {
  const unsigned char *x, *y; /* y: dot's second input, else x */
  unsigned char *out;
  void *part;
  uint64_t n, head, nv, rest, nt;
  unsigned V, G, B;
} red_plan;

/* The launch's parameters: x, (y,) out, n, the ticket, the partials. */
static void plan_of(const gld_sim_launch *l, int two, size_t size, red_plan *p) {
  int k = 0;
  p->x = (const unsigned char *)(uintptr_t)P(k++, unsigned long long);
  p->y = two ? (const unsigned char *)(uintptr_t)P(k++, unsigned long long) : p->x;
  p->out = (unsigned char *)(uintptr_t)P(k++, unsigned long long);
  p->n = P(k++, uint64_t);
  k++; /* the ticket: the GPU's last block finds itself with it; here the blocks run in order */
  p->part = (void *)(uintptr_t)P(k, unsigned long long);
  p->G = l->grid[0];
  p->B = l->block[0];
  p->nt = (uint64_t)p->G * p->B;
  p->V = (unsigned)(16 / size);
  unsigned m = (unsigned)((uintptr_t)p->x & 15u);
  p->head = p->n;
  p->nv = 0;
  if (((uintptr_t)p->y & 15u) == m) {
    p->head = ((16u - m) & 15u) / size;
    if (p->head > p->n) p->head = p->n;
    p->nv = (p->n - p->head) / p->V;
  }
  p->rest = p->head + p->nv * p->V;
}

/* One reduction for one dtype: T the element, A the accumulator, ID its
 * start, STEP(acc, x, y) one element, JOIN(a, b) two accumulators (a the
 * thread's own), OUT(T *p, a) the result's store. */
#define REDUCER(NAME, T, A, ID, STEP, JOIN, OUT, TWO)                                                       \
  static A tree_##NAME(const A *in) {                                                                       \
    A c[32];                                                                                                \
    memcpy(c, in, sizeof c);                                                                                \
    for (int off = 16; off > 0; off >>= 1)                                                                  \
      for (int i = 0; i + off < 32; i++) c[i] = JOIN(c[i], c[i + off]);                                     \
    return c[0];                                                                                            \
  }                                                                                                         \
  static A block_##NAME(const A *v, unsigned nthreads) {                                                    \
    A w[32];                                                                                                \
    for (unsigned i = 0; i < 32; i++) w[i] = i < nthreads / 32 ? tree_##NAME(v + 32 * i) : (A)(ID);         \
    return tree_##NAME(w);                                                                                  \
  }                                                                                                         \
  /* the scalar elements [lo, hi) of block b's threads: element lo + g + k * nt is thread g's */           \
  static void scalars_##NAME(const red_plan *p, unsigned b, uint64_t lo, uint64_t hi, A *acc) {             \
    const T *x = (const T *)p->x, *y = (const T *)p->y;                                                     \
    for (uint64_t base = lo + (uint64_t)b * p->B; base < hi; base += p->nt)                                 \
      for (unsigned t = 0; t < p->B && base + t < hi; t++) acc[t] = STEP(acc[t], x[base + t], y[base + t]); \
  }                                                                                                         \
  static int NAME(void *u, const gld_sim_launch *l) {                                                        \
    (void)u;                                                                                                \
    red_plan p;                                                                                             \
    plan_of(l, TWO, sizeof(T), &p);                                                                         \
    const T *x = (const T *)p.x, *y = (const T *)p.y;                                                       \
    A *part = p.part, acc[1024];                                                                            \
    for (unsigned b = 0; b < p.G; b++) {                                                                    \
      for (unsigned t = 0; t < p.B; t++) acc[t] = (A)(ID);                                                  \
      scalars_##NAME(&p, b, 0, p.head, acc);                                                                \
      for (uint64_t base = (uint64_t)b * p.B; base < p.nv; base += p.nt)                                    \
        for (unsigned t = 0; t < p.B && base + t < p.nv; t++) {                                             \
          uint64_t i = p.head + (base + t) * p.V;                                                           \
          for (unsigned e = 0; e < p.V; e++) acc[t] = STEP(acc[t], x[i + e], y[i + e]);                     \
        }                                                                                                   \
      scalars_##NAME(&p, b, p.rest, p.n, acc);                                                              \
      part[b] = block_##NAME(acc, p.B);                                                                     \
    }                                                                                                       \
    for (unsigned t = 0; t < p.B; t++) {                                                                    \
      acc[t] = (A)(ID);                                                                                     \
      for (unsigned i = t; i < p.G; i += p.B) acc[t] = JOIN(acc[t], part[i]);                               \
    }                                                                                                       \
    OUT((T *)p.out, block_##NAME(acc, p.B));                                                                \
    return 0;                                                                                               \
  }

#define ADD(a, b) ((a) + (b))
#define STORE(p, a) (*(p) = (a))

/* integers: sums and dots in unsigned arithmetic A (they wrap), min and max
 * compared in M; the result truncated to T */
#define INT_REDUCERS(N, T, A, M, LO, HI)                                                                    \
  static inline A sum_step_##N(A acc, T x, T y) { (void)y; return acc + (A)x; }                             \
  static inline A dot_step_##N(A acc, T x, T y) { return acc + (A)x * (A)y; }                               \
  static inline void out_##N(T *p, A a) { *p = (T)a; }                                                      \
  static inline M min_join_##N(M a, M b) { return b < a ? b : a; }                                          \
  static inline M max_join_##N(M a, M b) { return b > a ? b : a; }                                          \
  static inline M min_step_##N(M acc, T x, T y) { (void)y; return min_join_##N(acc, (M)x); }                \
  static inline M max_step_##N(M acc, T x, T y) { (void)y; return max_join_##N(acc, (M)x); }                \
  static inline void mout_##N(T *p, M a) { *p = (T)a; }                                                     \
  REDUCER(sum_##N, T, A, 0, sum_step_##N, ADD, out_##N, 0)                                                  \
  REDUCER(dot_##N, T, A, 0, dot_step_##N, ADD, out_##N, 1)                                                  \
  REDUCER(min_##N, T, M, HI, min_step_##N, min_join_##N, mout_##N, 0)                                       \
  REDUCER(max_##N, T, M, LO, max_step_##N, max_join_##N, mout_##N, 0)
INT_REDUCERS(i8, int8_t, uint32_t, int32_t, INT8_MIN, INT8_MAX)
INT_REDUCERS(u8, uint8_t, uint32_t, uint32_t, 0, UINT8_MAX)
INT_REDUCERS(i16, int16_t, uint32_t, int32_t, INT16_MIN, INT16_MAX)
INT_REDUCERS(u16, uint16_t, uint32_t, uint32_t, 0, UINT16_MAX)
INT_REDUCERS(i32, int32_t, uint32_t, int32_t, INT32_MIN, INT32_MAX)
INT_REDUCERS(u32, uint32_t, uint32_t, uint32_t, 0, UINT32_MAX)
INT_REDUCERS(i64, int64_t, uint64_t, int64_t, INT64_MIN, INT64_MAX)
INT_REDUCERS(u64, uint64_t, uint64_t, uint64_t, 0, UINT64_MAX)

/* f32 and f64: sums and dots in their type (dot: fused multiply-add); min
 * and max keep the element: a NaN wins (the first met), of equal values the
 * first met stays */
#define FLOAT_REDUCERS(N, T, FMA)                                                                           \
  static inline T sum_step_##N(T acc, T x, T y) { (void)y; return acc + x; }                                \
  static inline T dot_step_##N(T acc, T x, T y) { return FMA(x, y, acc); }                                  \
  static inline T min_join_##N(T a, T b) { return a != a ? a : (b != b || b < a) ? b : a; }                 \
  static inline T max_join_##N(T a, T b) { return a != a ? a : (b != b || b > a) ? b : a; }                 \
  static inline T min_step_##N(T acc, T x, T y) { (void)y; return min_join_##N(acc, x); }                   \
  static inline T max_step_##N(T acc, T x, T y) { (void)y; return max_join_##N(acc, x); }                   \
  REDUCER(sum_##N, T, T, 0, sum_step_##N, ADD, STORE, 0)                                                    \
  REDUCER(dot_##N, T, T, 0, dot_step_##N, ADD, STORE, 1)                                                    \
  REDUCER(min_##N, T, T, INFINITY, min_step_##N, min_join_##N, STORE, 0)                                    \
  REDUCER(max_##N, T, T, -INFINITY, max_step_##N, max_join_##N, STORE, 0)
FLOAT_REDUCERS(f32, float, fmaf)
FLOAT_REDUCERS(f64, double, fma)

/* f16 and bf16: sums and dots in f32, rounded once at the store; min and
 * max on the 16 bits (INF is +inf's), compared as f32 */
#define HALF_REDUCERS(N, IN, OUTF, INF)                                                                     \
  static inline float sum_step_##N(float acc, uint16_t x, uint16_t y) { (void)y; return acc + IN(x); }      \
  static inline float dot_step_##N(float acc, uint16_t x, uint16_t y) { return fmaf(IN(x), IN(y), acc); }   \
  static inline void out_##N(uint16_t *p, float a) { *p = OUTF(a); }                                        \
  static inline int nan_##N(uint32_t h) { return (h & 0x7fffu) > INF; }                                     \
  static inline uint32_t min_join_##N(uint32_t a, uint32_t b) {                                             \
    return nan_##N(a) ? a : (nan_##N(b) || IN((uint16_t)b) < IN((uint16_t)a)) ? b : a;                      \
  }                                                                                                         \
  static inline uint32_t max_join_##N(uint32_t a, uint32_t b) {                                             \
    return nan_##N(a) ? a : (nan_##N(b) || IN((uint16_t)b) > IN((uint16_t)a)) ? b : a;                      \
  }                                                                                                         \
  static inline uint32_t min_step_##N(uint32_t acc, uint16_t x, uint16_t y) { (void)y; return min_join_##N(acc, x); } \
  static inline uint32_t max_step_##N(uint32_t acc, uint16_t x, uint16_t y) { (void)y; return max_join_##N(acc, x); } \
  static inline void mout_##N(uint16_t *p, uint32_t a) { *p = (uint16_t)a; }                                \
  REDUCER(sum_##N, uint16_t, float, 0, sum_step_##N, ADD, out_##N, 0)                                       \
  REDUCER(dot_##N, uint16_t, float, 0, dot_step_##N, ADD, out_##N, 1)                                       \
  REDUCER(min_##N, uint16_t, uint32_t, INF, min_step_##N, min_join_##N, mout_##N, 0)                        \
  REDUCER(max_##N, uint16_t, uint32_t, INF | 0x8000u, max_step_##N, max_join_##N, mout_##N, 0)
HALF_REDUCERS(f16, gld_f16_to_f32, sim_store_f16, 0x7c00u)
HALF_REDUCERS(bf16, gld_bf16_to_f32, sim_store_bf16, 0x7f80u)

#define BY_DTYPE(K)                                                                                         \
  const gld_sim_kernel_fn sim_##K##_host[SIM_NDTYPES] = {K##_i8,  K##_u8,  K##_i16, K##_u16,  K##_i32, K##_u32,  \
                                                        K##_i64, K##_u64, K##_f16, K##_bf16, K##_f32, K##_f64};
BY_DTYPE(sum)
BY_DTYPE(dot)
BY_DTYPE(min)
BY_DTYPE(max)
