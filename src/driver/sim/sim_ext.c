/*
 * sim_ext.c -- the sim's extension table (driver_ext.h): what the upper
 * layer may ask of the sim beyond the CUDA-shaped driver table; and the
 * sim's setup before its load (driver.h: its environment, its timing model).
 */
#include "driver.h"
#include "sim_builtins.h"
#include "sim_internal.h"
#include "cublas_table.h"
#include "nccl_table.h"

#include <stdlib.h>
#include <string.h>

int gld_driver_sim_check(char *why, size_t whylen) { return gld_sim_config_error(why, whylen); }

int gld_driver_sim_model(const char *path, int use, char *why, size_t whylen) {
  gld_sim_model m;
  if (path && gld_sim_model_read(path, &m, why, whylen) != 0) return -1;
  if (use) gld_sim_model_use(path ? &m : NULL);
  return 0;
}

static CUresult func_set_builtin(CUfunction f, const char *kernel, const char *dtype, int nparams,
                                 const size_t *sizes) {
  gld_sim_kernel_fn fn = sim_builtin_host(kernel, dtype);
  if (!fn) return CUDA_ERROR_NOT_FOUND;
  f->builtin = 1; /* keeps its C implementation, but under GPULUA_SIM_BUILTINS=ptx */
  return gld_sim_func_set_host(f, fn, NULL, NULL, 0, nparams, sizes, NULL);
}

void gld_driver_sim_load_ext(gld_driver_ext *x) {
  memset(x, 0, sizeof *x);
  /* kernels run their PTX (GPULUA_SIM_KERNELS=ptx, the default; checked
   * before this); under host no device code runs: kernels run their host
   * implementations */
  const char *kernels = getenv("GPULUA_SIM_KERNELS");
  x->host_only = kernels && strcmp(kernels, "host") == 0;
  /* the built-ins run their PTX (GPULUA_SIM_BUILTINS=ptx, whatever
   * GPULUA_SIM_KERNELS says), so they are compiled for real */
  const char *builtins = getenv("GPULUA_SIM_BUILTINS");
  if (builtins && sim_parse_builtins(builtins) == 1) x->builtins_ptx = "GPULUA_SIM_BUILTINS=ptx";
  x->fault_detail = gld_sim_fault_detail;
  x->load_error = gld_sim_load_error;
  x->load_builtins = gld_sim_load_builtins;
  x->ptx_only = 1;           /* sim_module.c reads PTX alone */
  x->host_alloc_zeroed = 1;  /* sim_memory.c: fresh pages */
  x->query_yields = 1;       /* sim_stream.c: a query serves the main thread's host kernels */
  x->blas_workspace = (size_t)64 << 10; /* the sim's cuBLAS uses none; a sim device's memory is small */
  x->quiet = gld_sim_quiet;
  x->func_set_host = gld_sim_func_set_host;
  x->set_main_thread = gld_sim_set_main_thread;
  x->host_wait = sim_host_wait;
  x->func_set_builtin = func_set_builtin;
  x->host_memory = gld_sim_host_memory;
  x->cublas_table = gld_cublas_sim_table;
  x->nccl_table = gld_nccl_sim_table;
  x->launch_costed = gld_sim_launch_costed; /* a fault names the launch (its tag) */
  if (gld_sim_model_active()) {
    x->model_name = gld_sim_model_name;
    x->model_event_time = gld_sim_model_event_time;
    x->model_host_time = gld_sim_model_host_time;
  }
}
