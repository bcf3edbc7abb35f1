/*
 * cublas.c -- the cuBLAS table (cublas_table.h), loaded at run time with
 * dlopen like the driver and NVRTC: nothing links cuBLAS, and the binary
 * starts without it; the first s:gemm that needs it says why it is missing.
 */
#include "cublas_table.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "dl_search.h"
#include "driver_ext.h"

gld_cublas gld_blas;
static int tried;
static char load_error[1024];

static int try_load(const char *path, char *why, size_t len) {
  void *h = gld_dl_open(path, why, len);
  if (!h) return 0;
  gld_cublas t;
  memset(&t, 0, sizeof t);
#define BLAS_GET(ret, name, params) \
  if (!(t.name = (ret(*) params)gld_dl_need(h, path, #name, why, len))) return 0;
  GL_CUBLAS_CALLS(BLAS_GET)
#undef BLAS_GET
  snprintf(t.path, sizeof t.path, "%s", path);
  t.loaded = 1;
  gld_blas = t;
  return 1;
}

const char *gld_cublas_load(void) {
  if (gld_blas.loaded) return NULL;
  if (gld_drv_ext.cublas_table) { /* the backend's own */
    gld_drv_ext.cublas_table(&gld_blas);
    gld_blas.loaded = 1;
    return NULL;
  }
  if (tried) return load_error;
  tried = 1;
  static const char *const paths[] = {
    "libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.13", "/usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.13",
    "libcublas.so.12", "/usr/local/cuda/lib64/libcublas.so.12", "/usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.12",
  };
  return gld_dl_search("cuBLAS", "GPULUA_CUBLAS", paths, sizeof paths / sizeof *paths,
                      "libcublas.so.13, then libcublas.so.12, on the loader's path and in /usr/local/cuda", try_load, load_error,
                      sizeof load_error);
}
