/*
 * nvrtc.c -- the NVRTC table, loaded at run time with dlopen like the driver:
 * GPULUA_NVRTC, else libnvrtc.so on the loader's path, else the usual CUDA
 * toolkit folders. Nothing links NVRTC; without it gpu.compile says so.
 * With it, the folder of the toolkit's headers its programs may include
 * (cuda_fp16.h, ...): beside the library, else from CUDA_HOME or CUDA_PATH.
 */
#include "nvrtc_table.h"

#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dl_search.h"

gld_nvrtc gld_nv;
static int tried;
static char load_error[1024];

static int try_load(const char *path) {
  void *h = gld_dl_open(path, load_error, sizeof load_error);
  if (!h) return 0;
  gld_nvrtc t;
  memset(&t, 0, sizeof t);
#define NV_GET(ret, name, params) \
  if (!(t.name = (ret(*) params)gld_dl_need(h, path, #name, load_error, sizeof load_error))) return 0;
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
  /* the file the loader found (libnvrtc.so on its path: which one) */
  struct link_map *lm = NULL;
  const char *file = dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && *lm->l_name ? lm->l_name : path;
  snprintf(t.path, sizeof t.path, "%s", file);
  gld_nvrtc_include_dir(file, getenv("CUDA_HOME"), getenv("CUDA_PATH"), t.include, sizeof t.include);
  t.loaded = 1;
  gld_nv = t;
  return 1;
}

/* dir followed by rel, when that is a folder holding cuda_fp16.h or
 * cuda_runtime.h: its real path into out (len bytes), and 1. */
static int headers_in(const char *dir, const char *rel, char *out, size_t len) {
  char p[PATH_MAX], real[PATH_MAX], f[PATH_MAX + 32];
  if (!dir || !*dir || snprintf(p, sizeof p, "%s%s", dir, rel) >= (int)sizeof p || !realpath(p, real)) return 0;
  static const char *const marks[] = {"cuda_fp16.h", "cuda_runtime.h"};
  for (size_t i = 0; i < sizeof marks / sizeof *marks; i++) {
    snprintf(f, sizeof f, "%s/%s", real, marks[i]);
    if (access(f, R_OK) == 0 && strlen(real) < len) {
      memcpy(out, real, strlen(real) + 1);
      return 1;
    }
  }
  return 0;
}

const char *gld_nvrtc_include_dir(const char *lib, const char *cuda_home, const char *cuda_path, char *out,
                                 size_t len) {
  if (len) out[0] = '\0';
  const char *slash = lib ? strrchr(lib, '/') : NULL;
  if (slash && (size_t)(slash - lib) < PATH_MAX) {
    char dir[PATH_MAX];
    memcpy(dir, lib, (size_t)(slash - lib));
    dir[slash - lib] = '\0';
    /* lib64/ or targets/<arch>/lib/ -> ../include; Debian's multiarch
     * /usr/lib/<arch>/ -> /usr/include; pip's nvidia/cuda_nvrtc/lib/ ->
     * nvidia/cuda_runtime/include (CUDA 12's wheels; 13's keep lib/ and
     * include/ side by side under nvidia/cu13) */
    static const char *const beside[] = {"/../include", "/../../include", "/../../cuda_runtime/include"};
    for (size_t i = 0; i < sizeof beside / sizeof *beside; i++)
      if (headers_in(dir, beside[i], out, len)) return "beside NVRTC";
  }
  if (headers_in(cuda_home, "/include", out, len)) return "CUDA_HOME";
  if (headers_in(cuda_path, "/include", out, len)) return "CUDA_PATH";
  return NULL;
}

int gld_nvrtc_arch(int cc, int *exact) {
  *exact = 1;
  int n = 0;
  if (!gld_nv.nvrtcGetNumSupportedArchs_ || !gld_nv.nvrtcGetSupportedArchs_ ||
      gld_nv.nvrtcGetNumSupportedArchs_(&n) != NVRTC_SUCCESS || n <= 0 || n > 256)
    return cc; /* cannot ask: try the device's own */
  int archs[256], best = -1;
  if (gld_nv.nvrtcGetSupportedArchs_(archs) != NVRTC_SUCCESS) return cc;
  for (int i = 0; i < n; i++) {
    if (archs[i] == cc) return cc;
    if (archs[i] < cc && archs[i] > best) best = archs[i];
  }
  *exact = 0;
  return best;
}

const char *gld_nvrtc_load(void) {
  if (gld_nv.loaded) return NULL;
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
