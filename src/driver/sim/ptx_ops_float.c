/*
 * ptx_ops_float.c -- f32 and f64 arithmetic over a warp's active lanes.
 * add, sub, mul, fma, div.rn, rcp.rn and sqrt.rn are IEEE operations of the
 * host (SSE) rounded to nearest, then stepped one ulp where the rounding
 * mode named (.rz, .rm, .rp) asks, from the exact sign of the error: the
 * GPU's results bit for bit. The approximate instructions (div.approx,
 * div.full, rcp.approx, sqrt.approx, rsqrt.approx, ex2, lg2, sin, cos,
 * tanh) are computed in double precision and rounded once: within half an
 * ulp of the exact value, inside every bound the PTX ISA states for them
 * (2 ulp for div.full, 2^-22.9 relative for rsqrt, 2^-20.9 absolute for
 * sin and cos over [-pi, pi], ...), though not the GPU's own bits.
 * .ftz flushes f32 subnormal inputs and results to zero of the same sign;
 * .sat clamps to [0, 1], NaN giving 0. NaNs as the GPU makes them (measured
 * on an H200, tests/ptx/specials.cu): every f32 NaN result is the canonical
 * 0x7fffffff; an f64 one is the host's (the first NaN operand quieted, or
 * 0xfff8000000000000 for an invalid operation), and abs and neg of an f64
 * NaN quiet it and keep its sign. An add or sub contracted with the mul
 * before it (ptx_fuse.c) runs as fma, its negated operand flagged.
 */

#include "ptx_exec.h"

#include <fenv.h>
#include <math.h>
#include <string.h>

/* a register row's bits as a float or double, and back (ptx_exec.h) */
#define f32 sim_ptx_f32
#define b32 sim_ptx_b32
#define f64 sim_ptx_f64
#define b64 sim_ptx_b64

static float ftz(float f) { return fpclassify(f) == FP_SUBNORMAL ? copysignf(0.0f, f) : f; }

static int fe_mode(int rnd) {
  switch (rnd) {
  case SIM_RND_RZ: return FE_TOWARDZERO;
  case SIM_RND_RM: return FE_DOWNWARD;
  case SIM_RND_RP: return FE_UPWARD;
  default: return FE_TONEAREST;
  }
}

/* One operation in double or float precision under the current rounding
 * mode: volatile keeps the compiler from moving it past fesetround. */
static double op64(int op, double a, double b, double c) {
  volatile double x = a, y = b, z = c, r;
  switch (op) {
  case SIM_OP_ADD: r = x + y; break;
  case SIM_OP_SUB: r = x - y; break;
  case SIM_OP_MUL: r = x * y; break;
  case SIM_OP_FMA: r = fma(x, y, z); break;
  case SIM_OP_DIV: r = x / y; break;
  case SIM_OP_RCP: r = 1.0 / x; break;
  case SIM_OP_SQRT: r = sqrt(x); break;
  default: r = 0; break;
  }
  return r;
}
static float op32(int op, float a, float b, float c) {
  volatile float x = a, y = b, z = c, r;
  switch (op) {
  case SIM_OP_ADD: r = x + y; break;
  case SIM_OP_SUB: r = x - y; break;
  case SIM_OP_MUL: r = x * y; break;
  case SIM_OP_FMA: r = fmaf(x, y, z); break;
  case SIM_OP_DIV: r = x / y; break;
  case SIM_OP_RCP: r = 1.0f / x; break;
  case SIM_OP_SQRT: r = sqrtf(x); break;
  default: r = 0; break;
  }
  return r;
}

/* Directed rounding without the floating-point environment (which
 * valgrind, for one, does not follow): the result rounded to nearest, then
 * one step toward the direction asked where the exact result lies that
 * way. `resid` is the sign of (exact - rn), found exactly below. */
static double directed(double rn, double resid, int rnd, int f32) {
  if (isnan(rn) || resid == 0 || isnan(resid)) return rn;
  double up = f32 ? nextafterf((float)rn, INFINITY) : nextafter(rn, INFINITY);
  double down = f32 ? nextafterf((float)rn, -INFINITY) : nextafter(rn, -INFINITY);
  switch (rnd) {
  case SIM_RND_RP: return resid > 0 ? up : rn;
  case SIM_RND_RM: return resid < 0 ? down : rn;
  default: return (rn > 0 && resid < 0) ? down : (rn < 0 && resid > 0) ? up : rn; /* rz */
  }
}

/* The sign of (exact - r) for r the f32 or f64 result to nearest of op. */
static double residual(int op, double a, double b, double c, double r, int f32) {
  if (isinf(r)) { /* overflow from finite operands: the exact value is finite */
    int finite = isfinite(a) && (op == SIM_OP_SQRT || isfinite(b)) && (op != SIM_OP_FMA || isfinite(c));
    return finite && !(op == SIM_OP_DIV && b == 0) ? -r : 0;
  }
  double s, e, t;
  switch (op) {
  case SIM_OP_ADD: case SIM_OP_SUB: case SIM_OP_FMA:
    if (op == SIM_OP_SUB) b = -b;
    if (op == SIM_OP_FMA) {
      if (!f32) return NAN; /* f64 fma: done with fesetround */
      a = a * b; /* exact: two f32 */
      b = c;
    }
    s = a + b; /* two-sum: s + e == a + b exactly */
    t = s - a;
    e = (a - (s - t)) + (b - t);
    return (s - r) + e;
  case SIM_OP_MUL: return f32 ? a * b - r : fma(a, b, -r);
  case SIM_OP_DIV: return (f32 ? a - r * b : fma(-r, b, a)) * (b < 0 ? -1 : 1);
  case SIM_OP_RCP: return (f32 ? 1.0 - r * a : fma(-r, a, 1.0)) * (a < 0 ? -1 : 1);
  case SIM_OP_SQRT: return f32 ? a - r * r : fma(-r, r, a);
  default: return NAN;
  }
}

static double minmax(double a, double b, int max) {
  if (isnan(a)) return b;
  if (isnan(b)) return a;
  if (a == b && a == 0) return (signbit(a) != 0) == !max ? a : b; /* -0 < +0 */
  return (a < b) == !max ? a : b;
}

static double approx(int op, double x) {
  switch (op) {
  case SIM_OP_RSQRT: return 1.0 / sqrt(x);
  case SIM_OP_EX2: return exp2(x);
  case SIM_OP_LG2: return log2(x);
  case SIM_OP_SIN: return sin(x);
  case SIM_OP_COS: return cos(x);
  case SIM_OP_TANH: return tanh(x);
  case SIM_OP_SQRT: return sqrt(x);
  case SIM_OP_RCP: return 1.0 / x;
  default: return 0;
  }
}

static int is_ieee(int op) {
  return op == SIM_OP_ADD || op == SIM_OP_SUB || op == SIM_OP_MUL || op == SIM_OP_FMA || op == SIM_OP_DIV ||
         op == SIM_OP_RCP || op == SIM_OP_SQRT;
}

static int f32_op(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m, const uint64_t *a,
                  const uint64_t *b, const uint64_t *x, uint64_t *d) {
  int op = in->op, fz = in->flags & SIM_F_FTZ, sat = in->flags & SIM_F_SAT;
  int exact = is_ieee(op) && !(in->flags & (SIM_F_APPROX | SIM_F_FULL));
  int rnd = in->rnd == SIM_RND_NONE ? SIM_RND_RN : in->rnd;
  if (!fz && !sat && rnd == SIM_RND_RN) { /* the common cases, straight */
    switch (op) {
    case SIM_OP_ADD: SIM_LANES(m) d[l] = b32(f32(a[l]) + f32(b[l])); return 0;
    case SIM_OP_SUB: SIM_LANES(m) d[l] = b32(f32(a[l]) - f32(b[l])); return 0;
    case SIM_OP_MUL: SIM_LANES(m) d[l] = b32(f32(a[l]) * f32(b[l])); return 0;
    case SIM_OP_FMA: SIM_LANES(m) d[l] = b32(fmaf(f32(a[l]), f32(b[l]), f32(x[l]))); return 0;
    default: break;
    }
  }
  SIM_LANES(m) {
    float p = f32(a[l]), q = f32(b[l]), s = f32(x[l]), r;
    if (fz) p = ftz(p), q = ftz(q), s = ftz(s);
    switch (op) {
    case SIM_OP_ABS: r = fabsf(p); break;
    case SIM_OP_NEG: r = -p; break;
    case SIM_OP_MIN: r = (float)minmax(p, q, 0); break;
    case SIM_OP_MAX: r = (float)minmax(p, q, 1); break;
    case SIM_OP_COPYSIGN: r = copysignf(q, p); break;
    default:
      if (exact) {
        r = op32(op, p, q, s);
        if (rnd != SIM_RND_RN) r = (float)directed(r, residual(op, p, q, s, r, 1), rnd, 1);
      } else if (op == SIM_OP_DIV) r = (float)((double)p / (double)q);
      else r = (float)approx(op, p);
      break;
    }
    if (fz) r = ftz(r);
    if (sat) r = isnan(r) ? 0.0f : r < 0.0f ? 0.0f : r > 1.0f ? 1.0f : r;
    d[l] = b32(r);
  }
  (void)c;
  (void)w;
  return 0;
}

static int f64_op(const sim_ptx_insn *in, uint32_t m, const uint64_t *a, const uint64_t *b, const uint64_t *x,
                  uint64_t *d) {
  int op = in->op, sat = in->flags & SIM_F_SAT;
  int exact = is_ieee(op) && !(in->flags & SIM_F_APPROX);
  int rnd = in->rnd == SIM_RND_NONE ? SIM_RND_RN : in->rnd;
  if (!sat && rnd == SIM_RND_RN) {
    switch (op) {
    case SIM_OP_ADD: SIM_LANES(m) d[l] = b64(SIM_PTX_F64_NAN_FIRST(f64(a[l]), f64(a[l]) + f64(b[l]))); return 0;
    case SIM_OP_SUB: SIM_LANES(m) d[l] = b64(SIM_PTX_F64_NAN_FIRST(f64(a[l]), f64(a[l]) - f64(b[l]))); return 0;
    case SIM_OP_MUL: SIM_LANES(m) d[l] = b64(SIM_PTX_F64_NAN_FIRST(f64(a[l]), f64(a[l]) * f64(b[l]))); return 0;
    case SIM_OP_FMA: SIM_LANES(m) d[l] = b64(fma(f64(a[l]), f64(b[l]), f64(x[l]))); return 0;
    default: break;
    }
  }
  int env = exact && rnd != SIM_RND_RN && op == SIM_OP_FMA, saved = fegetround();
  if (env) fesetround(fe_mode(rnd));
  SIM_LANES(m) {
    double p = f64(a[l]), q = f64(b[l]), s = f64(x[l]), r;
    if (isnan(p) && (op == SIM_OP_ABS || op == SIM_OP_NEG)) {
      d[l] = a[l] | 0x0008000000000000ull; /* quieted, its sign kept */
      continue;
    }
    switch (op) {
    case SIM_OP_ABS: r = fabs(p); break;
    case SIM_OP_NEG: r = -p; break;
    case SIM_OP_MIN: r = minmax(p, q, 0); break;
    case SIM_OP_MAX: r = minmax(p, q, 1); break;
    case SIM_OP_COPYSIGN: r = copysign(q, p); break;
    default:
      if (exact) {
        r = op64(op, p, q, s);
        if (rnd != SIM_RND_RN && !env) r = directed(r, residual(op, p, q, s, r, 0), rnd, 0);
      } else if (op == SIM_OP_DIV) r = p / q;
      else r = approx(op, p);
      break;
    }
    if (sat) r = isnan(r) ? 0.0 : r < 0.0 ? 0.0 : r > 1.0 ? 1.0 : r;
    d[l] = b64(r);
  }
  if (env) fesetround(saved);
  return 0;
}

int sim_ptx_op_float(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m) {
  uint64_t ba[SIM_PTX_WARP], bb[SIM_PTX_WARP], bc[SIM_PTX_WARP];
  const uint64_t *a = sim_ptx_src(c, w, &in->o[1], ba);
  const uint64_t *b = in->nops > 2 ? sim_ptx_src(c, w, &in->o[2], bb) : a;
  const uint64_t *x = in->nops > 3 ? sim_ptx_src(c, w, &in->o[3], bc) : a;
  uint64_t *d = &w->R[(size_t)in->o[0].reg * SIM_PTX_WARP];
  if (in->flags & (SIM_F_NEGA | SIM_F_NEGC)) { /* an fma contracted from a sub (ptx_fuse.c): a NaN as it is */
    int single = in->type == SIM_T_F32;
    uint64_t sign = single ? 0x80000000u : 0x8000000000000000ull, inf = single ? 0x7f800000u : 0x7ff0000000000000ull;
    const uint64_t *s = in->flags & SIM_F_NEGA ? a : x;
    uint64_t *neg = in->flags & SIM_F_NEGA ? ba : bc;
    SIM_LANES(m) neg[l] = (s[l] & (sign - 1)) > inf ? s[l] : s[l] ^ sign;
    if (in->flags & SIM_F_NEGA) a = neg;
    else x = neg;
  }
  switch (in->op) {
  case SIM_OP_ADD: case SIM_OP_SUB: case SIM_OP_MUL: case SIM_OP_FMA: case SIM_OP_DIV: case SIM_OP_ABS:
  case SIM_OP_NEG: case SIM_OP_MIN: case SIM_OP_MAX: case SIM_OP_RCP: case SIM_OP_SQRT: case SIM_OP_RSQRT:
  case SIM_OP_EX2: case SIM_OP_LG2: case SIM_OP_SIN: case SIM_OP_COS: case SIM_OP_TANH: case SIM_OP_COPYSIGN:
    break;
  default:
    return sim_ptx_fault(c, w, in, __builtin_ctz(m), "internal: no floating-point form of opcode %d", in->op);
  }
  if (in->type == SIM_T_F32) return f32_op(c, w, in, m, a, b, x, d);
  return f64_op(in, m, a, b, x, d);
}
