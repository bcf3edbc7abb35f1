/*
 * ptx_ops_int.c -- integer, bit and predicate instructions, and mov, over
 * a warp's active lanes. Results are stored truncated to the type's width.
 * Integer division by zero, which PTX leaves to the machine, gives all
 * ones (div) and the dividend (rem).
 */

#include "ptx_exec.h"

#include <string.h>

static uint64_t hi_mul(uint64_t a, uint64_t b, int size, int sgn) {
  if (size == 8) {
    if (sgn) return (uint64_t)(((__int128)(int64_t)a * (__int128)(int64_t)b) >> 64);
    return (uint64_t)(((unsigned __int128)a * b) >> 64);
  }
  int bits = size * 8;
  if (sgn) return (uint64_t)((sim_ptx_sext(a, size) * sim_ptx_sext(b, size)) >> bits);
  return (sim_ptx_trunc(a, size) * sim_ptx_trunc(b, size)) >> bits;
}

static uint64_t wide_mul(uint64_t a, uint64_t b, int size, int sgn) {
  if (sgn) return (uint64_t)(sim_ptx_sext(a, size) * sim_ptx_sext(b, size));
  return sim_ptx_trunc(a, size) * sim_ptx_trunc(b, size);
}

/* dp4a: c plus the products of a's and b's four bytes; dp2a: of a's two
 * halves and b's bytes 0 and 1 (.lo) or 2 and 3 (.hi); each part signed
 * where its type is .s32, the sum wrapping to 32 bits. */
static uint32_t dot(int op, int mode, uint32_t a, uint32_t b, uint32_t c, int sa, int sb) {
  uint32_t d = c;
  int n = op == SIM_OP_DP4A ? 4 : 2, boff = mode == SIM_MODE_HI ? 2 : 0;
  for (int i = 0; i < n; i++) {
    int32_t x = op == SIM_OP_DP4A ? (sa ? (int8_t)(a >> (8 * i)) : (int32_t)(uint8_t)(a >> (8 * i)))
                                  : (sa ? (int16_t)(a >> (16 * i)) : (int32_t)(uint16_t)(a >> (16 * i)));
    uint32_t bb = b >> (8 * (i + (op == SIM_OP_DP4A ? 0 : boff)));
    int32_t y = sb ? (int8_t)bb : (int32_t)(uint8_t)bb;
    d += (uint32_t)((int64_t)x * y);
  }
  return d;
}

static uint64_t sat32(int64_t v) { return (uint64_t)(uint32_t)(v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : v); }

static uint64_t bfe(uint64_t a, uint32_t pos, uint32_t len, int size, int sgn) {
  int msb = size * 8 - 1;
  pos &= 0xff;
  len &= 0xff;
  int top = (int)(pos + len) - 1 > msb ? msb : (int)(pos + len) - 1;
  uint64_t sbit = (!sgn || len == 0) ? 0 : (a >> top) & 1;
  uint64_t d = 0;
  for (int i = 0; i <= msb; i++) {
    uint64_t bit = ((uint32_t)i < len && pos + (uint32_t)i <= (uint32_t)msb) ? (a >> (pos + (uint32_t)i)) & 1 : sbit;
    d |= bit << i;
  }
  return d;
}

static uint64_t bfi(uint64_t f, uint64_t b, uint32_t pos, uint32_t len, int size) {
  int msb = size * 8 - 1;
  pos &= 0xff;
  len &= 0xff;
  for (uint32_t i = 0; i < len && pos + i <= (uint32_t)msb; i++) b = (b & ~(1ull << (pos + i))) | (((f >> i) & 1) << (pos + i));
  return b;
}

static uint64_t brev(uint64_t a, int size) {
  uint64_t d = 0;
  for (int i = 0; i < size * 8; i++) d |= ((a >> i) & 1) << (size * 8 - 1 - i);
  return d;
}

static uint64_t bfind(uint64_t a, int size, int sgn, int shiftamt) {
  int bits = size * 8;
  a = sim_ptx_trunc(a, size);
  if (sgn && (a >> (bits - 1) & 1)) a = sim_ptx_trunc(~a, size);
  if (!a) return 0xffffffffu;
  int pos = 63 - __builtin_clzll(a);
  return (uint32_t)(shiftamt ? bits - 1 - pos : pos);
}

static uint64_t prmt(uint32_t a, uint32_t b, uint32_t c) {
  uint64_t t = (uint64_t)b << 32 | a;
  uint32_t d = 0;
  for (int i = 0; i < 4; i++) {
    uint32_t sel = c >> (4 * i) & 0xf, byte = (uint32_t)(t >> ((sel & 7) * 8)) & 0xff;
    if (sel & 8) byte = byte & 0x80 ? 0xff : 0;
    d |= byte << (8 * i);
  }
  return d;
}

static uint64_t divide(uint64_t a, uint64_t b, int size, int sgn, int rem) {
  if (sgn) {
    int64_t x = sim_ptx_sext(a, size), y = sim_ptx_sext(b, size);
    if (y == 0) return rem ? (uint64_t)x : ~0ull;
    if (y == -1) return rem ? 0 : (uint64_t)-(uint64_t)x; /* INT_MIN / -1 wraps */
    return (uint64_t)(rem ? x % y : x / y);
  }
  uint64_t x = sim_ptx_trunc(a, size), y = sim_ptx_trunc(b, size);
  if (y == 0) return rem ? x : ~0ull;
  return rem ? x % y : x / y;
}

/* Predicate logic: masks of the 32 lanes at once. */
static uint32_t pmask(const sim_ptx_warp *w, const sim_ptx_operand *o) {
  if (o->kind == SIM_K_IMM) return o->imm ? ~0u : 0u;
  return (o->flags & 1) ? ~w->P[o->reg] : w->P[o->reg];
}

static int pred_op(sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m) {
  uint32_t a = pmask(w, &in->o[1]), v;
  switch (in->op) {
  case SIM_OP_MOV: v = a; break;
  case SIM_OP_NOT: v = ~a; break;
  case SIM_OP_AND: v = a & pmask(w, &in->o[2]); break;
  case SIM_OP_OR: v = a | pmask(w, &in->o[2]); break;
  case SIM_OP_XOR: v = a ^ pmask(w, &in->o[2]); break;
  default: v = 0; break;
  }
  uint32_t *d = &w->P[in->o[0].reg];
  *d = (*d & ~m) | (v & m);
  return 0;
}

static int mov(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m) {
  int size = sim_ptx_type_size(in->type);
  const sim_ptx_operand *d = &in->o[0], *s = &in->o[1];
  const sim_ptx_func *f = w->f;
  uint64_t buf[SIM_PTX_WARP];
  if (d->kind == SIM_K_VEC) { /* mov.b64 {lo, hi}, x */
    int n = (int)d->imm, pw = size / n;
    const uint64_t *a = sim_ptx_src(c, w, s, buf);
    uint64_t tmp[SIM_PTX_WARP];
    memcpy(tmp, a, sizeof tmp);
    for (int k = 0; k < n; k++) {
      uint32_t r = f->vec[d->reg + (uint32_t)k];
      if (r == UINT32_MAX) continue;
      uint64_t *row = &w->R[(size_t)r * SIM_PTX_WARP];
      SIM_LANES(m) row[l] = sim_ptx_trunc(tmp[l] >> (k * pw * 8), pw);
    }
    return 0;
  }
  uint64_t *row = &w->R[(size_t)d->reg * SIM_PTX_WARP];
  if (s->kind == SIM_K_VEC) { /* mov.b64 x, {lo, hi} */
    int n = (int)s->imm, pw = size / n;
    uint64_t acc[SIM_PTX_WARP] = {0};
    for (int k = 0; k < n; k++) {
      uint32_t r = f->vec[s->reg + (uint32_t)k];
      const uint64_t *src = &w->R[(size_t)r * SIM_PTX_WARP];
      SIM_LANES(m) acc[l] |= sim_ptx_trunc(src[l], pw) << (k * pw * 8);
    }
    SIM_LANES(m) row[l] = acc[l];
    return 0;
  }
  const uint64_t *a = sim_ptx_src(c, w, s, buf);
  if (m == 0xffffffffu) { /* a whole warp: plain loops */
    uint64_t mask = size >= 8 ? ~0ull : (1ull << (size * 8)) - 1;
    for (int l = 0; l < SIM_PTX_WARP; l++) row[l] = a[l] & mask;
  } else if (size == 8) {
    SIM_LANES(m) row[l] = a[l];
  } else {
    SIM_LANES(m) row[l] = sim_ptx_trunc(a[l], size);
  }
  return 0;
}

/* The commonest forms (address arithmetic) over a whole warp, in plain loops
 * the compiler can vectorize: 1 when done, 0 for the general path (which
 * the forms not taken leave before writing). Each lane's result goes
 * straight to the destination row after that lane's sources are read: the
 * destination may be a source. */
static int full_warp(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in) {
  int size = sim_ptx_type_size(in->type);
  if (in->flags || in->nops < 3) return 0;
  uint64_t ba[SIM_PTX_WARP], bb[SIM_PTX_WARP], bc[SIM_PTX_WARP];
  const uint64_t *a = sim_ptx_src(c, w, &in->o[1], ba), *b = sim_ptx_src(c, w, &in->o[2], bb);
  uint64_t *t = &w->R[(size_t)in->o[0].reg * SIM_PTX_WARP], mask = size == 8 ? ~0ull : (1ull << (size * 8)) - 1;
  int sgn = sim_ptx_type_is_signed(in->type), bits = size * 8;
  switch (in->op) {
  case SIM_OP_ADD: for (int l = 0; l < SIM_PTX_WARP; l++) t[l] = (a[l] + b[l]) & mask; break;
  case SIM_OP_SUB: for (int l = 0; l < SIM_PTX_WARP; l++) t[l] = (a[l] - b[l]) & mask; break;
  case SIM_OP_AND: for (int l = 0; l < SIM_PTX_WARP; l++) t[l] = (a[l] & b[l]) & mask; break;
  case SIM_OP_OR: for (int l = 0; l < SIM_PTX_WARP; l++) t[l] = (a[l] | b[l]) & mask; break;
  case SIM_OP_XOR: for (int l = 0; l < SIM_PTX_WARP; l++) t[l] = (a[l] ^ b[l]) & mask; break;
  case SIM_OP_SHL:
    if (in->o[2].kind == SIM_K_IMM && (uint64_t)in->o[2].imm < (uint64_t)bits) { /* one count: a vector shift */
      unsigned k = (unsigned)in->o[2].imm;
      for (int l = 0; l < SIM_PTX_WARP; l++) t[l] = (a[l] << k) & mask;
      break;
    }
    for (int l = 0; l < SIM_PTX_WARP; l++) t[l] = (uint32_t)b[l] >= (uint32_t)bits ? 0 : (a[l] << (uint32_t)b[l]) & mask;
    break;
  case SIM_OP_SHR:
    if (sgn && in->o[2].kind == SIM_K_IMM && (uint64_t)in->o[2].imm < (uint64_t)bits) { /* arithmetic */
      unsigned k = (unsigned)in->o[2].imm, up = 64 - (unsigned)bits;
      for (int l = 0; l < SIM_PTX_WARP; l++) t[l] = (uint64_t)((int64_t)(a[l] << up) >> (up + k)) & mask;
      break;
    }
    if (sgn) return 0;
    if (in->o[2].kind == SIM_K_IMM && (uint64_t)in->o[2].imm < (uint64_t)bits) {
      unsigned k = (unsigned)in->o[2].imm;
      for (int l = 0; l < SIM_PTX_WARP; l++) t[l] = (a[l] & mask) >> k;
      break;
    }
    for (int l = 0; l < SIM_PTX_WARP; l++) t[l] = (uint32_t)b[l] >= (uint32_t)bits ? 0 : (a[l] & mask) >> (uint32_t)b[l];
    break;
  case SIM_OP_PRMT: { /* a selector the same for every lane: four byte moves */
    if (in->o[3].kind != SIM_K_IMM) return 0;
    uint32_t sel = (uint32_t)in->o[3].imm;
    uint64_t acc[SIM_PTX_WARP] = {0};
    for (int i = 0; i < 4; i++) {
      unsigned s = sel >> (4 * i) & 0xf, sh = (s & 7) * 8;
      if (s & 8)
        for (int l = 0; l < SIM_PTX_WARP; l++)
          acc[l] |= ((0 - (((b[l] << 32 | (uint32_t)a[l]) >> sh) >> 7 & 1)) & 0xff) << (8 * i);
      else
        for (int l = 0; l < SIM_PTX_WARP; l++) acc[l] |= (((b[l] << 32 | (uint32_t)a[l]) >> sh) & 0xff) << (8 * i);
    }
    memcpy(t, acc, sizeof acc);
    break;
  }
  case SIM_OP_MUL: case SIM_OP_MAD: {
    /* mad's addend read before any lane's result is written (d may be it) */
    const uint64_t *x = in->op == SIM_OP_MAD ? sim_ptx_src(c, w, &in->o[3], bc) : NULL;
    if (in->mode == SIM_MODE_WIDE && size == 4) {
      if (x && sgn) for (int l = 0; l < SIM_PTX_WARP; l++) t[l] = (uint64_t)((int64_t)(int32_t)a[l] * (int32_t)b[l]) + x[l];
      else if (x) for (int l = 0; l < SIM_PTX_WARP; l++) t[l] = (uint64_t)(uint32_t)a[l] * (uint32_t)b[l] + x[l];
      else if (sgn) for (int l = 0; l < SIM_PTX_WARP; l++) t[l] = (uint64_t)((int64_t)(int32_t)a[l] * (int32_t)b[l]);
      else for (int l = 0; l < SIM_PTX_WARP; l++) t[l] = (uint64_t)(uint32_t)a[l] * (uint32_t)b[l];
    } else if (in->mode == SIM_MODE_LO) {
      if (x) for (int l = 0; l < SIM_PTX_WARP; l++) t[l] = (a[l] * b[l] + x[l]) & mask;
      else for (int l = 0; l < SIM_PTX_WARP; l++) t[l] = (a[l] * b[l]) & mask;
    } else {
      return 0;
    }
    break;
  }
  default:
    return 0;
  }
  return 1;
}

int sim_ptx_op_int(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m) {
  if (in->type == SIM_T_PRED) return pred_op(w, in, m);
  if (in->op == SIM_OP_MOV) return mov(c, w, in, m);
  if (m == 0xffffffffu && full_warp(c, w, in)) return 0;
  int size = sim_ptx_type_size(in->type), sgn = sim_ptx_type_is_signed(in->type), bits = size * 8;
  uint64_t ba[SIM_PTX_WARP], bb[SIM_PTX_WARP], bc[SIM_PTX_WARP], bd[SIM_PTX_WARP];
  const uint64_t *a = sim_ptx_src(c, w, &in->o[1], ba);
  const uint64_t *b = in->nops > 2 ? sim_ptx_src(c, w, &in->o[2], bb) : ba;
  const uint64_t *x = in->nops > 3 ? sim_ptx_src(c, w, &in->o[3], bc) : ba;
  uint64_t *d = &w->R[(size_t)in->o[0].reg * SIM_PTX_WARP];
  int dsize = size;
  switch (in->op) {
  case SIM_OP_ADD:
    if (in->flags & SIM_F_SAT) {
      SIM_LANES(m) d[l] = sat32((int64_t)(int32_t)a[l] + (int32_t)b[l]);
      return 0;
    }
    if (size == 4) {
      SIM_LANES(m) d[l] = (uint32_t)(a[l] + b[l]);
      return 0;
    }
    SIM_LANES(m) bd[l] = a[l] + b[l];
    break;
  case SIM_OP_SUB:
    if (in->flags & SIM_F_SAT) {
      SIM_LANES(m) d[l] = sat32((int64_t)(int32_t)a[l] - (int32_t)b[l]);
      return 0;
    }
    SIM_LANES(m) bd[l] = a[l] - b[l];
    break;
  case SIM_OP_MUL: case SIM_OP_MAD:
    if (in->mode == SIM_MODE_WIDE) dsize = size * 2;
    SIM_LANES(m) {
      uint64_t p = in->mode == SIM_MODE_HI ? hi_mul(a[l], b[l], size, sgn)
                   : in->mode == SIM_MODE_WIDE ? wide_mul(a[l], b[l], size, sgn) : a[l] * b[l];
      bd[l] = in->op == SIM_OP_MAD ? p + x[l] : p;
    }
    if (in->op == SIM_OP_MAD && (in->flags & SIM_F_SAT) && size == 4) { /* mad.hi.sat.s32 */
      SIM_LANES(m) d[l] = sat32((int64_t)(int32_t)hi_mul(a[l], b[l], 4, 1) + (int32_t)x[l]);
      return 0;
    }
    break;
  case SIM_OP_MUL24: case SIM_OP_MAD24:
    SIM_LANES(m) {
      int64_t p = sgn ? sim_ptx_sext(a[l] << 8, 4) / 256 * (sim_ptx_sext(b[l] << 8, 4) / 256)
                      : (int64_t)((a[l] & 0xffffff) * (b[l] & 0xffffff));
      uint64_t r = in->mode == SIM_MODE_HI ? (uint64_t)p >> 16 : (uint64_t)p;
      bd[l] = in->op == SIM_OP_MAD24 ? r + x[l] : r;
    }
    break;
  case SIM_OP_DIV: SIM_LANES(m) bd[l] = divide(a[l], b[l], size, sgn, 0); break;
  case SIM_OP_REM: SIM_LANES(m) bd[l] = divide(a[l], b[l], size, sgn, 1); break;
  case SIM_OP_ABS: SIM_LANES(m) bd[l] = sim_ptx_sext(a[l], size) < 0 ? (uint64_t)-sim_ptx_sext(a[l], size) : a[l]; break;
  case SIM_OP_NEG: SIM_LANES(m) bd[l] = (uint64_t)-a[l]; break;
  case SIM_OP_MIN: case SIM_OP_MAX:
    SIM_LANES(m) {
      int lt = sgn ? sim_ptx_sext(a[l], size) < sim_ptx_sext(b[l], size) : sim_ptx_trunc(a[l], size) < sim_ptx_trunc(b[l], size);
      bd[l] = (lt == (in->op == SIM_OP_MIN)) ? a[l] : b[l];
    }
    break;
  case SIM_OP_AND: SIM_LANES(m) bd[l] = a[l] & b[l]; break;
  case SIM_OP_OR: SIM_LANES(m) bd[l] = a[l] | b[l]; break;
  case SIM_OP_XOR: SIM_LANES(m) bd[l] = a[l] ^ b[l]; break;
  case SIM_OP_NOT: SIM_LANES(m) bd[l] = ~a[l]; break;
  case SIM_OP_CNOT: SIM_LANES(m) bd[l] = sim_ptx_trunc(a[l], size) == 0; break;
  case SIM_OP_SHL: SIM_LANES(m) bd[l] = (uint32_t)b[l] >= (uint32_t)bits ? 0 : a[l] << (uint32_t)b[l]; break;
  case SIM_OP_SHR:
    SIM_LANES(m) {
      uint32_t n = (uint32_t)b[l] >= (uint32_t)bits ? (uint32_t)bits - 1 + !sgn : (uint32_t)b[l];
      bd[l] = sgn ? (uint64_t)(sim_ptx_sext(a[l], size) >> (n > 63 ? 63 : n))
                  : (n >= (uint32_t)bits ? 0 : sim_ptx_trunc(a[l], size) >> n);
    }
    break;
  case SIM_OP_BFE: SIM_LANES(m) bd[l] = bfe(sim_ptx_trunc(a[l], size), (uint32_t)b[l], (uint32_t)x[l], size, sgn); break;
  case SIM_OP_BFI: {
    const uint64_t *y = sim_ptx_src(c, w, &in->o[4], bd);
    uint64_t t[SIM_PTX_WARP];
    SIM_LANES(m) t[l] = bfi(a[l], b[l], (uint32_t)x[l], (uint32_t)y[l], size);
    SIM_LANES(m) d[l] = sim_ptx_trunc(t[l], size);
    return 0;
  }
  case SIM_OP_POPC: dsize = 4; SIM_LANES(m) bd[l] = (uint64_t)__builtin_popcountll(sim_ptx_trunc(a[l], size)); break;
  case SIM_OP_CLZ:
    dsize = 4;
    SIM_LANES(m) {
      uint64_t v = sim_ptx_trunc(a[l], size);
      bd[l] = v ? (uint64_t)(__builtin_clzll(v) - (64 - bits)) : (uint64_t)bits;
    }
    break;
  case SIM_OP_BREV: SIM_LANES(m) bd[l] = brev(a[l], size); break;
  case SIM_OP_BFIND: dsize = 4; SIM_LANES(m) bd[l] = bfind(a[l], size, sgn, in->flags & SIM_F_SHIFTAMT); break;
  case SIM_OP_PRMT: SIM_LANES(m) bd[l] = prmt((uint32_t)a[l], (uint32_t)b[l], (uint32_t)x[l]); break;
  case SIM_OP_LOP3: {
    const uint64_t *lut = sim_ptx_src(c, w, &in->o[4], bd);
    uint64_t t[SIM_PTX_WARP];
    SIM_LANES(m) {
      uint64_t r = 0;
      for (int i = 0; i < bits; i++) {
        int idx = (int)((a[l] >> i & 1) << 2 | (b[l] >> i & 1) << 1 | (x[l] >> i & 1));
        r |= (lut[l] >> idx & 1) << i;
      }
      t[l] = r;
    }
    SIM_LANES(m) d[l] = sim_ptx_trunc(t[l], size);
    return 0;
  }
  case SIM_OP_DP4A: case SIM_OP_DP2A: {
    int sa = sim_ptx_type_is_signed(in->type), sb = sim_ptx_type_is_signed(in->type2);
    SIM_LANES(m) bd[l] = dot(in->op, in->mode, (uint32_t)a[l], (uint32_t)b[l], (uint32_t)x[l], sa, sb);
    break;
  }
  case SIM_OP_SHF:
    SIM_LANES(m) {
      uint32_t n = (uint32_t)x[l];
      n = (in->flags & SIM_F_CLAMP) ? (n > 32 ? 32 : n) : n & 31;
      uint64_t v = (uint64_t)(uint32_t)b[l] << 32 | (uint32_t)a[l];
      bd[l] = in->mode == SIM_MODE_L ? (uint32_t)((v << n) >> 32) : (uint32_t)(v >> n);
    }
    break;
  default:
    return sim_ptx_fault(c, w, in, __builtin_ctz(m), "internal: no integer form of opcode %d", in->op);
  }
  SIM_LANES(m) d[l] = sim_ptx_trunc(bd[l], dsize);
  return 0;
}
