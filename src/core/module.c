/*
 * module.c -- modules, kernels and the built-ins of each device (see
 * module.h).
 */
#include "module.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "device.h"
#include "memory.h"
#include "nvrtc_table.h"
#include "retire.h"
#include "runtime.h"
#include "driver_ext.h"

int gl_module_load(gl_device *dev, const void *image, size_t len, const char *what, const char *name,
                   gl_module **out) {
  gl_runtime *rt = dev->rt;
  gl_retire_reap(rt, 0);
  gl_module *m = calloc(1, sizeof *m);
  char *copy = strdup(name);
  if (!m || !copy) {
    free(m);
    free(copy);
    return gl_fail_nomem(rt, what);
  }
  gl_set_ctx(dev);
  CUresult r = gld_drv.cuModuleLoadData(&m->mod, image);
  if (r != CUDA_SUCCESS) {
    free(m);
    free(copy);
    const char *why = gld_drv_ext.load_error ? gld_drv_ext.load_error() : "";
    return gl_fail_code(rt, r, "%s: %s: the driver refused the module: %s%s%s", what, name, gld_error_name(r),
                        why[0] ? ": " : "", why);
  }
  const unsigned char *p = image;
  m->binary = len >= 4 && ((p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F') ||     /* CUBIN: ELF */
                           (p[0] == 0x50 && p[1] == 0xed && p[2] == 0x55 && p[3] == 0xba)); /* fatbin */
  m->consts = gl_module_const_names(image, len); /* NULL (not known, out of memory): each variable a write */
  m->refs = 1;
  m->dev = dev;
  m->name = copy;
  *out = m;
  return 0;
}

void gl_module_ref(gl_module *m) { m->refs++; }

static void unload(void *obj) {
  gl_module *m = obj;
  if (m->dev->opened) {
    gl_set_ctx(m->dev);
    gld_drv.cuModuleUnload(m->mod);
  }
  gl_access_clear(&m->uses);
  while (m->vars) { /* no handle is left on them: each held a reference */
    gl_alloc *a = m->vars;
    m->vars = a->next_var;
    gl_access_clear(&a->acc);
    free(a->var);
    free(a->var_what);
    free(a);
  }
  free(m->consts);
  free(m->name);
  free(m);
}

/* What the module's unload still waits for: its launches, or the accesses
 * to a variable's memory (copies, fills); NULL for nothing. ask: ask the
 * driver, else go by what the host knows. */
static gl_accesses *pending(gl_module *m, int ask) {
  if (!(ask ? gl_access_finished(&m->uses) : gl_access_known_finished(&m->uses))) return &m->uses;
  for (gl_alloc *a = m->vars; a; a = a->next_var)
    if (!(ask ? gl_access_finished(&a->acc) : gl_access_known_finished(&a->acc))) return &a->acc;
  return NULL;
}

/* On the retire list, one fence at a time. */
static void unload_when_done(void *obj) {
  gl_module *m = obj;
  gl_accesses *f = m->dev->opened ? pending(m, 1) : NULL;
  if (!f) unload(m);
  else gl_retire(m->dev->rt, &m->retire, m, f, unload_when_done);
}

/* The last reference often goes in a finalizer: what the host knows
 * decides, without asking the driver (which on sim would run queued host
 * kernels from inside the finalizer). */
void gl_module_unref(gl_module *m) {
  if (!m || --m->refs > 0) return;
  gl_accesses *f = m->dev->opened ? pending(m, 0) : NULL;
  if (!f) {
    unload(m);
    return;
  }
  gl_retire(m->dev->rt, &m->retire, m, f, unload_when_done); /* work is queued: unload once it finishes */
}

int gl_module_global(gl_module *m, const char *name, gl_dtype dt, const char *call, gl_site *site, gl_slice *x) {
  gl_runtime *rt = m->dev->rt;
  if (gl_device_check(m->dev) != 0) return -1;
  size_t es = gl_dtypes[dt].size;
  gl_alloc *a = m->vars;
  while (a && strcmp(a->var, name) != 0) a = a->next_var;
  if (!a) {
    CUdeviceptr p = 0;
    size_t bytes = 0;
    gl_set_ctx(m->dev);
    CUresult r = gld_drv.cuModuleGetGlobal(&p, &bytes, m->mod, name);
    if (r == CUDA_ERROR_NOT_FOUND || r == CUDA_ERROR_INVALID_VALUE) /* the driver's word for a kernel's name */
      return gl_fail(rt, "%s: module '%s' has no variable named '%s' (a __device__ or __constant__ variable; one "
                         "declared in a namespace has a mangled name)", call, m->name, name);
    if (r != CUDA_SUCCESS) return gl_fail_cu(rt, m->dev, r, "cuModuleGetGlobal", site);
    if (bytes % es != 0)
      return gl_fail(rt, "%s: variable '%s' of module '%s' is %zu bytes, not a whole number of %s (%zu bytes each)",
                     call, name, m->name, bytes, gl_dtypes[dt].name, es);
    gl_buf what = GL_BUF_INIT;
    gl_buf_printf(&what, "variable '%s' of module '%s'", name, m->name);
    a = calloc(1, sizeof *a);
    if (!a || !(a->var = strdup(name)) || !(a->var_what = strdup(gl_buf_str(&what)))) {
      if (a) free(a->var);
      free(a);
      gl_buf_free(&what);
      return gl_fail_nomem(rt, call);
    }
    gl_buf_free(&what);
    for (const char *c = m->consts; c && *c; c += strlen(c) + 1) a->var_const |= strcmp(c, name) == 0;
    a->dev = m->dev;
    a->ptr = p;
    a->bytes = bytes;
    a->freed_at = GL_LOC_NONE;
    a->owner = m;
    a->next_var = m->vars;
    m->vars = a;
  } else if (a->bytes % es != 0) {
    return gl_fail(rt, "%s: variable '%s' of module '%s' is %zu bytes, not a whole number of %s (%zu bytes each)",
                   call, name, m->name, a->bytes, gl_dtypes[dt].name, es);
  }
  a->refs++;
  a->live++;
  gl_module_ref(m);
  memset(x, 0, sizeof *x);
  x->a = a;
  x->count = a->bytes / es;
  x->dtype = dt;
  x->hi = a->bytes;
  x->released_at = GL_LOC_NONE;
  return 0;
}

/* The kernel's parameters as the driver reports them, against the
 * signature. */
static int check_param_info(gl_kernel *k) {
  if (!gld_drv.cuFuncGetParamInfo) return 0;
  gl_runtime *rt = k->dev->rt;
  size_t off, size;
  int n = 0;
  for (;; n++) {
    CUresult r = gld_drv.cuFuncGetParamInfo(k->f, (size_t)n, &off, &size);
    if (r == CUDA_ERROR_NOT_SUPPORTED) return 0; /* the driver cannot tell for this image */
    if (r != CUDA_SUCCESS) break;
    if (n >= k->sig.n && n < k->sig.n + k->nhidden && size != 8)
      return gl_fail(rt, "kernel '%s': parameter %d is gpulua's own (a pointer, 8 bytes), but the compiled kernel's "
                         "takes %d bytes", k->name, n + 1, (int)size);
    if (n < k->sig.n && size != gl_param_size(&k->sig.p[n])) {
      char s[GL_SIGNATURE_TEXT_MAX];
      gl_signature_format(&k->sig, s, sizeof s);
      const gl_param *p = &k->sig.p[n];
      return gl_fail(rt, "kernel '%s': parameter %d is declared %s (%d bytes) in '%s', but the compiled kernel's "
                         "parameter %d takes %d bytes",
                     k->name, n + 1, p->is_ptr ? "a pointer" : gl_dtypes[p->dtype].name, (int)gl_param_size(p), s,
                     n + 1, (int)size);
    }
  }
  if (n != k->sig.n + k->nhidden)
    return gl_fail(rt, "kernel '%s': the signature declares %d parameter%s%s, but the compiled kernel takes %d",
                   k->name, k->sig.n, k->sig.n == 1 ? "" : "s", k->nhidden ? " (and gpulua's 2)" : "", n);
  return 0;
}

/* The most threads a block of this function may have: fewer than the
 * device's when its registers or __launch_bounds__ say so. */
static void read_max_threads(gl_kernel *k) {
  int v = 0;
  if (gld_drv.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k->f) != CUDA_SUCCESS) v = 0;
  k->max_threads = v;
  if (gld_drv.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, k->f) != CUDA_SUCCESS) v = 0;
  k->regs = v;
}

static gl_kernel *kernel_alloc(gl_module *m, const char *name) {
  gl_kernel *k = calloc(1, sizeof *k);
  if (!k) return NULL;
  k->refs = 1;
  k->m = m;
  gl_module_ref(m);
  k->dev = m->dev;
  snprintf(k->name, sizeof k->name, "%s", name);
  k->name_id = gl_intern(m->dev->rt, k->name);
  for (int i = 0; i <= GL_MAX_PARAMS; i++) k->params[i] = &k->argbuf[i * 8];
  return k;
}

void gl_kernel_unref(gl_kernel *k) {
  if (!k || --k->refs > 0) return;
  gl_module_unref(k->m);
  free(k);
}

int gl_kernel_new(gl_module *m, const char *name, const gl_signature *sig, gl_kernel **out, const char *call,
                  gl_site *site) {
  gl_runtime *rt = m->dev->rt;
  if (gl_device_check(m->dev) != 0) return -1;
  gl_kernel *k = kernel_alloc(m, name);
  if (!k) return gl_fail_nomem(rt, call);
  k->sig = *sig;
  gl_set_ctx(m->dev);
  CUresult r = gld_drv.cuModuleGetFunction(&k->f, m->mod, name);
  int rc = 0;
  if (r == CUDA_ERROR_NOT_FOUND)
    rc = gl_fail(rt, "%s: module '%s' has no kernel named '%s' (declare it extern \"C\" __global__)", call, m->name,
                 name);
  else if (r != CUDA_SUCCESS)
    rc = gl_fail_cu(rt, m->dev, r, "cuModuleGetFunction", site);
  if (rc == 0) {
    read_max_threads(k);
    rc = check_param_info(k);
  }
  if (rc != 0) {
    gl_kernel_unref(k);
    return -1;
  }
  *out = k;
  return 0;
}

/* ---- built-ins ---------------------------------------------------------- */

/* The built-ins are compiled for real, from kernels/builtins.cu; on sim
 * without NVRTC a stand-in PTX names their entries (sim runs their host
 * implementations anyway), unless the sim is to run their PTX. */
static int stand_in(void) {
  return gld_drv_ext.ptx_only && gld_drv_ext.func_set_builtin && !gld_drv_ext.builtins_ptx && gld_nvrtc_load() != NULL;
}

/* The module of dt's built-ins for dev: kernels/builtins.cu compiled with
 * the option that instantiates dt's kernels alone (one program per dtype: a
 * dtype's first launch compiles a tenth of the library), or the stand-in. */
static int builtin_module(gl_device *dev, gl_dtype dt) {
  if (dev->builtins[dt]) return 0;
  gl_runtime *rt = dev->rt;
  const char *dtn = gl_dtypes[dt].name;
  void *img = NULL;
  if (stand_in()) {
    gl_buf ptx = GL_BUF_INIT;
    gl_buf_printf(&ptx, ".version 8.0\n.target sm_90\n.address_size 64\n// sim stand-in for builtins\n");
    for (int i = 0; i < gl_nbuiltins; i++) gl_buf_printf(&ptx, ".entry %s_%s()\n", gl_builtins[i].name, dtn);
    if (ptx.failed) {
      gl_buf_free(&ptx);
      return gl_fail_nomem(rt, rt->names.builtins);
    }
    img = ptx.s; /* the buffer's memory becomes the image */
  } else {
    const char *why = gld_drv_ext.builtins_ptx ? gld_nvrtc_load() : NULL;
    if (why)
      return gl_fail(rt, "%s: %s runs the built-ins' CUDA source, kernels/builtins.cu, which needs NVRTC: %s",
                     rt->names.builtins, gld_drv_ext.builtins_ptx, why);
    const char *src = gl_builtins_cuda_source(), *opt = gl_builtins_cuda_option(dt);
    char what[64];
    snprintf(what, sizeof what, "gpulua/kernels/builtins.cu (%s)", dtn);
    size_t n;
    if (gl_compile(dev, rt->names.builtins, what, src, strlen(src), &opt, 1, &img, &n) != 0) return -1;
  }
  char name[64];
  snprintf(name, sizeof name, "gpulua built-in kernels for %s (device %d)", dtn, dev->ordinal);
  gl_set_ctx(dev);
  CUmodule mod;
  /* a backend with implementations of its own loads them as such */
  CUresult r = gld_drv_ext.load_builtins ? gld_drv_ext.load_builtins(&mod, img) : gld_drv.cuModuleLoadData(&mod, img);
  free(img);
  if (r != CUDA_SUCCESS) return gl_fail_cu(rt, dev, r, "cuModuleLoadData (built-in kernels)", NULL);
  gl_module *m = calloc(1, sizeof *m);
  if (!m || !(m->name = strdup(name))) {
    free(m);
    gld_drv.cuModuleUnload(mod);
    return gl_fail_nomem(rt, rt->names.builtins);
  }
  m->refs = 1;
  m->dev = dev;
  m->mod = mod;
  m->permanent = 1;
  dev->builtins[dt] = m;
  return 0;
}

int gl_builtin_signature(gl_runtime *rt, const gl_builtin *b, gl_dtype dt, gl_signature *sig) {
  gl_buf s = GL_BUF_INIT;
  for (const char *p = b->signature; *p; p++) {
    if (*p == 'T') gl_buf_printf(&s, "%s", gl_dtypes[dt].name);
    else gl_buf_printf(&s, "%c", *p);
  }
  char err[256];
  int rc = gl_signature_parse(gl_buf_str(&s), sig, err, sizeof err);
  if (rc != 0) gl_fail(rt, "built-in kernel: bad signature '%s': %s", gl_buf_str(&s), err);
  gl_buf_free(&s);
  return rc;
}

int gl_builtin_kernel(gl_device *dev, const gl_builtin *b, gl_dtype dt, gl_kernel **out) {
  int family = (int)(b - gl_builtins);
  gl_kernel **cached = &dev->builtin_kernel[family][dt];
  if (*cached) { /* the hot path */
    *out = *cached;
    return 0;
  }
  gl_runtime *rt = dev->rt;
  if (builtin_module(dev, dt) != 0) return -1;
  char name[GL_KERNEL_NAME_MAX + 1];
  snprintf(name, sizeof name, "%s_%s", b->name, gl_dtypes[dt].name);
  gl_kernel *k = kernel_alloc(dev->builtins[dt], name);
  if (!k) return gl_fail_nomem(rt, rt->names.builtins);
  k->builtin = b;
  k->nhidden = b->reduces ? GL_BUILTIN_HIDDEN : 0;
  if (gl_builtin_signature(rt, b, dt, &k->sig) != 0) {
    gl_kernel_unref(k);
    return -1;
  }
  gl_set_ctx(dev);
  CUresult r = gld_drv.cuModuleGetFunction(&k->f, dev->builtins[dt]->mod, k->name);
  if (r != CUDA_SUCCESS) {
    gl_kernel_unref(k);
    return gl_fail_cu(rt, dev, r, "cuModuleGetFunction", NULL);
  }
  read_max_threads(k);
  int rc = stand_in() ? 0 : check_param_info(k); /* on sim too: its PTX reader tells the compiled parameters */
  if (rc == 0 && gld_drv_ext.func_set_builtin) { /* the backend's host implementation */
    size_t sizes[GL_MAX_PARAMS + GL_BUILTIN_HIDDEN];
    for (int i = 0; i < k->sig.n + k->nhidden; i++) sizes[i] = i < k->sig.n ? gl_param_size(&k->sig.p[i]) : 8;
    CUresult sr = gld_drv_ext.func_set_builtin(k->f, b->name, gl_dtypes[dt].name, k->sig.n + k->nhidden, sizes);
    if (sr != CUDA_SUCCESS) rc = gl_fail_cu(rt, dev, sr, "func_set_builtin", NULL);
  }
  if (rc != 0) {
    gl_kernel_unref(k);
    return -1;
  }
  *cached = k;
  *out = k;
  return 0;
}

void gl_builtins_release(gl_device *dev) {
  for (int i = 0; i < GL_MAX_BUILTINS; i++)
    for (int t = 0; t < GL_NDTYPES; t++) {
      gl_kernel_unref(dev->builtin_kernel[i][t]);
      dev->builtin_kernel[i][t] = NULL;
    }
  for (int t = 0; t < GL_NDTYPES; t++) {
    gl_module *m = dev->builtins[t]; /* its launches have finished: the device was drained */
    if (!m) continue;
    dev->builtins[t] = NULL;
    m->permanent = 0;
    gl_module_unref(m);
  }
}
