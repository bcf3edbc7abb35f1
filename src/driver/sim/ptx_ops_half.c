/*
 * ptx_ops_half.c -- the 16-bit floats, f16 (IEEE half) and bf16, alone
 * (.f16, .bf16, in a 16-bit register) or two in 32 bits (.f16x2, .bf16x2:
 * the first in bits 0-15, the second in bits 16-31): add, sub, mul, fma
 * (.rn, .ftz, .sat, .relu), neg, abs, min, max (.NaN), setp (p|q for a
 * pair: p the first half, q the second), set, cvt from and to every
 * integer and float type with every rounding mode, and the sum of
 * atom.add.noftz (ptx_ops_mem.c).
 *
 * The exact result is computed in double precision, as a double and its
 * error where a sum is not exact, then rounded once to the 16-bit format
 * (halfprec.c rounds to nearest even; .rz, .rm, .rp step one unit from
 * there), so the results are the GPU's bit for bit. A NaN result is the
 * canonical NaN 0x7fff (0x7fffffff for a conversion of an f16 NaN to f32),
 * as on the GPU; .ftz flushes f16 subnormal inputs and results to zero of
 * the same sign; .sat clamps to [0, 1] (NaN gives 0); .relu gives +0 for a
 * negative result and keeps a NaN.
 */

#include "ptx_exec.h"

#include "halfprec.h"

#include <math.h>
#include <string.h>

#define SIM_HALF_NAN 0x7fffu

static int is_bf(int type) { return type == SIM_T_BF16 || type == SIM_T_BF16X2; }
static int is_pair(int type) { return type == SIM_T_F16X2 || type == SIM_T_BF16X2; }

static double h2d(uint16_t h, int bf) { return bf ? gld_bf16_to_f32(h) : gld_f16_to_f32(h); }
static int h_nan(uint16_t h, int bf) { return (h & 0x7fffu) > (bf ? 0x7f80u : 0x7c00u); }
static uint16_t h_ftz(uint16_t h, int bf) {
  uint16_t exp = bf ? 0x7f80u : 0x7c00u;
  return (h & exp) == 0 ? (uint16_t)(h & 0x8000u) : h;
}

/* s + e (e the error of s) rounded to double "to odd": s where exact,
 * else the double next to it toward the exact value, its last bit set.
 * Rounding that to 16 bits (to nearest even, or directed) rounds the exact
 * value itself: no 16-bit value lies between the two. */
static double to_odd(double s, double e) {
  if (e == 0 || !isfinite(s) || isnan(e)) return s;
  if ((e < 0) == (s > 0)) s = nextafter(s, 0.0);
  uint64_t u;
  memcpy(&u, &s, 8);
  u |= 1;
  memcpy(&s, &u, 8);
  return s;
}

/* d (exact, or rounded to odd) as a 16-bit float, rounded as `rnd` says. */
static uint16_t d2h(double d, int bf, int rnd) {
  if (isnan(d)) return SIM_HALF_NAN;
  uint16_t h = bf ? gld_f64_to_bf16(d) : gld_f64_to_f16(d);
  if (rnd == SIM_RND_NONE || rnd == SIM_RND_RN) return h;
  double r = h2d(h, bf);
  int down = 0, up = 0;
  if (r == d) return h;
  switch (rnd) {
  case SIM_RND_RZ: down = r > d && r > 0, up = r < d && r < 0; break;
  case SIM_RND_RM: down = r > d; break;
  default: up = r < d; break;
  }
  if (up) return (h & 0x8000u) ? (h == 0x8000u ? 1 : (uint16_t)(h - 1)) : (uint16_t)(h + 1);
  if (down) return (h & 0x8000u) ? (uint16_t)(h + 1) : (h == 0 ? 0x8001u : (uint16_t)(h - 1));
  return h;
}

/* A 64-bit integer as a double, rounded to odd where it has more than 53
 * significant bits. */
static double int2d(uint64_t v, int sgn, int size) {
  int neg = sgn && sim_ptx_sext(v, size) < 0;
  uint64_t mag = sgn ? (neg ? -(uint64_t)sim_ptx_sext(v, size) : (uint64_t)sim_ptx_sext(v, size)) : sim_ptx_trunc(v, size);
  double d;
  if (mag >> 53 == 0) {
    d = (double)mag;
  } else {
    int shift = 64 - __builtin_clzll(mag) - 53;
    uint64_t keep = mag >> shift;
    if (mag & ((1ull << shift) - 1)) keep |= 1;
    d = ldexp((double)keep, shift);
  }
  return neg ? -d : d;
}

static uint16_t finish(uint16_t h, int bf, unsigned flags) {
  if (flags & SIM_F_FTZ) h = h_ftz(h, bf);
  if (flags & SIM_F_SAT) {
    if (h_nan(h, bf) || (h & 0x8000u)) h = 0;
    else if (h2d(h, bf) > 1.0) h = bf ? 0x3f80u : 0x3c00u;
  }
  if ((flags & SIM_F_RELU) && !h_nan(h, bf) && (h & 0x8000u)) h = 0;
  return h;
}

static uint16_t minmax(uint16_t a, uint16_t b, int bf, int max, int nan) {
  int na = h_nan(a, bf), nb = h_nan(b, bf);
  if ((na && nb) || (nan && (na || nb))) return SIM_HALF_NAN;
  if (na) return b;
  if (nb) return a;
  double x = h2d(a, bf), y = h2d(b, bf);
  if (x == y) return (uint16_t)(((a & 0x8000u) != 0) == !max ? a : b); /* -0 below +0 */
  return (x < y) == !max ? a : b;
}

/* One 16-bit result of op on a, b, c. */
static uint16_t half_op(int op, unsigned flags, int bf, uint16_t a, uint16_t b, uint16_t c) {
  if (flags & SIM_F_FTZ) a = h_ftz(a, bf), b = h_ftz(b, bf), c = h_ftz(c, bf);
  switch (op) {
  case SIM_OP_NEG: return h_nan(a, bf) ? SIM_HALF_NAN : finish((uint16_t)(a ^ 0x8000u), bf, flags);
  case SIM_OP_ABS: return h_nan(a, bf) ? SIM_HALF_NAN : finish((uint16_t)(a & 0x7fffu), bf, flags);
  case SIM_OP_MIN: case SIM_OP_MAX:
    return finish(minmax(a, b, bf, op == SIM_OP_MAX, flags & SIM_F_NAN), bf, flags & SIM_F_FTZ);
  default: break;
  }
  double x = h2d(a, bf), y = h2d(b, bf), z = h2d(c, bf), s, e = 0;
  if (op == SIM_OP_SUB) y = -y;
  if (op == SIM_OP_MUL) {
    s = x * y; /* exact: 22 bits at most */
  } else {
    if (op == SIM_OP_FMA) x = x * y, y = z; /* the product, exact, plus c */
    s = x + y; /* two-sum: s + e == x + y */
    double t = s - x;
    e = (x - (s - t)) + (y - t);
  }
  if (isnan(s)) return finish(SIM_HALF_NAN, bf, flags);
  return finish(d2h(to_odd(s, e), bf, SIM_RND_RN), bf, flags);
}

int sim_ptx_op_half(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m) {
  uint64_t ba[SIM_PTX_WARP], bb[SIM_PTX_WARP], bc[SIM_PTX_WARP], t[SIM_PTX_WARP];
  const uint64_t *a = sim_ptx_src(c, w, &in->o[1], ba);
  const uint64_t *b = in->nops > 2 ? sim_ptx_src(c, w, &in->o[2], bb) : a;
  const uint64_t *x = in->nops > 3 ? sim_ptx_src(c, w, &in->o[3], bc) : a;
  uint64_t *d = &w->R[(size_t)in->o[0].reg * SIM_PTX_WARP];
  int bf = is_bf(in->type), n = is_pair(in->type) ? 2 : 1;
  switch (in->op) {
  case SIM_OP_ADD: case SIM_OP_SUB: case SIM_OP_MUL: case SIM_OP_FMA: case SIM_OP_NEG: case SIM_OP_ABS:
  case SIM_OP_MIN: case SIM_OP_MAX:
    break;
  default:
    return sim_ptx_fault(c, w, in, __builtin_ctz(m), "internal: no 16-bit float form of opcode %d", in->op);
  }
  SIM_LANES(m) {
    uint64_t r = 0;
    for (int k = 0; k < n; k++)
      r |= (uint64_t)half_op(in->op, in->flags, bf, (uint16_t)(a[l] >> 16 * k), (uint16_t)(b[l] >> 16 * k),
                             (uint16_t)(x[l] >> 16 * k)) << 16 * k;
    t[l] = r;
  }
  SIM_LANES(m) d[l] = t[l];
  return 0;
}

uint64_t sim_ptx_half_add(int type, uint64_t a, uint64_t b) {
  int n = is_pair(type) ? 2 : 1;
  uint64_t r = 0;
  for (int k = 0; k < n; k++)
    r |= (uint64_t)half_op(SIM_OP_ADD, 0, is_bf(type), (uint16_t)(a >> 16 * k), (uint16_t)(b >> 16 * k), 0) << 16 * k;
  return r;
}

/* A value of a float or integer type as a double: exact, or rounded to odd
 * (64-bit integers). */
static double value(uint64_t v, int type, unsigned flags) {
  if (sim_ptx_type_is_half(type)) {
    uint16_t h = (uint16_t)v;
    return h2d((flags & SIM_F_FTZ) ? h_ftz(h, is_bf(type)) : h, is_bf(type));
  }
  if (type == SIM_T_F32) {
    uint32_t u = (uint32_t)v;
    float f;
    memcpy(&f, &u, 4);
    if ((flags & SIM_F_FTZ) && fpclassify(f) == FP_SUBNORMAL) f = copysignf(0.0f, f);
    return f;
  }
  if (type == SIM_T_F64) {
    double f;
    memcpy(&f, &v, 8);
    return f;
  }
  return int2d(v, sim_ptx_type_is_signed(type), sim_ptx_type_size(type));
}

static double to_integer(double x, int rnd) {
  switch (rnd) {
  case SIM_RND_RZI: return trunc(x);
  case SIM_RND_RMI: return floor(x);
  case SIM_RND_RPI: return ceil(x);
  default: return nearbyint(x); /* .rni; the current rounding mode is to nearest even */
  }
}

/* One conversion where one side is a 16-bit float. */
static uint64_t cvt_one(const sim_ptx_insn *in, uint64_t v) {
  int dt = in->type, st = in->type2, bf = is_bf(dt);
  unsigned flags = in->flags;
  double x = value(v, st, flags);
  if (sim_ptx_type_is_half(dt)) {
    if (in->rnd >= SIM_RND_RNI) x = to_integer(x, in->rnd); /* between 16-bit floats only: exact */
    int rnd = in->rnd >= SIM_RND_RNI ? SIM_RND_RN : in->rnd;
    return finish(d2h(x, bf, rnd), bf, flags & ~(unsigned)SIM_F_FTZ); /* .ftz: of an f32 source, in value() */
  }
  if (dt == SIM_T_F32 || dt == SIM_T_F64) { /* from a 16-bit float: exact */
    if (isnan(x)) {
      if (dt == SIM_T_F32) return is_bf(st) ? (uint64_t)(uint16_t)v << 16 : 0x7fffffffu;
      return 0x7fffffffffffffffull;
    }
    if (in->flags & SIM_F_SAT) x = x < 0 ? 0.0 : x > 1 ? 1.0 : x;
    if (dt == SIM_T_F32) {
      float f = (float)x;
      uint32_t u;
      memcpy(&u, &f, 4);
      return u;
    }
    uint64_t u;
    memcpy(&u, &x, 8);
    return u;
  }
  /* to an integer: rounded, saturated to the type's range; a NaN as the GPU gives it */
  int size = sim_ptx_type_size(dt), sg = sim_ptx_type_is_signed(dt);
  if (isnan(x)) return sim_ptx_cvt_int_result(sim_ptx_nan_to_int(size, 0), size, sg);
  double r = to_integer(x, in->rnd), lo, hi;
  if (sg) {
    lo = -ldexp(1.0, size * 8 - 1);
    hi = ldexp(1.0, size * 8 - 1);
    if (r <= lo) return sim_ptx_cvt_int_result((uint64_t)(int64_t)lo, size, 1);
    if (r >= hi) return sim_ptx_trunc((uint64_t)INT64_MAX >> (64 - size * 8), size);
    return sim_ptx_cvt_int_result((uint64_t)(int64_t)r, size, 1);
  }
  hi = ldexp(1.0, size * 8);
  if (r <= 0) return 0;
  if (r >= hi) return sim_ptx_trunc(~0ull, size);
  return (uint64_t)r;
}

int sim_ptx_op_half_cvt(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m) {
  uint64_t ba[SIM_PTX_WARP], bb[SIM_PTX_WARP], t[SIM_PTX_WARP];
  const uint64_t *a = sim_ptx_src(c, w, &in->o[1], ba);
  uint64_t *d = &w->R[(size_t)in->o[0].reg * SIM_PTX_WARP];
  if (is_pair(in->type)) { /* cvt.rn.f16x2.f32 d, a, b: a in the upper half, b in the lower */
    const uint64_t *b = sim_ptx_src(c, w, &in->o[2], bb);
    SIM_LANES(m) t[l] = cvt_one(in, a[l]) << 16 | cvt_one(in, b[l]);
  } else {
    SIM_LANES(m) t[l] = cvt_one(in, a[l]);
  }
  SIM_LANES(m) d[l] = t[l];
  return 0;
}

static int combine(int aop, int t, int c) {
  switch (aop) {
  case SIM_AOP_AND: return t && c;
  case SIM_AOP_OR: return t || c;
  case SIM_AOP_XOR: return t != c;
  default: return t;
  }
}

/* The comparison of element k (0 or 1) of a and b, of a 16-bit float type
 * or another. */
static int cmp_one(const sim_ptx_insn *in, int type, uint64_t a, uint64_t b, int k) {
  if (!sim_ptx_type_is_half(type)) return sim_ptx_compare(in->cmp, type, a, b);
  double x = value(a >> 16 * k, type, in->flags), y = value(b >> 16 * k, type, in->flags);
  uint64_t bx, by;
  memcpy(&bx, &x, 8);
  memcpy(&by, &y, 8);
  return sim_ptx_compare(in->cmp, SIM_T_F64, bx, by);
}

int sim_ptx_op_half_cmp(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m) {
  uint64_t ba[SIM_PTX_WARP], bb[SIM_PTX_WARP], bc[SIM_PTX_WARP], t[SIM_PTX_WARP];
  const uint64_t *a = sim_ptx_src(c, w, &in->o[1], ba), *b = sim_ptx_src(c, w, &in->o[2], bb);
  const uint64_t *x = in->aop ? sim_ptx_src(c, w, &in->o[3], bc) : NULL;
  int st = in->op == SIM_OP_SET ? in->type2 : in->type, n = is_pair(st) ? 2 : 1;
  if (in->op == SIM_OP_SETP) {
    uint32_t p = 0, q = 0;
    SIM_LANES(m) {
      int cv = x ? (int)(x[l] & 1) : 0;
      int r0 = cmp_one(in, st, a[l], b[l], 0);
      if (n == 2) {
        p |= (uint32_t)combine(in->aop, r0, cv) << l;
        q |= (uint32_t)combine(in->aop, cmp_one(in, st, a[l], b[l], 1), cv) << l;
      } else {
        p |= (uint32_t)combine(in->aop, r0, cv) << l;
        q |= (uint32_t)combine(in->aop, !r0, cv) << l;
      }
    }
    uint32_t *pp = &w->P[in->o[0].reg];
    *pp = (*pp & ~m) | (p & m);
    if (in->o[5].kind == SIM_K_PRED) {
      uint32_t *qq = &w->P[in->o[5].reg];
      *qq = (*qq & ~m) | (q & m);
    }
    return 0;
  }
  /* set: 1.0 in the destination's float type, or all ones (of 16 bits for
   * each half of a pair) */
  int dt = in->type;
  uint64_t *d = &w->R[(size_t)in->o[0].reg * SIM_PTX_WARP];
  SIM_LANES(m) {
    int cv = x ? (int)(x[l] & 1) : 0;
    uint64_t r = 0;
    for (int k = 0; k < n; k++) {
      int on = combine(in->aop, cmp_one(in, st, a[l], b[l], k), cv);
      uint64_t one;
      if (sim_ptx_type_is_half(dt)) one = is_bf(dt) ? 0x3f80u : 0x3c00u;
      else if (dt == SIM_T_F32) one = 0x3f800000u;
      else one = n == 2 ? 0xffffu : 0xffffffffu;
      if (on) r |= one << 16 * k;
    }
    t[l] = r;
  }
  SIM_LANES(m) d[l] = t[l];
  return 0;
}
