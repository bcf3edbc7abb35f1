/*
 * l_launch.c -- s:launch(k, cfg, ...): what needs Lua first (the kernel's
 * cost function, the configuration: a gpu.config or a table read into a
 * gl_launch_cfg, l_config.c; a built-in family's variant; each argument as
 * a slice or its value encoded), into a launch request on the C stack, then
 * one core call that checks and queues it (gl_launch_submit, core/launch.c).
 * Nothing is allocated per launch on the cuda path.
 */
#include "l_kernel.h"

#include "driver_ext.h"
#include "graph.h"
#include "ops.h"

#include <string.h>

/* The built-in family's variant for the dtype of the first pointer argument. */
static gl_kernel *pick_variant(lua_State *L, kernel_ud *u, gl_device *dev, int nargs) {
  const gl_builtin *b = u->family;
  gl_slice *x = u->first_ptr >= 0 && u->first_ptr < nargs ? gll_test_slice(L, 4 + u->first_ptr) : NULL;
  if (!x)
    luaL_error(L, "s:launch: built-in kernel '%s' (%s) expects a slice as argument %d", b->name, b->signature,
               u->first_ptr + 1);
  gll_check_slice_alive(L, x, u->first_ptr + 1);
  gl_kernel *k; /* every dtype has its variant */
  if (gl_builtin_kernel(dev, b, x->dtype, &k) != 0) gll_raise(L, dev->rt);
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
                  "from 0", u->k ? u->k->name : "?", gll_given(L, -1));
  lua_settop(L, top);
  return us;
}

/* The arguments from stack index 4 into r, each as a slice or its value
 * encoded; the first that is neither is left to r->bad (the core names it
 * in its turn among the checks). */
static void take_args(lua_State *L, gl_launch_req *r) {
  const gl_kernel *k = r->k;
  for (int i = 0; i < k->sig.n; i++) {
    const gl_param *p = &k->sig.p[i];
    int idx = 4 + i;
    if (p->is_ptr) {
      if (!(r->slices[i] = gll_test_slice(L, idx))) {
        r->bad = i;
        r->why = NULL;
        r->given = gll_given(L, idx);
        return;
      }
    } else {
      r->slices[i] = NULL;
      memset(r->values[i], 0, sizeof r->values[i]); /* the slot's bytes past the dtype's too: one store */
      const char *why = gll_dtype_encode(L, idx, (gl_dtype)p->dtype, r->values[i]);
      if (why) {
        r->bad = i;
        r->why = why;
        r->given = gll_given(L, idx);
        return;
      }
    }
  }
}

static int keep_host_record(void *u, struct gl_graph *g) { return gll_host_kernel_keep(u, g); }

/* s:launch(k, cfg, ...) */
int gll_stream_launch(lua_State *L) {
  gl_stream *s = gll_check_stream(L, 1);
  kernel_ud *u = gll_check_kernel(L, 2);
  gl_launch_req r; /* its arrays are written as far as they are read, never cleared */
  r.call = "s:launch";
  r.cost_us = 0;
  if (u->has_cost && gld_drv_ext.model_name) { /* a timing model runs; first: it runs Lua, which may do anything */
    r.cost_us = launch_cost(L, u);
    s = gll_check_stream(L, 1);
  }
  gl_launch_cfg cfg_read;
  r.cfg = gll_launch_cfg_arg(L, 3, &cfg_read); /* a prepared gpu.config, or a table read now */
  r.s = s;
  r.nargs = lua_gettop(L) - 3;
  r.k = u->family ? pick_variant(L, u, s->dev, r.nargs) : u->k;
  r.has_host = u->has_host;
  r.bad = -1;
  r.captured = NULL;
  if (r.k && r.nargs == r.k->sig.n) take_args(L, &r);
  int host = u->has_host && gld_drv_ext.func_set_host && r.k && r.nargs == r.k->sig.n && r.bad < 0;
  if (host) { /* the launch's record, in the kernel's hidden parameter before the queue reads it */
    gll_host_kernel_prepare(L, u, 2, 3, r.slices);
    r.captured = keep_host_record;
    r.captured_arg = u;
  }
  gl_site site = GL_SITE(L);
  r.site = &site;
  int rc = gl_launch_submit(&r);
  if (rc != 0) {
    gl_runtime *rt = s->dev->rt;
    if (host) gll_host_kernel_abandon(L, u);
    if (rc == GL_REFUSED) return luaL_error(L, "%s", gl_error_message(rt)); /* as the arguments' own errors */
    return gll_raise(L, rt);
  }
  lua_pushvalue(L, 1); /* returned (cheaper than dropping the arguments) */
  return 1;
}
