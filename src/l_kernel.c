/*
 * l_kernel.c -- modules and kernels: gpu.compile (NVRTC with the disk cache),
 * gpu.load (.cu, .ptx, .cubin, .fatbin), m:kernel(name, signature),
 * k:host(fn), the built-in library gpu.kernels, and s:launch(k, cfg, ...).
 *
 * A launch is checked completely before it is queued: argument count and
 * types against the signature, integer ranges, slice dtypes, liveness and
 * devices, and the device's grid/block/shared limits. Arguments are written
 * into a parameter buffer owned by the kernel: no allocation per launch.
 *
 * On sim no device code runs: a built-in runs its C host implementation on
 * the stream's worker, another kernel the Lua function given with k:host(fn),
 * on the main Lua thread once the stream reaches the launch, with pointer
 * arguments as host views of the slices' memory.
 */
#include "core.h"
#include "checker.h"
#include "trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtins.h"
#include "kcache.h"
#include "nvrtc_table.h"
#include "signature.h"
#include "sim.h"


typedef struct {
  gl_device *dev;
  CUmodule mod;
  char name[256];
} gl_module;

typedef struct gl_kernel gl_kernel;

/* What a Lua host kernel needs at run time, beyond the copied parameters. */
typedef struct {
  int cfg_ref;          /* the launch's cfg table */
  int nargs;
  struct { gl_dtype dt; size_t count; int is_ptr; } arg[GL_MAX_PARAMS];
} host_launch;

struct gl_kernel {
  gl_module *m;          /* NULL for a built-in family */
  gl_device *dev;
  CUfunction f;
  char name[128];
  int name_id;           /* name, interned (for fault messages) */
  int max_threads;       /* per block for this function (registers, __launch_bounds__); 0: unknown */
  gl_signature sig;
  const gl_builtin *builtin; /* a family (gpu.kernels.NAME) or one variant of it */
  int is_family;
  int has_host;          /* k:host(fn) given (uservalue 2) */
  lua_State *hostL;      /* the thread host kernels run on */
  int hostL_ref;
  gl_kernel *variant[8][2];  /* a family's variants for devices 0..7, [f64] (anchored in uservalue 1) */
  unsigned char argbuf[(GL_MAX_PARAMS + 1) * 8];
  void *params[GL_MAX_PARAMS + 1];
};

static char host_kernel_error[512];

const char *gl_host_kernel_error(void) { return host_kernel_error; }

/* ---- compile --------------------------------------------------------- */

/* CUBIN for the device's own architecture where this NVRTC knows it; PTX
 * for the newest architecture it knows below the device's (the driver
 * compiles it on load) where NVRTC is older than the device; always PTX on
 * sim, whose kernels never run device code. */
static int arch_of(lua_State *L, const char *fname, gl_device *d, const char *name, char *opt, size_t len,
                   char *arch, size_t alen) {
  int cc = d->cc_major * 10 + d->cc_minor, exact;
  int target = gl_nvrtc_arch(cc, &exact);
  if (target < 0)
    luaL_error(L, "%s: %s: NVRTC %d.%d supports no architecture at or below the device's sm_%d", fname, name,
               gl_nv.major, gl_nv.minor, cc);
  int cubin = exact && !gl_is_sim && gl_nv.nvrtcGetCUBIN_ != NULL;
  snprintf(arch, alen, "%s_%d", cubin ? "sm" : "compute", target);
  snprintf(opt, len, "-arch=%s", arch);
  return cubin;
}

/* Compile `src` for dev; returns a malloc'd image (CUBIN or NUL-terminated PTX). */
static void *compile_image(lua_State *L, const char *fname, gl_device *dev, const char *src, size_t srclen,
                           const char *name, int opts_idx, size_t *image_len) {
  const char *why = gl_nvrtc_load();
  if (why) luaL_error(L, "%s: %s: cannot compile: %s", fname, name, why);
  const char *opts[66];
  int nopts = 0;
  if (opts_idx) {
    int n = (int)luaL_len(L, opts_idx);
    if (n > 63) luaL_error(L, "%s: %s: at most 63 options", fname, name);
    for (int i = 1; i <= n; i++) {
      lua_geti(L, opts_idx, i);
      if (lua_type(L, -1) != LUA_TSTRING)
        luaL_error(L, "%s: %s: option %d expected a string, got %s", fname, name, i, gl_given(L, -1));
      opts[nopts++] = lua_tostring(L, -1);
      lua_pop(L, 1); /* the table keeps the string alive */
    }
  }
  char arch_opt[48], arch[32];
  int want_cubin = arch_of(L, fname, dev, name, arch_opt, sizeof arch_opt, arch, sizeof arch);
  opts[nopts++] = arch_opt;
  char version[32];
  snprintf(version, sizeof version, "nvrtc %d.%d", gl_nv.major, gl_nv.minor);
  int kind = want_cubin ? GL_KCACHE_CUBIN : GL_KCACHE_PTX;
  gl_kcache_key key = gl_kcache_make_key(src, srclen, opts, nopts, arch, version, kind);
  int got_kind;
  void *img = gl_kcache_get(&key, image_len, &got_kind);
  if (img && got_kind == kind) return img;
  free(img);

  nvrtcProgram prog;
  /* NVRTC wants a NUL-terminated source */
  char *copy = malloc(srclen + 1);
  if (!copy) luaL_error(L, "%s: out of host memory", fname);
  memcpy(copy, src, srclen);
  copy[srclen] = '\0';
  nvrtcResult r = gl_nv.nvrtcCreateProgram(&prog, copy, name, 0, NULL, NULL);
  free(copy);
  if (r != NVRTC_SUCCESS) luaL_error(L, "%s: %s: nvrtcCreateProgram failed: %s", fname, name, gl_nv.nvrtcGetErrorString(r));
  r = gl_nv.nvrtcCompileProgram(prog, nopts, opts);
  size_t loglen = 0;
  gl_nv.nvrtcGetProgramLogSize(prog, &loglen);
  char *log = malloc(loglen + 1);
  if (log) {
    log[0] = '\0';
    if (loglen) gl_nv.nvrtcGetProgramLog(prog, log);
    log[loglen] = '\0';
  }
  if (r != NVRTC_SUCCESS) {
    lua_pushfstring(L, "%s: %s: compilation failed (%s, %s):\n%s", fname, name, gl_nv.nvrtcGetErrorString(r),
                    arch_opt, log ? log : "(no log)");
    free(log);
    gl_nv.nvrtcDestroyProgram(&prog);
    lua_error(L);
  }
  free(log);
  size_t n = 0;
  if (want_cubin) r = gl_nv.nvrtcGetCUBINSize_(prog, &n);
  else r = gl_nv.nvrtcGetPTXSize(prog, &n);
  img = r == NVRTC_SUCCESS ? malloc(n + 1) : NULL;
  if (img) {
    r = want_cubin ? gl_nv.nvrtcGetCUBIN_(prog, img) : gl_nv.nvrtcGetPTX(prog, img);
    ((char *)img)[n] = '\0';
  }
  gl_nv.nvrtcDestroyProgram(&prog);
  if (!img || r != NVRTC_SUCCESS) {
    free(img);
    luaL_error(L, "%s: %s: could not read NVRTC's output", fname, name);
  }
  *image_len = n;
  gl_kcache_put(&key, img, n, kind);
  return img;
}

static gl_device *opt_device(lua_State *L, const char *fname, int opts) {
  if (lua_isnoneornil(L, opts)) return gl_device_open(L, 0);
  luaL_checktype(L, opts, LUA_TTABLE);
  lua_getfield(L, opts, "device");
  gl_device *d = NULL;
  if (lua_isnil(L, -1)) d = gl_device_open(L, 0);
  else if (lua_isinteger(L, -1)) {
    lua_Integer o = lua_tointeger(L, -1);
    if (o < 0 || o >= gl_rt(L)->ndev)
      luaL_error(L, "%s: option 'device': ordinal %I is out of range (%s has %d device%s)", fname, (LUAI_UACINT)o,
                 gl_backend_name, gl_rt(L)->ndev, gl_rt(L)->ndev == 1 ? "" : "s");
    d = gl_device_open(L, (int)o);
  } else if (gl_testudata(L, -1, GL_DEVICE_MT)) d = gl_check_device(L, -1);
  else luaL_error(L, "%s: option 'device' expected a device or a device ordinal, got %s", fname, gl_given(L, -1));
  lua_pop(L, 1);
  gl_check_poison(L, d);
  return d;
}

static int opt_options(lua_State *L, const char *fname, int opts) {
  if (lua_isnoneornil(L, opts)) return 0;
  lua_getfield(L, opts, "options");
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return 0;
  }
  if (!lua_istable(L, -1))
    luaL_error(L, "%s: option 'options' expected a list of strings, got %s", fname, gl_given(L, -1));
  return lua_gettop(L);
}

/* gpu.compile(source, {name =, options =, device =}) */
static int l_compile(lua_State *L) {
  size_t len;
  const char *src = luaL_checklstring(L, 1, &len);
  if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TTABLE);
  gl_device *dev = opt_device(L, "gpu.compile", 2);
  const char *name = "kernel.cu";
  if (!lua_isnoneornil(L, 2)) {
    lua_getfield(L, 2, "name");
    if (!lua_isnil(L, -1)) {
      if (lua_type(L, -1) != LUA_TSTRING)
        return luaL_error(L, "gpu.compile: option 'name' expected a string, got %s", luaL_typename(L, -1));
      name = lua_tostring(L, -1);
    }
  }
  int opts = opt_options(L, "gpu.compile", 2);
  size_t n;
  void *img = compile_image(L, "gpu.compile", dev, src, len, name, opts, &n);
  gl_module *m;
  /* load in protected mode so the image is freed on error */
  gl_set_ctx(dev);
  CUmodule mod;
  CUresult r = gl_drv.cuModuleLoadData(&mod, img);
  free(img);
  if (r != CUDA_SUCCESS) return luaL_error(L, "gpu.compile: %s: the driver refused the module: %s", name, gl_error_name(r));
  m = lua_newuserdatauv(L, sizeof *m, 0);
  m->dev = dev;
  m->mod = mod;
  snprintf(m->name, sizeof m->name, "%s", name);
  gl_setmetatable(L, GL_MODULE_MT);
  return 1;
}

static char *read_file(lua_State *L, const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) luaL_error(L, "gpu.load: cannot open %s: %s", path, strerror(errno));
  char *buf = NULL;
  long size = -1;
  if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
  if (size < 0 || fseek(f, 0, SEEK_SET) != 0 || !(buf = malloc((size_t)size + 1)) ||
      fread(buf, 1, (size_t)size, f) != (size_t)size) {
    fclose(f);
    free(buf);
    luaL_error(L, "gpu.load: cannot read %s", path);
  }
  fclose(f);
  buf[size] = '\0';
  *len = (size_t)size;
  return buf;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* gpu.load(path, {device =, options =}) */
static int l_load(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TTABLE);
  gl_device *dev = opt_device(L, "gpu.load", 2);
  int is_cu = ends_with(path, ".cu"), is_ptx = ends_with(path, ".ptx");
  if (!is_cu && !is_ptx && !ends_with(path, ".cubin") && !ends_with(path, ".fatbin"))
    return luaL_error(L, "gpu.load: %s: expected a .cu, .ptx, .cubin or .fatbin file", path);
  size_t len;
  char *data = read_file(L, path, &len);
  if (is_cu) {
    /* compile_image raises: move the source into a Lua string first */
    lua_pushlstring(L, data, len);
    free(data);
    const char *src = lua_tolstring(L, -1, &len);
    int opts = opt_options(L, "gpu.load", 2);
    size_t n;
    void *img = compile_image(L, "gpu.load", dev, src, len, path, opts, &n);
    data = img;
  } else if (len == 0) {
    free(data);
    return luaL_error(L, "gpu.load: %s is empty", path);
  }
  gl_set_ctx(dev);
  CUmodule mod;
  CUresult r = gl_drv.cuModuleLoadData(&mod, data);
  free(data);
  if (r != CUDA_SUCCESS) return luaL_error(L, "gpu.load: %s: the driver refused the module: %s", path, gl_error_name(r));
  gl_module *m = lua_newuserdatauv(L, sizeof *m, 0);
  m->dev = dev;
  m->mod = mod;
  snprintf(m->name, sizeof m->name, "%s", path);
  gl_setmetatable(L, GL_MODULE_MT);
  return 1;
}

static gl_module *check_module(lua_State *L, int idx) {
  gl_module *m = gl_testudata(L, idx, GL_MODULE_MT);
  if (!m) luaL_typeerror(L, idx, "gpulua module");
  if (!m->mod) luaL_error(L, "gpulua module has been unloaded");
  return m;
}

static int m_gc(lua_State *L) {
  gl_module *m = gl_checkudata(L, 1, GL_MODULE_MT);
  if (m->mod && m->dev && m->dev->opened) {
    gl_set_ctx(m->dev);
    gl_drv.cuCtxSynchronize(); /* launches of its kernels may still be queued */
    gl_drv.cuModuleUnload(m->mod);
  }
  m->mod = NULL;
  return 0;
}

/* ---- kernels ----------------------------------------------------------- */

static void init_params(gl_kernel *k) {
  for (int i = 0; i <= GL_MAX_PARAMS; i++) k->params[i] = &k->argbuf[i * 8];
}

static gl_kernel *new_kernel(lua_State *L) {
  gl_kernel *k = lua_newuserdatauv(L, sizeof *k, 2);
  memset(k, 0, sizeof *k);
  k->hostL_ref = LUA_NOREF;
  init_params(k);
  gl_setmetatable(L, GL_KERNEL_MT);
  return k;
}

static void check_param_info(lua_State *L, gl_kernel *k) {
  if (!gl_drv.cuFuncGetParamInfo) return;
  size_t off, size;
  int n = 0;
  for (;; n++) {
    CUresult r = gl_drv.cuFuncGetParamInfo(k->f, (size_t)n, &off, &size);
    if (r == CUDA_ERROR_NOT_SUPPORTED) return; /* the driver cannot tell for this image */
    if (r != CUDA_SUCCESS) break;
    if (n < k->sig.n && size != gl_param_size(&k->sig.p[n])) {
      char s[512];
      gl_signature_format(&k->sig, s, sizeof s);
      luaL_error(L, "kernel '%s': parameter %d is declared %s (%d bytes) in '%s', but the compiled kernel's "
                    "parameter %d takes %d bytes",
                 k->name, n + 1, k->sig.p[n].is_ptr ? "a pointer" : gl_dtypes[k->sig.p[n].dtype].name,
                 (int)gl_param_size(&k->sig.p[n]), s, n + 1, (int)size);
    }
  }
  if (n != k->sig.n)
    luaL_error(L, "kernel '%s': the signature declares %d parameter%s, but the compiled kernel takes %d", k->name,
               k->sig.n, k->sig.n == 1 ? "" : "s", n);
}

static void parse_signature(lua_State *L, const char *what, const char *s, gl_signature *sig) {
  char err[256];
  if (gl_signature_parse(s, sig, err, sizeof err) != 0)
    luaL_error(L, "%s: bad signature '%s': %s", what, s, err);
}

/* The most threads a block of this function may have: fewer than the
 * device's when its registers or __launch_bounds__ say so. */
static void read_max_threads(gl_kernel *k) {
  int v = 0;
  if (gl_drv.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k->f) != CUDA_SUCCESS) v = 0;
  k->max_threads = v;
}

/* m:kernel(name, signature) */
static int m_kernel(lua_State *L) {
  gl_module *m = check_module(L, 1);
  const char *name = luaL_checkstring(L, 2);
  const char *sigs = luaL_checkstring(L, 3);
  if (strlen(name) >= sizeof(((gl_kernel *)0)->name)) return luaL_argerror(L, 2, "kernel name too long");
  gl_signature sig;
  parse_signature(L, "m:kernel", sigs, &sig);
  gl_check_poison(L, m->dev);
  gl_kernel *k = new_kernel(L);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1); /* the kernel keeps its module loaded */
  k->m = m;
  k->dev = m->dev;
  k->sig = sig;
  snprintf(k->name, sizeof k->name, "%s", name);
  k->name_id = gl_intern(k->name);
  gl_set_ctx(m->dev);
  CUresult r = gl_drv.cuModuleGetFunction(&k->f, m->mod, name);
  if (r == CUDA_ERROR_NOT_FOUND)
    return luaL_error(L, "m:kernel: module '%s' has no kernel named '%s' (declare it extern \"C\" __global__)",
                      m->name, name);
  gl_check(L, m->dev, r, "cuModuleGetFunction");
  read_max_threads(k);
  check_param_info(L, k);
  return 1;
}

/* ---- built-ins ---------------------------------------------------------- */

static const char builtin_key = 'B';

/* The module of built-ins for `dev` (compiled once per device and state). */
static gl_module *builtin_module(lua_State *L, gl_device *dev) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &builtin_key) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &builtin_key);
  }
  if (lua_rawgeti(L, -1, dev->ordinal) == LUA_TUSERDATA) {
    gl_module *m = lua_touserdata(L, -1);
    lua_pop(L, 2);
    return m;
  }
  lua_pop(L, 1);
  const char *src = gl_builtins_cuda_source();
  size_t n;
  void *img = NULL;
  if (gl_is_sim && gl_nvrtc_load() != NULL) {
    /* no NVRTC on this machine: sim runs host implementations anyway */
    static const char stub[] = ".version 8.0\n.target sm_90\n.address_size 64\n// sim stand-in for builtins\n";
    img = malloc(sizeof stub + 64 * 32);
    if (!img) luaL_error(L, "out of host memory");
    strcpy(img, stub);
    for (int i = 0; i < gl_nbuiltins; i++) {
      strcat(img, ".entry ");
      strcat(img, gl_builtins[i].name);
      strcat(img, "_f32()\n.entry ");
      strcat(img, gl_builtins[i].name);
      strcat(img, "_f64()\n");
    }
  } else {
    img = compile_image(L, "gpu.kernels", dev, src, strlen(src), "gpulua/kernels/builtins.cu", 0, &n);
  }
  gl_set_ctx(dev);
  CUmodule mod;
  CUresult r = gl_drv.cuModuleLoadData(&mod, img);
  free(img);
  gl_check(L, dev, r, "cuModuleLoadData (built-in kernels)");
  gl_module *m = lua_newuserdatauv(L, sizeof *m, 0);
  m->dev = dev;
  m->mod = mod;
  snprintf(m->name, sizeof m->name, "gpulua built-in kernels (device %d)", dev->ordinal);
  gl_setmetatable(L, GL_MODULE_MT);
  lua_rawseti(L, -2, dev->ordinal);
  lua_rawgeti(L, -1, dev->ordinal);
  m = lua_touserdata(L, -1);
  lua_pop(L, 2);
  return m;
}

static void builtin_signature(lua_State *L, const gl_builtin *b, const char *dt, gl_signature *sig) {
  char s[256];
  size_t j = 0;
  for (const char *p = b->signature; *p && j + 8 < sizeof s; p++) {
    if (*p == 'T') {
      memcpy(s + j, dt, strlen(dt));
      j += strlen(dt);
    } else s[j++] = *p;
  }
  s[j] = '\0';
  parse_signature(L, "built-in kernel", s, sig);
}

/* The concrete kernel of family `fam` for dtype dt on dev, cached in the
 * family's uservalue 1 (a table keyed "ordinal:dtype"). Pushes it. */
static gl_kernel *builtin_variant(lua_State *L, int fam_idx, gl_kernel *fam, gl_device *dev, gl_dtype dt) {
  fam_idx = lua_absindex(L, fam_idx);
  gl_kernel **cached = dev->ordinal < 8 ? &fam->variant[dev->ordinal][dt == GL_F64] : NULL;
  if (cached && *cached) return *cached; /* the hot path: no lookup, nothing pushed */
  lua_getiuservalue(L, fam_idx, 1);
  char key[32];
  snprintf(key, sizeof key, "%d:%s", dev->ordinal, gl_dtypes[dt].name);
  if (lua_getfield(L, -1, key) == LUA_TUSERDATA) {
    gl_kernel *k = lua_touserdata(L, -1);
    lua_pop(L, 2);
    if (cached) *cached = k;
    return k;
  }
  lua_pop(L, 1);
  gl_module *m = builtin_module(L, dev);
  gl_kernel *k = new_kernel(L);
  k->m = m;
  k->dev = dev;
  k->builtin = fam->builtin;
  builtin_signature(L, fam->builtin, gl_dtypes[dt].name, &k->sig);
  snprintf(k->name, sizeof k->name, "%s_%s", fam->builtin->name, gl_dtypes[dt].name);
  k->name_id = gl_intern(k->name);
  gl_set_ctx(dev);
  GL_CALL(L, dev, cuModuleGetFunction, &k->f, m->mod, k->name);
  read_max_threads(k);
  if (gl_is_sim) {
    size_t sizes[GL_MAX_PARAMS];
    for (int i = 0; i < k->sig.n; i++) sizes[i] = gl_param_size(&k->sig.p[i]);
    gl_sim_func_set_host(k->f, fam->builtin->host[dt == GL_F64], NULL, 0, k->sig.n, sizes);
  } else {
    check_param_info(L, k);
  }
  lua_setfield(L, -2, key); /* the family's table keeps it alive */
  lua_pop(L, 1);
  if (cached) *cached = k;
  return k;
}

static void push_builtins(lua_State *L) {
  lua_createtable(L, 0, gl_nbuiltins);
  for (int i = 0; i < gl_nbuiltins; i++) {
    gl_kernel *k = new_kernel(L);
    k->builtin = &gl_builtins[i];
    k->is_family = 1;
    snprintf(k->name, sizeof k->name, "%s", gl_builtins[i].name);
    k->name_id = gl_intern(k->name);
    builtin_signature(L, &gl_builtins[i], "f32", &k->sig); /* the shape; T resolved at launch */
    lua_newtable(L);
    lua_setiuservalue(L, -2, 1);
    lua_setfield(L, -2, gl_builtins[i].name);
  }
}

/* ---- host implementations (sim) ---------------------------------------- */

int gl_host_kernel_depth;

/* The host function's call, in protected mode: making the argument views can
 * raise (out of memory), and an error must not unwind through the sim. */
static int call_host_kernel(lua_State *L) {
  gl_kernel *k = lua_touserdata(L, 1);
  const gl_sim_launch *l = lua_touserdata(L, 2);
  host_launch *hl = lua_touserdata(L, 3);
  lua_settop(L, 0);
  luaL_checkstack(L, k->sig.n + 8, "too many kernel arguments");
  lua_rawgetp(L, LUA_REGISTRYINDEX, k); /* the host function */
  lua_rawgeti(L, LUA_REGISTRYINDEX, hl->cfg_ref);
  for (int i = 0; i < k->sig.n; i++) {
    if (hl->arg[i].is_ptr) {
      void *p = (void *)(uintptr_t)*(unsigned long long *)l->params[i];
      gl_hostbuf_borrow(L, hl->arg[i].dt, p, hl->arg[i].count);
    } else {
      gl_dtype_push(L, hl->arg[i].dt, l->params[i]);
    }
  }
  lua_call(L, 1 + k->sig.n, 0);
  return 0;
}

/* Runs on the main thread when a sim stream reaches the launch. */
static int run_host_kernel(void *user, const gl_sim_launch *l) {
  gl_kernel *k = user;
  lua_State *L = k->hostL;
  host_launch *hl = *(host_launch **)l->params[k->sig.n];
  int top = lua_gettop(L);
  int rc = 0;
  if (!lua_checkstack(L, 8)) return 1;
  /* no finalizers until the call is over: one might wait for this very
   * stream (it cannot finish before this kernel returns) */
  int gc_was_running = lua_gc(L, LUA_GCISRUNNING);
  if (gc_was_running) lua_gc(L, LUA_GCSTOP);
  gl_host_kernel_depth++;
  lua_pushcfunction(L, call_host_kernel);
  lua_pushlightuserdata(L, k);
  lua_pushlightuserdata(L, (void *)l);
  lua_pushlightuserdata(L, hl);
  int status = lua_pcall(L, 3, 0, 0);
  gl_host_kernel_depth--;
  if (status != LUA_OK) {
    snprintf(host_kernel_error, sizeof host_kernel_error, "host kernel '%s' raised: %s", k->name,
             lua_tostring(L, -1) ? lua_tostring(L, -1) : "(an error object)");
    rc = 1;
  }
  lua_settop(L, top);
  /* the views are only valid during the call */
  gl_hostbuf_end_borrows(L);
  if (gc_was_running) lua_gc(L, LUA_GCRESTART);
  luaL_unref(L, LUA_REGISTRYINDEX, hl->cfg_ref);
  free(hl);
  return rc;
}

/* k:host(fn) */
static int k_host(lua_State *L) {
  gl_kernel *k = gl_checkudata(L, 1, GL_KERNEL_MT);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  if (k->is_family || k->builtin)
    return luaL_error(L, "k:host: '%s' is a built-in kernel; its host implementation is part of gpulua", k->name);
  lua_pushvalue(L, 2);
  lua_rawsetp(L, LUA_REGISTRYINDEX, k);
  if (!k->hostL) {
    k->hostL = lua_newthread(L);
    k->hostL_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  k->has_host = 1;
  if (gl_is_sim) {
    size_t sizes[GL_MAX_PARAMS + 1];
    for (int i = 0; i < k->sig.n; i++) sizes[i] = gl_param_size(&k->sig.p[i]);
    sizes[k->sig.n] = sizeof(void *); /* the hidden host_launch record */
    gl_sim_set_main_thread();
    gl_sim_func_set_host(k->f, run_host_kernel, k, 1, k->sig.n + 1, sizes);
  }
  lua_settop(L, 1);
  return 1;
}

static int k_gc(lua_State *L) {
  gl_kernel *k = gl_checkudata(L, 1, GL_KERNEL_MT);
  if (k->has_host) {
    if (k->m && k->m->mod && k->dev->opened && gl_is_sim) {
      gl_set_ctx(k->dev);
      gl_drv.cuCtxSynchronize(); /* queued host launches still name this kernel */
      gl_sim_func_set_host(k->f, NULL, NULL, 0, 0, NULL);
    }
    lua_pushnil(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, k);
    luaL_unref(L, LUA_REGISTRYINDEX, k->hostL_ref);
    k->has_host = 0;
  }
  return 0;
}

/* ---- launch ------------------------------------------------------------- */

static void dims(lua_State *L, int cfg, const char *field, unsigned out[3], int required) {
  out[0] = out[1] = out[2] = 1;
  lua_getfield(L, cfg, field);
  int t = lua_type(L, -1);
  if (t == LUA_TNIL) {
    if (required) luaL_error(L, "s:launch: cfg.%s is required (a number or {x, y, z})", field);
  } else if (t == LUA_TNUMBER || t == LUA_TTABLE) {
    int n = t == LUA_TNUMBER ? 1 : (int)luaL_len(L, -1);
    if (n < 1 || n > 3) luaL_error(L, "s:launch: cfg.%s must have 1 to 3 dimensions, got %d", field, n);
    for (int i = 0; i < n; i++) {
      if (t == LUA_TTABLE) lua_geti(L, -1, i + 1);
      else lua_pushvalue(L, -1);
      int ok;
      lua_Integer v = lua_tointegerx(L, -1, &ok);
      if (!ok || v < 1 || v > 0xffffffffLL)
        luaL_error(L, "s:launch: cfg.%s%s%s must be a positive integer, got %s", field, t == LUA_TTABLE ? "." : "",
                   t == LUA_TTABLE ? (i == 0 ? "x" : i == 1 ? "y" : "z") : "",
                   lua_type(L, -1) == LUA_TNUMBER ? lua_tostring(L, -1) : luaL_typename(L, -1));
      out[i] = (unsigned)v;
      lua_pop(L, 1);
    }
  } else {
    luaL_error(L, "s:launch: cfg.%s expected a number or {x, y, z}, got %s", field, lua_typename(L, t));
  }
  lua_pop(L, 1);
}

static void check_limits(lua_State *L, gl_kernel *k, gl_device *d, const unsigned g[3], const unsigned b[3],
                         unsigned shared) {
  static const char *const axis[] = {"x", "y", "z"};
  for (int i = 0; i < 3; i++) {
    if (b[i] > (unsigned)d->max_block[i])
      luaL_error(L, "s:launch: kernel '%s': block.%s = %d exceeds device %d's limit of %d", k->name, axis[i],
                 (int)b[i], d->ordinal, d->max_block[i]);
    if (g[i] > (unsigned)d->max_grid[i])
      luaL_error(L, "s:launch: kernel '%s': grid.%s = %I exceeds device %d's limit of %d", k->name, axis[i],
                 (LUAI_UACINT)g[i], d->ordinal, d->max_grid[i]);
  }
  unsigned long long threads = (unsigned long long)b[0] * b[1] * b[2];
  if (threads > (unsigned long long)d->max_threads_per_block)
    luaL_error(L, "s:launch: kernel '%s': a block of %dx%dx%d = %I threads exceeds device %d's limit of %d",
               k->name, (int)b[0], (int)b[1], (int)b[2], (LUAI_UACINT)threads, d->ordinal, d->max_threads_per_block);
  if (k->max_threads > 0 && threads > (unsigned long long)k->max_threads)
    luaL_error(L, "s:launch: kernel '%s': a block of %dx%dx%d = %I threads exceeds the kernel's limit of %d "
               "(set by its __launch_bounds__ or its register use; device %d allows %d)",
               k->name, (int)b[0], (int)b[1], (int)b[2], (LUAI_UACINT)threads, k->max_threads, d->ordinal,
               d->max_threads_per_block);
  if (shared > (unsigned)d->max_shared)
    luaL_error(L, "s:launch: kernel '%s': cfg.shared = %d bytes exceeds device %d's limit of %d bytes per block",
               k->name, (int)shared, d->ordinal, d->max_shared);
  if (k->builtin && k->builtin->needs_warps && (b[0] % 32 != 0 || b[1] != 1 || b[2] != 1))
    luaL_error(L, "s:launch: built-in kernel '%s' needs a one-dimensional block of a multiple of 32 threads, got "
                  "%dx%dx%d", k->name, (int)b[0], (int)b[1], (int)b[2]);
}

/* s:launch(k, cfg, ...) */
int gl_stream_launch(lua_State *L) {
  gl_stream *s = gl_check_stream(L, 1);
  gl_kernel *k = gl_testudata(L, 2, GL_KERNEL_MT);
  if (!k) return luaL_typeerror(L, 2, "gpulua kernel");
  luaL_checktype(L, 3, LUA_TTABLE);
  gl_device *dev = s->dev;
  int nargs = lua_gettop(L) - 3;
  if (k->is_family) {
    /* pick the variant from the dtype of the first pointer argument */
    int first_ptr = -1;
    for (int i = 0; i < k->sig.n; i++)
      if (k->sig.p[i].is_ptr) { first_ptr = i; break; }
    gl_slice *x = first_ptr >= 0 && first_ptr < nargs ? gl_test_slice(L, 4 + first_ptr) : NULL;
    if (!x)
      return luaL_error(L, "s:launch: built-in kernel '%s' (%s) expects a slice as argument %d", k->name,
                        k->builtin->signature, first_ptr + 1);
    gl_slice_check_alive(L, x, first_ptr + 1);
    if (x->dtype != GL_F32 && x->dtype != GL_F64)
      return luaL_error(L, "s:launch: built-in kernel '%s' works on f32 and f64 slices, got %s", k->name,
                        gl_dtypes[x->dtype].name);
    k = builtin_variant(L, 2, k, dev, x->dtype); /* the family keeps the variant alive */
  }
  if (nargs != k->sig.n) {
    char sig[512];
    gl_signature_format(&k->sig, sig, sizeof sig);
    return luaL_error(L, "s:launch: kernel '%s' (%s) takes %d argument%s, got %d", k->name, sig, k->sig.n,
                      k->sig.n == 1 ? "" : "s", nargs);
  }
  if (k->m->dev != dev)
    return luaL_error(L, "s:launch: kernel '%s' was loaded on device %d, but stream '%s' is on device %d", k->name,
                      k->m->dev->ordinal, s->name, dev->ordinal);
  if (gl_is_sim && !k->builtin && !k->has_host)
    return luaL_error(L, "s:launch: kernel '%s' has no host implementation, and the sim backend cannot run device "
                         "code: give one with k:host(function(cfg, ...) end)", k->name);
  unsigned g[3], b[3];
  dims(L, 3, "grid", g, 1);
  dims(L, 3, "block", b, 1);
  lua_getfield(L, 3, "shared");
  lua_Integer shared = 0;
  if (!lua_isnil(L, -1)) {
    int ok;
    shared = lua_tointegerx(L, -1, &ok);
    if (!ok || shared < 0 || shared > 0x7fffffff)
      return luaL_error(L, "s:launch: cfg.shared must be a non-negative integer (bytes), got %s",
                        lua_type(L, -1) == LUA_TNUMBER ? lua_tostring(L, -1) : luaL_typename(L, -1));
  }
  lua_pop(L, 1);
  check_limits(L, k, dev, g, b, (unsigned)shared);

  /* arguments: check every one, then write the parameter buffer */
  gl_slice *slices[GL_MAX_PARAMS];
  for (int i = 0; i < k->sig.n; i++) {
    const gl_param *p = &k->sig.p[i];
    int idx = 4 + i;
    if (p->is_ptr) {
      gl_slice *x = gl_test_slice(L, idx);
      if (!x) {
        char sig[512];
        gl_signature_format(&k->sig, sig, sizeof sig);
        return luaL_error(L, "s:launch: kernel '%s' (%s): argument %d expected a slice (%s%s*), got %s", k->name, sig,
                          i + 1, p->is_const ? "const " : "", p->dtype < 0 ? "void" : gl_dtypes[p->dtype].name,
                          gl_given(L, idx));
      }
      gl_slice_check_alive(L, x, i + 1);
      if (p->dtype >= 0 && x->dtype != (gl_dtype)p->dtype)
        return luaL_error(L, "s:launch: kernel '%s': argument %d expected a %s slice, got a %s slice", k->name, i + 1,
                          gl_dtypes[p->dtype].name, gl_dtypes[x->dtype].name);
      if (x->a->dev != dev && !gl_peer_granted(dev->rt, x->a->dev, dev))
        return luaL_error(L, "s:launch: kernel '%s': argument %d is a slice of device %d, but stream '%s' is on "
                             "device %d (grant access with gpu.peer(%d, %d) where the devices support it)",
                          k->name, i + 1, x->a->dev->ordinal, s->name, dev->ordinal, x->a->dev->ordinal,
                          dev->ordinal);
      slices[i] = x;
      CUdeviceptr ptr = gl_slice_ptr(x);
      memcpy(k->params[i], &ptr, sizeof ptr);
    } else {
      slices[i] = NULL;
      const char *why = gl_dtype_encode(L, idx, (gl_dtype)p->dtype, k->params[i]);
      if (why)
        return luaL_error(L, "s:launch: kernel '%s': argument %d (%s): %s, got %s", k->name, i + 1,
                          gl_dtypes[p->dtype].name, why,
                          lua_type(L, idx) == LUA_TNUMBER ? lua_tostring(L, idx) : gl_given(L, idx));
    }
  }
  if (k->builtin) { /* element counts must stay inside the slices */
    for (int j = 0; j < k->builtin->nbounds; j++) {
      const gl_builtin_bound *bd = &k->builtin->bounds[j];
      unsigned long long n = *(unsigned long long *)k->params[bd->count];
      unsigned long long stride = bd->stride >= 0 ? *(unsigned long long *)k->params[bd->stride] : 1;
      gl_slice *x = slices[bd->ptr];
      /* the last element touched is (n - 1) * stride: compare without overflowing */
      int fits = n == 0 || (x->count > 0 && (stride == 0 || (n - 1) <= (x->count - 1) / stride));
      if (!fits) {
        if (bd->stride >= 0 && stride && (n - 1) <= (UINT64_MAX - 1) / stride)
          return luaL_error(L, "s:launch: built-in kernel '%s': argument %d has %I elements, but n = %I with its "
                               "stride needs %I", k->name, bd->ptr + 1, (LUAI_UACINT)x->count, (LUAI_UACINT)n,
                            (LUAI_UACINT)((n - 1) * stride + 1));
        if (bd->stride >= 0)
          return luaL_error(L, "s:launch: built-in kernel '%s': argument %d has %I elements, but n = %I with a "
                               "stride of %I reaches past them", k->name, bd->ptr + 1, (LUAI_UACINT)x->count,
                            (LUAI_UACINT)n, (LUAI_UACINT)stride);
        return luaL_error(L, "s:launch: built-in kernel '%s': argument %d has %I elements, but n = %I needs %I",
                          k->name, bd->ptr + 1, (LUAI_UACINT)x->count, (LUAI_UACINT)n, (LUAI_UACINT)n);
      }
    }
  }
  /* ordering: const T* parameters are reads, other pointers writes */
  if (dev->rt->policy != GL_POLICY_OFF) {
    for (int i = 0; i < k->sig.n; i++) {
      if (!slices[i]) continue;
      gl_access_desc desc = {slices[i], NULL, NULL, k->name, i + 1};
      uint64_t lo = (uint64_t)(gl_slice_ptr(slices[i]) - slices[i]->a->ptr);
      gl_access_check(L, &slices[i]->a->acc, s, lo, lo + gl_slice_bytes(slices[i]), !k->sig.p[i].is_const, &desc);
    }
  }
  void **params = k->params;
  host_launch *hl = NULL;
  if (k->has_host && gl_is_sim) {
    hl = malloc(sizeof *hl);
    if (!hl) return luaL_error(L, "s:launch: out of host memory");
    hl->nargs = k->sig.n;
    for (int i = 0; i < k->sig.n; i++) {
      hl->arg[i].is_ptr = k->sig.p[i].is_ptr;
      hl->arg[i].dt = slices[i] ? slices[i]->dtype : (gl_dtype)k->sig.p[i].dtype;
      hl->arg[i].count = slices[i] ? slices[i]->count : 0;
    }
    lua_pushvalue(L, 3);
    hl->cfg_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    memcpy(k->params[k->sig.n], &hl, sizeof hl);
  }
  gl_set_ctx(dev);
  gl_trace_begin(s);
  CUresult r = gl_drv.cuLaunchKernel(k->f, g[0], g[1], g[2], b[0], b[1], b[2], (unsigned)shared, s->cu, params, NULL);
  if (r != CUDA_SUCCESS) {
    if (hl) {
      luaL_unref(L, LUA_REGISTRYINDEX, hl->cfg_ref);
      free(hl);
    }
    char call[200];
    snprintf(call, sizeof call, "cuLaunchKernel of kernel '%s'", k->name);
    gl_check(L, dev, r, call);
  }
  s->seq++;
  gl_trace_end(s, GL_OP_LAUNCH, k->name, 0);
  /* locations only serve messages, which policy off never gives */
  int loc = k->sig.n && dev->rt->policy != GL_POLICY_OFF ? gl_loc_here(L) : -1;
  s->last_launch_seq = s->seq; /* a later fault names the kernels that may have caused it */
  s->last_kernel = k->name_id;
  s->last_launch_loc = loc;
  for (int i = 0; i < k->sig.n; i++) {
    if (!slices[i]) continue;
    uint64_t lo = (uint64_t)(gl_slice_ptr(slices[i]) - slices[i]->a->ptr);
    gl_access_record(dev->rt, &slices[i]->a->acc, s, lo, lo + gl_slice_bytes(slices[i]), !k->sig.p[i].is_const, loc);
  }
  lua_settop(L, 1);
  return 1;
}

static int k_index(lua_State *L) {
  gl_kernel *k = gl_checkudata(L, 1, GL_KERNEL_MT);
  const char *key = luaL_checkstring(L, 2);
  if (strcmp(key, "name") == 0) lua_pushstring(L, k->name);
  else if (strcmp(key, "signature") == 0) {
    if (k->is_family) lua_pushstring(L, k->builtin->signature);
    else {
      char s[512];
      gl_signature_format(&k->sig, s, sizeof s);
      lua_pushstring(L, s);
    }
  } else if (strcmp(key, "doc") == 0 && k->builtin) lua_pushstring(L, k->builtin->doc);
  else if (strcmp(key, "host") == 0) lua_pushcfunction(L, k_host);
  else lua_pushnil(L);
  return 1;
}

static int k_tostring(lua_State *L) {
  gl_kernel *k = gl_checkudata(L, 1, GL_KERNEL_MT);
  char s[512];
  if (k->is_family) snprintf(s, sizeof s, "%s", k->builtin->signature);
  else gl_signature_format(&k->sig, s, sizeof s);
  lua_pushfstring(L, "gpulua.Kernel(%s(%s))", k->name, s);
  return 1;
}

static int m_index(lua_State *L) {
  gl_module *m = gl_checkudata(L, 1, GL_MODULE_MT);
  const char *key = luaL_checkstring(L, 2);
  if (strcmp(key, "kernel") == 0) lua_pushcfunction(L, m_kernel);
  else if (strcmp(key, "name") == 0) lua_pushstring(L, m->name);
  else if (strcmp(key, "device") == 0 && m->dev) gl_push_device(L, m->dev);
  else lua_pushnil(L);
  return 1;
}

static int m_tostring(lua_State *L) {
  gl_module *m = gl_checkudata(L, 1, GL_MODULE_MT);
  lua_pushfstring(L, "gpulua.Module(%s on device %d)", m->name, m->dev ? m->dev->ordinal : -1);
  return 1;
}

void gl_open_kernel(lua_State *L) {
  if (gl_newmetatable(L, GL_MODULE_MT)) {
    lua_pushcfunction(L, m_index);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, m_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, m_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_pop(L, 1);
  if (gl_newmetatable(L, GL_KERNEL_MT)) {
    lua_pushcfunction(L, k_index);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, k_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, k_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_pop(L, 1);
}

/* Adds compile, load and kernels to the gpu table on the stack top. */
void gl_kernel_functions(lua_State *L) {
  lua_pushcfunction(L, l_compile);
  lua_setfield(L, -2, "compile");
  lua_pushcfunction(L, l_load);
  lua_setfield(L, -2, "load");
  push_builtins(L);
  lua_setfield(L, -2, "kernels");
}
