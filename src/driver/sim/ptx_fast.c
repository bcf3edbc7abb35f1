/*
 * ptx_fast.c -- the commonest instructions of compiled kernels (address
 * arithmetic, loop counters, 64-bit and float arithmetic, compares) as
 * handlers of their own, chosen at load: over a whole warp, each source a
 * register's row or an immediate's (ptx_imm.c), nothing left to decide when
 * it runs. run_warp calls an instruction's handler when all 32 lanes run
 * it, and the general paths (ptx_ops_*.c) otherwise; both give the same
 * bits (test_ptx_ops runs each form in a whole warp against one lane).
 */
#include "ptx_exec.h"

#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define ROW(k)                                                                                                     \
  (in->o[k].kind == SIM_K_REG ? &w->R[(size_t)in->o[k].reg * SIM_PTX_WARP]                                        \
                              : &w->f->imm_rows[(size_t)in->o[k].reg * SIM_PTX_WARP])
#define LANES for (int l = 0; l < SIM_PTX_WARP; l++)
/* a handler d = f(a, b) or d = f(a, b, c) over the lanes: each lane's
 * sources read before its result is written (d may be a source) */
#define OP2(name, expr)                                                                                            \
  static void name(sim_ptx_warp *w, const sim_ptx_insn *in) {                                                      \
    const uint64_t *a = ROW(1), *b = ROW(2);                                                                       \
    uint64_t *d = &w->R[(size_t)in->o[0].reg * SIM_PTX_WARP];                                                      \
    LANES d[l] = (expr);                                                                                           \
  }
#define OP3(name, expr)                                                                                            \
  static void name(sim_ptx_warp *w, const sim_ptx_insn *in) {                                                      \
    const uint64_t *a = ROW(1), *b = ROW(2), *x = ROW(3);                                                          \
    uint64_t *d = &w->R[(size_t)in->o[0].reg * SIM_PTX_WARP];                                                      \
    LANES d[l] = (expr);                                                                                           \
  }
#define OP1(name, expr)                                                                                            \
  static void name(sim_ptx_warp *w, const sim_ptx_insn *in) {                                                      \
    const uint64_t *a = ROW(1);                                                                                    \
    uint64_t *d = &w->R[(size_t)in->o[0].reg * SIM_PTX_WARP];                                                      \
    LANES d[l] = (expr);                                                                                           \
  }

/* a register row's bits as a float or double, and back (ptx_exec.h) */
#define f32 sim_ptx_f32
#define b32 sim_ptx_b32
#define f64 sim_ptx_f64
#define b64 sim_ptx_b64

OP2(add64, a[l] + b[l])
OP2(add32, (uint32_t)(a[l] + b[l]))
OP2(sub64, a[l] - b[l])
OP2(sub32, (uint32_t)(a[l] - b[l]))
OP2(and64, a[l] & b[l])
OP2(and32, (uint32_t)(a[l] & b[l]))
OP2(or64, a[l] | b[l])
OP2(or32, (uint32_t)(a[l] | b[l]))
OP2(xor64, a[l] ^ b[l])
OP2(xor32, (uint32_t)(a[l] ^ b[l]))
OP2(mul64, a[l] * b[l])
OP2(mul32, (uint32_t)(a[l] * b[l]))
#ifdef __SSE2__ /* pmuludq is this instruction, two lanes at a time */
static void mulwide_u32(sim_ptx_warp *w, const sim_ptx_insn *in) {
  const uint64_t *a = ROW(1), *b = ROW(2);
  uint64_t *d = &w->R[(size_t)in->o[0].reg * SIM_PTX_WARP];
  for (int l = 0; l < SIM_PTX_WARP; l += 2) {
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)&a[l]);
    __m128i y = _mm_loadu_si128((const __m128i *)(const void *)&b[l]);
    _mm_storeu_si128((__m128i *)(void *)&d[l], _mm_mul_epu32(x, y));
  }
}
#else
OP2(mulwide_u32, (uint64_t)(uint32_t)a[l] * (uint32_t)b[l])
#endif
OP2(mulwide_s32, (uint64_t)((int64_t)(int32_t)a[l] * (int32_t)b[l]))
OP3(mad64, a[l] * b[l] + x[l])
OP3(mad32, (uint32_t)(a[l] * b[l] + x[l]))
OP3(madwide_u32, (uint64_t)(uint32_t)a[l] * (uint32_t)b[l] + x[l])
OP3(madwide_s32, (uint64_t)((int64_t)(int32_t)a[l] * (int32_t)b[l]) + x[l])
OP2(min_u64, a[l] < b[l] ? a[l] : b[l])
OP2(max_u64, a[l] < b[l] ? b[l] : a[l])
OP2(min_s64, (int64_t)a[l] < (int64_t)b[l] ? a[l] : b[l])
OP2(max_s64, (int64_t)a[l] < (int64_t)b[l] ? b[l] : a[l])
OP2(min_u32, (uint32_t)a[l] < (uint32_t)b[l] ? (uint32_t)a[l] : (uint32_t)b[l])
OP2(max_u32, (uint32_t)a[l] < (uint32_t)b[l] ? (uint32_t)b[l] : (uint32_t)a[l])
OP2(min_s32, (int32_t)a[l] < (int32_t)b[l] ? (uint32_t)a[l] : (uint32_t)b[l])
OP2(max_s32, (int32_t)a[l] < (int32_t)b[l] ? (uint32_t)b[l] : (uint32_t)a[l])
OP1(neg64, -a[l])
OP1(neg32, (uint32_t)-a[l])
OP1(mov64, a[l])
OP1(mov32, (uint32_t)a[l])
OP1(cvt_s64_s32, (uint64_t)(int64_t)(int32_t)a[l])
OP1(cvt_to32, (uint32_t)a[l])
#ifdef __SSE2__ /* two lanes at a time, a NaN first operand given back quieted (SIM_PTX_F64_NAN_FIRST) */
#define FOP64(name, vop)                                                                                           \
  static void name(sim_ptx_warp *w, const sim_ptx_insn *in) {                                                      \
    const uint64_t *a = ROW(1), *b = ROW(2);                                                                       \
    uint64_t *d = &w->R[(size_t)in->o[0].reg * SIM_PTX_WARP];                                                      \
    for (int l = 0; l < SIM_PTX_WARP; l += 2) {                                                                    \
      __m128d x = _mm_loadu_pd((const double *)(const void *)&a[l]);                                               \
      __m128d y = _mm_loadu_pd((const double *)(const void *)&b[l]);                                               \
      __m128d nan = _mm_cmpunord_pd(x, x), r = vop(x, y);                                                          \
      r = _mm_or_pd(_mm_and_pd(nan, _mm_add_pd(x, x)), _mm_andnot_pd(nan, r));                                     \
      _mm_storeu_pd((double *)(void *)&d[l], r);                                                                   \
    }                                                                                                              \
  }
FOP64(fadd64, _mm_add_pd)
FOP64(fsub64, _mm_sub_pd)
FOP64(fmul64, _mm_mul_pd)
#else
OP2(fadd64, b64(SIM_PTX_F64_NAN_FIRST(f64(a[l]), f64(a[l]) + f64(b[l]))))
OP2(fsub64, b64(SIM_PTX_F64_NAN_FIRST(f64(a[l]), f64(a[l]) - f64(b[l]))))
OP2(fmul64, b64(SIM_PTX_F64_NAN_FIRST(f64(a[l]), f64(a[l]) * f64(b[l]))))
#endif
OP2(fadd32, b32(f32(a[l]) + f32(b[l])))
OP2(fsub32, b32(f32(a[l]) - f32(b[l])))
OP2(fmul32, b32(f32(a[l]) * f32(b[l])))

/* shifts by an immediate k below the width */
#define SHIFT(name, expr)                                                                                          \
  static void name(sim_ptx_warp *w, const sim_ptx_insn *in) {                                                      \
    const uint64_t *a = ROW(1);                                                                                    \
    uint64_t *d = &w->R[(size_t)in->o[0].reg * SIM_PTX_WARP];                                                      \
    unsigned k = (unsigned)in->o[2].imm;                                                                           \
    LANES d[l] = (expr);                                                                                           \
  }
SHIFT(shl64, a[l] << k)
SHIFT(shl32, (uint32_t)(a[l] << k))
SHIFT(shr_u64, a[l] >> k)
SHIFT(shr_u32, (uint32_t)a[l] >> k)

/* setp of integers into a predicate (no second destination, no boolean op) */
/* each lane's result a byte, then eight bytes of 0 or 1 to eight bits at once (the multiply gathers
 * byte k's bit to bit 56 + k) */
static inline uint32_t pack_bools(const uint8_t *v) {
  uint32_t t = 0;
  for (int k = 0; k < SIM_PTX_WARP; k += 8) {
    uint64_t q;
    memcpy(&q, v + k, 8);
    t |= (uint32_t)((q * 0x0102040810204080ull) >> 56) << k;
  }
  return t;
}
#define SETP(name, T, OP)                                                                                          \
  static void name(sim_ptx_warp *w, const sim_ptx_insn *in) {                                                      \
    const uint64_t *a = ROW(1), *b = ROW(2);                                                                       \
    uint8_t v[SIM_PTX_WARP];                                                                                       \
    LANES v[l] = (uint8_t)((T)a[l] OP (T)b[l]);                                                                    \
    w->P[in->o[0].reg] = pack_bools(v);                                                                            \
  }
SETP(eq64, uint64_t, ==)
SETP(ne64, uint64_t, !=)
SETP(lo64, uint64_t, <)
SETP(ls64, uint64_t, <=)
SETP(hi64, uint64_t, >)
SETP(hs64, uint64_t, >=)
SETP(lt_s64, int64_t, <)
SETP(le_s64, int64_t, <=)
SETP(gt_s64, int64_t, >)
SETP(ge_s64, int64_t, >=)
SETP(eq32, uint32_t, ==)
SETP(ne32, uint32_t, !=)
SETP(lo32, uint32_t, <)
SETP(ls32, uint32_t, <=)
SETP(hi32, uint32_t, >)
SETP(hs32, uint32_t, >=)
SETP(lt_s32, int32_t, <)
SETP(le_s32, int32_t, <=)
SETP(gt_s32, int32_t, >)
SETP(ge_s32, int32_t, >=)

/* selp: a where the predicate is set, else b, truncated to the type */
static void selp64(sim_ptx_warp *w, const sim_ptx_insn *in) {
  const uint64_t *a = ROW(1), *b = ROW(2);
  uint64_t *d = &w->R[(size_t)in->o[0].reg * SIM_PTX_WARP];
  uint32_t p = w->P[in->o[3].reg] ^ ((in->o[3].flags & 1) ? ~0u : 0u);
  LANES d[l] = (p >> l & 1) ? a[l] : b[l];
}
static void selp32(sim_ptx_warp *w, const sim_ptx_insn *in) {
  const uint64_t *a = ROW(1), *b = ROW(2);
  uint64_t *d = &w->R[(size_t)in->o[0].reg * SIM_PTX_WARP];
  uint32_t p = w->P[in->o[3].reg] ^ ((in->o[3].flags & 1) ? ~0u : 0u);
  LANES d[l] = (uint32_t)((p >> l & 1) ? a[l] : b[l]);
}

/* mov of %tid, %ntid, %ctaid or %nctaid (.x, .y or .z) */
static void mov_sreg(sim_ptx_warp *w, const sim_ptx_insn *in) {
  unsigned id = (unsigned)in->o[1].imm, k = id & 3;
  uint64_t *d = &w->R[(size_t)in->o[0].reg * SIM_PTX_WARP];
  if ((id & ~3u) == SIM_SR_TID) {
    LANES d[l] = w->tid[k][l];
    return;
  }
  uint32_t v = (id & ~3u) == SIM_SR_NTID ? w->ntid[k] : (id & ~3u) == SIM_SR_CTAID ? w->ctaid[k] : w->nctaid[k];
  LANES d[l] = v;
}

enum {
  F_NONE, F_ADD64, F_ADD32, F_SUB64, F_SUB32, F_AND64, F_AND32, F_OR64, F_OR32, F_XOR64, F_XOR32, F_MUL64, F_MUL32,
  F_MULWIDE_U32, F_MULWIDE_S32, F_MAD64, F_MAD32, F_MADWIDE_U32, F_MADWIDE_S32, F_MOV64, F_MOV32, F_CVT_S64_S32, F_CVT_TO32,
  F_FADD64, F_FSUB64, F_FMUL64, F_FADD32, F_FSUB32, F_FMUL32, F_SHL64, F_SHL32, F_SHR_U64, F_SHR_U32,
  F_EQ64, F_NE64, F_LO64, F_LS64, F_HI64, F_HS64, F_LT_S64, F_LE_S64, F_GT_S64, F_GE_S64,
  F_EQ32, F_NE32, F_LO32, F_LS32, F_HI32, F_HS32, F_LT_S32, F_LE_S32, F_GT_S32, F_GE_S32, F_SELP64, F_SELP32,
  F_MIN_U64, F_MAX_U64, F_MIN_S64, F_MAX_S64, F_MIN_U32, F_MAX_U32, F_MIN_S32, F_MAX_S32, F_NEG64, F_NEG32, F_MOV_SREG, F_COUNT
};

void (*const sim_ptx_fast_handlers[F_COUNT])(sim_ptx_warp *, const sim_ptx_insn *) = {
    [F_ADD64] = add64, [F_ADD32] = add32, [F_SUB64] = sub64, [F_SUB32] = sub32, [F_AND64] = and64,
    [F_AND32] = and32, [F_OR64] = or64, [F_OR32] = or32, [F_XOR64] = xor64, [F_XOR32] = xor32, [F_MUL64] = mul64,
    [F_MUL32] = mul32, [F_MULWIDE_U32] = mulwide_u32, [F_MULWIDE_S32] = mulwide_s32, [F_MAD64] = mad64,
    [F_MAD32] = mad32, [F_MADWIDE_U32] = madwide_u32, [F_MADWIDE_S32] = madwide_s32, [F_MOV64] = mov64,
    [F_MOV32] = mov32, [F_CVT_S64_S32] = cvt_s64_s32, [F_CVT_TO32] = cvt_to32, [F_FADD64] = fadd64, [F_FSUB64] = fsub64, [F_FMUL64] = fmul64,
    [F_FADD32] = fadd32, [F_FSUB32] = fsub32, [F_FMUL32] = fmul32, [F_SHL64] = shl64, [F_SHL32] = shl32,
    [F_SHR_U64] = shr_u64, [F_SHR_U32] = shr_u32, [F_EQ64] = eq64, [F_NE64] = ne64, [F_LO64] = lo64,
    [F_LS64] = ls64, [F_HI64] = hi64, [F_HS64] = hs64, [F_LT_S64] = lt_s64, [F_LE_S64] = le_s64, [F_GT_S64] = gt_s64,
    [F_GE_S64] = ge_s64, [F_EQ32] = eq32, [F_NE32] = ne32, [F_LO32] = lo32, [F_LS32] = ls32, [F_HI32] = hi32,
    [F_HS32] = hs32, [F_LT_S32] = lt_s32, [F_LE_S32] = le_s32, [F_GT_S32] = gt_s32, [F_GE_S32] = ge_s32,
    [F_SELP64] = selp64, [F_SELP32] = selp32, [F_MIN_U64] = min_u64, [F_MAX_U64] = max_u64, [F_MIN_S64] = min_s64,
    [F_MAX_S64] = max_s64, [F_MIN_U32] = min_u32, [F_MAX_U32] = max_u32, [F_MIN_S32] = min_s32, [F_MAX_S32] = max_s32,
    [F_NEG64] = neg64, [F_NEG32] = neg32, [F_MOV_SREG] = mov_sreg,
};

/* Whether operand k is a register or an immediate with its row. */
static int row_ok(const sim_ptx_func *f, const sim_ptx_insn *in, int k) {
  return in->o[k].kind == SIM_K_REG || (in->o[k].kind == SIM_K_IMM && f->imm_rows);
}

/* The handler of integer compare `cmp` of a 32- or 64-bit type, or 0. */
static int setp_handler(const sim_ptx_insn *in, int size, int sgn) {
  static const int u64[] = {[SIM_CMP_EQ] = F_EQ64, [SIM_CMP_NE] = F_NE64, [SIM_CMP_LO] = F_LO64, [SIM_CMP_LS] = F_LS64,
                            [SIM_CMP_HI] = F_HI64, [SIM_CMP_HS] = F_HS64, [SIM_CMP_LT] = F_LO64, [SIM_CMP_LE] = F_LS64,
                            [SIM_CMP_GT] = F_HI64, [SIM_CMP_GE] = F_HS64};
  static const int u32[] = {[SIM_CMP_EQ] = F_EQ32, [SIM_CMP_NE] = F_NE32, [SIM_CMP_LO] = F_LO32, [SIM_CMP_LS] = F_LS32,
                            [SIM_CMP_HI] = F_HI32, [SIM_CMP_HS] = F_HS32, [SIM_CMP_LT] = F_LO32, [SIM_CMP_LE] = F_LS32,
                            [SIM_CMP_GT] = F_HI32, [SIM_CMP_GE] = F_HS32};
  int cmp = in->cmp;
  if (cmp >= (int)(sizeof u64 / sizeof *u64) || !u64[cmp]) return 0;
  if (sgn && (cmp == SIM_CMP_LT || cmp == SIM_CMP_LE || cmp == SIM_CMP_GT || cmp == SIM_CMP_GE)) {
    int i = cmp == SIM_CMP_LT ? 0 : cmp == SIM_CMP_LE ? 1 : cmp == SIM_CMP_GT ? 2 : 3;
    return size == 8 ? F_LT_S64 + i : F_LT_S32 + i;
  }
  return size == 8 ? u64[cmp] : u32[cmp];
}

static int choose(const sim_ptx_func *f, const sim_ptx_insn *in) {
  int t = in->type, size = sim_ptx_type_size(t), sgn = sim_ptx_type_is_signed(t), w64 = size == 8;
  int is_int = t >= SIM_T_B8 && t <= SIM_T_S64;
  if ((in->flags && !(in->op == SIM_OP_CVTA && in->flags == SIM_F_TO)) ||
      (in->o[0].kind != SIM_K_REG && in->op != SIM_OP_SETP))
    return F_NONE;
  switch (in->op) {
  case SIM_OP_ADD: case SIM_OP_SUB: case SIM_OP_MUL:
    if (in->nops != 3 || !row_ok(f, in, 1) || !row_ok(f, in, 2)) return F_NONE;
    if (t == SIM_T_F64 || t == SIM_T_F32) {
      if (in->rnd != SIM_RND_NONE && in->rnd != SIM_RND_RN) return F_NONE;
      int base = t == SIM_T_F64 ? F_FADD64 : F_FADD32;
      return base + (in->op == SIM_OP_ADD ? 0 : in->op == SIM_OP_SUB ? 1 : 2);
    }
    if (!is_int || (size != 4 && size != 8)) return F_NONE;
    if (in->op == SIM_OP_MUL) {
      if (in->mode == SIM_MODE_LO) return w64 ? F_MUL64 : F_MUL32;
      if (in->mode == SIM_MODE_WIDE && size == 4) return sgn ? F_MULWIDE_S32 : F_MULWIDE_U32;
      return F_NONE;
    }
    return in->op == SIM_OP_ADD ? (w64 ? F_ADD64 : F_ADD32) : (w64 ? F_SUB64 : F_SUB32);
  case SIM_OP_MAD:
    if (!is_int || in->nops != 4 || !row_ok(f, in, 1) || !row_ok(f, in, 2) || !row_ok(f, in, 3)) return F_NONE;
    if (in->mode == SIM_MODE_LO && (size == 4 || size == 8)) return w64 ? F_MAD64 : F_MAD32;
    if (in->mode == SIM_MODE_WIDE && size == 4) return sgn ? F_MADWIDE_S32 : F_MADWIDE_U32;
    return F_NONE;
  case SIM_OP_AND: case SIM_OP_OR: case SIM_OP_XOR:
    if (!is_int || (size != 4 && size != 8) || in->nops != 3 || !row_ok(f, in, 1) || !row_ok(f, in, 2)) return F_NONE;
    return (in->op == SIM_OP_AND ? F_AND64 : in->op == SIM_OP_OR ? F_OR64 : F_XOR64) + (w64 ? 0 : 1);
  case SIM_OP_SHL: case SIM_OP_SHR:
    if (!is_int || (size != 4 && size != 8) || in->nops != 3 || !row_ok(f, in, 1) || in->o[2].kind != SIM_K_IMM ||
        (uint64_t)in->o[2].imm >= (uint64_t)size * 8 || (in->op == SIM_OP_SHR && sgn))
      return F_NONE;
    return in->op == SIM_OP_SHL ? (w64 ? F_SHL64 : F_SHL32) : (w64 ? F_SHR_U64 : F_SHR_U32);
  case SIM_OP_MIN: case SIM_OP_MAX: {
    if (!is_int || (size != 4 && size != 8) || in->nops != 3 || !row_ok(f, in, 1) || !row_ok(f, in, 2)) return F_NONE;
    int k = (in->op == SIM_OP_MAX) + 2 * sgn; /* min, max; then signed */
    return (w64 ? F_MIN_U64 : F_MIN_U32) + k;
  }
  case SIM_OP_NEG:
    if (!is_int || (size != 4 && size != 8) || in->nops != 2 || !row_ok(f, in, 1)) return F_NONE;
    return w64 ? F_NEG64 : F_NEG32;
  case SIM_OP_CVTA: /* global and const addresses are host addresses either way (ptx_ops_mem.c) */
    if (!is_int || size != 8 || in->nops != 2 || !row_ok(f, in, 1) ||
        (in->space != SIM_S_GLOBAL && in->space != SIM_S_CONST))
      return F_NONE;
    return F_MOV64;
  case SIM_OP_MOV:
    if (is_int && (size == 4 || size == 8) && in->nops == 2 && in->o[1].kind == SIM_K_SREG &&
        in->o[1].imm >= 0 && in->o[1].imm < SIM_SR_LANEID && (in->o[1].imm & 3) < 3)
      return F_MOV_SREG;
    if (!is_int || (size != 4 && size != 8) || in->nops != 2 || !row_ok(f, in, 1)) return F_NONE;
    return w64 ? F_MOV64 : F_MOV32;
  case SIM_OP_CVT: { /* between 32- and 64-bit integers */
    int t2 = in->type2, s2 = sim_ptx_type_size(t2);
    if (in->nops != 2 || !row_ok(f, in, 1) || in->rnd != SIM_RND_NONE || !is_int || t2 < SIM_T_B8 || t2 > SIM_T_S64)
      return F_NONE;
    if (size == 8 && s2 == 4) return sim_ptx_type_is_signed(t2) ? F_CVT_S64_S32 : F_CVT_TO32; /* extended */
    if (size == 4 && (s2 == 4 || s2 == 8)) return F_CVT_TO32;                                   /* truncated */
    if (size == 8 && s2 == 8) return F_MOV64;
    return F_NONE;
  }
  case SIM_OP_SETP:
    if (!is_int || (size != 4 && size != 8) || in->aop || in->nops != 3 || in->o[5].kind == SIM_K_PRED ||
        !row_ok(f, in, 1) || !row_ok(f, in, 2))
      return F_NONE;
    return setp_handler(in, size, sgn);
  case SIM_OP_SELP:
    if (!is_int || (size != 4 && size != 8) || in->nops != 4 || !row_ok(f, in, 1) || !row_ok(f, in, 2) ||
        in->o[3].kind != SIM_K_PRED)
      return F_NONE;
    return w64 ? F_SELP64 : F_SELP32;
  default:
    return F_NONE;
  }
}

void sim_ptx_choose_fast(sim_ptx_func *f) {
  for (uint32_t i = 0; i < f->ncode; i++) f->code[i].fast = (uint8_t)choose(f, &f->code[i]);
}
