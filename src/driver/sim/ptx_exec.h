/*
 * ptx_exec.h -- the interpreter's state while a launch runs: one block at
 * a time, its warps, each with its registers (lane-contiguous: register r
 * of lane l at R[r * 32 + l]), predicates (a 32-bit mask each), its
 * reconvergence stack and its call frames. Shared by ptx_exec.c (the
 * schedule and control flow) and ptx_ops_*.c (the instructions).
 */
#ifndef GPULUA_PTX_EXEC_H
#define GPULUA_PTX_EXEC_H

#include "ptx_ir.h"

#include <stdio.h>
#include <string.h>

typedef struct {
  uint32_t pc, rpc, mask;
  uint32_t frame_base; /* popping it returns from the call that pushed it */
} sim_ptx_simt;

typedef struct {
  const sim_ptx_func *f;
  uint32_t regbase, predbase; /* into the warp's regs and preds */
  uint32_t local;             /* this call's frame in each thread's local memory */
  uint32_t caller_local;
  const uint32_t *rets, *args; /* the caller's frame offsets bound to the callee's .param */
} sim_ptx_frame;

enum { SIM_W_RUN, SIM_W_WAIT, SIM_W_DONE, SIM_W_NEW /* not started in this block */ };

typedef struct {
  uint64_t *regs, *R; /* R: the current frame's */
  uint32_t *preds, *P;
  size_t capregs, cappreds;
  int regs_zeroed; /* the kernel's registers were zeroed once in this launch (ptx_defs.c) */
  sim_ptx_simt *stack;
  int sp, capstack;
  sim_ptx_frame *frames;
  int nframes;
  const sim_ptx_func *f;
  uint32_t local; /* the current frame's */
  uint32_t live, exited;
  int state, bar, arrived;
  uint32_t bar_count;
  unsigned index, first;
  uint32_t tid[3][SIM_PTX_WARP];
  uint32_t ntid[3], ctaid[3], nctaid[3]; /* the block's, for ptx_fast.c's reads of them */
  uint64_t clock;
} sim_ptx_warp;

typedef struct sim_ptx_race sim_ptx_race; /* ptx_race.c */

typedef struct {
  const sim_ptx_module *m;
  const sim_ptx_func *kernel;
  sim_ptx_launch *l;
  unsigned char *params;
  unsigned char *shared;
  size_t shared_size;
  unsigned char *local; /* SIM_PTX_LOCAL_BYTES a thread of the block */
  unsigned ctaid[3];
  unsigned nthreads, nwarps;
  sim_ptx_warp *warps;
  char *err;
  size_t errlen;
  uint64_t insns;
  int random;              /* the launch's schedule is random (ptx_sched.c) */
  uint64_t rng, block_key; /* its generator, and the key of its order of blocks */
  char *out;               /* printf's output so far (ptx_printf.c) */
  size_t out_len, out_cap;
  unsigned long long out_dropped; /* printf calls past SIM_PTX_PRINTF_BYTES */
  sim_ptx_race *race; /* racecheck's shadow, or NULL without racecheck */
} sim_ptx_ctx;

/* the lanes l of m; a whole warp is a loop of its own (-O3 unswitches it), plain enough to vectorize */
#define SIM_LANES(m) for (int l = 0; l < SIM_PTX_WARP; l++) if ((m) == 0xffffffffu || ((m) >> l & 1u))

/* ptx_exec.c: the fault of lane `lane` at `in`: the message (printf
 * format), then the kernel, its source line, the thread and the block. -1. */
int sim_ptx_fault(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, int lane, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The 32 lanes' values of a source operand: the register's row itself (an
 * immediate's row, made at load), or
 * `buf` filled. */
const uint64_t *sim_ptx_src_other(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_operand *o, uint64_t *buf);
static inline const uint64_t *sim_ptx_src(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_operand *o, uint64_t *buf) {
  if (o->kind == SIM_K_REG) return &w->R[(size_t)o->reg * SIM_PTX_WARP];
  if (o->kind == SIM_K_IMM && w->f->imm_rows) return &w->f->imm_rows[(size_t)o->reg * SIM_PTX_WARP]; /* made at load */
  return sim_ptx_src_other(c, w, o, buf); /* ptx_exec.c: the rest */
}

/* ptx_fast.c: the handler of an instruction's `fast` index, over a whole warp */
extern void (*const sim_ptx_fast_handlers[])(sim_ptx_warp *w, const sim_ptx_insn *in);

/* ptx_ops_int.c, ptx_ops_float.c, ptx_ops_mem.c, ptx_ops_warp.c: one
 * instruction over the lanes in m: 0, or -1 after a fault. */
int sim_ptx_op_int(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m);
int sim_ptx_op_float(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m);
int sim_ptx_op_cvt(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m);
int sim_ptx_op_cmp(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m);
int sim_ptx_op_mem(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m);
int sim_ptx_op_atom(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m);
int sim_ptx_op_warp(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m);
/* ptx_ops_half.c: f16/bf16 arithmetic (scalar and x2), conversions from
 * or to them, and their comparisons (setp, set). */
int sim_ptx_op_half(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m);
int sim_ptx_op_half_cvt(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m);
int sim_ptx_op_half_cmp(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m);
/* a + b rounded to nearest, of 16-bit floats of `type` (each half of a pair) */
uint64_t sim_ptx_half_add(int type, uint64_t a, uint64_t b);
/* ptx_ops_cvt.c: a comparison of two values of `type` (an integer, f32 or f64) */
int sim_ptx_compare(int cmp, int type, uint64_t a, uint64_t b);
/* ptx_ops_mem.c: the host address of `bytes` at `addr` in `space` for
 * lane `lane`, checked; NULL after a fault. */
void *sim_ptx_access(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, int lane, int space, uint64_t addr,
                     size_t bytes, int write);

/* ptx_sched.c: the launch's order. sched_start seeds it; sched_block is
 * the block (a linear index, x fastest) to run i-th of n; sched_warps
 * fills `order` with the n warps of a block in the order to run them;
 * sched_lanes writes the lanes of m in the order an atomic serves them,
 * and returns how many. */
void sim_ptx_sched_start(sim_ptx_ctx *c);
uint64_t sim_ptx_sched_block(const sim_ptx_ctx *c, uint64_t i, uint64_t n);
void sim_ptx_sched_warps(sim_ptx_ctx *c, unsigned *order, unsigned n);
int sim_ptx_sched_lanes(sim_ptx_ctx *c, uint32_t m, int *lanes);

/* ptx_printf.c: a call of vprintf or __assertfail (in->mode) by the lanes
 * in m: 0, or -1 after a fault (an assert's is one). sim_ptx_printed hands
 * the launch's output to l (a line at its end counts the calls dropped). */
int sim_ptx_libcall(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m);
void sim_ptx_printed(sim_ptx_ctx *c, sim_ptx_launch *l);

/* Stores `v` as a value of `type` in a register row's lane: truncated to
 * the type's width. */
static inline uint64_t sim_ptx_trunc(uint64_t v, int size) {
  return size >= 8 ? v : v & ((1ull << (size * 8)) - 1);
}
static inline int64_t sim_ptx_sext(uint64_t v, int size) {
  switch (size) {
  case 1: return (int8_t)v;
  case 2: return (int16_t)v;
  case 4: return (int32_t)v;
  default: return (int64_t)v;
  }
}

/* A register row's bits as a float or a double, and a result back to bits
 * (a float NaN as the canonical one, 0x7fffffff, as the GPU gives). */
static inline float sim_ptx_f32(uint64_t v) {
  uint32_t u = (uint32_t)v;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline uint64_t sim_ptx_b32(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (u & 0x7fffffffu) > 0x7f800000u ? 0x7fffffffu : u;
}
static inline double sim_ptx_f64(uint64_t v) {
  double d;
  memcpy(&d, &v, 8);
  return d;
}
static inline uint64_t sim_ptx_b64(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  return u;
}

/* An f64 add, sub or mul of x and y, where x is a NaN: x quieted (x + x),
 * as the host's x86 gives for a NaN first operand, whichever order its
 * compiler put two NaN operands in. In the float domain, so that it
 * vectorizes. */
#define SIM_PTX_F64_NAN_FIRST(x, expr) ((x) != (x) ? (x) + (x) : (expr))

/* A float-to-integer conversion of a NaN, as the GPU gives it: for a 64-bit
 * integer 1 << 63; for a narrower one 0 from an f16, bf16 or f32, and
 * 1 << (bits - 1) from an f64 (measured on an H200, tests/ptx/specials.cu). */
static inline uint64_t sim_ptx_nan_to_int(int size, int from_f64) {
  return size == 8 || from_f64 ? 1ull << (size * 8 - 1) : 0;
}
/* A cvt's integer result in its register: an 8-bit type, the only one a
 * wider register holds, extended by the type's sign as PTX defines. */
static inline uint64_t sim_ptx_cvt_int_result(uint64_t v, int size, int is_signed) {
  return size == 1 && is_signed ? (uint64_t)(int64_t)(int8_t)v : sim_ptx_trunc(v, size);
}

#endif
