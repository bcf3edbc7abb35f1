/*
 * sim_module.c -- the sim's modules, functions and launches: loading images,
 * finding kernels (by name in PTX, with sim_ptx.c), their attributes and
 * parameters, cuLaunchKernel (and gld_sim_launch_costed, with the timing
 * model's cost), running a launch (its PTX through the interpreter, or its
 * host implementation, or both: sim_compare.c), and what sim.h offers beyond: host implementations
 * of kernels, the main thread, gld_sim_enqueue and gld_sim_device_of.
 */

#include "ptx_ir.h"
#include "sim_internal.h"
#include "sim_ptx.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- modules and launches ------------------------------------------------
 * A sim module keeps its image. Kernels are found by name in PTX (".entry
 * name"); other images (CUBIN, fatbin) cannot be read, and any name is
 * accepted. Under GPULUA_SIM_KERNELS=ptx (the default) or compare a PTX
 * module is also decoded by the interpreter (ptx_ir.h), and a launch of one
 * of its kernels (not a built-in, but under GPULUA_SIM_BUILTINS=ptx) runs
 * that code on the stream's worker, each
 * global access checked against the sim's memory map; under compare, a
 * kernel with a host implementation runs that too, on copies, and the two
 * are compared (sim_compare.c). Under host no device code runs: a launch
 * runs the host implementation the upper layer gave with
 * gld_sim_func_set_host, on the stream's worker or, for Lua kernels, on the
 * main thread. */

static struct CUfunc_st *all_funcs; /* guarded by sim_S.mu */

/* A PTX run's memory check state: the lookup cache, and the memory a
 * failed check hit. */
typedef struct {
  sim_mem_cache cache;
  uint64_t hit_base;
} run_check;

/* Around the words of a fault message that name the memory an access hit,
 * which the upper layer may name better (gld_fault_where). */
#define NAME_OPEN '\x01'
#define NAME_CLOSE '\x02'

/* The memory check of a PTX run: every global or generic access must lie
 * inside memory the sim gave out (sim_memmap.c). */
static int check_access(void *user, uint64_t addr, size_t bytes, int write, char *why, size_t whylen) {
  (void)write; /* the interpreter says "wrote 4 bytes"; this says where */
  run_check *rc = user;
  sim_mem_hit hit;
  sim_mem_where where = sim_mem_lookup_cached(&rc->cache, addr, bytes, &hit);
  if (where == SIM_MEM_INSIDE) return 0;
  if (where == SIM_MEM_PAST_END) {
    rc->hit_base = hit.base;
    snprintf(why, whylen, "%llu bytes past the end of %can allocation of %zu bytes%c",
             (unsigned long long)(hit.offset > hit.size ? hit.offset - hit.size : 0), NAME_OPEN, hit.size, NAME_CLOSE);
  } else if (where == SIM_MEM_FREED) {
    snprintf(why, whylen, "of freed memory (an allocation of %zu bytes)", hit.size);
  } else {
    snprintf(why, whylen, "at 0x%llx, which is no memory the sim gave out", (unsigned long long)addr);
  }
  return 1;
}

/* The fault text of a PTX run into the context: the marks around the
 * memory's words taken out, where they were (and the memory) kept in
 * *where; the interpreter's text ends with its parenthesised context
 * (kernel, line, thread, block), before whose end the launch fits. */
static void keep_fault(struct CUctx_st *ctx, const char *err, uint64_t base, int tag) {
  gld_fault_where *w = &ctx->fault_where;
  *w = (gld_fault_where){.launch_at = SIZE_MAX, .tag = tag};
  size_t n = 0, cap = sizeof ctx->fault - 1;
  for (const char *p = err; *p && n < cap; p++) {
    if (*p == NAME_OPEN) {
      w->name_at = n;
    } else if (*p == NAME_CLOSE) {
      w->name_len = n - w->name_at;
      w->base = base;
    } else {
      ctx->fault[n++] = *p;
    }
  }
  ctx->fault[n] = '\0';
  if (n && ctx->fault[n - 1] == ')') w->launch_at = n - 1;
}

/* Whether a launch of f runs its PTX (GPULUA_SIM_KERNELS=ptx; built-ins keep
 * their C implementations but under GPULUA_SIM_BUILTINS=ptx). */
static int runs_ptx(const struct CUfunc_st *f) {
  return f->mod && f->mod->prog && f->ptx_index >= 0 && (!f->builtin || sim_builtins_ptx());
}

/* A launch of f's PTX on the calling worker, in the order
 * GPULUA_SIM_SCHEDULE says: 0, or CUDA_ERROR_ASSERT (a failed assert) or
 * CUDA_ERROR_LAUNCH_FAILED (any other fault) with the fault's message kept
 * on the context. What its printf calls wrote goes to the process's stdout
 * when it ends (after a fault too), in one piece, flushed: the script's own
 * output (Lua's print and io.write use the same stdout) after a sync comes
 * after it. A host kernel's record (the launch's last parameter) is
 * released by its `skipped`, as for a launch not run. */
int sim_run_ptx(sim_op *op) {
  struct CUfunc_st *f = op->func;
  const gld_sim_launch *g = op->launch;
  run_check check = {0};
  sim_ptx_launch l = {.grid = {g->grid[0], g->grid[1], g->grid[2]},
                      .block = {g->block[0], g->block[1], g->block[2]},
                      .shared_bytes = g->shared, .params = (void **)g->params, .check = check_access, .user = &check,
                      .no_racecheck = !sim_racecheck()};
  l.schedule = sim_schedule(&l.seed) ? SIM_PTX_SCHED_RANDOM : SIM_PTX_SCHED_FIXED;
  char err[512];
  int rc = sim_ptx_run(f->mod->prog, f->ptx_index, &l, err, sizeof err);
  if (l.printed) {
    fwrite(l.printed, 1, l.printed_len, stdout);
    fflush(stdout);
    free(l.printed);
  }
  pthread_mutex_lock(&sim_S.mu);
  struct CUctx_st *ctx = &sim_S.dev[f->mod->ordinal].ctx;
  if (rc != 0 && !ctx->fault[0]) keep_fault(ctx, err, check.hit_base, g->tag);
  pthread_mutex_unlock(&sim_S.mu);
  return rc == 0 ? 0 : l.asserted ? CUDA_ERROR_ASSERT : CUDA_ERROR_LAUNCH_FAILED;
}

int sim_call_host_unlock(gld_sim_kernel_fn fn, void *user, int on_main, const gld_sim_launch *l) {
  if (!on_main) {
    pthread_mutex_unlock(&sim_S.mu);
    return fn(user, l);
  }
  main_req r = {NULL, fn, user, l, 0, 0};
  *sim_main_tail = &r;
  sim_main_tail = &r.next;
  sim_progress_locked(); /* the main thread may be waiting */
  while (!r.done) sim_wait_locked();
  pthread_mutex_unlock(&sim_S.mu);
  return r.failed;
}

int sim_run_kernel(sim_op *op, int skip) {
  struct CUfunc_st *f = op->func;
  /* read under the lock: gld_sim_func_set_host (k:host again) may write these
   * while this launch is on its way (a data race, ThreadSanitizer found) */
  pthread_mutex_lock(&sim_S.mu);
  int ptx = !skip && runs_ptx(f), failed = 0;
  if (ptx && f->host && f->args && sim_S.kernels == SIM_KERNELS_COMPARE) { /* both, compared */
    sim_host_impl h = {.fn = f->host, .skipped = f->skipped, .user = f->user, .on_main = f->on_main, .args = f->args};
    pthread_mutex_unlock(&sim_S.mu);
    return sim_compare_run(op, &h);
  }
  if (ptx) { /* its PTX, without the lock; then the host kernel's record goes, where it has one */
    pthread_mutex_unlock(&sim_S.mu);
    failed = sim_run_ptx(op);
    skip = 1;
    pthread_mutex_lock(&sim_S.mu);
  }
  gld_sim_kernel_fn fn = skip ? f->skipped : f->host;
  if (!fn) { /* nothing to tell of a skipped launch */
    pthread_mutex_unlock(&sim_S.mu);
    return failed;
  }
  int rc = sim_call_host_unlock(fn, f->user, f->on_main, op->launch);
  return ptx ? failed : rc;
}

int gld_sim_fault_detail(int ordinal, char *buf, size_t len, gld_fault_where *where) {
  if (ordinal < 0 || ordinal >= sim_S.ndev || len == 0) return -1;
  pthread_mutex_lock(&sim_S.mu);
  const char *f = sim_S.dev[ordinal].ctx.fault;
  int known = f[0] != 0;
  if (known) snprintf(buf, len, "%s", f);
  if (known && where) {
    *where = sim_S.dev[ordinal].ctx.fault_where;
    if (where->name_at + where->name_len >= len) where->name_len = 0; /* cut off: not named */
    if (where->launch_at != SIZE_MAX && where->launch_at >= len - 1) where->launch_at = SIZE_MAX;
  }
  pthread_mutex_unlock(&sim_S.mu);
  return known ? 0 : -1;
}

/* The message of the last module the calling thread failed to load. */
static _Thread_local char load_error[512];

const char *gld_sim_load_error(void) { return load_error; }

/* GPULUA_SIM_KERNELS=ptx: the module decoded for the interpreter, its
 * variables those sim_modvars.c laid out (one memory: what a copy writes, a
 * kernel reads). A module the interpreter cannot run does not load. */
static CUresult load_prog(struct CUmod_st *mod) {
  load_error[0] = '\0';
  sim_ptx_module *prog = sim_ptx_load(mod->image, load_error, sizeof load_error);
  if (!prog) return CUDA_ERROR_INVALID_PTX;
  int same = 1;
  for (int i = 0; i < prog->nvars && same; i++) {
    const sim_ptx_var *v = &prog->vars[i];
    if (v->space == SIM_S_SHARED) continue;
    CUdeviceptr at = 0;
    size_t bytes = 0;
    same = sim_cuModuleGetGlobal(&at, &bytes, mod, v->name) == CUDA_SUCCESS &&
           at == (CUdeviceptr)(uintptr_t)(mod->vmem + v->offset) && bytes == v->size;
  }
  if (!same) {
    snprintf(load_error, sizeof load_error, "the module's variables could not be laid out for the interpreter");
    sim_ptx_free(prog);
    return CUDA_ERROR_INVALID_PTX;
  }
  if (prog->data_bytes) { /* the module's variables: one memory */
    free(prog->data);
    prog->data = mod->vmem;
  }
  mod->prog = prog;
  return CUDA_SUCCESS;
}

static CUresult load(CUmodule *m, const void *image, int builtins);

CUresult sim_cuModuleLoadData(CUmodule *m, const void *image) { return load(m, image, 0); }

CUresult gld_sim_load_builtins(CUmodule *m, const void *image) { return load(m, image, 1); }

static CUresult load(CUmodule *m, const void *image, int builtins) {
  NEED_CTX();
  if (!m || !image) return CUDA_ERROR_INVALID_VALUE;
  NEED_HEALTHY(sim_cur_ctx);
  const unsigned char *p = image;
  struct CUmod_st *mod = calloc(1, sizeof *mod);
  if (!mod) return CUDA_ERROR_OUT_OF_MEMORY;
  mod->ordinal = sim_cur_ctx->ordinal;
  if (p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F') {
    mod->is_ptx = 0; /* CUBIN: names cannot be checked */
  } else if (p[0] == 0x50 && p[1] == 0xed && p[2] == 0x55 && p[3] == 0xba) {
    mod->is_ptx = 0; /* fatbin */
  } else {
    mod->len = strlen(image);
    if (!strstr(image, ".version") || !strstr(image, ".target")) {
      free(mod);
      return CUDA_ERROR_INVALID_IMAGE;
    }
    mod->image = malloc(mod->len + 1);
    if (!mod->image) {
      free(mod);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(mod->image, image, mod->len + 1);
    mod->is_ptx = 1;
    CUresult r = sim_vars_load(mod);
    /* decoded for the interpreter: a script's module unless GPULUA_SIM_KERNELS=host,
     * the built-ins' under GPULUA_SIM_BUILTINS=ptx (each setting on its own) */
    if (r == CUDA_SUCCESS && (builtins ? sim_builtins_ptx() : sim_kernels() != SIM_KERNELS_HOST)) r = load_prog(mod);
    if (r != CUDA_SUCCESS) {
      sim_ptx_free(mod->prog);
      sim_vars_free(mod);
      free(mod->image);
      free(mod);
      return r;
    }
  }
  *m = mod;
  return CUDA_SUCCESS;
}

CUresult sim_cuModuleUnload(CUmodule m) {
  NEED_INIT();
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&sim_S.mu);
  for (struct CUfunc_st **pp = &all_funcs; *pp;) {
    if ((*pp)->mod == m) {
      struct CUfunc_st *dead = *pp;
      *pp = dead->next;
      free(dead);
    } else {
      pp = &(*pp)->next;
    }
  }
  pthread_mutex_unlock(&sim_S.mu);
  if (m->prog) {
    sim_ptx_module *prog = m->prog;
    if (prog->data == m->vmem) prog->data = NULL; /* sim_vars_free's */
    sim_ptx_free(prog);
  }
  sim_vars_free(m);
  free(m->image);
  free(m);
  return CUDA_SUCCESS;
}

CUresult sim_cuModuleGetFunction(CUfunction *pf, CUmodule m, const char *name) {
  NEED_INIT();
  if (!pf || !m || !name) return CUDA_ERROR_INVALID_VALUE;
  if (strlen(name) >= sizeof((struct CUfunc_st *)0)->name) return CUDA_ERROR_NOT_FOUND;
  const char *entry = m->is_ptx ? gld_ptx_entry(m->image, name) : NULL;
  if (m->is_ptx && !entry) return CUDA_ERROR_NOT_FOUND;
  pthread_mutex_lock(&sim_S.mu);
  for (struct CUfunc_st *f = all_funcs; f; f = f->next)
    if (f->mod == m && strcmp(f->name, name) == 0) {
      *pf = f;
      pthread_mutex_unlock(&sim_S.mu);
      return CUDA_SUCCESS;
    }
  struct CUfunc_st *f = calloc(1, sizeof *f);
  if (!f) {
    pthread_mutex_unlock(&sim_S.mu);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  f->mod = m;
  snprintf(f->name, sizeof f->name, "%s", name);
  f->ptx_nparams = -1;
  f->ptx_index = m->prog ? sim_ptx_find(m->prog, name) : -1;
  f->max_threads = entry ? gld_ptx_max_threads(entry) : 1024;
  if (entry) f->ptx_nparams = gld_ptx_params(entry, f->ptx_offset, f->ptx_size, GL_SIM_MAX_PARAMS);
  f->next = all_funcs;
  all_funcs = f;
  pthread_mutex_unlock(&sim_S.mu);
  *pf = f;
  return CUDA_SUCCESS;
}

CUresult sim_cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size) {
  NEED_INIT();
  if (!f || !off || !size) return CUDA_ERROR_INVALID_VALUE;
  if (f->ptx_nparams < 0) return CUDA_ERROR_NOT_SUPPORTED; /* not PTX: unknown */
  if (i >= (size_t)f->ptx_nparams) return CUDA_ERROR_INVALID_VALUE;
  *off = f->ptx_offset[i];
  *size = f->ptx_size[i];
  return CUDA_SUCCESS;
}

CUresult sim_cuFuncGetAttribute(int *pi, CUfunction_attribute a, CUfunction f) {
  NEED_INIT();
  if (!pi || !f) return CUDA_ERROR_INVALID_VALUE;
  switch (a) {
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = f->max_threads; break;
  case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *pi = 0; break;
  case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = 32; break;
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = 49152; break;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult gld_sim_launch_costed(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                              unsigned bz, unsigned shared, CUstream st, void **params, void **extra,
                              double mem_bytes, double us, int tag) {
  NEED_INIT();
  if (!f || extra) return CUDA_ERROR_INVALID_VALUE;
  if (!gx || !gy || !gz || !bx || !by || !bz) return CUDA_ERROR_INVALID_VALUE;
  if ((unsigned long long)bx * by * bz > 1024 || bz > 64) return CUDA_ERROR_INVALID_VALUE;
  if (shared > 232448) return CUDA_ERROR_INVALID_VALUE;
  if (!st) return CUDA_ERROR_INVALID_HANDLE;
  if ((unsigned long long)bx * by * bz > (unsigned long long)f->max_threads) return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  if (f->mod->ordinal != st->ctx->ordinal) return CUDA_ERROR_INVALID_HANDLE;
  /* the parameters' sizes: the host implementation's (a Lua host kernel's
   * record last), else, for a kernel that runs its PTX, the PTX entry's */
  int ptx = runs_ptx(f);
  if (!f->host && !ptx) return CUDA_ERROR_NOT_SUPPORTED; /* no device code runs on sim */
  int nparams = f->host ? f->nparams : f->ptx_nparams;
  const size_t *sizes = f->host ? f->sizes : f->ptx_size;
  if (nparams < 0) return CUDA_ERROR_NOT_SUPPORTED;
  size_t total = 0;
  for (int i = 0; i < nparams; i++) total += (sizes[i] + 7) / 8 * 8;
  gld_sim_launch *l = calloc(1, sizeof *l + total);
  if (!l) return CUDA_ERROR_OUT_OF_MEMORY;
  l->grid[0] = gx, l->grid[1] = gy, l->grid[2] = gz;
  l->block[0] = bx, l->block[1] = by, l->block[2] = bz;
  l->shared = shared;
  l->nparams = nparams;
  l->tag = tag;
  unsigned char *store = (unsigned char *)(l + 1);
  for (int i = 0; i < nparams; i++) { /* copied now, as the driver does */
    if (!params || !params[i]) {
      free(l);
      return CUDA_ERROR_INVALID_VALUE;
    }
    memcpy(store, params[i], sizes[i]);
    l->params[i] = store;
    store += (sizes[i] + 7) / 8 * 8;
  }
  sim_op op = {.kind = OP_KERNEL, .func = f, .launch = l, .launch_bytes = sizeof *l + total,
               .mw = sim_model_launch(mem_bytes, us)};
  CUresult r = sim_enqueue(st, &op);
  if (r != CUDA_SUCCESS) free(l);
  return r;
}

CUresult sim_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                            unsigned bz, unsigned shared, CUstream st, void **params, void **extra) {
  return gld_sim_launch_costed(f, gx, gy, gz, bx, by, bz, shared, st, params, extra, 0, 0, -1);
}

CUresult sim_enqueue_host_call(struct CUfunc_st *f, const void *args, size_t bytes, CUstream st, double mem_bytes) {
  gld_sim_launch *l = calloc(1, sizeof *l + bytes);
  if (!l) return CUDA_ERROR_OUT_OF_MEMORY;
  l->grid[0] = l->grid[1] = l->grid[2] = 1;
  l->block[0] = l->block[1] = l->block[2] = 1;
  l->nparams = 1;
  l->tag = -1;
  l->params[0] = l + 1;
  memcpy(l + 1, args, bytes);
  sim_op op = {.kind = OP_KERNEL, .func = f, .launch = l, .launch_bytes = sizeof *l + bytes,
               .mw = sim_model_launch(mem_bytes, 0)};
  CUresult r = sim_enqueue(st, &op);
  if (r != CUDA_SUCCESS) free(l);
  return r;
}

CUresult gld_sim_func_set_host(CUfunction f, gld_sim_kernel_fn fn, gld_sim_kernel_fn skipped, void *user, int on_main,
                              int nparams, const size_t *sizes, gld_host_args_fn args) {
  if (!f || nparams < 0 || nparams > GL_SIM_MAX_PARAMS) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&sim_S.mu);
  f->host = fn;
  f->skipped = skipped;
  f->user = user;
  f->on_main = on_main;
  f->args = args;
  f->nparams = nparams;
  for (int i = 0; i < nparams; i++) f->sizes[i] = sizes[i];
  pthread_mutex_unlock(&sim_S.mu);
  return CUDA_SUCCESS;
}

void gld_sim_set_main_thread(void) {
  pthread_mutex_lock(&sim_S.mu);
  sim_main_thread = pthread_self();
  sim_main_thread_set = 1;
  pthread_mutex_unlock(&sim_S.mu);
}

CUresult gld_sim_enqueue(CUstream st, gld_sim_fn fn, void *user) {
  NEED_INIT();
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  sim_op op = {.kind = OP_SIMFN, .simfn = fn, .user = user};
  return sim_enqueue(st, &op);
}

int gld_sim_device_of(CUstream st) {
  return st ? st->ctx->ordinal : -1;
}
