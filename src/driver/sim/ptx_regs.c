/*
 * ptx_regs.c -- fewer register rows for a function: NVRTC's PTX names a
 * new virtual register for nearly every value (the i64 `add` built-in has
 * 151; they take 37 rows here), and a warp keeps 256 bytes a register, so
 * a block's registers outgrow the cache. Two registers whose values are
 * never live at once share a row.
 *
 * Liveness is computed backward over the function's instructions (a
 * branch's successors, the next instruction unless the instruction ends
 * the path); a write that is not sure (guarded) does not end a value.
 * Each lane follows one path of that graph, and writes touch only the
 * active lanes (a whole-warp handler runs only where all 32 are), so
 * registers that never interfere on any path can share a row lane by
 * lane. Conservatively, an instruction's written registers interfere with
 * each other, with everything it reads and with everything live after it
 * (a dead write still writes its row). Rows are then given greedily, in
 * register order. Functions of more than 4,096 registers are left alone.
 */
#include "ptx_ir.h"

#include <stdlib.h>
#include <string.h>

#define HAS(set, r) ((set)[(r) >> 6] >> ((r) & 63) & 1u)
#define ADD(set, r) ((set)[(r) >> 6] |= 1ull << ((r) & 63))

enum { MAX_REGS = 4096 };

static void add_reg(uint32_t r, void *set) { ADD((uint64_t *)set, r); }

/* Each register the instruction may write (guarded or not): fn(r, arg). */
static void each_write(const sim_ptx_func *f, const sim_ptx_insn *in, void (*fn)(uint32_t, void *), void *arg) {
  if (in->op == SIM_OP_CALL || !sim_ptx_may_write_o0(in)) return;
  const sim_ptx_operand *o = &in->o[0];
  if (o->kind == SIM_K_REG) fn(o->reg, arg);
  else if (o->kind == SIM_K_VEC)
    for (int64_t e = 0; e < o->imm; e++)
      if (f->vec[o->reg + e] != UINT32_MAX) fn(f->vec[o->reg + e], arg);
}

/* Renames each register operand r of `in` to row[r] (a vector list's
 * entries once: `done` marks them). */
static void rename_operands(sim_ptx_func *f, sim_ptx_insn *in, const uint32_t *row, uint64_t *done) {
  if (in->op == SIM_OP_CALL) return;
  for (int k = 0; k < 6; k++) {
    if (k >= in->nops && k != 5) continue;
    sim_ptx_operand *o = &in->o[k];
    if (o->kind == SIM_K_REG || (o->kind == SIM_K_ADDR && o->flags == SIM_A_REG)) {
      o->reg = row[o->reg];
    } else if (o->kind == SIM_K_VEC) {
      for (int64_t e = 0; e < o->imm; e++) {
        uint32_t v = o->reg + (uint32_t)e;
        if (f->vec[v] == UINT32_MAX || HAS(done, v)) continue;
        f->vec[v] = row[f->vec[v]];
        ADD(done, v);
      }
    }
  }
}

int sim_ptx_pack_regs(sim_ptx_func *f) {
  uint32_t n = f->nregs, nc = f->ncode;
  if (n < 2 || n > MAX_REGS || nc == 0) return 0;
  size_t words = ((size_t)n + 63) / 64;
  uint64_t *live = calloc((size_t)nc * words, sizeof *live); /* live before each instruction */
  uint64_t *out = malloc(words * sizeof *out), *use = malloc(words * sizeof *use), *kill = malloc(words * sizeof *kill);
  uint64_t *adj = calloc((size_t)n * words, sizeof *adj), *taken = malloc(words * sizeof *taken);
  uint64_t *done = calloc((f->nvec + 63) / 64 + 1, sizeof *done);
  uint32_t *row = malloc((size_t)n * sizeof *row);
  int r = -1;
  if (!live || !out || !use || !kill || !adj || !taken || !done || !row) goto end;
  for (int changed = 1; changed;) {
    changed = 0;
    for (uint32_t i = nc; i-- > 0;) {
      const sim_ptx_insn *x = &f->code[i];
      uint32_t succ[2];
      int ns = sim_ptx_successors(f, i, succ);
      memset(out, 0, words * sizeof *out);
      for (int s = 0; s < ns; s++)
        for (size_t k = 0; k < words; k++) out[k] |= live[(size_t)succ[s] * words + k];
      memset(use, 0, words * sizeof *use);
      memset(kill, 0, words * sizeof *kill);
      sim_ptx_each_reg(f, x, 0, add_reg, use);
      sim_ptx_each_reg(f, x, 1, add_reg, kill);
      uint64_t *in = &live[(size_t)i * words];
      for (size_t k = 0; k < words; k++) {
        uint64_t v = (out[k] & ~kill[k]) | use[k];
        changed |= v != in[k];
        in[k] = v;
      }
    }
  }
  /* interference: what an instruction writes against what it reads, writes and leaves live */
  for (uint32_t i = 0; i < nc; i++) {
    const sim_ptx_insn *x = &f->code[i];
    uint32_t succ[2];
    int ns = sim_ptx_successors(f, i, succ);
    memset(kill, 0, words * sizeof *kill); /* here: the registers written */
    each_write(f, x, add_reg, kill);
    int any = 0;
    for (size_t k = 0; k < words; k++) any |= kill[k] != 0;
    if (!any) continue;
    memset(out, 0, words * sizeof *out); /* the registers read, written or live after */
    sim_ptx_each_reg(f, x, 0, add_reg, out);
    for (int s = 0; s < ns; s++)
      for (size_t k = 0; k < words; k++) out[k] |= live[(size_t)succ[s] * words + k];
    for (size_t k = 0; k < words; k++) out[k] |= kill[k];
    for (size_t kd = 0; kd < words; kd++)
      for (uint64_t bd = kill[kd]; bd; bd &= bd - 1) {
        uint32_t d = (uint32_t)(kd * 64 + (size_t)__builtin_ctzll(bd));
        for (size_t k = 0; k < words; k++) adj[(size_t)d * words + k] |= out[k];
        for (size_t k = 0; k < words; k++)
          for (uint64_t b = out[k]; b; b &= b - 1) ADD(&adj[(k * 64 + (size_t)__builtin_ctzll(b)) * words], d);
      }
  }
  /* rows, greedily: each register the lowest row no neighbour has */
  uint32_t rows = 0;
  for (uint32_t v = 0; v < n; v++) {
    memset(taken, 0, words * sizeof *taken);
    const uint64_t *a = &adj[(size_t)v * words];
    for (uint32_t q = 0; q < v; q++)
      if (HAS(a, q) && q != v) ADD(taken, row[q]);
    uint32_t c = 0;
    while (HAS(taken, c)) c++;
    row[v] = c;
    if (c + 1 > rows) rows = c + 1;
  }
  for (uint32_t i = 0; i < nc; i++) rename_operands(f, &f->code[i], row, done);
  f->nregs = rows;
  r = 0;
end:
  free(live), free(out), free(use), free(kill), free(adj), free(taken), free(done), free(row);
  return r;
}
