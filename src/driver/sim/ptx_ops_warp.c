/*
 * ptx_ops_warp.c -- instructions across a warp's lanes: shfl.sync (up,
 * down, bfly, idx with the clamp and segment mask of operand c), vote.sync
 * (all, any, uni, ballot) and activemask. A lane reads another's register
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

int sim_ptx_op_warp(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m) {
  if (in->op == SIM_OP_SHFL) return shfl(c, w, in, m);
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
