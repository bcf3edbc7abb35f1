/*
 * l_module.c -- modules: gpu.compile (NVRTC with the disk cache), gpu.load
 * (.cu, .ptx, .cubin, .fatbin), module userdata and m:global (m:kernel is
 * in l_kernel.c). A module userdata holds a reference to its core module, which
 * is unloaded once its last reference is gone and its launches have
 * finished (core/module.h): its finalizer never waits.
 */
#include "bindings.h"
#include "l_kernel.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"

gl_module *gll_check_module(lua_State *L, int idx) {
  gl_module **u = gll_testudata(L, idx, &gll_module_type);
  if (!u) luaL_typeerror(L, idx, "gpulua.Module");
  if (!*u) luaL_error(L, "gpulua.Module has been unloaded");
  GL_NOT_IN_HOST_KERNEL(L, "m:");
  return *u;
}

static void push_module(lua_State *L, gl_module *m) {
  gl_module **u = gll_newudata(L, sizeof *u, 0, &gll_module_type);
  *u = m; /* takes the caller's reference */
}

/* opts.device: a device or an ordinal (default 0), healthy. */
static gl_device *opt_device(lua_State *L, const char *fname, int opts) {
  gl_device *d = NULL;
  if (lua_isnoneornil(L, opts)) {
    d = gll_open_device(L, 0);
  } else {
    lua_getfield(L, opts, "device");
    if (lua_isnil(L, -1)) {
      d = gll_open_device(L, 0);
    } else if (lua_isinteger(L, -1)) {
      lua_Integer o = lua_tointeger(L, -1);
      int n = gll_rt(L)->ndev;
      if (o < 0 || o >= n)
        luaL_error(L, "%s: option 'device': ordinal %I is out of range (%s has %d device%s)", fname, (LUAI_UACINT)o,
                   gld_backend_name, n, n == 1 ? "" : "s");
      d = gll_open_device(L, (int)o);
    } else if (gll_testudata(L, -1, &gll_device_type)) {
      d = gll_check_device(L, -1);
    } else {
      luaL_error(L, "%s: option 'device' expected a device or a device ordinal, got %s", fname, gll_given(L, -1));
    }
    lua_pop(L, 1);
  }
  if (gl_device_check(d) != 0) gll_raise(L, d->rt);
  return d;
}

/* opts.options: a list of strings, into opts[] (they stay reachable from
 * the table); returns their number. */
static int opt_compile_options(lua_State *L, const char *fname, const char *name, int opts_idx, const char **opts) {
  if (lua_isnoneornil(L, opts_idx)) return 0;
  if (lua_getfield(L, opts_idx, "options") == LUA_TNIL) {
    lua_pop(L, 1);
    return 0;
  }
  if (!lua_istable(L, -1)) luaL_error(L, "%s: option 'options' expected a list of strings, got %s", fname, gll_given(L, -1));
  lua_Integer len = luaL_len(L, -1); /* __len may say anything: no cast before the check */
  if (len < 0 || len > GL_COMPILE_MAX_OPTIONS)
    luaL_error(L, "%s: %s: at most %d options, got a list of length %I", fname, name, GL_COMPILE_MAX_OPTIONS, len);
  int n = (int)len;
  for (int i = 1; i <= n; i++) {
    lua_geti(L, -1, i);
    if (lua_type(L, -1) != LUA_TSTRING)
      luaL_error(L, "%s: %s: option %d expected a string, got %s", fname, name, i, gll_given(L, -1));
    opts[i - 1] = lua_tostring(L, -1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1); /* the list stays reachable from the options table */
  return n;
}

static void load_image(lua_State *L, gl_device *dev, void *img, size_t len, const char *what, const char *name) {
  gl_module *m;
  int rc = gl_module_load(dev, img, len, what, name, &m);
  free(img);
  if (rc != 0) gll_raise(L, dev->rt);
  push_module(L, m);
}

static const char *const compile_options[] = {"name", "options", "device", NULL};

/* gpu.compile(source, {name =, options =, device =}) */
int gll_gpu_compile(lua_State *L) {
  GL_NOT_IN_HOST_KERNEL(L, "gpu.");
  size_t len;
  const char *src = luaL_checklstring(L, 1, &len);
  gll_check_options(L, 2, "gpu.compile", compile_options);
  gl_device *dev = opt_device(L, "gpu.compile", 2);
  const char *name = "kernel.cu";
  if (!lua_isnoneornil(L, 2)) {
    lua_getfield(L, 2, "name");
    if (!lua_isnil(L, -1)) {
      if (lua_type(L, -1) != LUA_TSTRING)
        return luaL_error(L, "gpu.compile: option 'name' expected a string, got %s", gll_given(L, -1));
      name = lua_tostring(L, -1);
    }
    lua_pop(L, 1); /* the name stays reachable from the options table */
  }
  const char *opts[GL_COMPILE_MAX_OPTIONS];
  int nopts = opt_compile_options(L, "gpu.compile", name, 2, opts);
  void *img;
  size_t n;
  if (gl_compile(dev, "gpu.compile", name, src, len, opts, nopts, &img, &n) != 0) return gll_raise(L, dev->rt);
  load_image(L, dev, img, n, "gpu.compile", name);
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

static const char *const load_options[] = {"device", "options", NULL};

/* gpu.load(path, {device =, options =}) */
int gll_gpu_load(lua_State *L) {
  GL_NOT_IN_HOST_KERNEL(L, "gpu.");
  const char *path = luaL_checkstring(L, 1);
  gll_check_options(L, 2, "gpu.load", load_options);
  gl_device *dev = opt_device(L, "gpu.load", 2);
  int is_cu = ends_with(path, ".cu"), is_ptx = ends_with(path, ".ptx");
  if (!is_cu && !is_ptx && !ends_with(path, ".cubin") && !ends_with(path, ".fatbin"))
    return luaL_error(L, "gpu.load: %s: expected a .cu, .ptx, .cubin or .fatbin file", path);
  const char *opts[GL_COMPILE_MAX_OPTIONS];
  int nopts = is_cu ? opt_compile_options(L, "gpu.load", path, 2, opts) : 0;
  size_t len;
  char *data = read_file(L, path, &len);
  if (is_cu) {
    void *img;
    size_t n;
    int rc = gl_compile(dev, "gpu.load", path, data, len, opts, nopts, &img, &n);
    free(data);
    if (rc != 0) return gll_raise(L, dev->rt);
    data = img;
    len = n;
  } else if (len == 0) {
    free(data);
    return luaL_error(L, "gpu.load: %s is empty", path);
  }
  load_image(L, dev, data, len, "gpu.load", path);
  return 1;
}

/* m:global(name [, dtype]): a slice over the module's variable (dtype
 * default u8), whose memory is the module's. */
int gll_module_global(lua_State *L) {
  gl_module *m = gll_check_module(L, 1);
  const char *name = luaL_checkstring(L, 2);
  gl_dtype dt = lua_isnoneornil(L, 3) ? GL_U8 : gll_check_dtype(L, 3);
  gl_slice *x = gll_newudata(L, sizeof(gl_slice), 0, &gll_slice_type);
  gl_site site = GL_SITE(L);
  if (gl_module_global(m, name, dt, "m:global", &site, x) != 0) return gll_raise(L, m->dev->rt);
  return 1;
}

/* __gc, through gll_release (a module has no method of its own to release it) */
static gl_runtime *m_held(void *o) {
  gl_module **u = o;
  return *u ? (*u)->dev->rt : NULL;
}

static void m_collect(lua_State *L, void *o) {
  (void)L;
  gl_module **u = o;
  gl_module_unref(*u); /* never waits: unloaded once its launches finish */
  *u = NULL;
}

static const gll_release_ops module_release = {.type = &gll_module_type, .held = m_held, .collect = m_collect};

int gll_module_gc(lua_State *L) { return gll_release(L, &module_release, GL_RELEASE_GC); }

int gll_module_field(lua_State *L) {
  gl_module **u = gll_checkudata(L, 1, &gll_module_type);
  const char *key = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : "";
  int name = strcmp(key, "name") == 0, device = strcmp(key, "device") == 0;
  if (!name && !device) return 0;
  if (!*u) lua_pushnil(L); /* released: its finalizer ran */
  else if (name) lua_pushstring(L, (*u)->name);
  else gll_push_device(L, (*u)->dev);
  return 1;
}

int gll_module_tostring(lua_State *L) {
  gl_module **u = gll_checkudata(L, 1, &gll_module_type);
  if (!*u) lua_pushliteral(L, "gpulua.Module (unloaded)");
  else lua_pushfstring(L, "gpulua.Module(%s on device %d)", (*u)->name, (*u)->dev->ordinal);
  return 1;
}
