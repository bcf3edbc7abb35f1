/*
 * ptx_exec.c -- running an entry over a grid: blocks one after another (in
 * the schedule's order, ptx_sched.c), each block's warps picked in turn,
 * each warp run until it exits or reaches a barrier; the barrier releases
 * when every thread the block still has (or the barrier's count) has
 * arrived, and the warps are picked again. A warp's 32 lanes run together;
 * a conditional branch that splits them pushes the two paths on the warp's
 * reconvergence stack, to meet again at the branch's immediate
 * post-dominator (ptx_check.c). Calls push a frame: the callee's registers,
 * its part of each thread's local memory and its .param bound to the
 * caller's; calls of the device runtime (printf, assert) run on the host
 * (ptx_printf.c). Under either schedule a run repeats exactly.
 */
#include "ptx_exec.h"
#include "ptx_race.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int sim_ptx_fault(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, int lane, const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  char where[600];
  const char *file = in && in->src_file < c->m->nfiles ? c->m->files[in->src_file] : NULL;
  if (file && strrchr(file, '/')) file = strrchr(file, '/') + 1; /* NVRTC writes the folder it ran in */
  if (file && in->src_line) snprintf(where, sizeof where, "%s:%u", file, in->src_line);
  else snprintf(where, sizeof where, "PTX line %u", in ? in->line : 0);
  unsigned t[3] = {0, 0, 0};
  if (w && lane >= 0)
    for (int d = 0; d < 3; d++) t[d] = w->tid[d][lane];
  snprintf(c->err, c->errlen, "%s (kernel '%s' at %s, thread (%u,%u,%u) of block (%u,%u,%u))", what, c->kernel->name,
           where, t[0], t[1], t[2], c->ctaid[0], c->ctaid[1], c->ctaid[2]);
  return -1;
}

static uint64_t sreg(const sim_ptx_ctx *c, const sim_ptx_warp *w, int id, int lane) {
  if (id < SIM_SR_LANEID) {
    int d = id & 3;
    if (d == 3) return 0;
    switch (id & ~3) {
    case SIM_SR_TID: return w->tid[d][lane];
    case SIM_SR_NTID: return c->l->block[d];
    case SIM_SR_CTAID: return c->ctaid[d];
    default: return c->l->grid[d];
    }
  }
  uint32_t bit = 1u << lane;
  switch (id) {
  case SIM_SR_LANEID: return (uint64_t)lane;
  case SIM_SR_WARPID: return w->index;
  case SIM_SR_NWARPID: return c->nwarps;
  case SIM_SR_NSMID: return 1;
  case SIM_SR_CLOCK: case SIM_SR_GLOBALTIMER_LO: return (uint32_t)w->clock;
  case SIM_SR_CLOCK_HI: case SIM_SR_GLOBALTIMER_HI: return (uint32_t)(w->clock >> 32);
  case SIM_SR_CLOCK64: case SIM_SR_GLOBALTIMER: return w->clock;
  case SIM_SR_LANEMASK_EQ: return bit;
  case SIM_SR_LANEMASK_LE: return bit | (bit - 1);
  case SIM_SR_LANEMASK_LT: return bit - 1;
  case SIM_SR_LANEMASK_GE: return ~(bit - 1) & 0xffffffffu;
  case SIM_SR_LANEMASK_GT: return ~(bit | (bit - 1)) & 0xffffffffu;
  case SIM_SR_DYN_SMEM: return c->l->shared_bytes;
  case SIM_SR_TOTAL_SMEM: return c->shared_size;
  default: return 0; /* %smid, %gridid */
  }
}

const uint64_t *sim_ptx_src_other(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_operand *o, uint64_t *buf) {
  switch (o->kind) {
  case SIM_K_REG: return &w->R[(size_t)o->reg * SIM_PTX_WARP];
  case SIM_K_SREG:
    if (o->imm < SIM_SR_LANEID && (o->imm & ~3) == SIM_SR_TID && (o->imm & 3) < 3) { /* %tid.x, .y, .z */
      for (int l = 0; l < SIM_PTX_WARP; l++) buf[l] = w->tid[o->imm & 3][l];
    } else if (o->imm < SIM_SR_LANEID) { /* the same in every lane */
      uint64_t v = sreg(c, w, (int)o->imm, 0);
      for (int l = 0; l < SIM_PTX_WARP; l++) buf[l] = v;
    } else {
      for (int l = 0; l < SIM_PTX_WARP; l++) buf[l] = sreg(c, w, (int)o->imm, l);
    }
    return buf;
  case SIM_K_PRED:
    for (int l = 0; l < SIM_PTX_WARP; l++) buf[l] = (w->P[o->reg] >> l & 1u) ^ (o->flags & 1u);
    return buf;
  case SIM_K_SYMADDR: {
    uint64_t v = o->flags == SIM_A_FRAME ? w->local + (uint64_t)o->imm
                 : c->m->vars[o->sym].space == SIM_S_SHARED ? c->m->vars[o->sym].offset
                                                           : (uint64_t)(uintptr_t)(c->m->data + c->m->vars[o->sym].offset);
    for (int l = 0; l < SIM_PTX_WARP; l++) buf[l] = v;
    return buf;
  }
  case SIM_K_IMM:
    if (w->f->imm_rows) return &w->f->imm_rows[(size_t)o->reg * SIM_PTX_WARP]; /* made at load */
    __attribute__((fallthrough));
  default:
    for (int l = 0; l < SIM_PTX_WARP; l++) buf[l] = (uint64_t)o->imm;
    return buf;
  }
}

static int push(sim_ptx_warp *w, uint32_t pc, uint32_t rpc, uint32_t mask, uint32_t frame_base) {
  if (w->sp == w->capstack) {
    int nc = w->capstack ? w->capstack * 2 : 16;
    sim_ptx_simt *ns = realloc(w->stack, (size_t)nc * sizeof *ns);
    if (!ns) return -1;
    w->stack = ns;
    w->capstack = nc;
  }
  w->stack[w->sp++] = (sim_ptx_simt){.pc = pc, .rpc = rpc, .mask = mask, .frame_base = frame_base};
  return 0;
}

static void enter_frame(sim_ptx_warp *w) {
  const sim_ptx_frame *fr = &w->frames[w->nframes - 1];
  w->f = fr->f;
  w->R = w->regs + (size_t)fr->regbase * SIM_PTX_WARP;
  w->P = w->preds + fr->predbase;
  w->local = fr->local;
}

static int call(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m) {
  const sim_ptx_func *callee = &c->m->funcs[in->target];
  if (in->mode != SIM_CALL_FUNC) { /* printf, assert */
    if (sim_ptx_libcall(c, w, in, m)) return -1;
    w->stack[w->sp - 1].pc++;
    return 0;
  }
  if (w->nframes >= SIM_PTX_MAX_DEPTH) return sim_ptx_fault(c, w, in, __builtin_ctz(m), "call stack overflow (%d nested calls)", w->nframes);
  const sim_ptx_frame *caller = &w->frames[w->nframes - 1];
  uint32_t local = (caller->local + caller->f->frame_bytes + 15u) & ~15u;
  if ((size_t)local + callee->frame_bytes > SIM_PTX_LOCAL_BYTES)
    return sim_ptx_fault(c, w, in, __builtin_ctz(m), "stack overflow calling '%s': more than the %u bytes of local memory of a thread",
                         callee->name, SIM_PTX_LOCAL_BYTES);
  uint32_t regbase = caller->regbase + caller->f->nregs, predbase = caller->predbase + caller->f->npreds;
  size_t needr = (size_t)(regbase + callee->nregs) * SIM_PTX_WARP, needp = predbase + callee->npreds;
  if (needr > w->capregs) {
    uint64_t *nr = realloc(w->regs, needr * 2 * sizeof *nr);
    if (!nr) return sim_ptx_fault(c, w, in, -1, "out of memory");
    w->regs = nr;
    w->capregs = needr * 2;
  }
  if (needp > w->cappreds) {
    uint32_t *np = realloc(w->preds, needp * 2 * sizeof *np);
    if (!np) return sim_ptx_fault(c, w, in, -1, "out of memory");
    w->preds = np;
    w->cappreds = needp * 2;
  }
  memset(w->regs + (size_t)regbase * SIM_PTX_WARP, 0, (size_t)callee->nregs * SIM_PTX_WARP * sizeof(uint64_t));
  memset(w->preds + predbase, 0, callee->npreds * sizeof(uint32_t));
  const sim_ptx_func *cf = caller->f;
  w->frames[w->nframes++] = (sim_ptx_frame){.f = callee, .regbase = regbase, .predbase = predbase, .local = local,
                                            .caller_local = caller->local, .rets = cf->vec + in->o[0].reg,
                                            .args = cf->vec + in->o[1].reg};
  w->stack[w->sp - 1].pc++; /* where the caller resumes */
  if (push(w, 0, callee->ncode, m, 1)) return sim_ptx_fault(c, w, in, -1, "out of memory");
  enter_frame(w);
  return 0;
}

/* Lanes `taken` go to `target`, the others of `mask` on to `next`. */
static int branch(sim_ptx_warp *w, uint32_t target, uint32_t next, uint32_t taken, uint32_t mask, uint32_t reconv) {
  sim_ptx_simt *e = &w->stack[w->sp - 1];
  uint32_t rest = mask & ~taken;
  if (!rest) {
    e->pc = target;
    return 0;
  }
  if (!taken) {
    e->pc = next;
    return 0;
  }
  if (reconv == e->rpc) { /* the paths meet where this entry ends: it becomes one of them */
    e->pc = next;
    e->mask = rest;
    return push(w, target, reconv, taken, 0);
  }
  e->pc = reconv;
  if (push(w, target, reconv, taken, 0)) return -1;
  return push(w, next, reconv, rest, 0);
}

static int barrier(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m) {
  uint64_t buf[SIM_PTX_WARP];
  int lane = __builtin_ctz(m);
  uint64_t id = sim_ptx_src(c, w, &in->o[0], buf)[lane];
  uint64_t count = in->nops > 1 ? sim_ptx_src(c, w, &in->o[1], buf)[lane] : 0;
  if (id > 15) return sim_ptx_fault(c, w, in, lane, "barrier %llu: there are 16 (0 to 15)", (unsigned long long)id);
  if (in->nops > 1 && (count % SIM_PTX_WARP || count == 0 || count > c->nthreads))
    return sim_ptx_fault(c, w, in, lane, "barrier thread count %llu is not a multiple of 32 up to the block's %u threads",
                         (unsigned long long)count, c->nthreads);
  w->state = SIM_W_WAIT;
  w->bar = (int)id;
  w->bar_count = (uint32_t)count;
  w->arrived = __builtin_popcount(m);
  w->stack[w->sp - 1].pc++;
  return 0;
}

/* The lanes in m (without a call: the build targets CPUs without popcnt). */
static inline uint64_t lanes_in(uint32_t m) {
  m = m - ((m >> 1) & 0x55555555u);
  m = (m & 0x33333333u) + ((m >> 2) & 0x33333333u);
  return (((m + (m >> 4)) & 0x0f0f0f0fu) * 0x01010101u) >> 24;
}

/* An instruction that neither branches nor waits nor ends lanes, run over
 * the lanes in m (not 0): 0, or -1 after a fault. 1 for one of the others. */
static inline int run_plain(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m) {
  switch (in->op) {
  case SIM_OP_BRA: case SIM_OP_RET: case SIM_OP_EXIT: case SIM_OP_CALL: case SIM_OP_TRAP: case SIM_OP_BAR:
    return 1;
  case SIM_OP_BARWARP: case SIM_OP_FENCE:
    if (c->race) sim_ptx_race_sync(c, w, in, m);
    return 0;
  case SIM_OP_NOP: return 0;
  case SIM_OP_LD: case SIM_OP_ST: case SIM_OP_CVTA: case SIM_OP_ISSPACEP: return sim_ptx_op_mem(c, w, in, m);
  case SIM_OP_ATOM: case SIM_OP_RED: return sim_ptx_op_atom(c, w, in, m);
  case SIM_OP_SHFL: case SIM_OP_VOTE: case SIM_OP_ACTIVEMASK: case SIM_OP_REDUX: case SIM_OP_MATCH:
    return sim_ptx_op_warp(c, w, in, m);
  case SIM_OP_CVT:
    return sim_ptx_type_is_half(in->type) || sim_ptx_type_is_half(in->type2) ? sim_ptx_op_half_cvt(c, w, in, m)
                                                                            : sim_ptx_op_cvt(c, w, in, m);
  case SIM_OP_SETP: case SIM_OP_SET:
    return sim_ptx_type_is_half(in->type) || sim_ptx_type_is_half(in->type2) ? sim_ptx_op_half_cmp(c, w, in, m)
                                                                            : sim_ptx_op_cmp(c, w, in, m);
  case SIM_OP_SELP: case SIM_OP_SLCT: return sim_ptx_op_cmp(c, w, in, m);
  default:
    if (in->op == SIM_OP_MOV || in->op == SIM_OP_DP4A || in->op == SIM_OP_DP2A) return sim_ptx_op_int(c, w, in, m);
    if (sim_ptx_type_is_half(in->type)) return sim_ptx_op_half(c, w, in, m);
    return sim_ptx_type_is_float(in->type) ? sim_ptx_op_float(c, w, in, m) : sim_ptx_op_int(c, w, in, m);
  }
}

/* Runs warp w until it finishes, waits at a barrier or faults (-1). */
static int run_warp(sim_ptx_ctx *c, sim_ptx_warp *w) {
  uint64_t insns = 0;
  int r = 0;
  while (w->state == SIM_W_RUN) {
    if (w->sp == 0) {
      w->state = SIM_W_DONE;
      break;
    }
    sim_ptx_simt *e = &w->stack[w->sp - 1];
    uint32_t mask = e->mask & ~w->exited;
    if (!mask || e->pc == e->rpc) {
      w->sp--;
      if (e->frame_base && --w->nframes > 0) enter_frame(w);
      continue;
    }
    const sim_ptx_insn *in = &w->f->code[e->pc], *code = w->f->code;
    uint32_t m, pc = e->pc, rpc = e->rpc;
    /* straight-line code: the lanes, the stack and the state stay as they
     * are until an instruction of control flow (or the entry's end); the pc
     * is kept here meanwhile, and the clock counted for the general paths
     * (which read it) */
    uint64_t clock = w->clock;
    for (;;) {
      m = mask;
      if (in->guard >= 0) m &= in->guard_neg ? ~w->P[in->guard] : w->P[in->guard];
      clock++;
      insns += m == 0xffffffffu ? SIM_PTX_WARP : lanes_in(m);
      if (m == 0xffffffffu && in->fast) { /* a whole warp of a common form: its own handler */
        sim_ptx_fast_handlers[in->fast](w, in);
        r = 0;
      } else {
        w->clock = clock;
        r = m ? run_plain(c, w, in, m) : in->op == SIM_OP_BRA || in->op == SIM_OP_RET || in->op == SIM_OP_EXIT ||
                                                 in->op == SIM_OP_CALL || in->op == SIM_OP_TRAP || in->op == SIM_OP_BAR;
      }
      if (r) break;
      if (++pc == rpc) break;
      in = &code[pc];
    }
    w->clock = clock;
    e->pc = pc;
    if (r < 0) break;
    if (r == 0) continue; /* at the reconvergence point */
    r = 0;
    switch (in->op) {
    case SIM_OP_BRA: r = branch(w, in->target, e->pc + 1, m, mask, in->reconv); break;
    case SIM_OP_RET:
      if (w->nframes > 1) {
        r = branch(w, w->f->ncode, e->pc + 1, m, mask, in->reconv);
        break;
      }
      __attribute__((fallthrough)); /* returning from the kernel is exiting */
    case SIM_OP_EXIT:
      w->exited |= m;
      e->pc++;
      break;
    case SIM_OP_CALL:
      if (m) r = call(c, w, in, m);
      else e->pc++;
      break;
    case SIM_OP_TRAP:
      if (m) r = sim_ptx_fault(c, w, in, __builtin_ctz(m), "trap");
      e->pc++;
      break;
    default: /* SIM_OP_BAR */
      if (m) r = barrier(c, w, in, m);
      else e->pc++;
      break;
    }
    if (r) break;
  }
  c->insns += insns;
  return r ? -1 : 0;
}

static int start_warp(sim_ptx_ctx *c, sim_ptx_warp *w, unsigned index) {
  const sim_ptx_func *k = c->kernel;
  unsigned bx = c->l->block[0], by = c->l->block[1];
  w->index = index;
  w->first = index * SIM_PTX_WARP;
  for (int d = 0; d < 3; d++) {
    w->ntid[d] = c->l->block[d];
    w->ctaid[d] = c->ctaid[d];
    w->nctaid[d] = c->l->grid[d];
  }
  w->live = 0;
  for (int l = 0; l < SIM_PTX_WARP; l++) {
    unsigned t = w->first + (unsigned)l;
    if (t < c->nthreads) w->live |= 1u << l;
    w->tid[0][l] = t % bx;
    w->tid[1][l] = t / bx % by;
    w->tid[2][l] = t / bx / by;
  }
  w->exited = 0;
  w->state = SIM_W_RUN;
  w->sp = 0;
  w->nframes = 1;
  size_t needr = (size_t)k->nregs * SIM_PTX_WARP;
  if (needr > w->capregs || !w->regs) {
    w->regs_zeroed = 0;
    free(w->regs);
    w->capregs = needr ? needr : 1;
    w->regs = malloc(w->capregs * sizeof *w->regs);
  }
  if (k->npreds > w->cappreds || !w->preds) {
    free(w->preds);
    w->cappreds = k->npreds ? k->npreds : 1;
    w->preds = malloc(w->cappreds * sizeof *w->preds);
  }
  if (!w->frames) w->frames = malloc(SIM_PTX_MAX_DEPTH * sizeof *w->frames);
  if (!w->regs || !w->preds || !w->frames) return -1;
  if (!w->regs_zeroed) { /* the first block: all of them; then those a thread may read before writing */
    memset(w->regs, 0, needr * sizeof *w->regs);
    w->regs_zeroed = 1;
  } else {
    for (uint32_t i = 0; i < k->nundef; i++)
      memset(w->regs + (size_t)k->undef_regs[i] * SIM_PTX_WARP, 0, SIM_PTX_WARP * sizeof *w->regs);
  }
  memset(w->preds, 0, k->npreds * sizeof *w->preds);
  w->frames[0] = (sim_ptx_frame){.f = k};
  enter_frame(w);
  return push(w, 0, k->ncode, w->live, 1);
}

/* Warp w takes the registers of warp d, which has ended, and d takes w's:
 * a block whose warps run to their end one after another (no barrier)
 * keeps its registers in one set, warm in the cache, not one a warp. */
static void take_registers(sim_ptx_warp *w, sim_ptx_warp *d) {
  uint64_t *regs = w->regs;
  uint32_t *preds = w->preds;
  size_t capregs = w->capregs, cappreds = w->cappreds;
  int zeroed = w->regs_zeroed;
  w->regs = d->regs, w->preds = d->preds, w->capregs = d->capregs, w->cappreds = d->cappreds;
  w->regs_zeroed = d->regs_zeroed;
  d->regs = regs, d->preds = preds, d->capregs = capregs, d->cappreds = cappreds, d->regs_zeroed = zeroed;
}

static int run_block(sim_ptx_ctx *c) {
  if (sim_ptx_race_block(c)) return sim_ptx_fault(c, NULL, NULL, -1, "out of memory");
  for (unsigned i = 0; i < c->nwarps; i++) c->warps[i].state = SIM_W_NEW;
  unsigned order[1024 / SIM_PTX_WARP], ended[1024 / SIM_PTX_WARP], nended = 0;
  for (;;) {
    sim_ptx_sched_warps(c, order, c->nwarps);
    for (unsigned i = 0; i < c->nwarps; i++) {
      sim_ptx_warp *w = &c->warps[order[i]];
      if (w->state == SIM_W_NEW) { /* started when it first runs (every warp does in the first round) */
        if (nended) take_registers(w, &c->warps[ended[--nended]]);
        if (start_warp(c, w, order[i])) return sim_ptx_fault(c, NULL, NULL, -1, "out of memory");
      }
      if (w->state != SIM_W_RUN) continue;
      if (run_warp(c, w)) return -1;
      if (w->state == SIM_W_DONE) ended[nended++] = order[i];
    }
    unsigned live = 0, waiting = 0;
    for (unsigned i = 0; i < c->nwarps; i++) {
      const sim_ptx_warp *w = &c->warps[i];
      if (w->state == SIM_W_DONE) continue;
      live += (unsigned)__builtin_popcount(w->live & ~w->exited);
      waiting++;
    }
    if (!waiting) return 0;
    int released = 0;
    for (int b = 0; b < 16; b++) {
      unsigned arrived = 0, count = 0, any = 0;
      for (unsigned i = 0; i < c->nwarps; i++) {
        const sim_ptx_warp *w = &c->warps[i];
        if (w->state != SIM_W_WAIT || w->bar != b) continue;
        arrived += (unsigned)w->arrived;
        if (w->bar_count) count = w->bar_count;
        any = 1;
      }
      if (!any || arrived < (count ? count : live)) continue;
      for (unsigned i = 0; i < c->nwarps; i++)
        if (c->warps[i].state == SIM_W_WAIT && c->warps[i].bar == b) c->warps[i].state = SIM_W_RUN;
      released = 1;
      sim_ptx_race_barrier(c);
    }
    if (!released) {
      for (unsigned i = 0; i < c->nwarps; i++) {
        sim_ptx_warp *w = &c->warps[i];
        if (w->state != SIM_W_WAIT) continue;
        const sim_ptx_simt *e = &w->stack[w->sp - 1];
        return sim_ptx_fault(c, w, &w->f->code[e->pc - 1], __builtin_ctz((e->mask & ~w->exited) | 0x80000000u),
                             "barrier %d never completes: %u of the block's threads wait there, the others exited or "
                             "wait elsewhere",
                             w->bar, (unsigned)w->arrived);
      }
    }
  }
}

int sim_ptx_run(const sim_ptx_module *m, int func, sim_ptx_launch *l, char *err, size_t errlen) {
  l->printed = NULL;
  l->printed_len = 0;
  l->asserted = 0;
  if (!m || func < 0 || func >= m->nfuncs || !m->funcs[func].is_entry) {
    snprintf(err, errlen, "no such kernel in the module");
    return -1;
  }
  const sim_ptx_func *k = &m->funcs[func];
  sim_ptx_ctx c = {.m = m, .kernel = k, .l = l, .err = err, .errlen = errlen};
  unsigned long long nt = (unsigned long long)l->block[0] * l->block[1] * l->block[2];
  if (!nt || nt > 1024 || !l->grid[0] || !l->grid[1] || !l->grid[2]) {
    snprintf(err, errlen, "kernel '%s': a block of %u x %u x %u threads in a grid of %u x %u x %u blocks", k->name,
             l->block[0], l->block[1], l->block[2], l->grid[0], l->grid[1], l->grid[2]);
    return -1;
  }
  if (k->max_threads && nt > (unsigned long long)k->max_threads) {
    snprintf(err, errlen, "kernel '%s': %llu threads a block, more than its .maxntid %d", k->name, nt, k->max_threads);
    return -1;
  }
  c.nthreads = (unsigned)nt;
  c.nwarps = (c.nthreads + SIM_PTX_WARP - 1) / SIM_PTX_WARP;
  c.shared_size = (m->shared_bytes + 15) / 16 * 16 + l->shared_bytes;
  c.params = calloc(k->param_bytes ? k->param_bytes : 1, 1);
  c.shared = calloc(c.shared_size ? c.shared_size : 1, 1);
  c.warps = calloc(c.nwarps, sizeof *c.warps);
  if (m->uses_local) c.local = malloc((size_t)c.nthreads * SIM_PTX_LOCAL_BYTES);
  int r = 0;
  if (!c.params || !c.shared || !c.warps || (m->uses_local && !c.local) || sim_ptx_race_start(&c)) {
    snprintf(err, errlen, "out of memory running kernel '%s'", k->name);
    r = -1;
  }
  for (int i = 0; r == 0 && i < k->nparams; i++) {
    if (!l->params || !l->params[i]) {
      snprintf(err, errlen, "kernel '%s': argument %d is missing", k->name, i + 1);
      r = -1;
    } else {
      memcpy(c.params + k->params[i].offset, l->params[i], k->params[i].size);
    }
  }
  sim_ptx_sched_start(&c);
  uint64_t nblocks = (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];
  for (uint64_t i = 0; r == 0 && i < nblocks; i++) {
    uint64_t b = sim_ptx_sched_block(&c, i, nblocks);
    c.ctaid[0] = (unsigned)(b % l->grid[0]);
    c.ctaid[1] = (unsigned)(b / l->grid[0] % l->grid[1]);
    c.ctaid[2] = (unsigned)(b / l->grid[0] / l->grid[1]);
    memset(c.shared, 0, c.shared_size ? c.shared_size : 1);
    r = run_block(&c);
  }
  for (unsigned i = 0; c.warps && i < c.nwarps; i++) {
    free(c.warps[i].regs);
    free(c.warps[i].preds);
    free(c.warps[i].stack);
    free(c.warps[i].frames);
  }
  sim_ptx_race_end(&c);
  free(c.warps);
  free(c.params);
  free(c.shared);
  free(c.local);
  l->thread_insns = c.insns;
  sim_ptx_printed(&c, l);
  return r;
}
