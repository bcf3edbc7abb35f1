/*
 * sim_module.c -- the sim's modules, functions and launches: loading images,
 * finding kernels (by name in PTX, with sim_ptx.c), their attributes and
 * parameters, cuLaunchKernel (and gld_sim_launch_costed, with the timing
 * model's cost), and what sim.h offers beyond: host implementations of
 * kernels, the main thread, gld_sim_enqueue and gld_sim_device_of.
 */

#include "sim_internal.h"
#include "sim_ptx.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- modules and launches ------------------------------------------------
 * A sim module keeps its image. Kernels are found by name in PTX (".entry
 * name"); other images (CUBIN, fatbin) cannot be read, and any name is
 * accepted. No device code ever runs: a launch runs the host implementation
 * the upper layer gave with gld_sim_func_set_host, on the stream's worker or,
 * for Lua kernels, on the main thread. */

static struct CUfunc_st *all_funcs; /* guarded by sim_S.mu */

int sim_run_kernel(sim_op *op, int skip) {
  struct CUfunc_st *f = op->func;
  /* read under the lock: gld_sim_func_set_host (k:host again) may write these
   * while this launch is on its way (a data race, ThreadSanitizer found) */
  pthread_mutex_lock(&sim_S.mu);
  main_req r = {NULL, skip ? f->skipped : f->host, f->user, op->launch, 0, 0};
  if (!r.fn) { /* nothing to tell of a skipped launch */
    pthread_mutex_unlock(&sim_S.mu);
    return 0;
  }
  if (!f->on_main) {
    pthread_mutex_unlock(&sim_S.mu);
    return r.fn(r.user, op->launch);
  }
  *sim_main_tail = &r;
  sim_main_tail = &r.next;
  sim_progress_locked(); /* the main thread may be waiting */
  while (!r.done) sim_wait_locked();
  pthread_mutex_unlock(&sim_S.mu);
  return r.failed;
}

CUresult sim_cuModuleLoadData(CUmodule *m, const void *image) {
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
    if (r != CUDA_SUCCESS) {
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
                              double mem_bytes, double us) {
  NEED_INIT();
  if (!f || extra) return CUDA_ERROR_INVALID_VALUE;
  if (!gx || !gy || !gz || !bx || !by || !bz) return CUDA_ERROR_INVALID_VALUE;
  if ((unsigned long long)bx * by * bz > 1024 || bz > 64) return CUDA_ERROR_INVALID_VALUE;
  if (shared > 232448) return CUDA_ERROR_INVALID_VALUE;
  if (!st) return CUDA_ERROR_INVALID_HANDLE;
  if ((unsigned long long)bx * by * bz > (unsigned long long)f->max_threads) return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  if (f->mod->ordinal != st->ctx->ordinal) return CUDA_ERROR_INVALID_HANDLE;
  if (!f->host) return CUDA_ERROR_NOT_SUPPORTED; /* no device code runs on sim */
  size_t total = 0;
  for (int i = 0; i < f->nparams; i++) total += (f->sizes[i] + 7) / 8 * 8;
  gld_sim_launch *l = calloc(1, sizeof *l + total);
  if (!l) return CUDA_ERROR_OUT_OF_MEMORY;
  l->grid[0] = gx, l->grid[1] = gy, l->grid[2] = gz;
  l->block[0] = bx, l->block[1] = by, l->block[2] = bz;
  l->shared = shared;
  l->nparams = f->nparams;
  unsigned char *store = (unsigned char *)(l + 1);
  for (int i = 0; i < f->nparams; i++) { /* copied now, as the driver does */
    if (!params || !params[i]) {
      free(l);
      return CUDA_ERROR_INVALID_VALUE;
    }
    memcpy(store, params[i], f->sizes[i]);
    l->params[i] = store;
    store += (f->sizes[i] + 7) / 8 * 8;
  }
  sim_op op = {.kind = OP_KERNEL, .func = f, .launch = l, .launch_bytes = sizeof *l + total,
               .mw = sim_model_launch(mem_bytes, us)};
  CUresult r = sim_enqueue(st, &op);
  if (r != CUDA_SUCCESS) free(l);
  return r;
}

CUresult sim_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                            unsigned bz, unsigned shared, CUstream st, void **params, void **extra) {
  return gld_sim_launch_costed(f, gx, gy, gz, bx, by, bz, shared, st, params, extra, 0, 0);
}

CUresult sim_enqueue_host_call(struct CUfunc_st *f, const void *args, size_t bytes, CUstream st, double mem_bytes) {
  gld_sim_launch *l = calloc(1, sizeof *l + bytes);
  if (!l) return CUDA_ERROR_OUT_OF_MEMORY;
  l->grid[0] = l->grid[1] = l->grid[2] = 1;
  l->block[0] = l->block[1] = l->block[2] = 1;
  l->nparams = 1;
  l->params[0] = l + 1;
  memcpy(l + 1, args, bytes);
  sim_op op = {.kind = OP_KERNEL, .func = f, .launch = l, .launch_bytes = sizeof *l + bytes,
               .mw = sim_model_launch(mem_bytes, 0)};
  CUresult r = sim_enqueue(st, &op);
  if (r != CUDA_SUCCESS) free(l);
  return r;
}

CUresult gld_sim_func_set_host(CUfunction f, gld_sim_kernel_fn fn, gld_sim_kernel_fn skipped, void *user, int on_main,
                              int nparams, const size_t *sizes) {
  if (!f || nparams < 0 || nparams > GL_SIM_MAX_PARAMS) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&sim_S.mu);
  f->host = fn;
  f->skipped = skipped;
  f->user = user;
  f->on_main = on_main;
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
