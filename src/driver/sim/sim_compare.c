/*
 * sim_compare.c -- GPULUA_SIM_KERNELS=compare: a launch of a kernel that has
 * both PTX and a host implementation runs both, and what they write must
 * agree, element by element.
 *
 * The memory the kernel may write (its non-const pointer arguments, as the
 * upper layer describes them: gld_host_arg) is copied before the launch; the
 * PTX runs on the real memory (what it writes is what the memory keeps: it is
 * the kernel itself), then the host implementation on the copies (on the main
 * thread where it runs there), and the first element where the two differ is
 * a fault naming the kernel, the argument, the element and both values. A
 * read-only argument that overlaps a written one is copied with it, so that
 * the host implementation reads the memory as it was before the launch, and
 * arguments that overlap share one copy, as they share the memory.
 */
#include "halfprec.h"
#include "sim_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An element's bits, widened. */
static uint64_t elem_bits(const unsigned char *p, size_t size) {
  uint8_t u8;
  uint16_t u16;
  uint32_t u32;
  uint64_t u64 = 0;
  switch (size) {
  case 1: memcpy(&u8, p, 1); return u8;
  case 2: memcpy(&u16, p, 2); return u16;
  case 4: memcpy(&u32, p, 4); return u32;
  default: memcpy(&u64, p, 8); return u64;
  }
}

static int is_nan(char kind, size_t size, uint64_t b) {
  if (kind == 'b') return (b & 0x7f80) == 0x7f80 && (b & 0x7f);
  if (kind != 'f') return 0;
  if (size == 2) return (b & 0x7c00) == 0x7c00 && (b & 0x3ff);
  if (size == 4) return (b & 0x7f800000u) == 0x7f800000u && (b & 0x7fffffu);
  return (b & 0x7ff0000000000000ull) == 0x7ff0000000000000ull && (b & 0xfffffffffffffull);
}

/* A float element's value, and the bits of v as an element of its type. */
static double float_value(char kind, size_t size, uint64_t b) {
  if (kind == 'b') return gld_bf16_to_f32((uint16_t)b);
  if (size == 2) return gld_f16_to_f32((uint16_t)b);
  if (size == 4) {
    float f;
    uint32_t u = (uint32_t)b;
    memcpy(&f, &u, 4);
    return f;
  }
  double d;
  memcpy(&d, &b, 8);
  return d;
}

static uint64_t float_bits(char kind, size_t size, double v) {
  if (kind == 'b') return gld_f64_to_bf16(v);
  if (size == 2) return gld_f64_to_f16(v);
  if (size == 4) {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
  }
  uint64_t u;
  memcpy(&u, &v, 8);
  return u;
}

void sim_compare_format(char kind, size_t size, const void *elem, char *buf, size_t len) {
  uint64_t b = elem_bits(elem, size);
  if (kind == 'u') {
    snprintf(buf, len, "%llu", (unsigned long long)b);
    return;
  }
  if (kind == 'i') {
    int shift = 64 - 8 * (int)size; /* sign-extended */
    snprintf(buf, len, "%lld", (long long)(int64_t)(b << shift) >> shift);
    return;
  }
  double v = float_value(kind, size, b);
  if (isnan(v)) {
    snprintf(buf, len, "%snan", signbit(v) ? "-" : "");
    return;
  }
  if (isinf(v)) {
    snprintf(buf, len, "%sinf", v < 0 ? "-" : "");
    return;
  }
  for (int digits = 1; digits <= 17; digits++) { /* the shortest text that reads back as the same element */
    snprintf(buf, len, "%.*g", digits, v);
    if (float_bits(kind, size, strtod(buf, NULL)) == b) break;
  }
  if (!strpbrk(buf, ".e")) { /* a float's integral value, written as Lua writes it */
    size_t n = strlen(buf);
    if (n + 2 < len) memcpy(buf + n, ".0", 3);
  }
}

int sim_compare_first(const gld_host_arg *a, const void *ptx, const void *host, size_t *index) {
  if (memcmp(ptx, host, a->count * a->size) == 0) return 0;
  const unsigned char *p = ptx, *h = host;
  for (size_t i = 0; i < a->count; i++) {
    uint64_t x = elem_bits(p + i * a->size, a->size), y = elem_bits(h + i * a->size, a->size);
    if (x == y || (is_nan(a->kind, a->size, x) && is_nan(a->kind, a->size, y))) continue;
    *index = i;
    return 1;
  }
  return 0;
}

/* The memory of a launch's pointer arguments: where each is, and where the
 * host implementation gets it. */
typedef struct copies {
  int n; /* parameters */
  gld_host_arg arg[GL_SIM_MAX_PARAMS];
  unsigned char *real[GL_SIM_MAX_PARAMS]; /* the memory passed, or NULL: not copied */
  size_t bytes[GL_SIM_MAX_PARAMS];
  int group[GL_SIM_MAX_PARAMS];   /* the copied argument whose copy holds this one's (itself for the first) */
  unsigned char *lo[GL_SIM_MAX_PARAMS], *hi[GL_SIM_MAX_PARAMS]; /* a group's memory (at its first) */
  unsigned char *copy[GL_SIM_MAX_PARAMS]; /* a group's copy (at its first) */
  unsigned long long host_ptr[GL_SIM_MAX_PARAMS]; /* the parameter the host implementation gets */
} copies;

static int overlap(const unsigned char *alo, const unsigned char *ahi, const unsigned char *blo,
                   const unsigned char *bhi) {
  return alo < bhi && blo < ahi;
}

/* Which arguments are copied (those written, and those read that overlap
 * them), in groups of overlapping ones: 0, or the index of an argument
 * whose memory cannot be counted (its bytes overflow). */
static int plan(copies *c, const gld_host_launch *l) {
  for (int i = 0; i < c->n; i++) {
    const gld_host_arg *a = &c->arg[i];
    c->real[i] = NULL;
    c->group[i] = -1;
    if (!a->ptr || a->count == 0) continue;
    if (a->size == 0 || a->count > SIZE_MAX / a->size) return i + 1;
    unsigned long long p;
    memcpy(&p, l->params[i], sizeof p);
    c->real[i] = (unsigned char *)(uintptr_t)p;
    c->bytes[i] = a->count * a->size;
  }
  int keep[GL_SIM_MAX_PARAMS] = {0};
  for (int i = 0; i < c->n; i++) keep[i] = c->real[i] && c->arg[i].writes;
  for (int i = 0; i < c->n; i++) /* a read-only argument overlapping a written one */
    for (int j = 0; j < c->n && c->real[i] && !keep[i]; j++)
      if (c->arg[j].writes && c->real[j] &&
          overlap(c->real[i], c->real[i] + c->bytes[i], c->real[j], c->real[j] + c->bytes[j]))
        keep[i] = 1;
  for (int i = 0; i < c->n; i++) {
    if (!keep[i]) continue;
    c->group[i] = i;
    c->lo[i] = c->real[i];
    c->hi[i] = c->real[i] + c->bytes[i];
  }
  for (int changed = 1; changed;) { /* merge the groups whose memory overlaps */
    changed = 0;
    for (int i = 0; i < c->n; i++) {
      if (c->group[i] != i) continue;
      for (int j = i + 1; j < c->n; j++) {
        if (c->group[j] != j || !overlap(c->lo[i], c->hi[i], c->lo[j], c->hi[j])) continue;
        for (int k = 0; k < c->n; k++)
          if (c->group[k] == j) c->group[k] = i;
        if (c->lo[j] < c->lo[i]) c->lo[i] = c->lo[j];
        if (c->hi[j] > c->hi[i]) c->hi[i] = c->hi[j];
        changed = 1;
      }
    }
  }
  return 0;
}

/* The copies, taken now (before the PTX runs): 0, or the first argument
 * whose copy could not be made (out of host memory). */
static int take(copies *c) {
  for (int i = 0; i < c->n; i++) c->copy[i] = NULL;
  for (int i = 0; i < c->n; i++) {
    if (c->group[i] != i) continue;
    size_t bytes = (size_t)(c->hi[i] - c->lo[i]);
    if (!(c->copy[i] = malloc(bytes))) return i + 1;
    memcpy(c->copy[i], c->lo[i], bytes);
  }
  return 0;
}

static void let_go(copies *c) {
  for (int i = 0; i < c->n; i++) free(c->copy[i]);
}

/* The fault of device `ordinal`'s context, where it has none yet. */
static void keep_fault(int ordinal, int tag, const char *text) {
  pthread_mutex_lock(&sim_S.mu);
  struct CUctx_st *ctx = &sim_S.dev[ordinal].ctx;
  if (!ctx->fault[0]) {
    snprintf(ctx->fault, sizeof ctx->fault, "%s", text);
    ctx->fault_where = (gld_fault_where){.launch_at = SIZE_MAX, .tag = tag};
  }
  pthread_mutex_unlock(&sim_S.mu);
}

/* The host implementation's `skipped` for a launch whose host run does not
 * happen: it releases what the launch holds. */
static void skip_host(const sim_host_impl *h, const gld_sim_launch *l) {
  if (!h->skipped) return;
  pthread_mutex_lock(&sim_S.mu);
  sim_call_host_unlock(h->skipped, h->user, h->on_main, l);
}

/* The first written argument whose elements differ: 1 with the fault's
 * text in why, else 0. */
static int differs(const copies *c, const char *kernel, char *why, size_t len) {
  for (int i = 0; i < c->n; i++) {
    const gld_host_arg *a = &c->arg[i];
    if (c->group[i] < 0 || !a->writes) continue;
    const unsigned char *host = c->copy[c->group[i]] + (c->real[i] - c->lo[c->group[i]]);
    size_t at;
    if (!sim_compare_first(a, c->real[i], host, &at)) continue;
    char pv[64], hv[64];
    sim_compare_format(a->kind, a->size, c->real[i] + at * a->size, pv, sizeof pv);
    sim_compare_format(a->kind, a->size, host + at * a->size, hv, sizeof hv);
    snprintf(why, len, "compare: kernel '%s' argument %d (%s*) element %zu: ptx wrote %s, the host function %s",
             kernel, i + 1, a->type ? a->type : "void", at, pv, hv);
    return 1;
  }
  return 0;
}

int sim_compare_run(sim_op *op, const sim_host_impl *h) {
  struct CUfunc_st *f = op->func;
  const gld_sim_launch *l = op->launch;
  int ordinal = f->mod->ordinal;
  char why[sizeof sim_S.dev[0].ctx.fault];
  copies *c = calloc(1, sizeof *c);
  int bad = c ? 0 : -1;
  if (c) {
    c->n = l->nparams;
    h->args(h->user, l, c->arg);
    bad = plan(c, l);
    if (bad == 0 && (bad = take(c)) != 0) let_go(c);
  }
  if (bad) {
    if (bad > 0)
      snprintf(why, sizeof why, "compare: kernel '%s' argument %d: out of host memory for the host function's copy "
               "of its memory", f->name, bad);
    else
      snprintf(why, sizeof why, "compare: kernel '%s': out of host memory", f->name);
    keep_fault(ordinal, l->tag, why);
    free(c);
    skip_host(h, l);
    return CUDA_ERROR_LAUNCH_FAILED;
  }
  int rc = sim_run_ptx(op);
  if (rc != 0) {
    let_go(c);
    free(c);
    skip_host(h, l);
    return rc;
  }
  /* the host implementation's launch: the same, its pointers into the copies */
  gld_sim_launch hl = *l;
  for (int i = 0; i < c->n; i++) {
    if (c->group[i] < 0) continue;
    c->host_ptr[i] = (unsigned long long)(uintptr_t)(c->copy[c->group[i]] + (c->real[i] - c->lo[c->group[i]]));
    hl.params[i] = &c->host_ptr[i];
  }
  pthread_mutex_lock(&sim_S.mu);
  int failed = sim_call_host_unlock(h->fn, h->user, h->on_main, &hl);
  if (!failed && differs(c, f->name, why, sizeof why)) {
    keep_fault(ordinal, l->tag, why);
    failed = CUDA_ERROR_LAUNCH_FAILED;
  }
  let_go(c);
  free(c);
  return failed;
}
