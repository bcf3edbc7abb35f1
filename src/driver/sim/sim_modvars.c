/*
 * sim_modvars.c -- a sim module's variables: the .global and .const
 * declarations at the top level of its PTX (name, type, array sizes,
 * alignment, initializer or zeros), laid out in one block of the module's
 * memory at load, each in the memory map (sim_memmap.h) until unload, and
 * cuModuleGetGlobal.
 *
 * The declarations NVRTC writes:
 *   .const .align 4 .f32 scale;
 *   .global .align 4 .b8 table[16] = {1, 0, 0, 0, 2};      (the rest zero)
 *   .global .align 8 .u64 ptr = generic(table)+4;            (an address)
 *   .visible .global .align 4 .f32 v[2] = {0f3F800000, 0f40000000};
 * A declaration this reader cannot make sense of (a texture, a managed
 * variable, an initializer naming a function) keeps its name: asking for it
 * is CUDA_ERROR_NOT_SUPPORTED rather than a wrong value. An .extern one has
 * no storage here and is not listed.
 */
#include "sim_internal.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct sim_var {
  char name[256];
  size_t offset, bytes, align;
  size_t elem;          /* the scalar size an initializer's values have */
  int is_float;
  int readable;
  const char *init;     /* after '=' in the image, or NULL */
};

static const struct {
  const char *t;
  size_t n;
  int is_float;
} var_types[] = {
  {".b8", 1, 0}, {".u8", 1, 0}, {".s8", 1, 0}, {".b16", 2, 0}, {".u16", 2, 0}, {".s16", 2, 0}, {".f16", 2, 0},
  {".bf16", 2, 0}, {".b32", 4, 0}, {".u32", 4, 0}, {".s32", 4, 0}, {".f32", 4, 1}, {".b64", 8, 0}, {".u64", 8, 0},
  {".s64", 8, 0}, {".f64", 8, 1}, {".f16x2", 4, 0}, {".bf16x2", 4, 0}};

static const char *skip_space(const char *p, const char *end) {
  while (p < end && isspace((unsigned char)*p)) p++;
  return p;
}

static int word_is(const char *p, const char *end, const char *w) {
  size_t n = strlen(w);
  return (size_t)(end - p) >= n && strncmp(p, w, n) == 0 && (p + n == end || !(isalnum((unsigned char)p[n]) || p[n] == '_' || p[n] == '.'));
}

static int ident_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '%'; }

/* Read one declaration [p, end) (after ".global" or ".const") into v. */
static void read_decl(const char *p, const char *end, struct sim_var *v) {
  size_t vec = 1, count = 1;
  v->readable = 0;
  v->align = 0;
  for (;;) {
    p = skip_space(p, end);
    if (p >= end || *p != '.') break;
    if (word_is(p, end, ".align")) {
      char *e;
      unsigned long a = strtoul(p + 6, &e, 10);
      if (e == p + 6 || a == 0 || a > 4096 || (a & (a - 1))) return;
      v->align = a;
      p = e;
      continue;
    }
    if (word_is(p, end, ".v2") || word_is(p, end, ".v4")) {
      vec = (size_t)(p[2] - '0');
      p += 3;
      continue;
    }
    size_t i = 0, nt = sizeof var_types / sizeof var_types[0];
    while (i < nt && !word_is(p, end, var_types[i].t)) i++;
    if (i == nt) { /* .texref, .attribute(.managed), ...: named, not readable */
      while (p < end && !isspace((unsigned char)*p)) p++;
      v->elem = 0;
      continue;
    }
    v->elem = var_types[i].n;
    v->is_float = var_types[i].is_float;
    p += strlen(var_types[i].t);
  }
  const char *n = p;
  while (p < end && ident_char(*p)) p++;
  if (p == n || (size_t)(p - n) >= sizeof v->name) return;
  memcpy(v->name, n, (size_t)(p - n));
  v->name[p - n] = '\0';
  int unsized = 0;
  for (p = skip_space(p, end); p < end && *p == '['; p = skip_space(p, end)) {
    char *e;
    unsigned long long d = strtoull(p + 1, &e, 10);
    if (e == p + 1 && *e == ']') unsized = 1, d = 1; /* the initializer tells */
    else if (e == p + 1 || *e != ']' || d == 0 || d > ((size_t)1 << 32)) return;
    count *= d;
    p = e + 1;
  }
  v->init = NULL;
  if (p < end && *p == '=') v->init = p + 1;
  else if (p != end) return;
  if (!v->elem) return;
  if (unsized) {
    if (!v->init) return;
    size_t vals = 0;
    for (const char *q = v->init; q < end; q++)
      if (*q == ',') vals++;
    count = (vals + 1 + vec - 1) / vec;
  }
  v->bytes = v->elem * vec * count;
  if (!v->align) v->align = v->elem * vec;
  v->readable = v->bytes > 0;
}

/* The address of variable `name` (with "+N"), or 0 (not one of m's). */
static uint64_t address_of(const struct CUmod_st *m, const char *p, const char *end, const char **after) {
  const char *n = p;
  while (p < end && ident_char(*p)) p++;
  for (int i = 0; i < m->nvars; i++) {
    const struct sim_var *v = &m->vars[i];
    if (v->readable && strlen(v->name) == (size_t)(p - n) && strncmp(v->name, n, (size_t)(p - n)) == 0) {
      *after = p;
      return (uint64_t)(uintptr_t)(m->vmem + v->offset);
    }
  }
  return 0;
}

/* Write v's initializer into its memory: 0, or -1 when a value is not
 * understood (the variable becomes unreadable). */
static int initialise(struct CUmod_st *m, struct sim_var *v, const char *end) {
  unsigned char *dst = m->vmem + v->offset;
  size_t at = 0;
  for (const char *p = v->init; p < end;) {
    p = skip_space(p, end);
    if (p >= end) break;
    if (*p == '{' || *p == '}' || *p == ',') {
      p++;
      continue;
    }
    if (at + v->elem > v->bytes) return -1;
    uint64_t bits;
    char *e;
    if (p[0] == '0' && (p[1] == 'f' || p[1] == 'F' || p[1] == 'd' || p[1] == 'D')) {
      bits = strtoull(p + 2, &e, 16);
      if (e == p + 2) return -1;
    } else if (isdigit((unsigned char)*p) || *p == '-' || *p == '+') {
      const char *q = p + (*p == '-' || *p == '+');
      while (q < end && (isalnum((unsigned char)*q) || *q == '.')) q++;
      int real = memchr(p, '.', (size_t)(q - p)) != NULL ||
                 (!(p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) && memchr(p, 'e', (size_t)(q - p)));
      if (real && !v->is_float) return -1;
      if (v->is_float) {
        double x = strtod(p, &e);
        if (v->elem == 4) {
          float f = (float)x;
          uint32_t u;
          memcpy(&u, &f, 4);
          bits = u;
        } else {
          memcpy(&bits, &x, 8);
        }
      } else if (*p == '-') {
        bits = (uint64_t)strtoll(p, &e, 0);
      } else {
        bits = strtoull(p, &e, 0);
      }
      if ((const char *)e != q) return -1;
    } else {
      const char *q = p;
      int generic = word_is(p, end, "generic");
      if (generic) q = skip_space(p + 7, end);
      if (generic && (q >= end || *q++ != '(')) return -1;
      const char *after;
      bits = address_of(m, skip_space(q, end), end, &after);
      if (!bits) return -1;
      q = skip_space(after, end);
      if (generic && (q >= end || *q++ != ')')) return -1;
      q = skip_space(q, end);
      if (q < end && *q == '+') {
        bits += strtoull(q + 1, &e, 0);
        q = e;
      }
      e = (char *)q;
    }
    for (size_t b = 0; b < v->elem; b++) dst[at + b] = (unsigned char)(bits >> (8 * b)); /* little-endian, as the GPU */
    at += v->elem;
    p = e;
  }
  return 0;
}

/* The top-level declarations: a line at brace depth 0 that is one. */
CUresult sim_vars_load(struct CUmod_st *m) {
  const char *s = m->image;
  int depth = 0, cap = 0;
  const char **ends = NULL;
  for (const char *line = s; *line;) {
    const char *eol = strchr(line, '\n');
    if (!eol) eol = line + strlen(line);
    const char *p = skip_space(line, eol);
    if (depth == 0) {
      int ext = 0;
      for (;;) { /* linkage */
        if (word_is(p, eol, ".visible") || word_is(p, eol, ".weak") || word_is(p, eol, ".common")) {
          while (p < eol && !isspace((unsigned char)*p)) p++;
          p = skip_space(p, eol);
        } else if (word_is(p, eol, ".extern")) ext = 1, p = skip_space(p + 7, eol);
        else break;
      }
      int global = word_is(p, eol, ".global"), cnst = word_is(p, eol, ".const");
      if (global || cnst) {
        const char *end = strchr(p, ';');
        if (!end) break; /* a declaration cut short: not a variable */
        if (!ext) {
          if (m->nvars == cap) {
            cap = cap ? cap * 2 : 8;
            struct sim_var *nv = realloc(m->vars, (size_t)cap * sizeof *nv);
            const char **ne = realloc(ends, (size_t)cap * sizeof *ne);
            if (ne) ends = ne;
            if (nv) m->vars = nv;
            if (!nv || !ne) {
              free(ends);
              return CUDA_ERROR_OUT_OF_MEMORY;
            }
          }
          struct sim_var *v = &m->vars[m->nvars];
          memset(v, 0, sizeof *v);
          read_decl(p + (global ? 7 : 6), end, v);
          if (v->name[0]) ends[m->nvars++] = end;
        }
        line = end + 1;
        continue;
      }
    }
    for (const char *q = p; q < eol; q++) { /* braces of bodies, outside comments */
      if (q[0] == '/' && q[1] == '/') break;
      if (*q == '{') depth++;
      else if (*q == '}' && depth > 0) depth--;
    }
    line = *eol ? eol + 1 : eol;
  }
  size_t total = 0;
  for (int i = 0; i < m->nvars; i++) {
    struct sim_var *v = &m->vars[i];
    if (!v->readable) continue;
    total = (total + v->align - 1) / v->align * v->align;
    v->offset = total;
    total += v->bytes;
  }
  if (total) {
    m->vmem = aligned_alloc(SIM_ALIGN, (total + SIM_ALIGN - 1) / SIM_ALIGN * SIM_ALIGN);
    if (!m->vmem) {
      free(ends);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memset(m->vmem, 0, total);
  }
  for (int i = 0; i < m->nvars; i++) /* after the layout: an initializer may name any variable */
    if (m->vars[i].readable && m->vars[i].init && initialise(m, &m->vars[i], ends[i]) != 0) m->vars[i].readable = 0;
  free(ends);
  for (int i = 0; i < m->nvars; i++) {
    struct sim_var *v = &m->vars[i];
    if (v->readable && sim_mem_add((uintptr_t)(m->vmem + v->offset), v->bytes, m->ordinal, SIM_MEM_GLOBAL) != 0)
      return CUDA_ERROR_OUT_OF_MEMORY; /* the caller's sim_vars_free forgets those added */
  }
  return CUDA_SUCCESS;
}

void sim_vars_free(struct CUmod_st *m) {
  for (int i = 0; i < m->nvars; i++)
    if (m->vars[i].readable) sim_mem_forget((uintptr_t)(m->vmem + m->vars[i].offset));
  free(m->vars);
  free(m->vmem);
  m->vars = NULL;
  m->vmem = NULL;
  m->nvars = 0;
}

CUresult sim_cuModuleGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUmodule m, const char *name) {
  NEED_INIT();
  if (!m || !name) return CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; i < m->nvars; i++) {
    const struct sim_var *v = &m->vars[i];
    if (strcmp(v->name, name) != 0) continue;
    if (!v->readable) return CUDA_ERROR_NOT_SUPPORTED;
    if (dptr) *dptr = (CUdeviceptr)(uintptr_t)(m->vmem + v->offset);
    if (bytes) *bytes = v->bytes;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_NOT_FOUND;
}
