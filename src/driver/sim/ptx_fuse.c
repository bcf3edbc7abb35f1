/*
 * ptx_fuse.c -- contraction of an unrounded multiply and the add that takes
 * its product into one fused multiply-add, decided at load, as ptxas does
 * on the GPU (the PTX ISA lets mul/add/sub without a rounding modifier be
 * fused): so that the sim's results are the GPU's bit for bit.
 *
 * The rule: a mul.f32 or mul.f64 with no rounding modifier (.ftz or not,
 * not .sat) whose destination the whole function reads exactly once, by an
 * add or sub of the same type with no rounding modifier and the same .ftz,
 * later in the same basic block (no branch target, branch, ret, exit or
 * trap in between), with neither the product's register nor the mul's
 * sources written in between, and the mul unguarded or guarded as the add
 * is. That add or sub becomes an fma of the mul's operands, rounded once:
 *   a*b + c, c + a*b -> fma(a, b, c)     a*b - c -> fma(a, b, -c)
 *   c - a*b -> fma(-a, b, c)
 * keeping its .ftz and .sat. The mul still runs (its register is written as
 * before). An explicit .rn on either forbids it.
 */

#include "ptx_ir.h"

#include <stdlib.h>

/* Whether operand 0 of `in` is a destination (else it is read, or absent). */
static int writes_first(const sim_ptx_insn *in) {
  switch (in->op) {
  case SIM_OP_ST: case SIM_OP_RED: case SIM_OP_BAR: case SIM_OP_BARWARP: case SIM_OP_BRA: case SIM_OP_CALL:
  case SIM_OP_RET: case SIM_OP_EXIT: case SIM_OP_TRAP: case SIM_OP_FENCE: case SIM_OP_NOP:
    return 0;
  default:
    return 1;
  }
}

/* The registers operand `o` names: a register, a register address's base,
 * a brace list's entries (not a call's lists, which are .param offsets). */
static int regs_of(const sim_ptx_func *f, const sim_ptx_insn *in, const sim_ptx_operand *o, const uint32_t **list,
                   uint32_t *one) {
  if (o->kind == SIM_K_REG || (o->kind == SIM_K_ADDR && o->flags == SIM_A_REG)) {
    *one = o->reg;
    *list = one;
    return 1;
  }
  if (o->kind == SIM_K_VEC && in->op != SIM_OP_CALL && o->reg + (uint64_t)o->imm <= f->nvec) {
    *list = f->vec + o->reg;
    return (int)o->imm;
  }
  return 0;
}

/* The usual fusable multiply: f32/f64, no rounding, nothing but .ftz. */
static int is_mul(const sim_ptx_insn *in) {
  return in->op == SIM_OP_MUL && (in->type == SIM_T_F32 || in->type == SIM_T_F64) && in->rnd == SIM_RND_NONE &&
         !(in->flags & ~SIM_F_FTZ) && in->nops == 3 && in->o[0].kind == SIM_K_REG;
}

static int is_add(const sim_ptx_insn *in) {
  return (in->op == SIM_OP_ADD || in->op == SIM_OP_SUB) && (in->type == SIM_T_F32 || in->type == SIM_T_F64) &&
         in->rnd == SIM_RND_NONE && !(in->flags & ~(SIM_F_FTZ | SIM_F_SAT)) && in->nops == 3;
}

typedef struct {
  uint32_t *uses;      /* reads of each register in the whole function */
  uint32_t *lastw;     /* the last instruction (+1) that wrote each register, 0: none yet */
  uint32_t *lastp;     /* the same of each predicate */
  unsigned char *target; /* instructions a branch reaches */
} fuse_state;

/* Whether the add `j` may take the product of the mul `i` (the one that
 * last wrote the register it reads) in block starting at `start`. */
static int may_fuse(const sim_ptx_func *f, const fuse_state *s, uint32_t i, uint32_t j, uint32_t start) {
  const sim_ptx_insn *mul = &f->code[i], *add = &f->code[j];
  if (i < start || !is_mul(mul) || mul->type != add->type || (mul->flags & SIM_F_FTZ) != (add->flags & SIM_F_FTZ))
    return 0;
  for (int k = 1; k <= 2; k++) { /* the sources not written since */
    const sim_ptx_operand *o = &mul->o[k];
    if (o->kind == SIM_K_REG && (o->reg == mul->o[0].reg || s->lastw[o->reg] > i)) return 0;
  }
  if (mul->guard >= 0 &&
      (mul->guard != add->guard || mul->guard_neg != add->guard_neg || s->lastp[mul->guard] > i))
    return 0;
  return 1;
}

/* Rewrites the add `in` into the fma of `mul`'s operands, its product being
 * operand k (1 or 2). */
static void fuse(sim_ptx_insn *in, const sim_ptx_insn *mul, int k) {
  sim_ptx_operand c = in->o[3 - k];
  if (in->op == SIM_OP_SUB) in->flags |= k == 1 ? SIM_F_NEGC : SIM_F_NEGA;
  in->op = SIM_OP_FMA;
  in->o[1] = mul->o[1];
  in->o[2] = mul->o[2];
  in->o[3] = c;
  in->nops = 4;
}

static void note_writes(const sim_ptx_func *f, const sim_ptx_insn *in, uint32_t j, fuse_state *s) {
  for (int k = 0; k < 6; k++) {
    if (k == 0 ? !writes_first(in) : k != 5) continue;
    const sim_ptx_operand *o = &in->o[k];
    if (o->kind == SIM_K_PRED) {
      if (o->reg < f->npreds) s->lastp[o->reg] = j + 1;
      continue;
    }
    const uint32_t *regs;
    uint32_t one;
    int n = regs_of(f, in, o, &regs, &one);
    for (int e = 0; e < n; e++)
      if (regs[e] < f->nregs) s->lastw[regs[e]] = j + 1;
  }
}

int sim_ptx_fuse_func(sim_ptx_func *f) {
  fuse_state s = {
    .uses = calloc(f->nregs + 1, sizeof *s.uses),
    .lastw = calloc(f->nregs + 1, sizeof *s.lastw),
    .lastp = calloc(f->npreds + 1, sizeof *s.lastp),
    .target = calloc(f->ncode + 1, 1),
  };
  int r = -1;
  if (!s.uses || !s.lastw || !s.lastp || !s.target) goto out;
  for (uint32_t j = 0; j < f->ncode; j++) {
    const sim_ptx_insn *in = &f->code[j];
    if (in->op == SIM_OP_BRA && in->target <= f->ncode) s.target[in->target] = 1;
    for (int k = writes_first(in) ? 1 : 0; k < in->nops && k < 5; k++) {
      const uint32_t *regs;
      uint32_t one;
      int n = regs_of(f, in, &in->o[k], &regs, &one);
      for (int e = 0; e < n; e++)
        if (regs[e] < f->nregs) s.uses[regs[e]]++;
    }
  }
  uint32_t start = 0; /* the first instruction of the current basic block */
  for (uint32_t j = 0; j < f->ncode; j++) {
    sim_ptx_insn *in = &f->code[j];
    if (s.target[j]) start = j;
    if (is_add(in)) {
      for (int k = 1; k <= 2; k++) {
        const sim_ptx_operand *o = &in->o[k];
        if (o->kind != SIM_K_REG || o->reg >= f->nregs || s.uses[o->reg] != 1 || !s.lastw[o->reg]) continue;
        uint32_t i = s.lastw[o->reg] - 1;
        if (may_fuse(f, &s, i, j, start)) {
          fuse(in, &f->code[i], k);
          break;
        }
      }
    }
    note_writes(f, in, j, &s);
    if (in->op == SIM_OP_BRA || in->op == SIM_OP_RET || in->op == SIM_OP_EXIT || in->op == SIM_OP_TRAP) start = j + 1;
  }
  r = 0;
out:
  free(s.uses);
  free(s.lastw);
  free(s.lastp);
  free(s.target);
  return r;
}
