/*
 * ptx_imm.c -- each immediate operand of a function as a row of 32 equal
 * values, made once at load: sim_ptx_src hands an instruction that row, as
 * it hands a register's, instead of filling a buffer at every execution.
 */
#include "ptx_exec.h"

#include <stdlib.h>

int sim_ptx_broadcast_imms(sim_ptx_func *f) {
  free(f->imm_rows);
  f->imm_rows = NULL;
  uint32_t n = 0;
  for (uint32_t i = 0; i < f->ncode; i++)
    for (int k = 0; k < 6; k++) n += f->code[i].o[k].kind == SIM_K_IMM;
  if (n == 0) return 0;
  f->imm_rows = malloc((size_t)n * SIM_PTX_WARP * sizeof *f->imm_rows);
  if (!f->imm_rows) return -1;
  uint32_t row = 0;
  for (uint32_t i = 0; i < f->ncode; i++)
    for (int k = 0; k < 6; k++) {
      sim_ptx_operand *o = &f->code[i].o[k];
      if (o->kind != SIM_K_IMM) continue;
      for (int l = 0; l < SIM_PTX_WARP; l++) f->imm_rows[(size_t)row * SIM_PTX_WARP + l] = (uint64_t)o->imm;
      o->reg = row++;
    }
  return 0;
}
