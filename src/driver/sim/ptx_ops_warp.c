/*
 * ptx_ops_warp.c -- instructions across a warp's lanes: shfl.sync (up,
 * down, bfly, idx with the clamp and segment mask of operand c), vote.sync
 * (all, any, uni, ballot), redux.sync (add, min, max, and, or, xor over
 * the lanes), match.sync (any, all) and activemask. A lane reads another's register
 * as it was before the instruction; reading a lane that does not take part
 * gives that lane's register as it is (the GPU leaves it undefined).
 */

#include "ptx_exec.h"

#include <string.h>

static int shfl(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m) {
  uint64_t ba[SIM_PTX_WARP], bb[SIM_PTX_WARP], bc[SIM_PTX_WARP], bm[SIM_PTX_WARP], src[SIM_PTX_WARP];
  const uint64_t *a = sim_ptx_src(c, w, &in->o[1], ba), *b = sim_ptx_src(c, w, &in->o[2], bb);
  const uint64_t *x = sim_ptx_src(c, w, &in->o[3], bc), *mm = sim_ptx_src(c, w, &in->o[4], bm);
  memcpy(src, a, sizeof src);
  uint64_t *d = &w->R[(size_t)in->o[0].reg * SIM_PTX_WARP];
  uint32_t p = 0;
  SIM_LANES(m) {
    if (!((uint32_t)mm[l] >> l & 1))
      return sim_ptx_fault(c, w, in, l, "shfl.sync by a lane that is not in its member mask 0x%08x", (uint32_t)mm[l]);
    uint32_t bval = (uint32_t)b[l] & 31, cval = (uint32_t)x[l] & 31, seg = ((uint32_t)x[l] >> 8) & 31;
    uint32_t lane = (uint32_t)l, maxl = (lane & seg) | (cval & ~seg), minl = lane & seg;
    int32_t j;
    int ok;
    switch (in->mode) {
    case SIM_MODE_UP: j = (int32_t)lane - (int32_t)bval; ok = j >= (int32_t)maxl; break;
    case SIM_MODE_DOWN: j = (int32_t)(lane + bval); ok = j <= (int32_t)maxl; break;
    case SIM_MODE_BFLY: j = (int32_t)(lane ^ bval); ok = j <= (int32_t)maxl; break;
    default: j = (int32_t)(minl | (bval & ~seg)); ok = j <= (int32_t)maxl; break;
    }
    if (!ok) j = (int32_t)lane;
    d[l] = (uint32_t)src[j & 31];
    p |= (uint32_t)ok << l;
  }
  if (in->o[5].kind == SIM_K_PRED) {
    uint32_t *q = &w->P[in->o[5].reg];
    *q = (*q & ~m) | (p & m);
  }
  return 0;
}

/* redux.sync and match.sync: every lane taking part is in its member
 * mask; a lane's result is over the lanes of its mask that take part (lanes
 * naming different masks form separate groups). */
static int redux_match(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m) {
  uint64_t ba[SIM_PTX_WARP], bm[SIM_PTX_WARP], r[SIM_PTX_WARP];
  const uint64_t *a = sim_ptx_src(c, w, &in->o[1], ba), *mm = sim_ptx_src(c, w, &in->o[2], bm);
  SIM_LANES(m) if (!((uint32_t)mm[l] >> l & 1))
    return sim_ptx_fault(c, w, in, l, "%s.sync by a lane that is not in its member mask 0x%08x",
                         in->op == SIM_OP_REDUX ? "redux" : "match", (uint32_t)mm[l]);
  uint64_t *d = &w->R[(size_t)in->o[0].reg * SIM_PTX_WARP];
  uint64_t width = in->type == SIM_T_B64 ? ~0ull : 0xffffffffull;
  int sgn = in->type == SIM_T_S32;
  uint32_t all = 0;
  SIM_LANES(m) {
    uint32_t group = m & (uint32_t)mm[l], acc = (uint32_t)a[l], same = 0;
    for (int k = 0; k < SIM_PTX_WARP; k++) {
      if (!(group >> k & 1u)) continue;
      uint32_t v = (uint32_t)a[k];
      if ((a[k] & width) == (a[l] & width)) same |= 1u << k;
      switch (in->aop) {
      case SIM_AOP_ADD: acc = k == l ? acc : acc + v; break;
      case SIM_AOP_AND: acc &= v; break;
      case SIM_AOP_OR: acc |= v; break;
      case SIM_AOP_XOR: acc = k == l ? acc : acc ^ v; break;
      case SIM_AOP_MIN: acc = (sgn ? (int32_t)v < (int32_t)acc : v < acc) ? v : acc; break;
      case SIM_AOP_MAX: acc = (sgn ? (int32_t)v > (int32_t)acc : v > acc) ? v : acc; break;
      default: break;
      }
    }
    if (in->op == SIM_OP_REDUX) r[l] = acc;
    else if (in->mode == SIM_MODE_ANY) r[l] = same;
    else {
      r[l] = same == group ? group : 0;
      all |= (uint32_t)(same == group) << l;
    }
  }
  SIM_LANES(m) d[l] = r[l];
  if (in->op == SIM_OP_MATCH && in->o[5].kind == SIM_K_PRED) {
    uint32_t *q = &w->P[in->o[5].reg];
    *q = (*q & ~m) | (all & m);
  }
  return 0;
}

int sim_ptx_op_warp(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m) {
  if (in->op == SIM_OP_SHFL) return shfl(c, w, in, m);
  if (in->op == SIM_OP_REDUX || in->op == SIM_OP_MATCH) return redux_match(c, w, in, m);
  if (in->op == SIM_OP_ACTIVEMASK) {
    uint64_t *d = &w->R[(size_t)in->o[0].reg * SIM_PTX_WARP];
    SIM_LANES(m) d[l] = m;
    return 0;
  }
  uint64_t bm[SIM_PTX_WARP];
  const uint64_t *mm = sim_ptx_src(c, w, &in->o[2], bm);
  SIM_LANES(m) if (!((uint32_t)mm[l] >> l & 1))
    return sim_ptx_fault(c, w, in, l, "vote.sync by a lane that is not in its member mask 0x%08x", (uint32_t)mm[l]);
  uint32_t pv = in->o[1].flags & 1 ? ~w->P[in->o[1].reg] : w->P[in->o[1].reg];
  uint32_t ballot = pv & m;
  if (in->mode == SIM_MODE_BALLOT) {
    uint64_t *d = &w->R[(size_t)in->o[0].reg * SIM_PTX_WARP];
    SIM_LANES(m) d[l] = ballot;
    return 0;
  }
  int r = in->mode == SIM_MODE_ALL ? ballot == m : in->mode == SIM_MODE_ANY ? ballot != 0 : (ballot == 0 || ballot == m);
  uint32_t *q = &w->P[in->o[0].reg];
  *q = (*q & ~m) | (r ? m : 0);
  return 0;
}
