/*
 * ptx_ops_cvt.c -- conversions (cvt between every integer and float type,
 * with rounding modes, .sat and .ftz) and comparisons and selections
 * (setp with every comparison and a boolean combine, set, selp, slct).
 * Float to integer saturates to the destination's range; a NaN gives what
 * the GPU gives (sim_ptx_nan_to_int). An .s8 result is sign-extended in its
 * (wider) register.
 */

#include "ptx_exec.h"

#include <fenv.h>
#include <math.h>
#include <string.h>

static double as_f64(uint64_t v, int type) {
  if (type == SIM_T_F32) {
    uint32_t u = (uint32_t)v;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  double d;
  memcpy(&d, &v, 8);
  return d;
}

static int fe_mode(int rnd) {
  switch (rnd) {
  case SIM_RND_RZ: case SIM_RND_RZI: return FE_TOWARDZERO;
  case SIM_RND_RM: case SIM_RND_RMI: return FE_DOWNWARD;
  case SIM_RND_RP: case SIM_RND_RPI: return FE_UPWARD;
  default: return FE_TONEAREST;
  }
}

/* The range of an integer type, as 128-bit bounds. */
static void range(int type, __int128 *lo, __int128 *hi) {
  int bits = sim_ptx_type_size(type) * 8;
  if (sim_ptx_type_is_signed(type)) {
    *lo = -((__int128)1 << (bits - 1));
    *hi = ((__int128)1 << (bits - 1)) - 1;
  } else {
    *lo = 0;
    *hi = ((__int128)1 << bits) - 1;
  }
}

static uint64_t cvt_one(const sim_ptx_insn *in, uint64_t v) {
  int dt = in->type, st = in->type2, dsize = sim_ptx_type_size(dt), ssize = sim_ptx_type_size(st);
  int dfl = sim_ptx_type_is_float(dt), sfl = sim_ptx_type_is_float(st), ftz = in->flags & SIM_F_FTZ;
  __int128 lo, hi;
  if (!dfl && !sfl) {
    __int128 x = sim_ptx_type_is_signed(st) ? (__int128)sim_ptx_sext(v, ssize) : (__int128)sim_ptx_trunc(v, ssize);
    if (in->flags & SIM_F_SAT) {
      range(dt, &lo, &hi);
      x = x < lo ? lo : x > hi ? hi : x;
    }
    return sim_ptx_cvt_int_result((uint64_t)x, dsize, sim_ptx_type_is_signed(dt));
  }
  if (!sfl) { /* integer to float, rounded as the instruction says */
    volatile int64_t sx = sim_ptx_sext(v, ssize);
    volatile uint64_t ux = sim_ptx_trunc(v, ssize);
    int sgn = sim_ptx_type_is_signed(st);
    if (dt == SIM_T_F32) {
      volatile float f = sgn ? (float)sx : (float)ux;
      float r = f;
      if (in->flags & SIM_F_SAT) r = r < 0 ? 0 : r > 1 ? 1 : r;
      uint32_t u;
      memcpy(&u, &r, 4);
      return u;
    }
    volatile double d = sgn ? (double)sx : (double)ux;
    double r = d;
    if (in->flags & SIM_F_SAT) r = r < 0 ? 0 : r > 1 ? 1 : r;
    uint64_t u;
    memcpy(&u, &r, 8);
    return u;
  }
  double x = as_f64(v, st);
  if (ftz && st == SIM_T_F32 && fpclassify((float)x) == FP_SUBNORMAL) x = copysign(0.0, x);
  if (!dfl) { /* float to integer: rounded to an integer, saturated */
    int sg = sim_ptx_type_is_signed(dt);
    if (isnan(x)) return sim_ptx_cvt_int_result(sim_ptx_nan_to_int(dsize, st == SIM_T_F64), dsize, sg);
    volatile double vx = x;
    double r = in->rnd == SIM_RND_RNI || in->rnd == SIM_RND_NONE ? nearbyint(vx)
               : in->rnd == SIM_RND_RZI ? trunc(vx) : in->rnd == SIM_RND_RMI ? floor(vx) : ceil(vx);
    range(dt, &lo, &hi);
    if (r <= (double)lo) return sim_ptx_cvt_int_result((uint64_t)lo, dsize, sg);
    if (r >= (double)hi) return sim_ptx_cvt_int_result((uint64_t)hi, dsize, sg);
    return sim_ptx_cvt_int_result((uint64_t)(__int128)r, dsize, sg);
  }
  /* float to float */
  double r;
  if (in->rnd >= SIM_RND_RNI) {
    r = in->rnd == SIM_RND_RNI ? nearbyint(x) : in->rnd == SIM_RND_RZI ? trunc(x) : in->rnd == SIM_RND_RMI ? floor(x) : ceil(x);
  } else {
    r = x;
  }
  if (dt == SIM_T_F32) {
    volatile double vr = r;
    volatile float f = (float)vr; /* rounded in the current mode */
    float g = f;
    if (ftz && fpclassify(g) == FP_SUBNORMAL) g = copysignf(0.0f, g);
    if (in->flags & SIM_F_SAT) g = isnan(g) ? 0.0f : g < 0 ? 0.0f : g > 1 ? 1.0f : g;
    uint32_t u;
    memcpy(&u, &g, 4);
    return u;
  }
  if (in->flags & SIM_F_SAT) r = isnan(r) ? 0.0 : r < 0 ? 0.0 : r > 1 ? 1.0 : r;
  uint64_t u;
  memcpy(&u, &r, 8);
  return u;
}

int sim_ptx_op_cvt(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m) {
  uint64_t buf[SIM_PTX_WARP], t[SIM_PTX_WARP];
  const uint64_t *a = sim_ptx_src(c, w, &in->o[1], buf);
  uint64_t *d = &w->R[(size_t)in->o[0].reg * SIM_PTX_WARP];
  int dt = in->type, st = in->type2;
  if (!sim_ptx_type_is_float(dt) && !sim_ptx_type_is_float(st) && !(in->flags & SIM_F_SAT)) {
    int ds = sim_ptx_type_size(dt), ss = sim_ptx_type_size(st), sg = sim_ptx_type_is_signed(st);
    int dsg = sim_ptx_type_is_signed(dt);
    if (m == 0xffffffffu) { /* a whole warp: plain loops (shifts extend the sign) */
      unsigned su = 64 - 8 * (unsigned)ss;
      uint64_t dm = ds == 8 ? ~0ull : (1ull << (8 * ds)) - 1;
      if (sg) for (int l = 0; l < SIM_PTX_WARP; l++) t[l] = (uint64_t)((int64_t)(a[l] << su) >> su);
      else for (int l = 0; l < SIM_PTX_WARP; l++) t[l] = a[l] << su >> su;
      if (ds == 1 && dsg) for (int l = 0; l < SIM_PTX_WARP; l++) t[l] = (uint64_t)((int64_t)(t[l] << 56) >> 56);
      else for (int l = 0; l < SIM_PTX_WARP; l++) t[l] &= dm;
      memcpy(d, t, sizeof t);
      return 0;
    }
    SIM_LANES(m) t[l] = sim_ptx_cvt_int_result(sg ? (uint64_t)sim_ptx_sext(a[l], ss) : sim_ptx_trunc(a[l], ss), ds, dsg);
    SIM_LANES(m) d[l] = t[l];
    return 0;
  }
  int mode = fe_mode(in->rnd), saved = fegetround();
  if (mode != FE_TONEAREST) fesetround(mode);
  SIM_LANES(m) t[l] = cvt_one(in, a[l]);
  if (mode != FE_TONEAREST) fesetround(saved);
  SIM_LANES(m) d[l] = t[l];
  return 0;
}

int sim_ptx_compare(int cmp, int type, uint64_t a, uint64_t b) {
  if (sim_ptx_type_is_float(type)) {
    double x = as_f64(a, type), y = as_f64(b, type);
    int un = isnan(x) || isnan(y);
    switch (cmp) {
    case SIM_CMP_EQ: return !un && x == y;
    case SIM_CMP_NE: return !un && x != y;
    case SIM_CMP_LT: return !un && x < y;
    case SIM_CMP_LE: return !un && x <= y;
    case SIM_CMP_GT: return !un && x > y;
    case SIM_CMP_GE: return !un && x >= y;
    case SIM_CMP_EQU: return un || x == y;
    case SIM_CMP_NEU: return un || x != y;
    case SIM_CMP_LTU: return un || x < y;
    case SIM_CMP_LEU: return un || x <= y;
    case SIM_CMP_GTU: return un || x > y;
    case SIM_CMP_GEU: return un || x >= y;
    case SIM_CMP_NUM: return !un;
    case SIM_CMP_NAN: return un;
    default: return 0;
    }
  }
  int size = sim_ptx_type_size(type);
  int64_t sx = sim_ptx_sext(a, size), sy = sim_ptx_sext(b, size);
  uint64_t ux = sim_ptx_trunc(a, size), uy = sim_ptx_trunc(b, size);
  int sgn = sim_ptx_type_is_signed(type);
  switch (cmp) {
  case SIM_CMP_EQ: return ux == uy;
  case SIM_CMP_NE: return ux != uy;
  case SIM_CMP_LT: return sgn ? sx < sy : ux < uy;
  case SIM_CMP_LE: return sgn ? sx <= sy : ux <= uy;
  case SIM_CMP_GT: return sgn ? sx > sy : ux > uy;
  case SIM_CMP_GE: return sgn ? sx >= sy : ux >= uy;
  case SIM_CMP_LO: return ux < uy;
  case SIM_CMP_LS: return ux <= uy;
  case SIM_CMP_HI: return ux > uy;
  case SIM_CMP_HS: return ux >= uy;
  default: return 0;
  }
}

/* Each lane's comparison of a and b (a bit each, all 32 lanes), as
 * sim_ptx_compare gives it, for 32- and 64-bit integers, f32 and f64: 1,
 * or 0 for the other types. */
#define LANES_CMP(T, OP)                                                                                               \
  for (int l = 0; l < SIM_PTX_WARP; l++) r |= (uint32_t)((T)a[l] OP (T)b[l]) << l;                                      \
  break
/* The float comparisons over arrays x and y of a warp's values: an ordered
 * C comparison with a NaN is false; an unordered one is the negated
 * opposite. 1 with r set, or 0 for a comparison not here. */
#define FLOAT_CMP(x, y)                                                                                            \
  switch (cmp) {                                                                                                   \
  case SIM_CMP_EQ: for (int l = 0; l < SIM_PTX_WARP; l++) r |= (uint32_t)(x[l] == y[l]) << l; break;               \
  case SIM_CMP_NE: for (int l = 0; l < SIM_PTX_WARP; l++) r |= (uint32_t)(x[l] < y[l] || x[l] > y[l]) << l; break; \
  case SIM_CMP_LT: for (int l = 0; l < SIM_PTX_WARP; l++) r |= (uint32_t)(x[l] < y[l]) << l; break;                \
  case SIM_CMP_LE: for (int l = 0; l < SIM_PTX_WARP; l++) r |= (uint32_t)(x[l] <= y[l]) << l; break;               \
  case SIM_CMP_GT: for (int l = 0; l < SIM_PTX_WARP; l++) r |= (uint32_t)(x[l] > y[l]) << l; break;                \
  case SIM_CMP_GE: for (int l = 0; l < SIM_PTX_WARP; l++) r |= (uint32_t)(x[l] >= y[l]) << l; break;               \
  case SIM_CMP_EQU: for (int l = 0; l < SIM_PTX_WARP; l++) r |= (uint32_t)!(x[l] < y[l] || x[l] > y[l]) << l; break; \
  case SIM_CMP_NEU: for (int l = 0; l < SIM_PTX_WARP; l++) r |= (uint32_t)!(x[l] == y[l]) << l; break;            \
  case SIM_CMP_LTU: for (int l = 0; l < SIM_PTX_WARP; l++) r |= (uint32_t)!(x[l] >= y[l]) << l; break;            \
  case SIM_CMP_LEU: for (int l = 0; l < SIM_PTX_WARP; l++) r |= (uint32_t)!(x[l] > y[l]) << l; break;             \
  case SIM_CMP_GTU: for (int l = 0; l < SIM_PTX_WARP; l++) r |= (uint32_t)!(x[l] <= y[l]) << l; break;            \
  case SIM_CMP_GEU: for (int l = 0; l < SIM_PTX_WARP; l++) r |= (uint32_t)!(x[l] < y[l]) << l; break;             \
  case SIM_CMP_NUM: for (int l = 0; l < SIM_PTX_WARP; l++) r |= (uint32_t)(x[l] == x[l] && y[l] == y[l]) << l; break; \
  case SIM_CMP_NAN: for (int l = 0; l < SIM_PTX_WARP; l++) r |= (uint32_t)(x[l] != x[l] || y[l] != y[l]) << l; break; \
  default: return 0;                                                                                               \
  }                                                                                                                \
  *out = r;                                                                                                        \
  return 1

static int compare_lanes(int cmp, int type, const uint64_t *a, const uint64_t *b, uint32_t *out) {
  uint32_t r = 0;
  if (type == SIM_T_F32) {
    float x[SIM_PTX_WARP], y[SIM_PTX_WARP];
    for (int l = 0; l < SIM_PTX_WARP; l++) {
      uint32_t u = (uint32_t)a[l], v = (uint32_t)b[l];
      memcpy(&x[l], &u, 4);
      memcpy(&y[l], &v, 4);
    }
    FLOAT_CMP(x, y);
  }
  if (type == SIM_T_F64) {
    double x[SIM_PTX_WARP], y[SIM_PTX_WARP];
    memcpy(x, a, sizeof x);
    memcpy(y, b, sizeof y);
    FLOAT_CMP(x, y);
  }
  int size = sim_ptx_type_size(type), sgn = sim_ptx_type_is_signed(type);
  if (sim_ptx_type_is_float(type) || sim_ptx_type_is_half(type) || (size != 4 && size != 8)) return 0;
  if (size == 4 && sgn) {
    switch (cmp) {
    case SIM_CMP_LT: LANES_CMP(int32_t, <);
    case SIM_CMP_LE: LANES_CMP(int32_t, <=);
    case SIM_CMP_GT: LANES_CMP(int32_t, >);
    case SIM_CMP_GE: LANES_CMP(int32_t, >=);
    default: sgn = 0; break;
    }
  } else if (sgn) {
    switch (cmp) {
    case SIM_CMP_LT: LANES_CMP(int64_t, <);
    case SIM_CMP_LE: LANES_CMP(int64_t, <=);
    case SIM_CMP_GT: LANES_CMP(int64_t, >);
    case SIM_CMP_GE: LANES_CMP(int64_t, >=);
    default: sgn = 0; break;
    }
  }
  if (!sgn && size == 4) {
    switch (cmp) {
    case SIM_CMP_EQ: LANES_CMP(uint32_t, ==);
    case SIM_CMP_NE: LANES_CMP(uint32_t, !=);
    case SIM_CMP_LT: case SIM_CMP_LO: LANES_CMP(uint32_t, <);
    case SIM_CMP_LE: case SIM_CMP_LS: LANES_CMP(uint32_t, <=);
    case SIM_CMP_GT: case SIM_CMP_HI: LANES_CMP(uint32_t, >);
    case SIM_CMP_GE: case SIM_CMP_HS: LANES_CMP(uint32_t, >=);
    default: return 0;
    }
  } else if (!sgn) {
    switch (cmp) {
    case SIM_CMP_EQ: LANES_CMP(uint64_t, ==);
    case SIM_CMP_NE: LANES_CMP(uint64_t, !=);
    case SIM_CMP_LT: case SIM_CMP_LO: LANES_CMP(uint64_t, <);
    case SIM_CMP_LE: case SIM_CMP_LS: LANES_CMP(uint64_t, <=);
    case SIM_CMP_GT: case SIM_CMP_HI: LANES_CMP(uint64_t, >);
    case SIM_CMP_GE: case SIM_CMP_HS: LANES_CMP(uint64_t, >=);
    default: return 0;
    }
  }
  *out = r;
  return 1;
}

static int combine(int aop, int t, int c) {
  switch (aop) {
  case SIM_AOP_AND: return t && c;
  case SIM_AOP_OR: return t || c;
  case SIM_AOP_XOR: return t != c;
  default: return t;
  }
}

int sim_ptx_op_cmp(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m) {
  uint64_t ba[SIM_PTX_WARP], bb[SIM_PTX_WARP], bc[SIM_PTX_WARP];
  const uint64_t *a = sim_ptx_src(c, w, &in->o[1], ba), *b = sim_ptx_src(c, w, &in->o[2], bb);
  if (in->op == SIM_OP_SELP || in->op == SIM_OP_SLCT) {
    const uint64_t *x = sim_ptx_src(c, w, &in->o[3], bc);
    uint64_t *d = &w->R[(size_t)in->o[0].reg * SIM_PTX_WARP];
    int size = sim_ptx_type_size(in->type);
    if (in->op == SIM_OP_SELP && m == 0xffffffffu) { /* a whole warp: a select, no branches */
      uint64_t mask = size >= 8 ? ~0ull : (1ull << (size * 8)) - 1;
      for (int l = 0; l < SIM_PTX_WARP; l++) bc[l] = ((x[l] & 1) ? a[l] : b[l]) & mask;
      memcpy(d, bc, sizeof bc);
      return 0;
    }
    SIM_LANES(m) {
      int pick;
      if (in->op == SIM_OP_SELP) pick = (int)(x[l] & 1);
      else if (in->type2 == SIM_T_F32) pick = as_f64(x[l], SIM_T_F32) >= 0.0;
      else pick = sim_ptx_sext(x[l], 4) >= 0;
      bc[l] = sim_ptx_trunc(pick ? a[l] : b[l], size);
    }
    SIM_LANES(m) d[l] = bc[l];
    return 0;
  }
  int type = in->op == SIM_OP_SET ? in->type2 : in->type;
  const uint64_t *x = in->aop ? sim_ptx_src(c, w, &in->o[3], bc) : NULL;
  uint32_t t = 0, f = 0;
  if (compare_lanes(in->cmp, type, a, b, &t)) {
    f = ~t;
    if (x) { /* and, or, xor with a predicate: on the masks */
      uint32_t cv = 0;
      for (int l = 0; l < SIM_PTX_WARP; l++) cv |= (uint32_t)(x[l] & 1) << l;
      switch (in->aop) {
      case SIM_AOP_AND: t &= cv, f &= cv; break;
      case SIM_AOP_OR: t |= cv, f |= cv; break;
      case SIM_AOP_XOR: t ^= cv, f ^= cv; break;
      default: break;
      }
    }
  } else {
    SIM_LANES(m) {
      int r = sim_ptx_compare(in->cmp, type, a[l], b[l]), cv = x ? (int)(x[l] & 1) : 0;
      t |= (uint32_t)combine(in->aop, r, cv) << l;
      f |= (uint32_t)combine(in->aop, !r, cv) << l;
    }
  }
  if (in->op == SIM_OP_SETP) {
    uint32_t *p = &w->P[in->o[0].reg];
    *p = (*p & ~m) | (t & m);
    if (in->o[5].kind == SIM_K_PRED) {
      uint32_t *q = &w->P[in->o[5].reg];
      *q = (*q & ~m) | (f & m);
    }
    return 0;
  }
  uint64_t *d = &w->R[(size_t)in->o[0].reg * SIM_PTX_WARP];
  uint64_t one = in->type == SIM_T_F32 ? 0x3f800000u : (uint64_t)0xffffffffu;
  SIM_LANES(m) d[l] = (t >> l & 1) ? one : 0;
  return 0;
}
