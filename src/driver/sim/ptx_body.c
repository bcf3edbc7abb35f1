/*
 * ptx_body.c -- a function's body: register, local and call-site .param
 * declarations (scoped by braces), .loc, labels, and each instruction with
 * its guard and operands, decoded into the function's code array.
 */

#include "ptx_parse.h"

#include <stdlib.h>
#include <string.h>

static const struct { const char *name; int id; } sregs[] = {
  {"%tid.x", SIM_SR_TID}, {"%tid.y", SIM_SR_TID + 1}, {"%tid.z", SIM_SR_TID + 2},
  {"%ntid.x", SIM_SR_NTID}, {"%ntid.y", SIM_SR_NTID + 1}, {"%ntid.z", SIM_SR_NTID + 2},
  {"%ctaid.x", SIM_SR_CTAID}, {"%ctaid.y", SIM_SR_CTAID + 1}, {"%ctaid.z", SIM_SR_CTAID + 2},
  {"%nctaid.x", SIM_SR_NCTAID}, {"%nctaid.y", SIM_SR_NCTAID + 1}, {"%nctaid.z", SIM_SR_NCTAID + 2},
  {"%laneid", SIM_SR_LANEID}, {"%warpid", SIM_SR_WARPID}, {"%nwarpid", SIM_SR_NWARPID}, {"%smid", SIM_SR_SMID},
  {"%nsmid", SIM_SR_NSMID}, {"%gridid", SIM_SR_GRIDID}, {"%clock", SIM_SR_CLOCK}, {"%clock_hi", SIM_SR_CLOCK_HI},
  {"%clock64", SIM_SR_CLOCK64}, {"%globaltimer", SIM_SR_GLOBALTIMER}, {"%globaltimer_lo", SIM_SR_GLOBALTIMER_LO},
  {"%globaltimer_hi", SIM_SR_GLOBALTIMER_HI}, {"%lanemask_eq", SIM_SR_LANEMASK_EQ},
  {"%lanemask_le", SIM_SR_LANEMASK_LE}, {"%lanemask_lt", SIM_SR_LANEMASK_LT}, {"%lanemask_ge", SIM_SR_LANEMASK_GE},
  {"%lanemask_gt", SIM_SR_LANEMASK_GT}, {"%dynamic_smem_size", SIM_SR_DYN_SMEM},
  {"%total_smem_size", SIM_SR_TOTAL_SMEM},
};

static sim_ptx_func *cur(sim_ptx_parser *p) { return &p->m->funcs[p->func]; }

static int push_vec(sim_ptx_parser *p, uint32_t v) {
  sim_ptx_func *f = cur(p);
  int cap = (int)p->capvec;
  if (sim_ptx_grow((void **)&f->vec, &cap, (int)f->nvec, sizeof(uint32_t))) return sim_ptx_fail(p, 0, "out of memory");
  p->capvec = (uint32_t)cap;
  f->vec[f->nvec++] = v;
  return 0;
}

/* .reg .type %r<N>; or .reg .type a, b; (.reg.type without a space, as
 * cuda_fp16.h's inline assembly writes it, is one word) */
static int reg_decl(sim_ptx_parser *p) {
  const sim_ptx_token *t = SIM_TOK(p);
  sim_ptx_token glued = *t;
  if (t->len > 4 && t->s[4] == '.') {
    glued.s += 4;
    glued.len -= 4;
    t = &glued;
  } else {
    t = &p->t[++p->i];
  }
  int type = sim_ptx_type_word(t);
  if (type == SIM_T_NONE) return sim_ptx_fail(p, t->line, "unsupported register type '%.*s'", t->len, t->s);
  p->i++;
  sim_ptx_func *f = cur(p);
  for (;;) {
    t = SIM_TOK(p);
    if (t->kind != SIM_TOK_WORD) return sim_ptx_fail(p, t->line, "expected a register name");
    p->i++;
    sim_ptx_name n = {.s = t->s, .len = t->len, .kind = type == SIM_T_PRED ? SIM_NAME_PRED : SIM_NAME_REG, .range = 0};
    if (SIM_TOK(p)->kind == '<') {
      uint64_t cnt;
      int isf, is32;
      p->i++;
      if (SIM_TOK(p)->kind != SIM_TOK_NUM || sim_ptx_number(SIM_TOK(p), &cnt, &isf, &is32) || isf || cnt > 1000000)
        return sim_ptx_fail(p, t->line, "bad register count for '%.*s'", t->len, t->s);
      p->i++;
      if (sim_ptx_expect(p, '>', "'>'")) return -1;
      n.range = (int)cnt;
    }
    uint32_t count = n.range ? (uint32_t)n.range : 1;
    uint32_t *total = type == SIM_T_PRED ? &f->npreds : &f->nregs;
    n.index = *total;
    *total += count;
    if (*total > 1000000) return sim_ptx_fail(p, t->line, "too many registers");
    if (sim_ptx_add_name(p, n)) return -1;
    if (SIM_TOK(p)->kind != ',') break;
    p->i++;
  }
  return sim_ptx_expect(p, ';', "';'");
}

/* .local or .param in a body: space in the function's frame. */
static int frame_decl(sim_ptx_parser *p) {
  const sim_ptx_token *t = &p->t[++p->i];
  size_t align = 0, es = 0;
  for (;; t = &p->t[++p->i]) {
    if (sim_ptx_is(t, ".align")) {
      uint64_t a;
      int isf, is32;
      t = &p->t[++p->i];
      if (t->kind != SIM_TOK_NUM || sim_ptx_number(t, &a, &isf, &is32) || isf || a == 0 || a > 4096)
        return sim_ptx_fail(p, t->line, "bad .align");
      align = (size_t)a;
      continue;
    }
    int ty = sim_ptx_type_word(t);
    if (ty == SIM_T_NONE || ty == SIM_T_PRED) break;
    es = (size_t)sim_ptx_type_size(ty);
  }
  if (!es) return sim_ptx_fail(p, t->line, "unsupported type '%.*s' in a declaration", t->len, t->s);
  if (!align) align = es;
  if (t->kind != SIM_TOK_WORD) return sim_ptx_fail(p, t->line, "expected a name");
  p->i++;
  size_t count = 1;
  while (SIM_TOK(p)->kind == '[') {
    uint64_t n;
    int isf, is32;
    const sim_ptx_token *k = &p->t[++p->i];
    if (k->kind != SIM_TOK_NUM || sim_ptx_number(k, &n, &isf, &is32) || isf || n > (1u << 20))
      return sim_ptx_fail(p, k->line, "unsupported array size in the declaration of '%.*s'", t->len, t->s);
    p->i++;
    if (sim_ptx_expect(p, ']', "']'")) return -1;
    count *= (size_t)n;
  }
  sim_ptx_func *f = cur(p);
  size_t off = (f->frame_bytes + align - 1) / align * align;
  if (off + count * es > SIM_PTX_LOCAL_BYTES / 2)
    return sim_ptx_fail(p, t->line, "'%.*s' needs more local memory than the sim gives a thread", t->len, t->s);
  f->frame_bytes = (uint32_t)(off + count * es);
  sim_ptx_name n = {.s = t->s, .len = t->len, .kind = SIM_NAME_FRAME, .offset = (int64_t)off};
  if (sim_ptx_add_name(p, n)) return -1;
  return sim_ptx_expect(p, ';', "';'");
}

/* .loc file line col [, function_name x, inlined_at file line col] */
static int loc(sim_ptx_parser *p) {
  int line = SIM_TOK(p)->line;
  uint64_t v[3] = {0, 0, 0};
  p->i++;
  for (int k = 0; k < 3; k++) {
    int isf, is32;
    if (SIM_TOK(p)->kind != SIM_TOK_NUM || sim_ptx_number(SIM_TOK(p), &v[k], &isf, &is32))
      return sim_ptx_fail(p, line, "bad .loc directive");
    p->i++;
  }
  p->loc_file = (uint32_t)v[0];
  p->loc_line = (uint32_t)v[1];
  if (SIM_TOK(p)->kind != ',') return 0; /* what follows on the line is not the directive's */
  while (SIM_TOK(p)->kind != SIM_TOK_END && SIM_TOK(p)->line == line) {
    if (sim_ptx_is(SIM_TOK(p), "inlined_at")) {
      uint64_t f, l;
      int isf, is32;
      const sim_ptx_token *a = &p->t[p->i + 1], *b = &p->t[p->i + 2];
      if (a->kind == SIM_TOK_NUM && b->kind == SIM_TOK_NUM && !sim_ptx_number(a, &f, &isf, &is32) &&
          !sim_ptx_number(b, &l, &isf, &is32)) {
        p->loc_file = (uint32_t)f; /* the line of the caller: the user's code */
        p->loc_line = (uint32_t)l;
      }
    }
    p->i++;
  }
  return 0;
}

/* A name used as an operand: a register, predicate, special register, or
 * the address of a symbol. */
static int word_operand(sim_ptx_parser *p, const sim_ptx_token *t, sim_ptx_operand *o) {
  uint32_t idx;
  if (t->s[0] == '%')
    for (size_t i = 0; i < sizeof sregs / sizeof sregs[0]; i++)
      if (sim_ptx_is(t, sregs[i].name)) {
        o->kind = SIM_K_SREG;
        o->imm = sregs[i].id;
        return 0;
      }
  if (sim_ptx_is(t, "WARP_SZ")) { /* the PTX constant of the warp's size */
    o->kind = SIM_K_IMM;
    o->imm = SIM_PTX_WARP;
    return 0;
  }
  const sim_ptx_name *n = sim_ptx_lookup(p, t->s, t->len, &idx);
  if (n) {
    switch (n->kind) {
    case SIM_NAME_REG: o->kind = SIM_K_REG; o->reg = idx; return 0;
    case SIM_NAME_PRED: o->kind = SIM_K_PRED; o->reg = idx; return 0;
    case SIM_NAME_FRAME: o->kind = SIM_K_SYMADDR; o->flags = SIM_A_FRAME; o->imm = n->offset; return 0;
    default: return sim_ptx_fail(p, t->line, "unsupported use of the address of parameter '%.*s'", t->len, t->s);
    }
  }
  int v = sim_ptx_var_index(p->m, t);
  if (v >= 0) {
    o->kind = SIM_K_SYMADDR;
    o->flags = SIM_A_VAR;
    o->sym = (uint16_t)v;
    return 0;
  }
  if (sim_ptx_func_index(p->m, t->s, t->len) >= 0)
    return sim_ptx_fail(p, t->line, "unsupported use of function '%.*s' as a value", t->len, t->s);
  if (t->s[0] == '%' && strncmp(t->s, "%envreg", 7) == 0)
    return sim_ptx_fail(p, t->line, "unsupported special register '%.*s'", t->len, t->s);
  return sim_ptx_fail(p, t->line, "unknown name '%.*s'", t->len, t->s);
}

/* [base+offset] */
static int address(sim_ptx_parser *p, sim_ptx_operand *o) {
  const sim_ptx_token *t = &p->t[++p->i];
  o->kind = SIM_K_ADDR;
  uint64_t bits;
  int isf, is32;
  if (t->kind == SIM_TOK_NUM) {
    if (sim_ptx_number(t, &bits, &isf, &is32) || isf) return sim_ptx_fail(p, t->line, "bad address");
    o->flags = SIM_A_ABS;
    o->imm = (int64_t)bits;
  } else if (t->kind == SIM_TOK_WORD) {
    uint32_t idx;
    const sim_ptx_name *n = sim_ptx_lookup(p, t->s, t->len, &idx);
    int v;
    if (n && n->kind == SIM_NAME_REG) {
      o->flags = SIM_A_REG;
      o->reg = idx;
    } else if (n && n->kind == SIM_NAME_FRAME) {
      o->flags = SIM_A_FRAME;
      o->imm = n->offset;
    } else if (n && n->kind == SIM_NAME_KPARAM) {
      o->flags = SIM_A_KPARAM;
      o->imm = n->offset;
    } else if (n && n->kind == SIM_NAME_ARG) {
      o->flags = SIM_A_ARG;
      o->sym = (uint16_t)n->index;
    } else if ((v = sim_ptx_var_index(p->m, t)) >= 0) {
      o->flags = SIM_A_VAR;
      o->sym = (uint16_t)v;
    } else {
      return sim_ptx_fail(p, t->line, "unknown name '%.*s' in an address", t->len, t->s);
    }
  } else {
    return sim_ptx_fail(p, t->line, "bad address");
  }
  p->i++;
  if (SIM_TOK(p)->kind == '+' || SIM_TOK(p)->kind == '-') {
    int neg = SIM_TOK(p)->kind == '-';
    p->i++;
    if (SIM_TOK(p)->kind == '-') {
      neg = !neg;
      p->i++;
    }
    t = SIM_TOK(p);
    if (t->kind != SIM_TOK_NUM || sim_ptx_number(t, &bits, &isf, &is32) || isf)
      return sim_ptx_fail(p, t->line, "bad address offset");
    o->imm = (int64_t)((uint64_t)o->imm + (neg ? 0 - bits : bits)); /* modulo 2^64 */
    p->i++;
  }
  return sim_ptx_expect(p, ']', "']'");
}

static int operand(sim_ptx_parser *p, sim_ptx_operand *o) {
  const sim_ptx_token *t = SIM_TOK(p);
  memset(o, 0, sizeof *o);
  uint64_t bits;
  int isf, is32;
  switch (t->kind) {
  case '[':
    return address(p, o);
  case '{': {
    sim_ptx_func *f = cur(p);
    o->kind = SIM_K_VEC;
    o->reg = f->nvec;
    p->i++;
    while (SIM_TOK(p)->kind != '}') {
      if (o->imm && sim_ptx_expect(p, ',', "','")) return -1;
      const sim_ptx_token *r = SIM_TOK(p);
      sim_ptx_operand e = {0};
      if (sim_ptx_is(r, "_")) e.reg = UINT32_MAX;
      else if (r->kind != SIM_TOK_WORD || word_operand(p, r, &e) || e.kind != SIM_K_REG)
        return sim_ptx_fail(p, r->line, "expected a register in a vector, found '%.*s'", r->len, r->s);
      if (push_vec(p, e.reg)) return -1;
      o->imm++;
      p->i++;
      if (o->imm > 8) return sim_ptx_fail(p, r->line, "vector too long");
    }
    p->i++;
    return 0;
  }
  case '!':
    p->i++;
    if (operand(p, o)) return -1;
    if (o->kind != SIM_K_PRED) return sim_ptx_fail(p, t->line, "'!' before something not a predicate");
    o->flags = 1;
    return 0;
  case '-':
  case SIM_TOK_NUM: {
    int neg = t->kind == '-';
    if (neg) t = &p->t[++p->i];
    if (t->kind != SIM_TOK_NUM || sim_ptx_number(t, &bits, &isf, &is32))
      return sim_ptx_fail(p, t->line, "bad number '%.*s'", t->len, t->s);
    if (neg) bits = isf ? bits ^ (is32 ? 0x80000000u : 0x8000000000000000ull) : 0 - bits; /* modulo 2^64 */
    o->kind = SIM_K_IMM;
    o->imm = (int64_t)bits;
    o->flags = (uint8_t)(isf ? (is32 ? 2 : 3) : 0); /* 3: a double, converted for f32 by the check */
    p->i++;
    return 0;
  }
  case SIM_TOK_WORD:
    p->i++;
    if (sim_ptx_is(t, "_")) return 0; /* a sink */
    return word_operand(p, t, o);
  default:
    return sim_ptx_fail(p, t->line, "unexpected '%.*s' in operands", t->len ? t->len : 3, t->len ? t->s : "end");
  }
}

/* (name, name, ...) of call-site .param names: frame offsets into vec. */
static int call_list(sim_ptx_parser *p, sim_ptx_operand *o) {
  sim_ptx_func *f = cur(p);
  o->kind = SIM_K_VEC;
  o->reg = f->nvec;
  p->i++;
  while (SIM_TOK(p)->kind != ')') {
    if (o->imm && sim_ptx_expect(p, ',', "','")) return -1;
    const sim_ptx_token *t = SIM_TOK(p);
    uint32_t idx;
    const sim_ptx_name *n = t->kind == SIM_TOK_WORD ? sim_ptx_lookup(p, t->s, t->len, &idx) : NULL;
    if (!n || n->kind != SIM_NAME_FRAME)
      return sim_ptx_fail(p, t->line, "unsupported call argument '%.*s' (a .param of the call is)", t->len, t->s);
    if (push_vec(p, (uint32_t)n->offset)) return -1;
    o->imm++;
    p->i++;
  }
  p->i++;
  return 0;
}

static int call(sim_ptx_parser *p, sim_ptx_insn *in) {
  in->o[0] = (sim_ptx_operand){.kind = SIM_K_VEC, .reg = cur(p)->nvec};
  if (SIM_TOK(p)->kind == '(') {
    if (call_list(p, &in->o[0]) || sim_ptx_expect(p, ',', "','")) return -1;
  }
  const sim_ptx_token *t = SIM_TOK(p);
  int fi = t->kind == SIM_TOK_WORD ? sim_ptx_func_index(p->m, t->s, t->len) : -1;
  if (fi < 0) return sim_ptx_fail(p, t->line, "unsupported call of '%.*s' (not a function of the module)", t->len, t->s);
  in->target = (uint32_t)fi;
  p->i++;
  in->o[1] = (sim_ptx_operand){.kind = SIM_K_VEC, .reg = cur(p)->nvec};
  if (SIM_TOK(p)->kind == ',') {
    p->i++;
    if (SIM_TOK(p)->kind != '(') return sim_ptx_fail(p, t->line, "unsupported form of call");
    if (call_list(p, &in->o[1])) return -1;
  }
  if (SIM_TOK(p)->kind == ',') return sim_ptx_fail(p, t->line, "unsupported indirect call");
  in->nops = 2;
  return sim_ptx_expect(p, ';', "';'");
}

static int instruction(sim_ptx_parser *p) {
  sim_ptx_func *f = cur(p);
  int cap = (int)p->capcode;
  if (sim_ptx_grow((void **)&f->code, &cap, (int)f->ncode, sizeof(sim_ptx_insn))) return sim_ptx_fail(p, 0, "out of memory");
  p->capcode = (uint32_t)cap;
  sim_ptx_insn *in = &f->code[f->ncode];
  memset(in, 0, sizeof *in);
  in->guard = -1;
  const sim_ptx_token *t = SIM_TOK(p);
  in->line = (uint32_t)t->line;
  in->src_file = (uint16_t)p->loc_file;
  in->src_line = p->loc_line;
  if (t->kind == '@') {
    p->i++;
    if (SIM_TOK(p)->kind == '!') {
      in->guard_neg = 1;
      p->i++;
    }
    sim_ptx_operand g;
    if (operand(p, &g)) return -1;
    if (g.kind != SIM_K_PRED) return sim_ptx_fail(p, t->line, "a guard that is not a predicate");
    in->guard = (int32_t)g.reg;
    t = SIM_TOK(p);
  }
  if (t->kind != SIM_TOK_WORD) return sim_ptx_fail(p, t->line, "expected an instruction, found '%.*s'", t->len, t->s);
  if (sim_ptx_decode_opcode(t->s, t->len, in))
    return sim_ptx_fail(p, t->line, "unsupported instruction '%.*s'", t->len, t->s);
  p->i++;
  if (in->op == SIM_OP_CALL) {
    if (call(p, in)) return -1;
    f->ncode++;
    return 0;
  }
  if (in->op == SIM_OP_BRA) {
    const sim_ptx_token *l = SIM_TOK(p);
    if (l->kind != SIM_TOK_WORD) return sim_ptx_fail(p, l->line, "unsupported branch target '%.*s'", l->len, l->s);
    if (sim_ptx_grow((void **)&p->fixups, &p->capfixups, p->nfixups, sizeof *p->fixups)) return sim_ptx_fail(p, 0, "out of memory");
    p->fixups[p->nfixups++] = (sim_ptx_fixup){.s = l->s, .len = l->len, .line = l->line, .insn = f->ncode};
    p->i++;
    f->ncode++;
    return sim_ptx_expect(p, ';', "';'");
  }
  while (SIM_TOK(p)->kind != ';') {
    if (in->nops && sim_ptx_expect(p, ',', "','")) return -1;
    if (in->nops >= 5) return sim_ptx_fail(p, t->line, "too many operands for '%.*s'", t->len, t->s);
    if (operand(p, &in->o[in->nops])) return -1;
    in->nops++;
    if (in->nops == 1 && SIM_TOK(p)->kind == '|') {
      p->i++;
      if (operand(p, &in->o[5])) return -1;
    }
  }
  p->i++;
  f->ncode++;
  return 0;
}

int sim_ptx_parse_body(sim_ptx_parser *p) {
  sim_ptx_func *f = cur(p);
  p->nnames = p->nlabels = p->nfixups = 0;
  p->depth = 0;
  p->capcode = p->capvec = 0;
  p->loc_file = p->loc_line = 0;
  for (int k = 0; k < f->nparams; k++) {
    sim_ptx_name n = {.s = f->params[k].name, .len = (int)strlen(f->params[k].name)};
    if (f->is_entry) {
      n.kind = SIM_NAME_KPARAM;
      n.offset = (int64_t)f->params[k].offset;
    } else {
      n.kind = SIM_NAME_ARG;
      n.index = (uint32_t)k;
    }
    if (sim_ptx_add_name(p, n)) return -1;
  }
  if (sim_ptx_expect(p, '{', "'{'")) return -1;
  int depth = 1;
  while (depth > 0) {
    const sim_ptx_token *t = SIM_TOK(p);
    f = cur(p);
    if (t->kind == SIM_TOK_END) return sim_ptx_fail(p, t->line, "function '%s' has no end", f->name);
    if (t->kind == '{') {
      depth++;
      p->depth++;
      p->i++;
    } else if (t->kind == '}') {
      depth--;
      while (p->nnames && p->names[p->nnames - 1].depth == p->depth && p->depth > 0) p->nnames--;
      if (p->depth) p->depth--;
      p->i++;
    } else if (sim_ptx_is(t, ".reg") || (t->kind == SIM_TOK_WORD && t->len > 5 && memcmp(t->s, ".reg.", 5) == 0)) {
      if (reg_decl(p)) return -1;
    } else if (sim_ptx_is(t, ".local") || sim_ptx_is(t, ".param")) {
      if (frame_decl(p)) return -1;
    } else if (sim_ptx_is(t, ".shared")) {
      if (sim_ptx_variable(p, 0)) return -1;
    } else if (sim_ptx_is(t, ".loc")) {
      if (loc(p)) return -1;
    } else if (sim_ptx_is(t, ".pragma")) {
      while (SIM_TOK(p)->kind != ';' && SIM_TOK(p)->kind != SIM_TOK_END) p->i++;
      p->i++;
    } else if (t->kind == SIM_TOK_WORD && p->t[p->i + 1].kind == ':') {
      if (sim_ptx_grow((void **)&p->labels, &p->caplabels, p->nlabels, sizeof *p->labels)) return sim_ptx_fail(p, 0, "out of memory");
      p->labels[p->nlabels++] = (sim_ptx_name){.s = t->s, .len = t->len, .index = f->ncode};
      p->i += 2;
    } else if (t->kind == SIM_TOK_WORD && t->s[0] == '.') {
      return sim_ptx_fail(p, t->line, "unsupported directive '%.*s'", t->len, t->s);
    } else if (instruction(p)) {
      return -1;
    }
  }
  f = cur(p);
  for (int k = 0; k < p->nfixups; k++) {
    sim_ptx_fixup *x = &p->fixups[k];
    int found = -1;
    for (int j = 0; j < p->nlabels && found < 0; j++)
      if (p->labels[j].len == x->len && memcmp(p->labels[j].s, x->s, (size_t)x->len) == 0) found = j;
    if (found < 0) return sim_ptx_fail(p, x->line, "unknown label '%.*s'", x->len, x->s);
    if (p->labels[found].index >= f->ncode) /* nothing to branch to: the function's end */
      return sim_ptx_fail(p, x->line, "label '%.*s' marks no instruction (the end of the function)", x->len, x->s);
    f->code[x->insn].target = p->labels[found].index;
  }
  return 0;
}
