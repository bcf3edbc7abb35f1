/*
 * launch.c -- kernel launches (see ops.h): a request checked completely
 * before it is queued. Arguments go into the kernel's own parameter buffer:
 * nothing is allocated per launch. Messages start with the request's call.
 */
#include <stdio.h>
#include <string.h>

#include "device.h"
#include "dtype.h"
#include "memory.h"
#include "module.h"
#include "ops.h"
#include "queue.h"
#include "runtime.h"
#include "scratch.h"
#include "driver_ext.h"
#include "graph.h"
#include "stream.h"

/* A launch's slice arguments, gathered as they are checked: the runs of
 * their operands (queue.h; const T* parameters are reads, other pointers
 * writes). The operands themselves are made only when something needs them
 * (a conflict's message, a capture). */
typedef struct launch_args {
  gl_run runs[GL_MAX_PARAMS];
  int n, nruns;  /* slice arguments so far; their runs */
  int any_range; /* policy off's runs */
} launch_args;

static int check_kernel(const gl_launch_req *r) {
  const gl_kernel *k = r->k;
  gl_device *dev = r->s->dev;
  if (k->m->dev != dev)
    return gl_fail(dev->rt, "%s: kernel '%s' was loaded on device %d, but stream '%s' is on device %d", r->call,
                   k->name, k->m->dev->ordinal, r->s->name, dev->ordinal);
  if (gld_drv_ext.host_only && !k->builtin && !r->has_host)
    return gl_fail(dev->rt, "%s: kernel '%s' has no host implementation, and the sim backend cannot run device "
                            "code: give one with %s", r->call, k->name, dev->rt->names.set_host);
  if (gld_drv_ext.ptx_only && k->m->binary && !r->has_host)
    return gl_fail(dev->rt, "%s: kernel '%s' comes from a binary module (CUBIN or fatbin), whose code the sim "
                            "backend cannot run: load its PTX or CUDA source, or give a host implementation with %s",
                   r->call, k->name, dev->rt->names.set_host);
  return 0;
}

static int check_limits(const char *call, gl_kernel *k, const gl_device *d, const gl_launch_cfg *c) {
  static const char *const axis[] = {"x", "y", "z"};
  if (c->id && c->id == k->cfg_ok) return 0; /* this prepared configuration passed for k before */
  gl_runtime *rt = d->rt;
  const unsigned *g = c->grid, *b = c->block;
  if (g[0] == 0 && !k->builtin) /* grid "auto" */
    return gl_fail(rt, "%s: kernel '%s': cfg.grid is required (a number or {x, y, z}); only the built-in kernels "
                       "(%s) choose their own grid", call, k->name, rt->names.builtins);
  if (k->builtin && (g[1] != 1 || g[2] != 1 || b[1] != 1 || b[2] != 1)) { /* its threads index along x alone */
    char gs[40];
    if (g[0] == 0) snprintf(gs, sizeof gs, "\"auto\"");
    else snprintf(gs, sizeof gs, "%ux%ux%u", g[0], g[1], g[2]);
    return gl_fail(rt, "%s: built-in kernel '%s' needs a one-dimensional grid and block (threads along y or z "
                       "would repeat the work), got grid %s, block %ux%ux%u", call, k->name, gs, b[0], b[1], b[2]);
  }
  for (int i = 0; i < 3; i++) {
    if (b[i] > (unsigned)d->max_block[i])
      return gl_fail(rt, "%s: kernel '%s': block.%s = %u exceeds device %d's limit of %d", call, k->name, axis[i],
                     b[i], d->ordinal, d->max_block[i]);
    if (g[i] > (unsigned)d->max_grid[i])
      return gl_fail(rt, "%s: kernel '%s': grid.%s = %u exceeds device %d's limit of %d", call, k->name, axis[i],
                     g[i], d->ordinal, d->max_grid[i]);
  }
  unsigned long long threads = (unsigned long long)b[0] * b[1] * b[2];
  if (threads > (unsigned long long)d->max_threads_per_block)
    return gl_fail(rt, "%s: kernel '%s': a block of %ux%ux%u = %llu threads exceeds device %d's limit of %d", call,
                   k->name, b[0], b[1], b[2], threads, d->ordinal, d->max_threads_per_block);
  if (k->max_threads > 0 && threads > (unsigned long long)k->max_threads)
    return gl_fail(rt, "%s: kernel '%s': a block of %ux%ux%u = %llu threads exceeds the kernel's limit of %d "
                       "(set by its __launch_bounds__ or its register use; device %d allows %d)",
                   call, k->name, b[0], b[1], b[2], threads, k->max_threads, d->ordinal, d->max_threads_per_block);
  if (c->shared > (unsigned)d->max_shared)
    return gl_fail(rt, "%s: kernel '%s': cfg.shared = %u bytes exceeds device %d's limit of %d bytes per block",
                   call, k->name, c->shared, d->ordinal, d->max_shared);
  if (k->builtin && k->builtin->reduces && b[0] % 32 != 0)
    return gl_fail(rt, "%s: built-in kernel '%s' needs a one-dimensional block of a multiple of 32 threads, got "
                       "%ux%ux%u", call, k->name, b[0], b[1], b[2]);
  k->cfg_ok = c->id;
  return 0;
}

/* The usual slice argument, inline: live memory of s's device, of the
 * declared dtype (then check_slice is not called). */
static inline int slice_usual(const gl_stream *s, int dt, const gl_slice *x) {
  const gl_alloc *a = x->a;
  return a && !x->released && !a->freed && a->dev == s->dev && s->dev->opened && (dt < 0 || x->dtype == (gl_dtype)dt);
}

static int check_slice(const gl_launch_req *r, int i, const gl_slice *x) {
  gl_stream *s = r->s;
  gl_device *dev = s->dev;
  gl_runtime *rt = dev->rt;
  const gl_kernel *k = r->k;
  const gl_param *p = &k->sig.p[i];
  if (!x->a) return gl_fail(rt, "%s: kernel '%s': argument %d: slice is not initialised", r->call, k->name, i + 1);
  if (!gl_slice_alive(x)) { /* freed, or shut down */
    gl_buf who = GL_BUF_INIT;
    gl_buf_printf(&who, "%s: kernel '%s': argument %d", r->call, k->name, i + 1);
    gl_slice_check_as(x, gl_buf_str(&who));
    gl_buf_free(&who);
    return -1;
  }
  if (p->dtype >= 0 && x->dtype != (gl_dtype)p->dtype)
    return gl_fail(rt, "%s: kernel '%s': argument %d expected %s %s slice, got %s %s slice", r->call, k->name, i + 1,
                   gl_dtype_article((gl_dtype)p->dtype), gl_dtypes[p->dtype].name, gl_dtype_article(x->dtype),
                   gl_dtypes[x->dtype].name);
  if (x->a->dev != dev && !gl_peer_granted(rt, x->a->dev, dev)) {
    char peer[64];
    snprintf(peer, sizeof peer, rt->names.peer, x->a->dev->ordinal, dev->ordinal);
    return gl_fail(rt, "%s: kernel '%s': argument %d is a slice of device %d, but stream '%s' is on "
                       "device %d (grant access with %s where the devices support it)",
                   r->call, k->name, i + 1, x->a->dev->ordinal, s->name, dev->ordinal, peer);
  }
  return 0;
}

/* What the caller could not take as argument i: a pointer parameter given
 * no slice, or a scalar whose value does not fit its dtype. */
static int refuse_arg(const gl_launch_req *r, int i) {
  const gl_kernel *k = r->k;
  const gl_param *p = &k->sig.p[i];
  gl_runtime *rt = r->s->dev->rt;
  if (r->why)
    return gl_fail(rt, "%s: kernel '%s': argument %d (%s): %s, got %s", r->call, k->name, i + 1,
                   gl_dtypes[p->dtype].name, r->why, r->given), GL_REFUSED;
  char sig[GL_SIGNATURE_TEXT_MAX];
  gl_signature_format(&k->sig, sig, sizeof sig);
  return gl_fail(rt, "%s: kernel '%s' (%s): argument %d expected a slice (%s%s*), got %s", r->call, k->name, sig,
                 i + 1, p->is_const ? "const " : "", p->dtype < 0 ? "void" : gl_dtypes[p->dtype].name, r->given),
         GL_REFUSED;
}

/* A built-in's element counts must stay inside its slices. */
static int check_bounds(gl_runtime *rt, const char *call, const gl_kernel *k, gl_slice *const *slices) {
  for (int j = 0; j < k->builtin->nbounds; j++) {
    const gl_builtin_bound *bd = &k->builtin->bounds[j];
    unsigned long long n, stride = 1;
    const gl_slice *x = slices[bd->ptr];
    if (bd->count < 0) { /* a reduction's out: it writes the first element */
      if (x->count > 0) continue;
      return gl_fail(rt, "%s: built-in kernel '%s': argument %d (out) has 0 elements: a reduction writes its "
                         "result to out's first element", call, k->name, bd->ptr + 1);
    }
    memcpy(&n, k->params[bd->count], sizeof n);
    if (bd->stride >= 0) memcpy(&stride, k->params[bd->stride], sizeof stride);
    /* the last element touched is (n - 1) * stride: compare without overflowing */
    int fits = n == 0 || (x->count > 0 && (stride == 0 || (n - 1) <= (x->count - 1) / stride));
    if (fits) continue;
    const char *neg = (long long)stride < 0 ? " (the stride was negative as a signed integer: strides cannot be)" : "";
    if (bd->stride >= 0 && stride && (n - 1) <= (UINT64_MAX - 1) / stride)
      return gl_fail(rt, "%s: built-in kernel '%s': argument %d has %zu elements, but n = %llu with its "
                         "stride needs %llu%s", call, k->name, bd->ptr + 1, x->count, n, (n - 1) * stride + 1, neg);
    if (bd->stride >= 0)
      return gl_fail(rt, "%s: built-in kernel '%s': argument %d has %zu elements, but n = %llu with a "
                         "stride of %llu reaches past them%s", call, k->name, bd->ptr + 1, x->count, n, stride, neg);
    if ((long long)n < 0) /* a u64 takes -1 as 2^64 - 1: say what it was */
      return gl_fail(rt, "%s: built-in kernel '%s': argument %d has %zu elements, but n = %llu needs %llu (n "
                         "was %lld as a signed integer: a count cannot be negative)",
                     call, k->name, bd->ptr + 1, x->count, n, n, (long long)n);
    return gl_fail(rt, "%s: built-in kernel '%s': argument %d has %zu elements, but n = %llu needs %llu",
                   call, k->name, bd->ptr + 1, x->count, n, n);
  }
  return 0;
}

/* An elementwise built-in's output (its last bound) may be one of its inputs
 * exactly (in place: the same elements, each read and written by one thread),
 * or apart from them, never overlap them otherwise: its threads would race on
 * the GPU (and the sim's loop give other results). Runs after check_bounds. */
static int check_overlap(gl_runtime *rt, const char *call, const gl_kernel *k, gl_slice *const *slices) {
  const gl_builtin *b = k->builtin;
  if (b->reduces || b->nbounds < 2) return 0;
  const gl_builtin_bound *out = &b->bounds[b->nbounds - 1];
  unsigned long long n, so = 1;
  memcpy(&n, k->params[out->count], sizeof n);
  if (n == 0) return 0;
  if (out->stride >= 0) memcpy(&so, k->params[out->stride], sizeof so);
  if (so == 0 && n > 1)
    return gl_fail(rt, "%s: built-in kernel '%s': argument %d's stride is 0, so its one element would be written "
                       "by %llu threads at once (n = %llu): give a stride, or n = 1",
                   call, k->name, out->stride + 1, n, n);
  const gl_slice *y = slices[out->ptr];
  unsigned long long size = gl_dtypes[y->dtype].size;
  unsigned long long yend = y->lo + ((n - 1) * so + 1) * size; /* check_bounds: inside y's allocation */
  for (int j = 0; j < b->nbounds - 1; j++) {
    const gl_builtin_bound *bd = &b->bounds[j];
    const gl_slice *x = slices[bd->ptr];
    if (x->a != y->a) continue;
    unsigned long long sx = 1;
    if (bd->stride >= 0) memcpy(&sx, k->params[bd->stride], sizeof sx);
    unsigned long long xend = x->lo + ((n - 1) * sx + 1) * size;
    if (xend <= y->lo || yend <= x->lo) continue; /* apart */
    if (x->lo == y->lo && (sx == so || n == 1)) continue; /* the same elements: in place */
    unsigned long long d = x->lo > y->lo ? x->lo - y->lo : y->lo - x->lo;
    if (sx == so && d % (so * size) != 0) continue; /* interleaved: never the same element */
    return gl_fail(rt, "%s: built-in kernel '%s': argument %d, which it writes, overlaps argument %d without "
                       "being the same elements: its threads would read elements that others write (in place takes the "
                       "same view for both; otherwise write to memory apart from the inputs)",
                   call, k->name, out->ptr + 1, bd->ptr + 1);
  }
  return 0;
}

/* The blocks a built-in's grid "auto" (grid[0] = 0) has on d. An elementwise
 * kernel: one block per tile of its work (EW_TILE_VECTORS 16-byte vectors per
 * thread, kernels/builtins.cu's EW_UNROLL), each block taking one tile and
 * leaving: on the H200 that beats a grid that stays resident (copy and scale
 * 0.92 of the device-to-device copy with one, 0.96 with a block per tile;
 * docs/BENCHMARKS.md). A reduction: as many blocks as fill every
 * multiprocessor (the blocks its threads and the kernel's registers let stay
 * resident there, at most 32), but no more than the work needs (a 16-byte
 * vector per thread), and at most GL_REDUCE_BLOCKS (its scratch's partial
 * slots), whatever the script gave. */
#define EW_TILE_VECTORS 4
static void builtin_grid(const gl_device *d, const gl_kernel *k, const gl_launch_cfg *c, gl_slice *const *slices,
                         unsigned grid[3]) {
  if (grid[0] == 0) {
    const gl_builtin_bound *bd = &k->builtin->bounds[0];
    unsigned long long n;
    memcpy(&n, k->params[bd->count], sizeof n);
    unsigned long long threads = (unsigned long long)c->block[0] * c->block[1] * c->block[2];
    unsigned long long per_block = threads * (16 / gl_dtypes[slices[bd->ptr]->dtype].size);
    if (!k->builtin->reduces) per_block *= EW_TILE_VECTORS;
    unsigned long long need = n / per_block + (n % per_block != 0);
    unsigned long long per_sm = d->max_threads_per_sm > 0 ? (unsigned long long)d->max_threads_per_sm / threads : 1;
    if (k->regs > 0 && d->max_regs_per_block > 0) { /* registers are given per warp, 256 at a time */
      unsigned long long warp = ((unsigned long long)k->regs * 32 + 255) / 256 * 256, warps = (threads + 31) / 32;
      unsigned long long by_regs = (unsigned long long)d->max_regs_per_block / (warp * warps);
      if (by_regs < per_sm) per_sm = by_regs;
    }
    if (per_sm > 32) per_sm = 32;
    if (per_sm < 1) per_sm = 1;
    unsigned long long fill = (unsigned long long)(d->sms > 0 ? d->sms : 1) * per_sm;
    unsigned long long g = need < fill || !k->builtin->reduces ? need : fill;
    if (g > (unsigned long long)d->max_grid[0]) g = (unsigned long long)d->max_grid[0];
    grid[0] = g > 0 ? (unsigned)g : 1;
  }
  if (k->builtin->reduces && grid[0] > GL_REDUCE_BLOCKS) grid[0] = GL_REDUCE_BLOCKS;
}

/* A reduction's scratch: the stream's (made at its first reduction), passed
 * in the kernel's hidden parameters and written, so the checker sees it. */
static int pass_scratch(const gl_launch_req *r, launch_args *a, gl_op *op) {
  gl_kernel *k = r->k;
  gl_scratch *sc;
  if (gl_scratch_of(r->s, r->call, r->site, &sc) != 0) return -1;
  CUdeviceptr ticket = gl_scratch_ticket(sc), parts = gl_scratch_parts(sc);
  memcpy(k->params[k->sig.n], &ticket, sizeof ticket);
  memcpy(k->params[k->sig.n + 1], &parts, sizeof parts);
  gl_run_add(a->runs, &a->nruns, a->n++, &sc->mem.a->acc, sc->mem.lo, sc->mem.hi, 1, a->any_range);
  op->u.launch.scratch = &sc->mem;
  op->u.launch.scratch_what = sc->what;
  return 0;
}

/* The module's variables a script reached (m:global): the kernel reads
 * each __constant__ one and may write each other one, so they are operands
 * too, last (queue.c's launch_operands makes them in the same order). */
static int pass_vars(const gl_launch_req *r, launch_args *a) {
  for (gl_alloc *v = r->k->m->vars; v; v = v->next_var) {
    if (a->n == GL_MAX_PARAMS)
      return gl_fail(r->s->dev->rt, "%s: kernel '%s': its module '%s' has more variables in use than a launch can "
                                    "check (%d operands at most)", r->call, r->k->name, r->k->m->name, GL_MAX_PARAMS);
    gl_run_add(a->runs, &a->nruns, a->n++, &v->acc, 0, v->bytes, !v->var_const, a->any_range);
  }
  return 0;
}

/* Each argument in turn: checked, written into k's parameter buffer, a
 * slice's run gathered (one pass). */
static int take_args(gl_launch_req *r, launch_args *a) {
  gl_stream *s = r->s;
  gl_kernel *k = r->k;
  a->n = a->nruns = 0;
  a->any_range = s->dev->rt->policy == GL_POLICY_OFF;
  int end = r->bad >= 0 ? r->bad : k->sig.n; /* those before the one the caller could not take */
  for (int i = 0; i < end; i++) {
    const gl_param *p = &k->sig.p[i];
    if (p->is_ptr) {
      gl_slice *x = r->slices[i];
      if (!slice_usual(s, p->dtype, x) && check_slice(r, i, x) != 0) return -1;
      gl_run_add(a->runs, &a->nruns, a->n++, &x->a->acc, x->lo, x->hi, !p->is_const, a->any_range);
      CUdeviceptr ptr = gl_slice_ptr(x);
      memcpy(k->params[i], &ptr, sizeof ptr);
    } else {
      memcpy(k->params[i], r->values[i], 8); /* the whole slot (module.c: 8 bytes a parameter): one move */
    }
  }
  return r->bad >= 0 ? refuse_arg(r, r->bad) : 0;
}

int gl_launch_submit(gl_launch_req *r) {
  gl_stream *s = r->s;
  gl_kernel *k = r->k;
  gl_runtime *rt = s->dev->rt;
  if (!k) return gl_fail(rt, "%s: the kernel has been released", r->call), GL_REFUSED;
  if (r->nargs != k->sig.n) {
    char sig[GL_SIGNATURE_TEXT_MAX];
    gl_signature_format(&k->sig, sig, sizeof sig);
    return gl_fail(rt, "%s: kernel '%s' (%s) takes %d argument%s, got %d", r->call, k->name, sig, k->sig.n,
                   k->sig.n == 1 ? "" : "s", r->nargs), GL_REFUSED;
  }
  if (check_kernel(r) != 0 || check_limits(r->call, k, s->dev, r->cfg) != 0) return -1;
  launch_args a;
  int rc = take_args(r, &a);
  if (rc != 0) return rc;
  const gl_launch_cfg *c = r->cfg;
  unsigned grid[3] = {c->grid[0], c->grid[1], c->grid[2]};
  /* the operands are made by the queue from the slices, when it needs them */
  gl_op op = {.kind = GL_OP_LAUNCH, .name = k->name, .call = r->call, .opnd = NULL};
  if (k->builtin) {
    if (check_bounds(rt, r->call, k, r->slices) != 0 || check_overlap(rt, r->call, k, r->slices) != 0) return -1;
    builtin_grid(s->dev, k, c, r->slices, grid);
    if (k->builtin->reduces && pass_scratch(r, &a, &op) != 0) return -1;
  }
  if (k->m->vars && pass_vars(r, &a) != 0) return -1;
  op.nopnd = a.n;
  op.runs = a.runs;
  op.nruns = a.nruns;
  op.u.launch.slices = r->slices;
  op.u.launch.k = k;
  op.u.launch.grid = grid;
  op.u.launch.block = c->block;
  op.u.launch.shared = c->shared;
  op.u.launch.params = k->params;
  if (gld_drv_ext.launch_costed) { /* its cost, for the backend's timing model (and its tag) */
    op.u.launch.modeled = 1;
    op.u.launch.model_us = r->cost_us;
    if (k->builtin) {
      const gl_builtin_bound *bd = &k->builtin->bounds[0];
      unsigned long long n;
      memcpy(&n, k->params[bd->count], sizeof n);
      double size = (double)gl_dtypes[r->slices[bd->ptr]->dtype].size;
      op.u.launch.model_bytes = (double)k->builtin->passes * (double)n * size;
    }
  }
  if (gl_queue_op(s, &op, r->site) != 0) return -1;
  gl_graph *g = rt->capture;
  if (g && r->captured && r->captured(r->captured_arg, g) != 0) {
    g->broken = 1; /* the capture then fails at its end: what the launch needs at a replay is gone */
    return gl_fail(rt, "%s: out of host memory", r->call), GL_REFUSED;
  }
  return 0;
}
