/*
 * driver_cuda.c -- the cuda backend: fill the driver table from the real
 * driver, loaded at run time with dlopen("libcuda.so.1"). Nothing links it,
 * so the binary starts on machines without a GPU.
 *
 * Each entry is looked up with cuGetProcAddress at the version driver.h
 * gives it, which yields the symbol whose parameters driver.h declares
 * (cuStreamDestroy at 4000 -> cuStreamDestroy_v2, cuCtxSynchronize at 2000 ->
 * the one without a context).
 * GPULUA_LIBCUDA names another library file to load (e.g. the toolkit's stub,
 * to test the no-GPU path).
 */

#include "driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *err_name(const gld_driver *d, CUresult r) {
  const char *s = NULL;
  if (d->cuGetErrorName && d->cuGetErrorName(r, &s) == CUDA_SUCCESS && s) return s;
  switch (r) { /* a stub library cannot name its own errors */
  case CUDA_ERROR_STUB_LIBRARY: return "CUDA_ERROR_STUB_LIBRARY (the CUDA driver is a stub library)";
  case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
  case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
  default: {
    static _Thread_local char buf[32];
    snprintf(buf, sizeof buf, "CUresult %d", (int)r);
    return buf;
  }
  }
}

int gld_driver_cuda_load(gld_driver *d, char *why, size_t whylen) {
  memset(d, 0, sizeof *d);
  const char *lib = getenv("GPULUA_LIBCUDA");
  if (!lib || !*lib) lib = "libcuda.so.1";
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(why, whylen, "the CUDA driver (%s) could not be loaded: %s", lib, dlerror());
    return -1;
  }
  gld_cuGetProcAddress_fn get_proc = (gld_cuGetProcAddress_fn)dlsym(h, "cuGetProcAddress_v2");
  if (!get_proc) {
    snprintf(why, whylen, "the CUDA driver (%s) is older than CUDA 12 (no cuGetProcAddress_v2)", lib);
    dlclose(h);
    return -1;
  }
  /* cuInit first, straight from the library: a stub libcuda (the toolkit's,
   * on machines without a driver) answers CUDA_ERROR_STUB_LIBRARY here. */
  CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(h, "cuInit");
  d->cuGetErrorName = (CUresult(*)(CUresult, const char **))dlsym(h, "cuGetErrorName");
  CUresult r = init ? init(0) : CUDA_ERROR_NOT_FOUND;
  if (r != CUDA_SUCCESS) {
    snprintf(why, whylen, "cuInit failed: %s", init ? err_name(d, r) : "no cuInit symbol");
    dlclose(h);
    memset(d, 0, sizeof *d);
    return -1;
  }
  CUdriverProcAddressQueryResult status;
#define CUDA_GET(name, version, params)                                                                    \
  if (get_proc(#name, (void **)&d->name, version, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS || \
      !d->name) {                                                                                          \
    snprintf(why, whylen, "the CUDA driver (%s) lacks %s of CUDA %d.%d", lib, #name, (version) / 1000,     \
             (version) % 1000 / 10);                                                                       \
    dlclose(h);                                                                                            \
    return -1;                                                                                             \
  }
  GL_DRIVER_CALLS(CUDA_GET)
#undef CUDA_GET
#define CUDA_GET_OPTIONAL(name, version, params)                                                         \
  if (get_proc(#name, (void **)&d->name, version, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS) \
    d->name = NULL;
  GL_DRIVER_OPTIONAL_CALLS(CUDA_GET_OPTIONAL)
#undef CUDA_GET_OPTIONAL

  int n = 0;
  r = d->cuDeviceGetCount(&n);
  if (r != CUDA_SUCCESS || n == 0) {
    snprintf(why, whylen, "the CUDA driver reports no device (%s)",
             r == CUDA_SUCCESS ? "count 0" : err_name(d, r));
    dlclose(h);
    memset(d, 0, sizeof *d);
    return -1;
  }
  return 0; /* the library stays loaded for the life of the process */
}
