/*
 * ptx_defs.c -- which registers of a function a thread may read before it
 * has written them. A block's warps start with those registers zeroed (the
 * first block of a launch zeroes them all); the others, written on every
 * path before any read, need no zeroing between blocks, which was a third of
 * a built-in's time through the interpreter.
 *
 * A forward must-analysis over the function's instructions: a register is
 * defined at an instruction when every path from the entry writes it first.
 * A write counts only where it surely happens: an unguarded instruction's
 * destination register (or the registers of a vector load or an unpacking
 * mov). Anything unsure counts as not written, and every other register
 * operand counts as a read, so the answer errs toward zeroing.
 */
#include "ptx_exec.h"

#include <stdlib.h>
#include <string.h>

int sim_ptx_successors(const sim_ptx_func *f, uint32_t i, uint32_t succ[2]) {
  const sim_ptx_insn *x = &f->code[i];
  int ns = 0, ends = x->op == SIM_OP_BRA || x->op == SIM_OP_RET || x->op == SIM_OP_EXIT;
  if (x->op == SIM_OP_BRA && x->target < f->ncode) succ[ns++] = x->target;
  if ((!ends || x->guard >= 0) && i + 1 < f->ncode) succ[ns++] = i + 1;
  return ns;
}

int sim_ptx_writes_o0(const sim_ptx_insn *in) {
  if (in->guard >= 0) return 0;
  return sim_ptx_may_write_o0(in);
}

int sim_ptx_may_write_o0(const sim_ptx_insn *in) {
  switch (in->op) {
  case SIM_OP_ST: case SIM_OP_RED: case SIM_OP_BRA: case SIM_OP_CALL: case SIM_OP_RET: case SIM_OP_EXIT:
  case SIM_OP_TRAP: case SIM_OP_BAR: case SIM_OP_BARWARP: case SIM_OP_FENCE: case SIM_OP_NOP:
    return 0;
  default:
    return in->o[0].kind == SIM_K_REG || (in->o[0].kind == SIM_K_VEC && (in->op == SIM_OP_LD || in->op == SIM_OP_MOV));
  }
}

#define HAS(set, r) ((set)[(r) >> 6] >> ((r) & 63) & 1u)
#define ADD(set, r) ((set)[(r) >> 6] |= 1ull << ((r) & 63))

void sim_ptx_each_reg(const sim_ptx_func *f, const sim_ptx_insn *in, int write, void (*fn)(uint32_t, void *),
                      void *arg) {
  if (in->op == SIM_OP_CALL) return;
  int w0 = sim_ptx_writes_o0(in);
  for (int k = 0; k < 6; k++) {
    if (k >= in->nops && k != 5) continue;
    const sim_ptx_operand *o = &in->o[k];
    if ((k == 0 && w0) != write) continue;
    if (o->kind == SIM_K_REG || (o->kind == SIM_K_ADDR && o->flags == SIM_A_REG)) {
      fn(o->reg, arg);
    } else if (o->kind == SIM_K_VEC) {
      for (int64_t e = 0; e < o->imm; e++)
        if (f->vec[o->reg + e] != UINT32_MAX) fn(f->vec[o->reg + e], arg);
    }
  }
}

static void add_reg(uint32_t r, void *set) { ADD((uint64_t *)set, r); }

typedef struct {
  const uint64_t *defined;
  uint64_t *undef;
} read_check;

static void check_read(uint32_t r, void *arg) {
  read_check *c = arg;
  if (!HAS(c->defined, r)) ADD(c->undef, r);
}

int sim_ptx_find_undefined(sim_ptx_func *f) {
  free(f->undef_regs);
  f->undef_regs = NULL;
  f->nundef = 0;
  if (f->nregs == 0 || f->ncode == 0) return 0;
  size_t words = ((size_t)f->nregs + 63) / 64;
  uint64_t *in = malloc((size_t)f->ncode * words * sizeof *in), *out = malloc(words * sizeof *out);
  uint64_t *undef = calloc(words, sizeof *undef);
  if (!in || !out || !undef) {
    free(in), free(out), free(undef);
    return -1;
  }
  memset(in, 0xff, (size_t)f->ncode * words * sizeof *in); /* unreached: everything defined */
  memset(in, 0, words * sizeof *in);                        /* the entry: nothing */
  for (int changed = 1; changed;) {
    changed = 0;
    for (uint32_t i = 0; i < f->ncode; i++) {
      const sim_ptx_insn *x = &f->code[i];
      memcpy(out, in + (size_t)i * words, words * sizeof *out);
      sim_ptx_each_reg(f, x, 1, add_reg, out);
      uint32_t succ[2];
      int ns = sim_ptx_successors(f, i, succ);
      for (int s = 0; s < ns; s++) {
        uint64_t *t = in + (size_t)succ[s] * words;
        for (size_t k = 0; k < words; k++) {
          uint64_t v = t[k] & out[k];
          changed |= v != t[k];
          t[k] = v;
        }
      }
    }
  }
  for (uint32_t i = 0; i < f->ncode; i++) {
    read_check c = {in + (size_t)i * words, undef};
    sim_ptx_each_reg(f, &f->code[i], 0, check_read, &c);
  }
  uint32_t n = 0;
  for (uint32_t r = 0; r < f->nregs; r++) n += (uint32_t)HAS(undef, r);
  f->undef_regs = malloc((n ? n : 1) * sizeof *f->undef_regs);
  if (f->undef_regs)
    for (uint32_t r = 0; r < f->nregs; r++)
      if (HAS(undef, r)) f->undef_regs[f->nundef++] = r;
  free(in), free(out), free(undef);
  return f->undef_regs ? 0 : -1;
}
