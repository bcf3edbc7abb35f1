/*
 * compile.c -- NVRTC through the kernel cache (see compile.h).
 */
#include "compile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "driver_ext.h"
#include "kcache.h"
#include "nvrtc_table.h"
#include "runtime.h"

/* CUBIN for the device's own architecture where this NVRTC knows it; PTX
 * for the newest architecture it knows below the device's (the driver
 * compiles it on load) where NVRTC is older than the device; always PTX on
 * a backend that reads only PTX (the sim). -1 when NVRTC knows none. */
static int arch_of(gl_device *d, char *opt, size_t len, char *arch, size_t alen, int *cubin) {
  int cc = d->cc_major * 10 + d->cc_minor, exact;
  int target = gld_nvrtc_arch(cc, &exact);
  if (target < 0) return -1;
  *cubin = exact && !gld_drv_ext.ptx_only && gld_nv.nvrtcGetCUBIN_ != NULL;
  snprintf(arch, alen, "%s_%d", *cubin ? "sm" : "compute", target);
  snprintf(opt, len, "-arch=%s", arch);
  return 0;
}

/* NVRTC's output for an already compiled program. */
static int read_output(gl_runtime *rt, const char *what, const char *name, nvrtcProgram prog, int cubin,
                       void **image, size_t *len) {
  size_t n = 0;
  nvrtcResult r = cubin ? gld_nv.nvrtcGetCUBINSize_(prog, &n) : gld_nv.nvrtcGetPTXSize(prog, &n);
  char *img = r == NVRTC_SUCCESS ? malloc(n + 1) : NULL;
  if (img) {
    r = cubin ? gld_nv.nvrtcGetCUBIN_(prog, img) : gld_nv.nvrtcGetPTX(prog, img);
    img[n] = '\0';
  }
  if (!img || r != NVRTC_SUCCESS) {
    free(img);
    return gl_fail(rt, "%s: %s: could not read NVRTC's output", what, name);
  }
  *image = img;
  *len = n;
  return 0;
}

/* A note for a log that says an #include was not found ("could not open
 * source file", "cannot open source file"), when gpulua found no toolkit
 * headers to offer NVRTC. */
static const char *missing_headers_hint(const char *log) {
  static _Thread_local char hint[sizeof gld_nv.path + 256];
  if (gld_nv.include[0] || !strstr(log, "open source file")) return "";
  snprintf(hint, sizeof hint,
           "(no CUDA headers were found beside NVRTC (%s), in $CUDA_HOME/include or in $CUDA_PATH/include: "
           "give their folder with the option -I<folder>)\n",
           gld_nv.path);
  return hint;
}

int gl_compile(gl_device *dev, const char *what, const char *name, const char *src, size_t srclen,
               const char *const *user_opts, int nopts, void **image, size_t *image_len) {
  gl_runtime *rt = dev->rt;
  const char *why = gld_nvrtc_load();
  if (why) return gl_fail(rt, "%s: %s: cannot compile: %s", what, name, why);
  if (nopts > GL_COMPILE_MAX_OPTIONS) return gl_fail(rt, "%s: %s: at most %d options", what, name, GL_COMPILE_MAX_OPTIONS);
  const char *opts[GL_COMPILE_MAX_OPTIONS + 3];
  for (int i = 0; i < nopts; i++) opts[i] = user_opts[i];
  /* the toolkit's headers, after the user's options: a folder the user
   * names with -I is searched first. As an option, the folder's path is
   * part of the cache key; its headers' contents are not (they come with
   * the toolkit, whose NVRTC version is in the key). */
  char include_opt[sizeof gld_nv.include + 2];
  if (gld_nv.include[0]) {
    snprintf(include_opt, sizeof include_opt, "-I%s", gld_nv.include);
    opts[nopts++] = include_opt;
  }
  char arch_opt[48], arch[32];
  int want_cubin;
  if (arch_of(dev, arch_opt, sizeof arch_opt, arch, sizeof arch, &want_cubin) != 0)
    return gl_fail(rt, "%s: %s: NVRTC %d.%d supports no architecture at or below the device's sm_%d", what, name,
                   gld_nv.major, gld_nv.minor, dev->cc_major * 10 + dev->cc_minor);
  opts[nopts++] = arch_opt;
  if (gld_drv_ext.ptx_only && (!gld_drv_ext.host_only || gld_drv_ext.builtins_ptx))
    opts[nopts++] = "-lineinfo"; /* a backend running the PTX names its lines */
  char version[32];
  snprintf(version, sizeof version, "nvrtc %d.%d", gld_nv.major, gld_nv.minor);
  int kind = want_cubin ? GL_KCACHE_CUBIN : GL_KCACHE_PTX;
  gl_kcache_key key = gl_kcache_make_key(src, srclen, opts, nopts, arch, version, kind);
  int got_kind;
  void *img = gl_kcache_get(&key, image_len, &got_kind);
  if (img && got_kind == kind) {
    *image = img;
    return 0;
  }
  free(img);

  char *copy = malloc(srclen + 1); /* NVRTC wants a NUL-terminated source */
  if (!copy) return gl_fail_nomem(rt, what);
  memcpy(copy, src, srclen);
  copy[srclen] = '\0';
  nvrtcProgram prog;
  nvrtcResult r = gld_nv.nvrtcCreateProgram(&prog, copy, name, 0, NULL, NULL);
  free(copy);
  if (r != NVRTC_SUCCESS)
    return gl_fail(rt, "%s: %s: nvrtcCreateProgram failed: %s", what, name, gld_nv.nvrtcGetErrorString(r));
  r = gld_nv.nvrtcCompileProgram(prog, nopts, opts);
  if (r != NVRTC_SUCCESS) {
    size_t loglen = 0;
    gld_nv.nvrtcGetProgramLogSize(prog, &loglen);
    char *log = malloc(loglen + 1);
    if (log) {
      log[0] = '\0';
      if (loglen) gld_nv.nvrtcGetProgramLog(prog, log);
      log[loglen] = '\0';
    }
    gl_fail(rt, "%s: %s: compilation failed (%s, %s):\n%s%s", what, name, gld_nv.nvrtcGetErrorString(r), arch_opt,
            log ? log : "(no log)", log ? missing_headers_hint(log) : "");
    free(log);
    gld_nv.nvrtcDestroyProgram(&prog);
    return -1;
  }
  int rc = read_output(rt, what, name, prog, want_cubin, image, image_len);
  gld_nv.nvrtcDestroyProgram(&prog);
  if (rc == 0) gl_kcache_put(&key, *image, *image_len, kind);
  return rc;
}
