/*
 * bench/baselines/raw_common.h -- what the raw-driver benchmarks share (raw.c,
 * launch_pairs.c): the driver table they call through, a check of each call
 * that names it and exits, a monotonic clock, the median of a sample, and
 * NVRTC compiling a source for sm_90 into a loaded module (the empty kernels
 * of the launch benchmarks among them).
 * Each program defines RAW_NAME (its name in messages) before including it.
 */
#ifndef GPULUA_BENCH_RAW_COMMON_H
#define GPULUA_BENCH_RAW_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver.h"
#include "nvrtc_table.h"

static gld_driver d;

#define CK(call)                                                                   \
  do {                                                                             \
    CUresult r_ = d.call;                                                          \
    if (r_ != CUDA_SUCCESS) {                                                      \
      const char *n_ = "?";                                                        \
      d.cuGetErrorName(r_, &n_);                                                   \
      fprintf(stderr, RAW_NAME ": %s failed: %s (line %d)\n", #call, n_, __LINE__); \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

static inline double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* the median of v[0..n) (at most 64 values; v is left as it was) */
static double median(const double *v, int n) {
  double s[64];
  if (n > 64) n = 64;
  memcpy(s, v, (size_t)n * sizeof *v);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

/* The driver and NVRTC loaded (exits saying why not), device 0's primary
 * context (the one gpulua uses) retained and made current: returned, with
 * the device in *dev. */
static inline CUcontext raw_open(CUdevice *dev) {
  char why[512];
  if (gld_driver_cuda_load(&d, why, sizeof why) != 0) {
    fprintf(stderr, RAW_NAME ": %s (this benchmark needs a GPU)\n", why);
    exit(1);
  }
  const char *nv = gld_nvrtc_load();
  if (nv) {
    fprintf(stderr, RAW_NAME ": %s\n", nv);
    exit(1);
  }
  CUcontext ctx;
  CK(cuDeviceGet(dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, *dev));
  CK(cuCtxSetCurrent(ctx));
  return ctx;
}

/* the CUBIN of src, compiled with one more option (or none: NULL), loaded
 * (exits on any failure, with NVRTC's log) */
static inline CUmodule compile_opt(const char *src, const char *name, const char *opt) {
  const char *opts[] = {"-arch=sm_90", opt};
  nvrtcProgram p;
  if (gld_nv.nvrtcCreateProgram(&p, src, name, 0, NULL, NULL) != NVRTC_SUCCESS ||
      gld_nv.nvrtcCompileProgram(p, opt ? 2 : 1, opts) != NVRTC_SUCCESS) {
    size_t n = 0;
    gld_nv.nvrtcGetProgramLogSize(p, &n);
    char *log = malloc(n + 1);
    gld_nv.nvrtcGetProgramLog(p, log);
    fprintf(stderr, RAW_NAME ": compile %s failed:\n%s\n", name, log);
    exit(1);
  }
  size_t n;
  gld_nv.nvrtcGetCUBINSize_(p, &n);
  char *img = malloc(n);
  gld_nv.nvrtcGetCUBIN_(p, img);
  gld_nv.nvrtcDestroyProgram(&p);
  CUmodule m;
  CK(cuModuleLoadData(&m, img));
  free(img);
  return m;
}

static inline CUmodule compile(const char *src, const char *name) { return compile_opt(src, name, NULL); }

static const char empty_src[] =
  "extern \"C\" __global__ void empty1(float *a) {}\n"
  "extern \"C\" __global__ void empty8(float *a, float *b, float *c, float *d, float *e, float *f,"
  " float *g, float *h) {}\n";

#endif
