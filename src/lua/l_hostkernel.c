/*
 * l_hostkernel.c -- sim host kernels: the bridge between a sim stream that
 * reaches the launch of a kernel given with k:host(fn) and the Lua function.
 *
 * A launch carries its own record (the function, its cfg, the arguments'
 * dtypes and counts) in the kernel's hidden last parameter, which the sim
 * copies at launch; the worker that reaches it asks the main (Lua) thread to
 * run it (driver_ext.h: on_main), where the record's function runs on the state's
 * host-kernel thread, in protected mode, with pointer arguments as host
 * views of the slices' memory that expire when it returns. So a kernel
 * object collected, or given another function, while its launches are
 * queued changes nothing for them.
 */
#include "l_kernel.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "driver_ext.h"

static const char thread_key = 'T';

/* The thread running a host kernel now (NULL between them), and the hook an
 * interrupt set on it (gpulua_sethook_host_kernel): read and written by a
 * signal handler, which may run on another thread (a sim worker), so atomic
 * (lock-free pointers: safe in a signal handler). */
static _Atomic(lua_State *) running_thread = NULL;
static _Atomic(lua_Hook) interrupt_hook = NULL;

void gpulua_sethook_host_kernel(lua_Hook f, int mask, int count) {
  lua_State *T = atomic_load(&running_thread);
  if (!T) return;
  atomic_store(&interrupt_hook, f);
  lua_sethook(T, f, mask, count); /* as lua.c's handler: safe in a signal handler */
}

typedef struct host_launch {
  lua_State *T;          /* the state's host-kernel thread */
  gl_runtime *rt;
  int fn_ref, cfg_ref;   /* the function and a copy of the cfg table, in the registry */
  int name;              /* the kernel's name, interned (for messages) */
  int launched_at;       /* the launch's script location, interned */
  int nargs;
  int kept;              /* captured into a graph: run at each replay, dropped with the graph */
  int ordinal;           /* its device's */
  struct {
    gl_dtype dt;
    size_t count;
    int is_ptr, is_const, is_void; /* is_void: a void* of the signature (dt: the slice's) */
  } arg[GL_MAX_PARAMS];
} host_launch;

/* The host function's call, in protected mode: making the argument views can
 * raise (out of memory), and an error must not unwind through the sim. */
static int call_host_kernel(lua_State *L) {
  const gld_host_launch *l = lua_touserdata(L, 1);
  host_launch *hl = lua_touserdata(L, 2);
  lua_settop(L, 0);
  luaL_checkstack(L, hl->nargs + 8, "too many kernel arguments");
  lua_rawgeti(L, LUA_REGISTRYINDEX, hl->fn_ref);
  lua_rawgeti(L, LUA_REGISTRYINDEX, hl->cfg_ref);
  for (int i = 0; i < hl->nargs; i++) {
    if (hl->arg[i].is_ptr) {
      void *p = (void *)(uintptr_t)*(unsigned long long *)l->params[i];
      gl_hostbuf *h = gll_newudata(L, sizeof *h, 0, &gll_host_type);
      if (gl_hostbuf_borrow(hl->rt, hl->arg[i].dt, p, hl->arg[i].count, hl->arg[i].is_const, h) != 0)
        gll_raise(L, hl->rt);
    } else {
      gll_dtype_push(L, hl->arg[i].dt, l->params[i]);
    }
  }
  lua_call(L, 1 + hl->nargs, 0);
  return 0;
}

static void drop(host_launch *hl) {
  luaL_unref(hl->T, LUA_REGISTRYINDEX, hl->fn_ref);
  luaL_unref(hl->T, LUA_REGISTRYINDEX, hl->cfg_ref);
  free(hl);
}

/* Runs on the main thread when a sim stream reaches the launch. */
static int run_host_kernel(void *user, const gld_host_launch *l) {
  (void)user;
  host_launch *hl = *(host_launch **)l->params[l->nparams - 1];
  lua_State *T = hl->T;
  gl_runtime *rt = hl->rt;
  int top = lua_gettop(T);
  if (!lua_checkstack(T, 8)) return 1;
  /* no finalizers until the call is over: one might wait for this very
   * stream (it cannot finish before this kernel returns) */
  int gc_was_running = lua_gc(T, LUA_GCISRUNNING);
  if (gc_was_running) lua_gc(T, LUA_GCSTOP);
  gl_host_kernel_enter();
  lua_pushcfunction(T, call_host_kernel);
  lua_pushlightuserdata(T, (void *)l);
  lua_pushlightuserdata(T, hl);
  atomic_store(&running_thread, T);
  int status = lua_pcall(T, 2, 0, 0);
  atomic_store(&running_thread, NULL);
  /* an interrupt that came as the kernel returned must not stop the next one */
  lua_Hook stop = atomic_load(&interrupt_hook);
  if (stop && lua_gethook(T) == stop) lua_sethook(T, NULL, 0, 0);
  gl_host_kernel_leave();
  int rc = 0;
  if (status != LUA_OK) {
    gl_buf_reset(&rt->host_kernel_error);
    gl_buf_printf(&rt->host_kernel_error, "host kernel '%s' (launched at %s) raised: %s", gl_loc_text(rt, hl->name),
                  gl_loc_text(rt, hl->launched_at), lua_tostring(T, -1) ? lua_tostring(T, -1) : "(an error object)");
    rt->host_kernel_error_dev = hl->ordinal;
    rc = 1;
  }
  lua_settop(T, top);
  gl_hostmem_end_borrows(rt); /* the views are only valid during the call */
  if (gc_was_running) lua_gc(T, LUA_GCRESTART);
  if (!hl->kept) drop(hl);
  return rc;
}

/* Runs on the main thread for a launch that a fault on its context skipped:
 * the record is released as if it had run. */
static int skip_host_kernel(void *user, const gld_host_launch *l) {
  (void)user;
  host_launch *hl = *(host_launch **)l->params[l->nparams - 1];
  if (!hl->kept) drop(hl);
  return 0;
}

/* What a launch's arguments are, for a backend that compares the kernel's
 * device code with its host function (driver_ext.h): read from the launch's
 * record, on the backend's thread (the record is not written after the
 * launch is queued). */
static void describe_host_kernel(void *user, const gld_host_launch *l, gld_host_arg *args) {
  (void)user;
  const host_launch *hl = *(host_launch **)l->params[l->nparams - 1];
  for (int i = 0; i < hl->nargs; i++) {
    if (!hl->arg[i].is_ptr) continue;
    const gl_dtype_info *d = &gl_dtypes[hl->arg[i].dt];
    args[i] = (gld_host_arg){.ptr = 1, .writes = !hl->arg[i].is_const,
                             .type = hl->arg[i].is_void ? "void" : d->name,
                             .kind = hl->arg[i].dt == GL_BF16 ? 'b' : d->kind, .size = d->size,
                             .count = hl->arg[i].count};
  }
}

/* The state's host-kernel thread, made at the first k:host. */
static lua_State *host_thread(lua_State *L) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &thread_key) == LUA_TTHREAD) {
    lua_State *T = lua_tothread(L, -1);
    lua_pop(L, 1);
    return T;
  }
  lua_pop(L, 1);
  lua_State *T = lua_newthread(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &thread_key);
  return T;
}

void gll_host_kernel_install(lua_State *L, kernel_ud *u) {
  gl_kernel *k = u->k;
  host_thread(L);
  size_t sizes[GL_MAX_PARAMS + 1];
  for (int i = 0; i < k->sig.n; i++) sizes[i] = gl_param_size(&k->sig.p[i]);
  sizes[k->sig.n] = sizeof(void *); /* the launch's record */
  gld_drv_ext.set_main_thread();
  CUresult r = gld_drv_ext.func_set_host(k->f, run_host_kernel, skip_host_kernel, NULL, 1, k->sig.n + 1, sizes,
                                         describe_host_kernel);
  if (r != CUDA_SUCCESS && gl_fail_cu(k->dev->rt, k->dev, r, "k:host", NULL) != 0) gll_raise(L, k->dev->rt);
}

/* A copy of the launch's cfg table at idx (already checked by the launch):
 * grid, block (their tables copied too) and shared, so that the host kernel
 * sees the configuration it was launched with, whatever the script does to
 * the table before the stream reaches the launch. */
static void push_cfg_copy(lua_State *L, int idx) {
  static const char *const fields[] = {"grid", "block", "shared"};
  lua_createtable(L, 0, 3);
  for (int f = 0; f < 3; f++) {
    if (lua_getfield(L, idx, fields[f]) == LUA_TTABLE) {
      lua_Integer n = luaL_len(L, -1); /* 1 to 3: the launch checked */
      lua_createtable(L, (int)n, 0);
      for (lua_Integer i = 1; i <= n; i++) {
        lua_geti(L, -2, i);
        lua_seti(L, -2, i);
      }
      lua_remove(L, -2);
    }
    lua_setfield(L, -2, fields[f]);
  }
}

void gll_host_kernel_prepare(lua_State *L, kernel_ud *u, int kidx, int cfg_idx, gl_slice *const *slices) {
  gl_kernel *k = u->k;
  gl_runtime *rt = k->dev->rt;
  /* what may raise first, then the record: a raise never leaks it */
  lua_State *T = host_thread(L);
  gl_site site = GL_SITE(L);
  int at = gl_site_loc(rt, &site);
  lua_getiuservalue(L, kidx, 1);
  int fn_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  if (gll_is_config(L, cfg_idx)) lua_pushvalue(L, cfg_idx); /* immutable: the object itself */
  else push_cfg_copy(L, lua_absindex(L, cfg_idx));
  int cfg_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  host_launch *hl = malloc(sizeof *hl);
  if (!hl) {
    luaL_unref(L, LUA_REGISTRYINDEX, fn_ref);
    luaL_unref(L, LUA_REGISTRYINDEX, cfg_ref);
    luaL_error(L, "s:launch: out of host memory");
  }
  hl->T = T;
  hl->rt = rt;
  hl->fn_ref = fn_ref;
  hl->cfg_ref = cfg_ref;
  hl->name = k->name_id;
  hl->launched_at = at;
  hl->ordinal = k->dev->ordinal;
  hl->nargs = k->sig.n;
  hl->kept = 0;
  for (int i = 0; i < k->sig.n; i++) {
    hl->arg[i].is_ptr = k->sig.p[i].is_ptr;
    hl->arg[i].is_const = k->sig.p[i].is_const;
    hl->arg[i].is_void = k->sig.p[i].dtype < 0;
    hl->arg[i].dt = slices[i] ? slices[i]->dtype : (gl_dtype)k->sig.p[i].dtype;
    hl->arg[i].count = slices[i] ? slices[i]->count : 0;
  }
  memcpy(k->params[k->sig.n], &hl, sizeof hl);
}

void gll_host_kernel_abandon(lua_State *L, kernel_ud *u) {
  (void)L;
  host_launch *hl;
  memcpy(&hl, u->k->params[u->k->sig.n], sizeof hl);
  drop(hl);
}

static void drop_kept(void *hl) { drop(hl); }

int gll_host_kernel_keep(kernel_ud *u, gl_graph *g) {
  host_launch *hl;
  memcpy(&hl, u->k->params[u->k->sig.n], sizeof hl);
  if (gl_graph_add_cleanup(g, drop_kept, hl) != 0) return -1;
  hl->kept = 1;
  return 0;
}
