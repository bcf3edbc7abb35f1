/*
 * nvrtc.c -- the NVRTC table, loaded at run time with dlopen like the driver:
 * GPULUA_NVRTC, else libnvrtc.so on the loader's path, else the usual CUDA
 * toolkit folders. Nothing links NVRTC; without it gpu.compile says so.
 */
#include "nvrtc_table.h"

#include <dlfcn.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

gl_nvrtc gl_nv;
static int tried;
static char load_error[1024];

static int try_load(const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(load_error, sizeof load_error, "%s", dlerror());
    return 0;
  }
  gl_nvrtc t;
  memset(&t, 0, sizeof t);
#define NV_GET(ret, name, params)                                              \
  if (!(t.name = (ret(*) params)dlsym(h, #name))) {                            \
    snprintf(load_error, sizeof load_error, "%s lacks %s", path, #name);      \
    dlclose(h);                                                                \
    return 0;                                                                  \
  }
  GL_NVRTC_CALLS(NV_GET)
#undef NV_GET
#define NV_GET_OPTIONAL(ret, name, params) t.name##_ = (ret(*) params)dlsym(h, #name);
  GL_NVRTC_OPTIONAL_CALLS(NV_GET_OPTIONAL)
#undef NV_GET_OPTIONAL
  if (t.nvrtcVersion(&t.major, &t.minor) != NVRTC_SUCCESS) {
    snprintf(load_error, sizeof load_error, "%s: nvrtcVersion failed", path);
    dlclose(h);
    return 0;
  }
  snprintf(t.path, sizeof t.path, "%s", path);
  t.loaded = 1;
  gl_nv = t;
  return 1;
}

int gl_nvrtc_arch(int cc, int *exact) {
  *exact = 1;
  int n = 0;
  if (!gl_nv.nvrtcGetNumSupportedArchs_ || !gl_nv.nvrtcGetSupportedArchs_ ||
      gl_nv.nvrtcGetNumSupportedArchs_(&n) != NVRTC_SUCCESS || n <= 0 || n > 256)
    return cc; /* cannot ask: try the device's own */
  int archs[256], best = -1;
  if (gl_nv.nvrtcGetSupportedArchs_(archs) != NVRTC_SUCCESS) return cc;
  for (int i = 0; i < n; i++) {
    if (archs[i] == cc) return cc;
    if (archs[i] < cc && archs[i] > best) best = archs[i];
  }
  *exact = 0;
  return best;
}

const char *gl_nvrtc_load(void) {
  if (gl_nv.loaded) return NULL;
  if (tried) return load_error;
  tried = 1;
  const char *env = getenv("GPULUA_NVRTC");
  if (env && *env) {
    if (try_load(env)) return NULL;
    char e[sizeof load_error];
    memcpy(e, load_error, sizeof e);
    snprintf(load_error, sizeof load_error, "GPULUA_NVRTC=%.200s could not be loaded: %.700s", env, e);
    return load_error;
  }
  if (try_load("libnvrtc.so") || try_load("libnvrtc.so.13") || try_load("libnvrtc.so.12")) return NULL;
  static const char *const patterns[] = {
    "/usr/local/cuda/lib64/libnvrtc.so*", "/usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so*",
    "/usr/local/cuda-*/lib64/libnvrtc.so*", "/opt/cuda/lib64/libnvrtc.so*",
    "/usr/lib/x86_64-linux-gnu/libnvrtc.so*"};
  for (size_t i = 0; i < sizeof patterns / sizeof patterns[0]; i++) {
    glob_t g;
    if (glob(patterns[i], 0, NULL, &g) == 0) {
      for (size_t j = 0; j < g.gl_pathc; j++) {
        const char *p = g.gl_pathv[j];
        if (strstr(p, "builtins") || strstr(p, ".alt.")) continue;
        if (try_load(p)) {
          globfree(&g);
          return NULL;
        }
      }
      globfree(&g);
    }
  }
  snprintf(load_error, sizeof load_error,
           "NVRTC is not installed (no libnvrtc.so on the loader's path or in /usr/local/cuda/lib64; "
           "set GPULUA_NVRTC to its path)");
  return load_error;
}
