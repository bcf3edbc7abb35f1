/*
 * l_launch.c -- s:launch(k, cfg, ...): the configuration read into a
 * gl_launch_cfg, the arguments checked against the signature and written
 * into the kernel's parameter buffer, then the core's checks and queue
 * (core/launch.c). Nothing is allocated per launch on the cuda path.
 */
#include "l_kernel.h"

#include "ops.h"

#include <string.h>

static const char *const cfg_fields[] = {"grid", "block", "shared", NULL};

/* cfg.<field> (the value at vidx): a number or {x, y, z} of positive integers. */
static void dims(lua_State *L, int vidx, const char *field, unsigned out[3], int required) {
  out[0] = out[1] = out[2] = 1;
  int t = lua_type(L, vidx);
  if (t == LUA_TNIL) {
    if (required) luaL_error(L, "s:launch: cfg.%s is required (a number or {x, y, z})", field);
  } else if (t == LUA_TNUMBER || t == LUA_TTABLE) {
    int n = t == LUA_TNUMBER ? 1 : (int)luaL_len(L, vidx);
    if (n < 1 || n > 3) luaL_error(L, "s:launch: cfg.%s must have 1 to 3 dimensions, got %d", field, n);
    for (int i = 0; i < n; i++) {
      if (t == LUA_TTABLE) lua_geti(L, vidx, i + 1);
      else lua_pushvalue(L, vidx);
      int ok;
      lua_Integer v = lua_tointegerx(L, -1, &ok);
      if (!ok || v < 1 || v > 0xffffffffLL)
        luaL_error(L, "s:launch: cfg.%s%s%s must be a positive integer, got %s", field, t == LUA_TTABLE ? "." : "",
                   t == LUA_TTABLE ? (i == 0 ? "x" : i == 1 ? "y" : "z") : "", gl_given(L, -1));
      out[i] = (unsigned)v;
      lua_pop(L, 1);
    }
  } else {
    luaL_error(L, "s:launch: cfg.%s expected a number or {x, y, z}, got %s", field, gl_given(L, vidx));
  }
}

/* The cfg table at idx in one pass over its keys (the launch's hot path: no
 * lookup by name), each value into its slot; then the fields in a fixed
 * order, so the first error named does not depend on the table's layout. An
 * unknown key is an error naming it (gl_check_options). */
static void read_cfg(lua_State *L, int idx, gl_launch_cfg *c) {
  int base = lua_gettop(L);
  lua_settop(L, base + 3); /* slots: grid, block, shared */
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
    int f = strcmp(k, "grid") == 0 ? 0 : strcmp(k, "block") == 0 ? 1 : strcmp(k, "shared") == 0 ? 2 : -1;
    if (f < 0) {
      lua_settop(L, base);
      gl_check_options(L, idx, "s:launch: cfg", cfg_fields); /* raises */
    }
    lua_replace(L, base + 1 + f); /* the key stays on top for lua_next */
  }
  dims(L, base + 1, "grid", c->grid, 1);
  dims(L, base + 2, "block", c->block, 1);
  c->shared = 0;
  if (!lua_isnil(L, base + 3)) {
    int ok;
    lua_Integer shared = lua_tointegerx(L, base + 3, &ok);
    if (!ok || shared < 0 || shared > 0x7fffffff)
      luaL_error(L, "s:launch: cfg.shared must be a non-negative integer (bytes), got %s", gl_given(L, base + 3));
    c->shared = (unsigned)shared;
  }
  lua_settop(L, base);
}

static int arg_error(lua_State *L, const gl_kernel *k, const char *fmt, int i, const gl_param *p, int idx) {
  char sig[GL_SIGNATURE_TEXT_MAX];
  gl_signature_format(&k->sig, sig, sizeof sig);
  return luaL_error(L, fmt, k->name, sig, i + 1, p->is_const ? "const " : "", p->dtype < 0 ? "void" : gl_dtypes[p->dtype].name,
                    gl_given(L, idx));
}

/* The built-in family's variant for the dtype of the first pointer argument. */
static gl_kernel *pick_variant(lua_State *L, kernel_ud *u, gl_device *dev, int nargs) {
  const gl_builtin *b = u->family;
  gl_slice *x = u->first_ptr >= 0 && u->first_ptr < nargs ? gl_test_slice(L, 4 + u->first_ptr) : NULL;
  if (!x)
    luaL_error(L, "s:launch: built-in kernel '%s' (%s) expects a slice as argument %d", b->name, b->signature,
               u->first_ptr + 1);
  gl_check_slice_alive(L, x, u->first_ptr + 1);
  if (x->dtype != GL_F32 && x->dtype != GL_F64)
    luaL_error(L, "s:launch: built-in kernel '%s' works on f32 and f64 slices, got %s", b->name, gl_dtypes[x->dtype].name);
  gl_kernel *k;
  if (gl_builtin_kernel(dev, b, x->dtype, &k) != 0) gl_raise(L, dev->rt);
  return k;
}

/* s:launch(k, cfg, ...) */
int gl_stream_launch(lua_State *L) {
  gl_stream *s = gl_check_stream(L, 1);
  kernel_ud *u = gl_check_kernel(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  gl_device *dev = s->dev;
  gl_runtime *rt = dev->rt;
  int nargs = lua_gettop(L) - 3;
  gl_kernel *k = u->family ? pick_variant(L, u, dev, nargs) : u->k;
  if (!k) return luaL_error(L, "s:launch: the kernel has been released");
  if (nargs != k->sig.n) {
    char sig[GL_SIGNATURE_TEXT_MAX];
    gl_signature_format(&k->sig, sig, sizeof sig);
    return luaL_error(L, "s:launch: kernel '%s' (%s) takes %d argument%s, got %d", k->name, sig, k->sig.n,
                      k->sig.n == 1 ? "" : "s", nargs);
  }
  if (gl_launch_check_kernel(s, k, u->has_host) != 0) return gl_raise(L, rt);
  gl_launch_cfg cfg;
  read_cfg(L, 3, &cfg);
  if (gl_launch_check_limits(k, dev, &cfg) != 0) return gl_raise(L, rt);

  /* arguments: check every one, then write the parameter buffer */
  gl_slice *slices[GL_MAX_PARAMS];
  for (int i = 0; i < k->sig.n; i++) {
    const gl_param *p = &k->sig.p[i];
    int idx = 4 + i;
    slices[i] = NULL;
    if (p->is_ptr) {
      gl_slice *x = gl_test_slice(L, idx);
      if (!x) return arg_error(L, k, "s:launch: kernel '%s' (%s): argument %d expected a slice (%s%s*), got %s", i, p, idx);
      if (gl_launch_check_slice(s, k, i, x) != 0) return gl_raise(L, rt);
      slices[i] = x;
      CUdeviceptr ptr = gl_slice_ptr(x);
      memcpy(k->params[i], &ptr, sizeof ptr);
    } else {
      const char *why = gl_dtype_encode(L, idx, (gl_dtype)p->dtype, k->params[i]);
      if (why)
        return luaL_error(L, "s:launch: kernel '%s': argument %d (%s): %s, got %s", k->name, i + 1,
                          gl_dtypes[p->dtype].name, why, gl_given(L, idx));
    }
  }
  int host = u->has_host && gl_is_sim;
  if (host) gl_host_kernel_prepare(L, u, 2, 3, slices);
  gl_site site = GL_SITE(L);
  if (gl_launch(s, k, &cfg, slices, &site) != 0) {
    if (host) gl_host_kernel_abandon(L, u);
    return gl_raise(L, rt);
  }
  lua_settop(L, 1);
  return 1;
}
