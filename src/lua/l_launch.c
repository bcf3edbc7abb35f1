/*
 * l_launch.c -- s:launch(k, cfg, ...): the configuration (a gpu.config, or
 * a table read into a gl_launch_cfg: l_config.c), the arguments checked
 * against the signature and written into the kernel's parameter buffer,
 * then the core's checks and queue (core/launch.c). Nothing is allocated
 * per launch on the cuda path.
 */
#include "l_kernel.h"

#include "driver_ext.h"
#include "graph.h"
#include "ops.h"

#include <string.h>

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
  gl_kernel *k; /* every dtype has its variant */
  if (gl_builtin_kernel(dev, b, x->dtype, &k) != 0) gl_raise(L, dev->rt);
  return k;
}

/* The kernel's cost (k:cost) for the sim's timing model: its number, or
 * what its function returns for the launch's cfg and arguments as given. */
static double launch_cost(lua_State *L, kernel_ud *u) {
  if (u->has_cost == 1) return u->cost_us;
  int top = lua_gettop(L);
  lua_getiuservalue(L, 2, 2);
  for (int i = 3; i <= top; i++) lua_pushvalue(L, i);
  lua_call(L, top - 2, 1);
  double us = lua_tonumber(L, -1);
  if (lua_type(L, -1) != LUA_TNUMBER || !(us >= 0 && us <= 1e12))
    luaL_error(L, "s:launch: the cost function of kernel '%s' (k:cost) returned %s: expected microseconds, a number "
                  "from 0", u->k ? u->k->name : "?", gl_given(L, -1));
  lua_settop(L, top);
  return us;
}

/* s:launch(k, cfg, ...) */
int gl_stream_launch(lua_State *L) {
  gl_stream *s = gl_check_stream(L, 1);
  kernel_ud *u = gl_check_kernel(L, 2);
  double cost_us = 0;
  if (u->has_cost && gl_drv_ext.launch_costed) { /* first: it runs Lua, which may do anything */
    cost_us = launch_cost(L, u);
    s = gl_check_stream(L, 1);
  }
  gl_launch_cfg cfg_read;
  const gl_launch_cfg *cfg = gl_launch_cfg_arg(L, 3, &cfg_read); /* a prepared gpu.config, or a table read now */
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
  if (gl_launch_check_limits(k, dev, cfg) != 0) return gl_raise(L, rt);

  /* arguments: check each, write it into the parameter buffer, gather the slices' runs */
  gl_launch_args args;
  gl_launch_args_init(&args, s);
  args.cost_us = cost_us;
  for (int i = 0; i < k->sig.n; i++) {
    const gl_param *p = &k->sig.p[i];
    int idx = 4 + i;
    if (p->is_ptr) {
      gl_slice *x = gl_test_slice(L, idx);
      if (!x) return arg_error(L, k, "s:launch: kernel '%s' (%s): argument %d expected a slice (%s%s*), got %s", i, p, idx);
      if (!gl_launch_slice_usual(s, k, i, x) && gl_launch_check_slice(s, k, i, x) != 0) return gl_raise(L, rt);
      gl_launch_args_slice(&args, k, i, x);
      CUdeviceptr ptr = gl_slice_ptr(x);
      memcpy(k->params[i], &ptr, sizeof ptr);
    } else {
      args.slices[i] = NULL;
      const char *why = gl_dtype_encode(L, idx, (gl_dtype)p->dtype, k->params[i]);
      if (why)
        return luaL_error(L, "s:launch: kernel '%s': argument %d (%s): %s, got %s", k->name, i + 1,
                          gl_dtypes[p->dtype].name, why, gl_given(L, idx));
    }
  }
  int host = u->has_host && gl_drv_ext.func_set_host;
  if (host) gl_host_kernel_prepare(L, u, 2, 3, args.slices);
  gl_site site = GL_SITE(L);
  if (gl_launch(s, k, cfg, &args, &site) != 0) {
    if (host) gl_host_kernel_abandon(L, u);
    return gl_raise(L, rt);
  }
  if (host && rt->capture && gl_host_kernel_keep(u, rt->capture) != 0) {
    gl_host_kernel_abandon(L, u); /* the capture then fails at its end: the launch's record is gone */
    rt->capture->broken = 1;
    return luaL_error(L, "s:launch: out of host memory");
  }
  lua_pushvalue(L, 1); /* returned (cheaper than dropping the arguments) */
  return 1;
}
