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

gl_cublas gl_blas;
static int tried;
static char load_error[1024];

static int try_load(const char *path, char *why, size_t len) {
  void *h = gl_dl_open(path, why, len);
  if (!h) return 0;
  gl_cublas t;
  memset(&t, 0, sizeof t);
#define BLAS_GET(ret, name, params) \
  if (!(t.name = (ret(*) params)gl_dl_need(h, path, #name, why, len))) return 0;
  GL_CUBLAS_CALLS(BLAS_GET)
#undef BLAS_GET
  snprintf(t.path, sizeof t.path, "%s", path);
  t.loaded = 1;
  gl_blas = t;
  return 1;
}

const char *gl_cublas_load(void) {
  if (gl_blas.loaded) return NULL;
  if (gl_drv_ext.cublas_table) { /* the backend's own */
    gl_drv_ext.cublas_table(&gl_blas);
    gl_blas.loaded = 1;
    return NULL;
  }
  if (tried) return load_error;
  tried = 1;
  static const char *const paths[] = {
    "libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.13", "/usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.13",
    "libcublas.so.12", "/usr/local/cuda/lib64/libcublas.so.12", "/usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.12",
  };
  return gl_dl_search("cuBLAS", "GPULUA_CUBLAS", paths, sizeof paths / sizeof *paths,
                      "libcublas.so.13, then libcublas.so.12, on the loader's path and in /usr/local/cuda", try_load, load_error,
                      sizeof load_error);
}
