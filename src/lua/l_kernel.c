/*
 * l_kernel.c -- kernel userdata: m:kernel(name, signature), k:host(fn),
 * fields, and the built-in library gpu.kernels (a family per kernel, whose
 * variant is picked at launch from the first pointer argument's dtype).
 */
#include "l_kernel.h"

#include <stdio.h>
#include <string.h>

#include "driver_ext.h"

kernel_ud *gll_check_kernel(lua_State *L, int idx) {
  kernel_ud *u = gll_testudata(L, idx, &gll_kernel_type);
  if (!u) luaL_typeerror(L, idx, "gpulua.Kernel");
  return u;
}

static kernel_ud *new_kernel_ud(lua_State *L) {
  return gll_newudata(L, sizeof(kernel_ud), 2, &gll_kernel_type);
}

/* m:kernel(name, signature) */
int gll_module_kernel(lua_State *L) {
  gl_module *m = gll_check_module(L, 1);
  const char *name = luaL_checkstring(L, 2);
  const char *sigs = luaL_checkstring(L, 3);
  if (strlen(name) > GL_KERNEL_NAME_MAX) return luaL_argerror(L, 2, "kernel name too long");
  gl_signature sig;
  char err[256];
  if (gl_signature_parse(sigs, &sig, err, sizeof err) != 0)
    return luaL_error(L, "m:kernel: bad signature '%s': %s", sigs, err);
  kernel_ud *u = new_kernel_ud(L);
  gl_site site = GL_SITE(L);
  if (gl_kernel_new(m, name, &sig, &u->k, "m:kernel", &site) != 0) return gll_raise(L, m->dev->rt);
  return 1;
}

/* k:host(fn) */
int gll_kernel_host(lua_State *L) {
  kernel_ud *u = gll_checkudata(L, 1, &gll_kernel_type);
  GL_NOT_IN_HOST_KERNEL(L, "k:");
  luaL_checktype(L, 2, LUA_TFUNCTION);
  if (u->family || u->k->builtin)
    return luaL_error(L, "k:host: '%s' is a built-in kernel; its host implementation is part of gpulua",
                      u->family ? u->family->name : u->k->name);
  lua_pushvalue(L, 2);
  lua_setiuservalue(L, 1, 1);
  u->has_host = 1;
  if (gld_drv_ext.func_set_host) gll_host_kernel_install(L, u); /* a backend that runs host implementations */
  lua_settop(L, 1);
  return 1;
}

/* k:cost(us | function(cfg, ...) return us end | nil): the kernel's cost for
 * the sim's timing model (ignored elsewhere) */
int gll_kernel_cost(lua_State *L) {
  kernel_ud *u = gll_checkudata(L, 1, &gll_kernel_type);
  const gl_builtin *b = u->family ? u->family : u->k ? u->k->builtin : NULL;
  if (b)
    return luaL_error(L, "k:cost: '%s' is a built-in kernel: the sim's timing model costs it by the bytes it moves",
                      b->name);
  int t = lua_type(L, 2);
  if (t == LUA_TNUMBER) {
    double us = lua_tonumber(L, 2);
    if (!(us >= 0 && us <= 1e12)) /* NaN too */
      return luaL_error(L, "k:cost: expected microseconds (a number from 0), got %s", gll_given(L, 2));
    u->has_cost = 1;
    u->cost_us = us;
  } else if (t == LUA_TFUNCTION) {
    u->has_cost = 2;
  } else if (t == LUA_TNIL || t == LUA_TNONE) {
    u->has_cost = 0; /* no cost: a launch takes the model's launch_us alone */
  } else {
    return luaL_error(L, "k:cost: expected microseconds (a number), a function(cfg, ...) returning them, or nil, got %s",
                      gll_given(L, 2));
  }
  lua_settop(L, 2);
  if (t != LUA_TFUNCTION) lua_pushnil(L);
  lua_setiuservalue(L, 1, 2);
  lua_settop(L, 1);
  return 1;
}

/* __gc, through gll_release (a kernel has no method of its own to release it) */
static gl_runtime *k_held(void *o) {
  kernel_ud *u = o;
  return u->k ? u->k->dev->rt : NULL;
}

static void k_collect(lua_State *L, void *o) {
  (void)L;
  kernel_ud *u = o;
  gl_kernel_unref(u->k); /* queued host launches hold what they need (l_hostkernel.c) */
  u->k = NULL;
}

static const gll_release_ops kernel_release = {.type = &gll_kernel_type, .held = k_held, .collect = k_collect};

int gll_kernel_gc(lua_State *L) { return gll_release(L, &kernel_release, GL_RELEASE_GC); }

static void push_signature(lua_State *L, const kernel_ud *u) {
  if (u->family) {
    lua_pushstring(L, u->family->signature);
    return;
  }
  char s[GL_SIGNATURE_TEXT_MAX];
  gl_signature_format(&u->k->sig, s, sizeof s);
  lua_pushstring(L, s);
}

int gll_kernel_field(lua_State *L) {
  kernel_ud *u = gll_checkudata(L, 1, &gll_kernel_type);
  const char *key = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : "";
  const gl_builtin *b = u->family ? u->family : u->k ? u->k->builtin : NULL;
  int name = strcmp(key, "name") == 0, sig = strcmp(key, "signature") == 0, doc = strcmp(key, "doc") == 0;
  if (!name && !sig && !doc) return 0;
  if (!u->family && !u->k) lua_pushnil(L); /* released: its finalizer ran */
  else if (name) lua_pushstring(L, u->family ? u->family->name : u->k->name);
  else if (sig) push_signature(L, u);
  else if (b) lua_pushstring(L, b->doc);
  else lua_pushnil(L); /* doc: the built-ins' only */
  return 1;
}

int gll_kernel_tostring(lua_State *L) {
  kernel_ud *u = gll_checkudata(L, 1, &gll_kernel_type);
  if (!u->family && !u->k) {
    lua_pushliteral(L, "gpulua.Kernel (released)");
    return 1;
  }
  push_signature(L, u);
  lua_pushfstring(L, "gpulua.Kernel(%s(%s))", u->family ? u->family->name : u->k->name, lua_tostring(L, -1));
  return 1;
}

void gll_push_builtins(lua_State *L) {
  gl_runtime *rt = gll_rt(L);
  lua_createtable(L, 0, gl_nbuiltins);
  for (int i = 0; i < gl_nbuiltins; i++) {
    kernel_ud *u = new_kernel_ud(L);
    u->family = &gl_builtins[i];
    gl_signature shape; /* T resolved at launch */
    if (gl_builtin_signature(rt, u->family, GL_F32, &shape) != 0) gll_raise(L, rt);
    u->nparams = shape.n;
    u->first_ptr = -1;
    for (int j = 0; j < shape.n && u->first_ptr < 0; j++)
      if (shape.p[j].is_ptr) u->first_ptr = j;
    lua_setfield(L, -2, gl_builtins[i].name);
  }
}
