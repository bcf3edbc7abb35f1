/*
 * l_kernel.h -- what the kernel bindings share: the kernel userdata
 * (l_kernel.c), launches (l_launch.c), and sim host kernels
 * (l_hostkernel.c).
 */
#ifndef GPULUA_LUA_KERNEL_H
#define GPULUA_LUA_KERNEL_H

#include "bindings.h"
#include "ops.h"

/* A kernel userdata: a kernel of a module, or a built-in family
 * (gpu.kernels.NAME), whose variant for the arguments' dtype and device is
 * picked at each launch. */
typedef struct kernel_ud {
  gl_kernel *k;               /* a reference; NULL for a family */
  const gl_builtin *family;
  int first_ptr, nparams;     /* a family's first pointer parameter and parameter count */
  int has_host;               /* k:host(fn) gave a host implementation: uservalue 1 */
  int has_cost;               /* k:cost: 1 a constant (cost_us), 2 a function (uservalue 2) */
  double cost_us;
} kernel_ud;

kernel_ud *gll_check_kernel(lua_State *L, int idx);

/* Launch configurations (l_config.c): the cfg argument at idx, a gpu.config
 * (its own, never copied) or a table read into *read; an error names what
 * is wrong. */
const gl_launch_cfg *gll_launch_cfg_arg(lua_State *L, int idx, gl_launch_cfg *read);
int gll_is_config(lua_State *L, int idx);
int gll_module_kernel(lua_State *L);  /* m:kernel(name, signature) */
void gll_push_builtins(lua_State *L); /* the gpu.kernels table */
gl_module *gll_check_module(lua_State *L, int idx);

/* Sim host kernels: k:host(fn) routes the kernel's sim launches to the
 * bridge, which runs fn on the main Lua thread when the stream reaches the
 * launch. */
void gll_host_kernel_install(lua_State *L, kernel_ud *u);
/* Before a launch of a host kernel: the record of this launch (the
 * function, a copy of cfg, the arguments' shapes), written into the
 * kernel's hidden last parameter. */
void gll_host_kernel_prepare(lua_State *L, kernel_ud *u, int kidx, int cfg_idx, gl_slice *const *slices);
/* ... and after a launch that failed to queue: drop the record. */
void gll_host_kernel_abandon(lua_State *L, kernel_ud *u);
/* The launch just queued was captured into g: its record stays for every
 * replay and goes with the graph. 0, or -1 (out of memory: the caller
 * abandons it). */
struct gl_graph;
int gll_host_kernel_keep(kernel_ud *u, struct gl_graph *g);

#endif
