/*
 * ptx_parse.c -- a PTX module: its header directives, .file table, module
 * variables (with their initializers) and functions (.entry and .func, with
 * their parameters), then each function's check. sim_ptx_load is the one
 * way in; anything it does not support is an error naming it and its line.
 */

#include "ptx_parse.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int sim_ptx_is(const sim_ptx_token *t, const char *w) {
  return t->kind == SIM_TOK_WORD && (int)strlen(w) == t->len && memcmp(t->s, w, (size_t)t->len) == 0;
}

int sim_ptx_fail(sim_ptx_parser *p, int line, const char *fmt, ...) {
  int n = snprintf(p->err, p->errlen, "line %d: ", line);
  if (n < 0 || (size_t)n >= p->errlen) return -1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

int sim_ptx_expect(sim_ptx_parser *p, int kind, const char *what) {
  const sim_ptx_token *t = SIM_TOK(p);
  if (t->kind != kind)
    return sim_ptx_fail(p, t->line, "expected %s, found '%.*s'", what, t->len ? t->len : 3, t->len ? t->s : "end");
  p->i++;
  return 0;
}

int sim_ptx_grow(void **arr, int *cap, int n, size_t size) {
  if (n < *cap) return 0;
  int nc = *cap ? *cap * 2 : 16;
  void *na = realloc(*arr, (size_t)nc * size);
  if (!na) return -1;
  *arr = na;
  *cap = nc;
  return 0;
}

int sim_ptx_type_word(const sim_ptx_token *t) {
  static const char *names[] = {"", ".pred", ".b8", ".b16", ".b32", ".b64", ".u8", ".u16", ".u32", ".u64",
                                ".s8", ".s16", ".s32", ".s64", ".f32", ".f64",
                                ".f16", ".f16x2", ".bf16", ".bf16x2"};
  for (int i = 1; i < (int)(sizeof names / sizeof names[0]); i++)
    if (sim_ptx_is(t, names[i])) return i;
  return SIM_T_NONE;
}

int sim_ptx_var_index(const sim_ptx_module *m, const sim_ptx_token *t) {
  for (int i = 0; i < m->nvars; i++)
    if ((int)strlen(m->vars[i].name) == t->len && memcmp(m->vars[i].name, t->s, (size_t)t->len) == 0) return i;
  return -1;
}

int sim_ptx_func_index(const sim_ptx_module *m, const char *s, int len) {
  for (int i = 0; i < m->nfuncs; i++)
    if ((int)strlen(m->funcs[i].name) == len && memcmp(m->funcs[i].name, s, (size_t)len) == 0) return i;
  return -1;
}

const sim_ptx_name *sim_ptx_lookup(const sim_ptx_parser *p, const char *s, int len, uint32_t *index) {
  for (int i = p->nnames - 1; i >= 0; i--) {
    const sim_ptx_name *n = &p->names[i];
    if (!n->range) {
      if (n->len == len && memcmp(n->s, s, (size_t)len) == 0) {
        *index = n->index;
        return n;
      }
      continue;
    }
    if (len <= n->len || memcmp(n->s, s, (size_t)n->len) != 0) continue;
    long v = 0;
    int k = n->len;
    for (; k < len && s[k] >= '0' && s[k] <= '9' && v < 100000000; k++) v = v * 10 + (s[k] - '0');
    if (k == len && (k == n->len + 1 || s[n->len] != '0') && v < n->range) {
      *index = n->index + (uint32_t)v;
      return n;
    }
  }
  return NULL;
}

int sim_ptx_add_name(sim_ptx_parser *p, sim_ptx_name n) {
  if (sim_ptx_grow((void **)&p->names, &p->capnames, p->nnames, sizeof n)) return sim_ptx_fail(p, 0, "out of memory");
  n.depth = p->depth;
  p->names[p->nnames++] = n;
  return 0;
}

static char *dup_token(const sim_ptx_token *t) {
  char *s = malloc((size_t)t->len + 1);
  if (s) {
    memcpy(s, t->s, (size_t)t->len);
    s[t->len] = 0;
  }
  return s;
}

static int number(sim_ptx_parser *p, uint64_t *v) {
  const sim_ptx_token *t = SIM_TOK(p);
  int isf, is32;
  if (t->kind != SIM_TOK_NUM || sim_ptx_number(t, v, &isf, &is32) || isf)
    return sim_ptx_fail(p, t->line, "expected a number, found '%.*s'", t->len, t->s);
  p->i++;
  return 0;
}

/* [.align N] [.ptr] [.space] .type: the parts of a declaration before its name. */
static int decl_type(sim_ptx_parser *p, int *type, size_t *align) {
  *type = SIM_T_NONE;
  *align = 0;
  for (;;) {
    const sim_ptx_token *t = SIM_TOK(p);
    if (sim_ptx_is(t, ".align")) {
      uint64_t a;
      p->i++;
      if (number(p, &a)) return -1;
      if (*type == SIM_T_NONE) *align = (size_t)a; /* after the type: the pointee's */
      continue;
    }
    if (sim_ptx_is(t, ".ptr") || sim_ptx_is(t, ".global") || sim_ptx_is(t, ".shared") || sim_ptx_is(t, ".const") ||
        sim_ptx_is(t, ".local")) {
      p->i++;
      continue;
    }
    int ty = sim_ptx_type_word(t);
    if (ty == SIM_T_NONE) break;
    if (ty == SIM_T_PRED) return sim_ptx_fail(p, t->line, "unsupported declaration of a .pred variable");
    *type = ty;
    p->i++;
  }
  if (*type == SIM_T_NONE) {
    const sim_ptx_token *t = SIM_TOK(p);
    return sim_ptx_fail(p, t->line, "unsupported type '%.*s' in a declaration", t->len, t->s);
  }
  if (!*align) *align = (size_t)sim_ptx_type_size(*type);
  return 0;
}

/* name[N][M]...: the count of elements; `open` set where a [] has no size. */
static int decl_dims(sim_ptx_parser *p, size_t *count, int *open) {
  *count = 1;
  *open = 0;
  while (SIM_TOK(p)->kind == '[') {
    p->i++;
    if (SIM_TOK(p)->kind == ']') {
      *open = 1;
      p->i++;
      continue;
    }
    uint64_t n;
    if (number(p, &n) || sim_ptx_expect(p, ']', "']'")) return -1;
    if (n > (1u << 30)) return sim_ptx_fail(p, SIM_TOK(p)->line, "array of %llu elements is too large", (unsigned long long)n);
    *count *= (size_t)n;
  }
  return 0;
}

/* A parameter list "(.param ... a, .param ... b)" into f's params. */
static int param_list(sim_ptx_parser *p, sim_ptx_func *f, int rets) {
  if (sim_ptx_expect(p, '(', "'('")) return -1;
  size_t off = 0;
  int first = f->nparams;
  while (SIM_TOK(p)->kind != ')') {
    if (f->nparams > first && sim_ptx_expect(p, ',', "','")) return -1;
    const sim_ptx_token *t = SIM_TOK(p);
    if (sim_ptx_is(t, ".reg")) return sim_ptx_fail(p, t->line, "unsupported .reg parameter");
    if (!sim_ptx_is(t, ".param")) return sim_ptx_fail(p, t->line, "expected .param, found '%.*s'", t->len, t->s);
    p->i++;
    int type, open;
    size_t align, count;
    if (decl_type(p, &type, &align)) return -1;
    t = SIM_TOK(p);
    if (t->kind != SIM_TOK_WORD) return sim_ptx_fail(p, t->line, "expected a parameter name");
    p->i++;
    if (decl_dims(p, &count, &open)) return -1;
    if (open) return sim_ptx_fail(p, t->line, "unsupported parameter '%.*s[]' without a size", t->len, t->s);
    sim_ptx_param *np = realloc(f->params, (size_t)(f->nparams + 1) * sizeof *np);
    if (!np) return sim_ptx_fail(p, t->line, "out of memory");
    f->params = np;
    off = (off + align - 1) / align * align;
    np[f->nparams] = (sim_ptx_param){.name = dup_token(t), .offset = off, .size = count * (size_t)sim_ptx_type_size(type), .align = align};
    off += np[f->nparams].size;
    f->nparams++;
    if (rets) f->nrets++;
  }
  p->i++;
  if (f->is_entry) f->param_bytes = off;
  return 0;
}

/* .entry or .func: its header, then its body or ';' for a declaration. */
static int function(sim_ptx_parser *p, int is_entry, int is_extern) {
  int line = SIM_TOK(p)->line;
  p->i++;
  sim_ptx_func tmp = {.is_entry = is_entry};
  if (!is_entry && SIM_TOK(p)->kind == '(' && param_list(p, &tmp, 1)) goto fail;
  const sim_ptx_token *name = SIM_TOK(p);
  if (name->kind != SIM_TOK_WORD) {
    sim_ptx_fail(p, line, "expected a function name");
    goto fail;
  }
  p->i++;
  if (SIM_TOK(p)->kind == '(' && param_list(p, &tmp, 0)) goto fail;
  for (;;) { /* performance directives */
    const sim_ptx_token *t = SIM_TOK(p);
    if (sim_ptx_is(t, ".maxntid") || sim_ptx_is(t, ".reqntid")) {
      p->i++;
      long prod = 1;
      for (int k = 0; k < 3; k++) {
        uint64_t v;
        if (k && SIM_TOK(p)->kind != ',') break;
        if (k) p->i++;
        if (number(p, &v)) goto fail;
        prod *= (long)(v ? v : 1);
      }
      tmp.max_threads = prod > 1024 ? 1024 : (int)prod;
    } else if (sim_ptx_is(t, ".minnctapersm") || sim_ptx_is(t, ".maxnreg") || sim_ptx_is(t, ".maxnctapersm")) {
      uint64_t v;
      p->i++;
      if (number(p, &v)) goto fail;
    } else if (sim_ptx_is(t, ".noreturn")) {
      p->i++;
    } else break;
  }
  int idx = sim_ptx_func_index(p->m, name->s, name->len);
  if (idx < 0) {
    sim_ptx_func *nf = realloc(p->m->funcs, (size_t)(p->m->nfuncs + 1) * sizeof *nf);
    if (!nf) {
      sim_ptx_fail(p, line, "out of memory");
      goto fail;
    }
    p->m->funcs = nf;
    idx = p->m->nfuncs++;
    tmp.name = dup_token(name);
    tmp.is_extern = 1;
    nf[idx] = tmp;
    tmp.params = NULL; /* the function's now */
    tmp.nparams = 0;
  } else {
    sim_ptx_func *f = &p->m->funcs[idx];
    if (!f->is_extern || f->nparams != tmp.nparams || f->is_entry != tmp.is_entry) {
      sim_ptx_fail(p, line, "function '%s' declared twice differently", f->name);
      goto fail;
    }
    f->max_threads = tmp.max_threads;
  }
  for (int k = 0; k < tmp.nparams; k++) free(tmp.params[k].name); /* a declaration seen before: its own */
  free(tmp.params);
  tmp.params = NULL;
  if (SIM_TOK(p)->kind == ';') {
    p->i++;
    return 0;
  }
  (void)is_extern;
  p->m->funcs[idx].is_extern = 0;
  p->func = idx;
  return sim_ptx_parse_body(p);
fail:
  for (int k = 0; k < tmp.nparams; k++) free(tmp.params[k].name);
  free(tmp.params);
  return -1;
}

/* The initializer "= v" or "= {v, ...}" of a variable of `count` elements. */
static int initializer(sim_ptx_parser *p, sim_ptx_var *v, int type, size_t count, int open) {
  size_t es = (size_t)sim_ptx_type_size(type), n = 0, cap = count * es;
  unsigned char *b = calloc(cap ? cap : 1, 1);
  if (!b) return sim_ptx_fail(p, SIM_TOK(p)->line, "out of memory");
  int depth = 0;
  do {
    const sim_ptx_token *t = SIM_TOK(p);
    if (t->kind == '{') {
      depth++;
      p->i++;
      continue;
    }
    if (t->kind == '}') {
      depth--;
      p->i++;
    } else if (t->kind == ',') {
      p->i++;
    } else {
      int neg = 0;
      if (t->kind == '-') {
        neg = 1;
        t = &p->t[++p->i];
      }
      uint64_t bits;
      int isf, is32;
      if (t->kind != SIM_TOK_NUM || sim_ptx_number(t, &bits, &isf, &is32)) {
        free(b);
        return sim_ptx_fail(p, t->line, "unsupported initializer '%.*s' of '%s'", t->len, t->s, v->name);
      }
      p->i++;
      if (isf && !is32 && (bits >> 63 == 0) && type == SIM_T_F32) { /* a decimal double into f32 */
        double d;
        memcpy(&d, &bits, 8);
        float fl = (float)d;
        uint32_t u;
        memcpy(&u, &fl, 4);
        bits = u;
      }
      if (neg) bits = isf ? bits ^ (type == SIM_T_F32 ? 0x80000000u : 0x8000000000000000ull) : 0 - bits;
      if ((n + 1) * es > cap) {
        if (!open) {
          free(b);
          return sim_ptx_fail(p, t->line, "too many initializers for '%s'", v->name);
        }
        size_t nc = cap ? cap * 2 : es * 16;
        unsigned char *nb = realloc(b, nc);
        if (!nb) {
          free(b);
          return sim_ptx_fail(p, t->line, "out of memory");
        }
        memset(nb + cap, 0, nc - cap);
        b = nb;
        cap = nc;
      }
      memcpy(b + n * es, &bits, es); /* little-endian: the low bytes */
      n++;
    }
  } while (depth > 0);
  v->init = b;
  if (open) v->size = n * es;
  return 0;
}

/* .global/.const/.shared [.align N] .type name[dims] [= init]; at module
 * level, or a .shared one in a function (a demoted variable). */
int sim_ptx_variable(sim_ptx_parser *p, int is_extern) {
  const sim_ptx_token *sp = SIM_TOK(p);
  int space = sim_ptx_is(sp, ".global") ? SIM_S_GLOBAL : sim_ptx_is(sp, ".const") ? SIM_S_CONST : SIM_S_SHARED;
  p->i++;
  int type, open;
  size_t align, count;
  if (decl_type(p, &type, &align)) return -1;
  const sim_ptx_token *name = SIM_TOK(p);
  if (name->kind != SIM_TOK_WORD) return sim_ptx_fail(p, name->line, "expected a variable name");
  p->i++;
  if (decl_dims(p, &count, &open)) return -1;
  if (sim_ptx_var_index(p->m, name) >= 0)
    return sim_ptx_fail(p, name->line, "variable '%.*s' declared twice", name->len, name->s);
  sim_ptx_var *nv = realloc(p->m->vars, (size_t)(p->m->nvars + 1) * sizeof *nv);
  if (!nv) return sim_ptx_fail(p, name->line, "out of memory");
  p->m->vars = nv;
  sim_ptx_var *v = &nv[p->m->nvars++];
  *v = (sim_ptx_var){.name = dup_token(name), .space = space, .size = count * (size_t)sim_ptx_type_size(type), .align = align};
  if (is_extern) {
    if (space != SIM_S_SHARED || !open)
      return sim_ptx_fail(p, name->line, "unsupported .extern variable '%s' (only .extern .shared arrays are)", v->name);
    v->is_dynamic = 1;
    v->size = 0;
  } else if (open && SIM_TOK(p)->kind != '=') {
    return sim_ptx_fail(p, name->line, "variable '%s[]' has neither a size nor an initializer", v->name);
  }
  if (SIM_TOK(p)->kind == '=') {
    p->i++;
    if (space == SIM_S_SHARED) return sim_ptx_fail(p, name->line, "a .shared variable '%s' cannot be initialized", v->name);
    if (initializer(p, v, type, count, open)) return -1;
  }
  return sim_ptx_expect(p, ';', "';'");
}

static int skip_braces(sim_ptx_parser *p) {
  int depth = 0;
  do {
    int k = SIM_TOK(p)->kind;
    if (k == SIM_TOK_END) return sim_ptx_fail(p, SIM_TOK(p)->line, "unbalanced braces");
    if (k == '{') depth++;
    if (k == '}') depth--;
    p->i++;
  } while (depth > 0);
  return 0;
}

static int module(sim_ptx_parser *p) {
  for (;;) {
    const sim_ptx_token *t = SIM_TOK(p);
    if (t->kind == SIM_TOK_END) return 0;
    if (sim_ptx_is(t, ".version") || sim_ptx_is(t, ".target")) {
      int line = t->line;
      p->i++;
      while (SIM_TOK(p)->kind != SIM_TOK_END && SIM_TOK(p)->line == line) p->i++;
    } else if (sim_ptx_is(t, ".address_size")) {
      uint64_t v;
      p->i++;
      if (number(p, &v)) return -1;
      if (v != 64) return sim_ptx_fail(p, t->line, "unsupported .address_size %llu (64 is)", (unsigned long long)v);
    } else if (sim_ptx_is(t, ".file")) {
      uint64_t n;
      p->i++;
      if (number(p, &n)) return -1;
      const sim_ptx_token *s = SIM_TOK(p);
      if (s->kind != SIM_TOK_STR || n > 4096) return sim_ptx_fail(p, t->line, "unsupported .file directive");
      p->i++;
      while (SIM_TOK(p)->kind == ',') p->i += 2;
      if ((int)n >= p->m->nfiles) {
        char **nf = realloc(p->m->files, (size_t)(n + 1) * sizeof *nf);
        if (!nf) return sim_ptx_fail(p, t->line, "out of memory");
        for (int k = p->m->nfiles; k <= (int)n; k++) nf[k] = NULL;
        p->m->files = nf;
        p->m->nfiles = (int)n + 1;
      }
      free(p->m->files[n]);
      p->m->files[n] = malloc((size_t)s->len - 1);
      if (p->m->files[n]) {
        memcpy(p->m->files[n], s->s + 1, (size_t)s->len - 2);
        p->m->files[n][s->len - 2] = 0;
      }
    } else if (sim_ptx_is(t, ".section")) {
      p->i += 2;
      if (skip_braces(p)) return -1;
    } else {
      int is_extern = 0;
      while (sim_ptx_is(SIM_TOK(p), ".visible") || sim_ptx_is(SIM_TOK(p), ".extern") || sim_ptx_is(SIM_TOK(p), ".weak")) {
        if (sim_ptx_is(SIM_TOK(p), ".extern")) is_extern = 1;
        p->i++;
      }
      t = SIM_TOK(p);
      int r;
      if (sim_ptx_is(t, ".entry")) r = function(p, 1, is_extern);
      else if (sim_ptx_is(t, ".func")) r = function(p, 0, is_extern);
      else if (sim_ptx_is(t, ".global") || sim_ptx_is(t, ".const") || sim_ptx_is(t, ".shared")) r = sim_ptx_variable(p, is_extern);
      else return sim_ptx_fail(p, t->line, "unsupported directive '%.*s'", t->len ? t->len : 3, t->len ? t->s : "end");
      if (r) return -1;
    }
  }
}

/* Places the variables: .global and .const in the module's data, .shared
 * in a block's static shared memory. */
static int layout(sim_ptx_module *m) {
  size_t data = 0, shared = 0;
  for (int i = 0; i < m->nvars; i++) {
    sim_ptx_var *v = &m->vars[i];
    size_t a = v->align ? v->align : 1;
    if (v->is_dynamic) continue;
    size_t *at = v->space == SIM_S_SHARED ? &shared : &data;
    *at = (*at + a - 1) / a * a;
    v->offset = *at;
    *at += v->size;
  }
  m->shared_bytes = shared;
  m->data_bytes = data;
  m->data = calloc(data ? data : 1, 1);
  if (!m->data) return -1;
  for (int i = 0; i < m->nvars; i++)
    if (m->vars[i].init && m->vars[i].space != SIM_S_SHARED) memcpy(m->data + m->vars[i].offset, m->vars[i].init, m->vars[i].size);
  for (int i = 0; i < m->nvars; i++)
    if (m->vars[i].is_dynamic) m->vars[i].offset = (shared + 15) / 16 * 16;
  return 0;
}

sim_ptx_module *sim_ptx_load(const char *text, char *err, size_t errlen) {
  sim_ptx_module *m = calloc(1, sizeof *m);
  if (!m) {
    snprintf(err, errlen, "out of memory loading PTX");
    return NULL;
  }
  sim_ptx_parser p = {.m = m, .err = err, .errlen = errlen};
  p.t = sim_ptx_lex(text, &p.n, err, errlen);
  int r = p.t ? module(&p) : -1;
  if (r == 0 && layout(m)) r = sim_ptx_fail(&p, 0, "out of memory");
  for (int i = 0; r == 0 && i < m->nfuncs; i++)
    if (!m->funcs[i].is_extern && sim_ptx_check_func(m, &m->funcs[i], err, errlen)) r = -1;
  for (int i = 0; r == 0 && i < m->nfuncs; i++)
    if (!m->funcs[i].is_extern && (sim_ptx_pack_regs(&m->funcs[i]) || sim_ptx_find_undefined(&m->funcs[i]) ||
                                   sim_ptx_broadcast_imms(&m->funcs[i])))
      r = sim_ptx_fail(&p, 0, "out of memory");
    else if (!m->funcs[i].is_extern)
      sim_ptx_choose_fast(&m->funcs[i]);
  for (int i = 0; i < m->nfuncs; i++) m->uses_local |= m->funcs[i].frame_bytes > 0;
  free(p.t);
  free(p.names);
  free(p.labels);
  free(p.fixups);
  if (r) {
    sim_ptx_free(m);
    return NULL;
  }
  return m;
}

void sim_ptx_free(sim_ptx_module *m) {
  if (!m) return;
  for (int i = 0; i < m->nfuncs; i++) {
    sim_ptx_func *f = &m->funcs[i];
    for (int k = 0; k < f->nparams; k++) free(f->params[k].name);
    free(f->params);
    free(f->name);
    free(f->code);
    free(f->vec);
    free(f->undef_regs);
    free(f->imm_rows);
  }
  for (int i = 0; i < m->nvars; i++) {
    free(m->vars[i].name);
    free(m->vars[i].init);
  }
  for (int i = 0; i < m->nfiles; i++) free(m->files[i]);
  free(m->files);
  free(m->funcs);
  free(m->vars);
  free(m->data);
  free(m);
}

int sim_ptx_find(const sim_ptx_module *m, const char *name) {
  return m ? sim_ptx_func_index(m, name, (int)strlen(name)) : -1;
}
