/*
 * ptx_check.c -- a decoded function checked before it can run: operand
 * kinds and types each opcode needs, calls that match their callee, and
 * the reconvergence point of every conditional branch (its immediate
 * post-dominator: where the lanes that went either way meet again). Once
 * checked, its mul/add pairs are contracted as ptxas does (ptx_fuse.c).
 */

#include "ptx_ir.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *err, size_t errlen, const sim_ptx_insn *in, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, const sim_ptx_insn *in, const char *fmt, ...) {
  int n = snprintf(err, errlen, "line %u: ", in->line);
  if (n < 0 || (size_t)n >= errlen) return -1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

static const char *opname(int op) {
  static const char *names[SIM_OP_COUNT] = {
    [SIM_OP_MOV] = "mov", [SIM_OP_ADD] = "add", [SIM_OP_SUB] = "sub", [SIM_OP_MUL] = "mul", [SIM_OP_MAD] = "mad",
    [SIM_OP_DIV] = "div", [SIM_OP_REM] = "rem", [SIM_OP_CVT] = "cvt", [SIM_OP_SETP] = "setp", [SIM_OP_LD] = "ld",
    [SIM_OP_ST] = "st", [SIM_OP_ATOM] = "atom", [SIM_OP_RED] = "red", [SIM_OP_SHFL] = "shfl", [SIM_OP_VOTE] = "vote",
    [SIM_OP_FMA] = "fma", [SIM_OP_CALL] = "call", [SIM_OP_BAR] = "bar", [SIM_OP_ABS] = "abs", [SIM_OP_NEG] = "neg",
    [SIM_OP_MIN] = "min", [SIM_OP_MAX] = "max", [SIM_OP_SET] = "set", [SIM_OP_SELP] = "selp",
    [SIM_OP_DP4A] = "dp4a", [SIM_OP_DP2A] = "dp2a", [SIM_OP_REDUX] = "redux", [SIM_OP_MATCH] = "match",
    [SIM_OP_EX2] = "ex2", [SIM_OP_TANH] = "tanh", [SIM_OP_RCP] = "rcp", [SIM_OP_SQRT] = "sqrt",
  };
  return op < SIM_OP_COUNT && names[op] ? names[op] : "this instruction";
}

/* Why an instruction on f16/bf16 values is not supported, or NULL: the
 * forms of the PTX ISA that ptx_ops_half.c runs. */
static const char *half_ok(const sim_ptx_insn *in) {
  int t = in->type, t2 = in->type2, x2 = t == SIM_T_F16X2 || t == SIM_T_BF16X2;
  switch (in->op) {
  case SIM_OP_ADD: case SIM_OP_SUB: case SIM_OP_MUL: case SIM_OP_FMA:
    if (in->rnd != SIM_RND_NONE && in->rnd != SIM_RND_RN) return "rounding other than .rn";
    if (in->flags & ~(SIM_F_FTZ | SIM_F_SAT | SIM_F_RELU)) return "modifier";
    return NULL;
  case SIM_OP_NEG: case SIM_OP_ABS: case SIM_OP_MIN: case SIM_OP_MAX:
    return in->flags & ~(SIM_F_FTZ | SIM_F_NAN) || in->rnd ? "modifier" : NULL;
  case SIM_OP_SETP: case SIM_OP_SET:
    if (in->flags & ~SIM_F_FTZ) return "modifier";
    if (in->op == SIM_OP_SET && sim_ptx_type_is_half(t) && (t == SIM_T_F16X2 || t == SIM_T_BF16X2) !=
        (t2 == SIM_T_F16X2 || t2 == SIM_T_BF16X2))
      return "a pair compared into one value";
    return NULL;
  case SIM_OP_CVT:
    if (in->flags & ~(SIM_F_FTZ | SIM_F_SAT | SIM_F_RELU)) return "modifier";
    if (x2 && t2 != SIM_T_F32) return "a pair from anything but two f32";
    if (t2 == SIM_T_F16X2 || t2 == SIM_T_BF16X2) return "a pair as the source";
    if (sim_ptx_type_is_half(t) && !sim_ptx_type_is_half(t2) && in->rnd >= SIM_RND_RNI) return "rounding to an integer";
    return NULL;
  case SIM_OP_MOV: case SIM_OP_SELP:
    return NULL;
  default:
    return "only add, sub, mul, fma, neg, abs, min, max, setp, set, cvt, mov, selp, ld and st are";
  }
}

/* A source operand: a register, an immediate or a special register. */
/* Whether vector operand v lists '_' (a sink). */
static int has_sink(const sim_ptx_func *f, const sim_ptx_operand *v) {
  for (int64_t k = 0; k < v->imm; k++)
    if (f->vec[v->reg + (uint32_t)k] == UINT32_MAX) return 1;
  return 0;
}

static int src_ok(const sim_ptx_operand *o) { return o->kind == SIM_K_REG || o->kind == SIM_K_IMM || o->kind == SIM_K_SREG; }

/* An immediate written as a decimal double, in an f32 instruction: its
 * f32 bits. A 0f immediate in an f64 one is refused. */
static int fix_imm(sim_ptx_operand *o, int type) {
  if (o->kind != SIM_K_IMM || !o->flags) return 0;
  if (type == SIM_T_F32 && o->flags == 3) {
    double d;
    uint64_t b = (uint64_t)o->imm;
    memcpy(&d, &b, 8);
    float f = (float)d;
    uint32_t u;
    memcpy(&u, &f, 4);
    o->imm = u;
  } else if (type == SIM_T_F64 && o->flags == 2) {
    return -1;
  } else if (!sim_ptx_type_is_float(type) && type != SIM_T_NONE) {
    return -1;
  }
  o->flags = 0;
  return 0;
}

/* A call of a function the module declares, not defines: CUDA's vprintf
 * (int vprintf(const char *format, void *args)) and __assertfail (void
 * __assertfail(const char *message, const char *file, unsigned line,
 * const char *function, size_t charsize)) run; nothing else does. */
static int libcall(const sim_ptx_func *c, sim_ptx_insn *in, char *err, size_t errlen) {
  static const struct {
    const char *name;
    int mode, nrets, nparams;
    size_t sizes[6];
  } lib[] = {
    {"vprintf", SIM_CALL_VPRINTF, 1, 3, {4, 8, 8}},
    {"__assertfail", SIM_CALL_ASSERT, 0, 5, {8, 8, 4, 8, 8}},
  };
  for (size_t i = 0; i < sizeof lib / sizeof *lib; i++) {
    if (strcmp(c->name, lib[i].name) != 0) continue;
    int same = c->nrets == lib[i].nrets && c->nparams == lib[i].nparams;
    for (int k = 0; same && k < c->nparams; k++) same = c->params[k].size == lib[i].sizes[k];
    if (!same || in->o[0].imm != c->nrets || in->o[1].imm != c->nparams - c->nrets)
      return fail(err, errlen, in, "unsupported call to '%s': not declared or called as CUDA's %s", c->name,
                  lib[i].mode == SIM_CALL_VPRINTF ? "int vprintf(const char *, void *)"
                                                  : "void __assertfail(const char *, const char *, unsigned, const char *, size_t)");
    in->mode = (uint8_t)lib[i].mode;
    return 0;
  }
  return fail(err, errlen, in, "unsupported call to '%s' (declared, not defined)", c->name);
}

static int operands(const sim_ptx_module *m, const sim_ptx_func *f, sim_ptx_insn *in, char *err, size_t errlen) {
  int op = in->op, n = in->nops, t = in->type;
  (void)f;
  int isf = sim_ptx_type_is_float(t) || sim_ptx_type_is_half(t), size = sim_ptx_type_size(t);
  for (int k = 0; k < n; k++) {
    int ty = op == SIM_OP_CVT && k >= 1 ? in->type2 : op == SIM_OP_SET && k >= 1 ? in->type2 : t;
    if (op == SIM_OP_SELP && k == 3) continue;
    if ((op == SIM_OP_SHL || op == SIM_OP_SHR || op == SIM_OP_BFE || op == SIM_OP_SHFL || op == SIM_OP_PRMT ||
         op == SIM_OP_BFI || op == SIM_OP_SHF || op == SIM_OP_LOP3) && k >= 2)
      ty = SIM_T_U32;
    if (fix_imm(&in->o[k], ty)) return fail(err, errlen, in, "an immediate of the wrong kind for its type");
  }
  switch (op) {
  case SIM_OP_BRA: case SIM_OP_RET: case SIM_OP_EXIT: case SIM_OP_TRAP: case SIM_OP_FENCE: case SIM_OP_NOP:
    return n == 0 ? 0 : fail(err, errlen, in, "unexpected operands");
  case SIM_OP_BARWARP:
    return n == 1 && src_ok(&in->o[0]) ? 0 : fail(err, errlen, in, "bar.warp.sync takes a member mask");
  case SIM_OP_BAR:
    if (n < 1 || n > 2 || !src_ok(&in->o[0]) || (n == 2 && !src_ok(&in->o[1])))
      return fail(err, errlen, in, "bar.sync takes a barrier and an optional thread count");
    return 0;
  case SIM_OP_CALL: {
    const sim_ptx_func *c = &m->funcs[in->target];
    in->mode = SIM_CALL_FUNC;
    if (c->is_extern) return libcall(c, in, err, errlen);
    if (c->is_entry) return fail(err, errlen, in, "call to the kernel '%s'", c->name);
    if (in->o[0].imm != c->nrets || in->o[1].imm != c->nparams - c->nrets)
      return fail(err, errlen, in, "call to '%s' with %d return values and %d arguments, it takes %d and %d", c->name,
                  (int)in->o[0].imm, (int)in->o[1].imm, c->nrets, c->nparams - c->nrets);
    return 0;
  }
  case SIM_OP_ACTIVEMASK:
    return n == 1 && in->o[0].kind == SIM_K_REG && t == SIM_T_B32 ? 0 : fail(err, errlen, in, "activemask.b32 takes a register");
  case SIM_OP_VOTE:
    if (n != 3 || (in->o[0].kind != (in->mode == SIM_MODE_BALLOT ? SIM_K_REG : SIM_K_PRED)) || in->o[1].kind != SIM_K_PRED ||
        !src_ok(&in->o[2]) || (in->mode == SIM_MODE_BALLOT) != (t == SIM_T_B32) || (in->mode != SIM_MODE_BALLOT && t != SIM_T_PRED))
      return fail(err, errlen, in, "unsupported form of vote");
    return 0;
  case SIM_OP_SHFL:
    if (n != 5 || in->o[0].kind != SIM_K_REG || t != SIM_T_B32 || !src_ok(&in->o[1]) || !src_ok(&in->o[2]) ||
        !src_ok(&in->o[3]) || !src_ok(&in->o[4]) || (in->o[5].kind && in->o[5].kind != SIM_K_PRED))
      return fail(err, errlen, in, "unsupported form of shfl");
    return 0;
  case SIM_OP_LD: case SIM_OP_ST: {
    const sim_ptx_operand *a = &in->o[op == SIM_OP_LD ? 1 : 0], *v = &in->o[op == SIM_OP_LD ? 0 : 1];
    if (n != 2 || a->kind != SIM_K_ADDR || !size || t == SIM_T_PRED)
      return fail(err, errlen, in, "unsupported form of %s", op == SIM_OP_LD ? "ld" : "st");
    if (in->vec > 1 ? (v->kind != SIM_K_VEC || v->imm != in->vec) : (op == SIM_OP_LD ? v->kind != SIM_K_REG : !src_ok(v)))
      return fail(err, errlen, in, "a %s of %d values needs %d registers", op == SIM_OP_LD ? "load" : "store", in->vec, in->vec);
    if (op == SIM_OP_ST && in->vec > 1 && has_sink(f, v))
      return fail(err, errlen, in, "a store's values cannot include '_' (a sink is for what is loaded)");
    if (a->flags == SIM_A_KPARAM && (in->space != SIM_S_PARAM || op == SIM_OP_ST))
      return fail(err, errlen, in, "a kernel parameter is read with ld.param");
    if ((a->flags == SIM_A_ARG || a->flags == SIM_A_FRAME) && in->space != SIM_S_PARAM && in->space != SIM_S_LOCAL)
      return fail(err, errlen, in, "a parameter or local is read with ld.param or ld.local");
    if (in->space == SIM_S_PARAM && (a->flags == SIM_A_REG || a->flags == SIM_A_ABS))
      return fail(err, errlen, in, "unsupported ld.param through an address in a register");
    if (a->flags == SIM_A_VAR && m->vars[a->sym].space != (in->space ? in->space : m->vars[a->sym].space))
      return fail(err, errlen, in, "variable '%s' accessed in another state space", m->vars[a->sym].name);
    return 0;
  }
  case SIM_OP_ATOM: case SIM_OP_RED: {
    int d = op == SIM_OP_ATOM, want = d + 2 + (in->aop == SIM_AOP_CAS);
    if (n != want || (d && in->o[0].kind != SIM_K_REG) || in->o[d].kind != SIM_K_ADDR || !src_ok(&in->o[d + 1]) ||
        (n > d + 2 && !src_ok(&in->o[d + 2])))
      return fail(err, errlen, in, "unsupported form of %s", d ? "atom" : "red");
    if (in->space != SIM_S_GENERIC && in->space != SIM_S_GLOBAL && in->space != SIM_S_SHARED)
      return fail(err, errlen, in, "atomics work on global, shared or generic addresses");
    if (in->o[d].flags != SIM_A_REG && in->o[d].flags != SIM_A_VAR)
      return fail(err, errlen, in, "unsupported address of an atomic");
    int ok, half = sim_ptx_type_is_half(t);
    if (in->flags & ~SIM_F_NOFTZ || (half && !(in->flags & SIM_F_NOFTZ)) || (half && in->aop != SIM_AOP_ADD))
      return fail(err, errlen, in, "unsupported form of %s (of 16-bit floats: add.noftz)", d ? "atom" : "red");
    switch (in->aop) {
    case SIM_AOP_ADD: ok = (size >= 4 || half) && t != SIM_T_B32 && t != SIM_T_B64; break;
    case SIM_AOP_MIN: case SIM_AOP_MAX: ok = size >= 4 && !isf && t != SIM_T_B32 && t != SIM_T_B64; break;
    case SIM_AOP_INC: case SIM_AOP_DEC: ok = t == SIM_T_U32; break;
    default: ok = t == SIM_T_B32 || t == SIM_T_B64 || (in->aop == SIM_AOP_EXCH && size >= 4 && !isf) ||
                  (in->aop == SIM_AOP_CAS && size >= 4 && !isf); break;
    }
    return ok ? 0 : fail(err, errlen, in, "unsupported type of an atomic operation");
  }
  case SIM_OP_DP4A: case SIM_OP_DP2A:
    if (n != 4 || in->o[0].kind != SIM_K_REG || !src_ok(&in->o[1]) || !src_ok(&in->o[2]) || !src_ok(&in->o[3]) ||
        (t != SIM_T_U32 && t != SIM_T_S32) || (in->type2 != SIM_T_U32 && in->type2 != SIM_T_S32))
      return fail(err, errlen, in, "unsupported form of %s", opname(op));
    return 0;
  case SIM_OP_REDUX: {
    int bitwise = in->aop == SIM_AOP_AND || in->aop == SIM_AOP_OR || in->aop == SIM_AOP_XOR;
    if (n != 3 || in->o[0].kind != SIM_K_REG || !src_ok(&in->o[1]) || !src_ok(&in->o[2]) ||
        (bitwise ? t != SIM_T_B32 : t != SIM_T_U32 && t != SIM_T_S32))
      return fail(err, errlen, in, "unsupported form of redux (add, min, max of .u32/.s32; and, or, xor of .b32)");
    return 0;
  }
  case SIM_OP_MATCH:
    if (n != 3 || in->o[0].kind != SIM_K_REG || !src_ok(&in->o[1]) || !src_ok(&in->o[2]) ||
        (t != SIM_T_B32 && t != SIM_T_B64) || (in->o[5].kind && (in->o[5].kind != SIM_K_PRED || in->mode != SIM_MODE_ALL)))
      return fail(err, errlen, in, "unsupported form of match");
    return 0;
  default:
    break;
  }
  if (sim_ptx_type_is_half(t) || ((op == SIM_OP_CVT || op == SIM_OP_SET) && sim_ptx_type_is_half(in->type2))) {
    if (half_ok(in)) return fail(err, errlen, in, "unsupported %s of 16-bit floats (%s)", opname(op), half_ok(in));
  }
  /* arithmetic, moves, conversions, comparisons: a destination, then sources */
  if (n < 1) return fail(err, errlen, in, "missing operands");
  const sim_ptx_operand *d = &in->o[0];
  int dpred = op == SIM_OP_SETP || (t == SIM_T_PRED && op != SIM_OP_SET && op != SIM_OP_SELP);
  if (op == SIM_OP_MOV && in->o[0].kind == SIM_K_VEC) dpred = 0;
  else if (d->kind != (dpred ? SIM_K_PRED : SIM_K_REG)) return fail(err, errlen, in, "the destination of %s is not a register", opname(op));
  if (op == SIM_OP_SETP && in->o[5].kind && in->o[5].kind != SIM_K_PRED) return fail(err, errlen, in, "bad second destination");
  if (op != SIM_OP_SETP && in->o[5].kind) return fail(err, errlen, in, "unexpected second destination");
  static const signed char want[SIM_OP_COUNT] = {
    [SIM_OP_MOV] = 2, [SIM_OP_ADD] = 3, [SIM_OP_SUB] = 3, [SIM_OP_MUL] = 3, [SIM_OP_MAD] = 4, [SIM_OP_MUL24] = 3,
    [SIM_OP_MAD24] = 4, [SIM_OP_DIV] = 3, [SIM_OP_REM] = 3, [SIM_OP_ABS] = 2, [SIM_OP_NEG] = 2, [SIM_OP_MIN] = 3,
    [SIM_OP_MAX] = 3, [SIM_OP_AND] = 3, [SIM_OP_OR] = 3, [SIM_OP_XOR] = 3, [SIM_OP_NOT] = 2, [SIM_OP_CNOT] = 2,
    [SIM_OP_SHL] = 3, [SIM_OP_SHR] = 3, [SIM_OP_BFE] = 4, [SIM_OP_BFI] = 5, [SIM_OP_POPC] = 2, [SIM_OP_CLZ] = 2,
    [SIM_OP_BREV] = 2, [SIM_OP_BFIND] = 2, [SIM_OP_PRMT] = 4, [SIM_OP_LOP3] = 5, [SIM_OP_SHF] = 4, [SIM_OP_FMA] = 4,
    [SIM_OP_RCP] = 2, [SIM_OP_SQRT] = 2, [SIM_OP_RSQRT] = 2, [SIM_OP_EX2] = 2, [SIM_OP_LG2] = 2, [SIM_OP_SIN] = 2,
    [SIM_OP_COS] = 2, [SIM_OP_TANH] = 2, [SIM_OP_COPYSIGN] = 3, [SIM_OP_CVT] = 2, [SIM_OP_CVTA] = 2,
    [SIM_OP_ISSPACEP] = 2, [SIM_OP_SETP] = 3, [SIM_OP_SET] = 3, [SIM_OP_SELP] = 4, [SIM_OP_SLCT] = 4,
  };
  int w = want[op];
  if ((op == SIM_OP_SETP || op == SIM_OP_SET) && in->aop) w++;
  if (op == SIM_OP_CVT && (t == SIM_T_F16X2 || t == SIM_T_BF16X2)) w++; /* two f32 packed in one */
  if (!w || n != w) return fail(err, errlen, in, "%s takes %d operands, not %d", opname(op), w, n);
  for (int k = 1; k < n; k++) {
    const sim_ptx_operand *s = &in->o[k];
    int pred_ok = (t == SIM_T_PRED && op != SIM_OP_SETP) || ((op == SIM_OP_SETP || op == SIM_OP_SET) && k == 3) ||
                  (op == SIM_OP_SELP && k == 3);
    if ((op == SIM_OP_MOV || op == SIM_OP_CVTA) && s->kind == SIM_K_SYMADDR) continue;
    if (op == SIM_OP_MOV && s->kind == SIM_K_VEC && d->kind == SIM_K_REG) continue;
    if (pred_ok ? s->kind != SIM_K_PRED && !(s->kind == SIM_K_IMM && t == SIM_T_PRED) : !src_ok(s))
      return fail(err, errlen, in, "operand %d of %s is of the wrong kind", k + 1, opname(op));
  }
  if (op == SIM_OP_MOV && d->kind == SIM_K_VEC && in->o[1].kind != SIM_K_REG) return fail(err, errlen, in, "bad unpacking mov");
  if (op == SIM_OP_MOV && in->o[1].kind == SIM_K_VEC && has_sink(f, &in->o[1]))
    return fail(err, errlen, in, "the values a mov packs cannot include '_' (a sink is for what is unpacked)");
  if (op == SIM_OP_MOV && (d->kind == SIM_K_VEC || in->o[1].kind == SIM_K_VEC)) {
    const sim_ptx_operand *v = d->kind == SIM_K_VEC ? d : &in->o[1];
    if (v->imm < 2 || (size_t)v->imm * 2 > (size_t)size || size % v->imm)
      return fail(err, errlen, in, "unsupported vector mov");
  }
  if (!size && op != SIM_OP_CVTA && op != SIM_OP_ISSPACEP) return fail(err, errlen, in, "%s needs a type", opname(op));
  if (op == SIM_OP_CVT && (!sim_ptx_type_size(in->type2) || t == SIM_T_PRED || in->type2 == SIM_T_PRED))
    return fail(err, errlen, in, "cvt needs two types");
  if (op == SIM_OP_CVT && in->rnd >= SIM_RND_RN && in->rnd <= SIM_RND_RP) { /* as ptxas: no rounding where nothing rounds */
    int dfl = sim_ptx_type_is_float(t) || sim_ptx_type_is_half(t), sfl = sim_ptx_type_is_float(in->type2) ||
                                                                          sim_ptx_type_is_half(in->type2);
    if ((dfl && sfl && sim_ptx_type_size(t) > sim_ptx_type_size(in->type2)) || (!dfl && !sfl))
      return fail(err, errlen, in, "a rounding modifier on a cvt that does not round");
  }
  if ((op == SIM_OP_SET || op == SIM_OP_SLCT) && !sim_ptx_type_size(in->type2)) return fail(err, errlen, in, "two types needed");
  if ((op == SIM_OP_SETP || op == SIM_OP_SET) && !in->cmp) return fail(err, errlen, in, "a comparison needed");
  int float_only = op >= SIM_OP_FMA && op <= SIM_OP_COPYSIGN;
  int int_only = (op >= SIM_OP_MUL24 && op <= SIM_OP_MAD24) || op == SIM_OP_REM ||
                 (op >= SIM_OP_AND && op <= SIM_OP_SHF && op != SIM_OP_ABS && op != SIM_OP_NEG && op != SIM_OP_MIN && op != SIM_OP_MAX);
  if ((float_only && !isf) || (int_only && isf)) return fail(err, errlen, in, "unsupported type for %s", opname(op));
  if (t == SIM_T_PRED && op != SIM_OP_MOV && op != SIM_OP_AND && op != SIM_OP_OR && op != SIM_OP_XOR && op != SIM_OP_NOT &&
      op != SIM_OP_SELP)
    return fail(err, errlen, in, "unsupported predicate operation");
  if (op == SIM_OP_MUL && !isf && !in->mode) return fail(err, errlen, in, "mul of integers needs .lo, .hi or .wide");
  if (op == SIM_OP_MAD && !in->mode) return fail(err, errlen, in, "mad of integers needs .lo, .hi or .wide");
  if ((op == SIM_OP_MUL || op == SIM_OP_MAD) && in->mode == SIM_MODE_WIDE && size > 4)
    return fail(err, errlen, in, "unsupported .wide of 64-bit integers");
  if ((op == SIM_OP_MUL || op == SIM_OP_MAD) && isf && in->mode) return fail(err, errlen, in, "unexpected .lo/.hi");
  return 0;
}

/* Immediate post-dominators over instructions, node f->ncode being the
 * end every return and exit reaches (Cooper, Harvey and Kennedy's
 * iteration on the reversed graph). */
static int reconvergence(sim_ptx_func *f) {
  uint32_t n = f->ncode, end = n, total = n + 1;
  uint32_t *succ = malloc(2 * total * sizeof *succ), *nsucc = calloc(total, sizeof *nsucc);
  uint32_t *predstart = calloc(total + 1, sizeof *predstart), *preds = malloc(2 * total * sizeof *preds);
  uint32_t *order = malloc(total * sizeof *order), *post = malloc(total * sizeof *post), *ipdom = malloc(total * sizeof *ipdom);
  uint32_t *stack = malloc(2 * total * sizeof *stack);
  int r = -1;
  if (!succ || !nsucc || !predstart || !preds || !order || !post || !ipdom || !stack) goto out;
  for (uint32_t i = 0; i < n; i++) {
    const sim_ptx_insn *in = &f->code[i];
    uint32_t *s = &succ[2 * i];
    if (in->op == SIM_OP_BRA) {
      s[nsucc[i]++] = in->target;
      if (in->guard >= 0 && in->target != i + 1) s[nsucc[i]++] = i + 1;
    } else if ((in->op == SIM_OP_RET || in->op == SIM_OP_EXIT || in->op == SIM_OP_TRAP) && in->guard < 0) {
      s[nsucc[i]++] = end;
    } else {
      s[nsucc[i]++] = i + 1;
      if (in->op == SIM_OP_RET || in->op == SIM_OP_EXIT || in->op == SIM_OP_TRAP) s[nsucc[i]++] = end;
    }
  }
  /* predecessors (the reversed graph's successors) */
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t k = 0; k < nsucc[i]; k++) predstart[succ[2 * i + k] + 1]++;
  for (uint32_t i = 0; i < total; i++) predstart[i + 1] += predstart[i];
  uint32_t *fill = calloc(total, sizeof *fill);
  if (!fill) goto out;
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t k = 0; k < nsucc[i]; k++) {
      uint32_t s = succ[2 * i + k];
      preds[predstart[s] + fill[s]++] = i;
    }
  free(fill);
  /* postorder of the reversed graph from the end, iteratively */
  for (uint32_t i = 0; i < total; i++) post[i] = UINT32_MAX, ipdom[i] = UINT32_MAX;
  uint32_t count = 0, sp = 0;
  uint32_t *seen = calloc(total, sizeof *seen);
  if (!seen) goto out;
  stack[sp++] = end;
  seen[end] = 1;
  uint32_t *next = calloc(total, sizeof *next);
  if (!next) {
    free(seen);
    goto out;
  }
  while (sp) {
    uint32_t v = stack[sp - 1];
    if (predstart[v] + next[v] < predstart[v + 1]) {
      uint32_t w = preds[predstart[v] + next[v]++];
      if (!seen[w]) {
        seen[w] = 1;
        stack[sp++] = w;
      }
    } else {
      post[v] = count;
      order[count++] = v;
      sp--;
    }
  }
  free(seen);
  free(next);
  ipdom[end] = end;
  for (int changed = 1; changed;) {
    changed = 0;
    for (uint32_t k = count - 1; k-- > 0;) { /* reverse postorder, the end first (skipped) */
      uint32_t b = order[k], nd = UINT32_MAX;
      for (uint32_t j = 0; j < nsucc[b]; j++) {
        uint32_t s = succ[2 * b + j];
        if (ipdom[s] == UINT32_MAX) continue;
        if (nd == UINT32_MAX) {
          nd = s;
          continue;
        }
        uint32_t x = s, y = nd;
        while (x != y) {
          while (post[x] < post[y]) x = ipdom[x];
          while (post[y] < post[x]) y = ipdom[y];
        }
        nd = x;
      }
      if (nd != UINT32_MAX && ipdom[b] != nd) {
        ipdom[b] = nd;
        changed = 1;
      }
    }
  }
  for (uint32_t i = 0; i < n; i++)
    f->code[i].reconv = ipdom[i] == UINT32_MAX ? end : ipdom[i];
  r = 0;
out:
  free(succ);
  free(nsucc);
  free(predstart);
  free(preds);
  free(order);
  free(post);
  free(ipdom);
  free(stack);
  return r;
}

int sim_ptx_check_func(const sim_ptx_module *m, sim_ptx_func *f, char *err, size_t errlen) {
  for (uint32_t i = 0; i < f->ncode; i++) {
    sim_ptx_insn *in = &f->code[i];
    if (operands(m, f, in, err, errlen)) return -1;
    for (int k = 0; k < 6; k++) {
      const sim_ptx_operand *o = &in->o[k];
      if (o->kind == SIM_K_SYMADDR && in->op != SIM_OP_MOV && in->op != SIM_OP_CVTA)
        return fail(err, errlen, in, "unsupported use of the address of %s here", o->flags == SIM_A_VAR ? m->vars[o->sym].name : "a local");
      if ((o->kind == SIM_K_ADDR && o->flags == SIM_A_ARG) && o->sym >= f->nparams)
        return fail(err, errlen, in, "bad parameter");
    }
    if (in->src_file && (in->src_file >= m->nfiles || !m->files[in->src_file]))
      return fail(err, errlen, in, ".loc names file %u, which no .file declares", in->src_file);
  }
  if (sim_ptx_fuse_func(f) || reconvergence(f)) {
    snprintf(err, errlen, "out of memory checking '%s'", f->name);
    return -1;
  }
  return 0;
}
