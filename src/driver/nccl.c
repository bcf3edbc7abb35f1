/*
 * nccl.c -- the NCCL table (nccl_table.h), loaded at run time with dlopen:
 * nothing links NCCL, the binary starts without it, and the first gpu.comm
 * that needs it says why it is missing.
 */
#include "nccl_table.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "dl_search.h"
#include "driver_ext.h"

gld_nccl gld_nc;
static int tried;
static char load_error[1024];

static int try_load(const char *path, char *why, size_t len) {
  void *h = gld_dl_open(path, why, len);
  if (!h) return 0;
  gld_nccl t;
  memset(&t, 0, sizeof t);
#define NC_GET(ret, name, params) \
  if (!(t.name = (ret(*) params)gld_dl_need(h, path, #name, why, len))) return 0;
  GL_NCCL_CALLS(NC_GET)
#undef NC_GET
  if (t.ncclGetVersion(&t.version) != GL_NCCL_SUCCESS) t.version = 0;
  snprintf(t.path, sizeof t.path, "%s", path);
  t.loaded = 1;
  gld_nc = t;
  return 1;
}

const char *gld_nccl_load(void) {
  if (gld_nc.loaded) return NULL;
  if (gld_drv_ext.nccl_table) { /* the backend's own */
    gld_drv_ext.nccl_table(&gld_nc);
    gld_nc.loaded = 1;
    return NULL;
  }
  if (tried) return load_error;
  tried = 1;
  static const char *const paths[] = {"libnccl.so.2", "/usr/local/cuda/lib64/libnccl.so.2",
                                      "/usr/local/cuda/targets/x86_64-linux/lib/libnccl.so.2",
                                      "/usr/lib/x86_64-linux-gnu/libnccl.so.2"};
  return gld_dl_search("NCCL", "GPULUA_NCCL", paths, sizeof paths / sizeof *paths,
                      "libnccl.so.2, on the loader's path and in /usr/local/cuda", try_load, load_error,
                      sizeof load_error);
}
