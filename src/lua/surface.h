/*
 * surface.h -- the Lua surface of gpulua, registered from one table
 * (l_surface.c): the functions of the `gpu` table, and for each object type
 * its methods, the fields its __index serves, its metamethods and its
 * release. Every C function a script can call is declared here; each is
 * defined in the file of its type (l_stream.c, l_slice.c, ...).
 *
 * Needs only Lua's headers: a C test reads the table through it.
 */
#ifndef GPULUA_LUA_SURFACE_H
#define GPULUA_LUA_SURFACE_H

#include <lauxlib.h>
#include <lua.h>

/* One object type, registered once per state (as liolib's createmeta,
 * l_types.c): the metatable (named `name`, found by the type's address), a
 * methods table as __index's upvalue, fields read by `field`, the
 * metamethods. The names a script can use on an object (its methods, the
 * release method, its fields) are those of `methods`, `release_method` and
 * `fields`: messages and the REPL's completion (gpulua_object_names) list
 * them from there. */
typedef struct gll_type {
  const char *name;           /* the metatable's __name: "gpulua.Stream" */
  const luaL_Reg *methods;    /* NULL-terminated; may be NULL */
  const char *const *fields;  /* the names `field` serves, NULL-terminated, in the order messages list them;
                                 may be NULL (none) */
  int (*field)(lua_State *L); /* the field of the object at 1 named by the key at 2 (called from the
                                 type's __index, whose upvalue 1 is the methods table: gll_push_methods
                                 lists them): pushes it and returns 1 (nil for a released object), or
                                 returns 0: no such field, an error naming the key, the fields and the
                                 methods */
  const luaL_Reg *meta;       /* metamethods other than __index; may be NULL */
  lua_CFunction release;      /* a closeable handle: its method, __gc and __close (gll_release_how as upvalue 1) */
  const char *release_method; /* that method's name: "close", "free" */
  const char *hint;           /* what to say of a number key (x[1]), or NULL */
  int own_methods;            /* each object gets its own metatable whose __index is a table of the
                                 methods (streams, graphs: the receivers of the hot calls), so that
                                 s:launch is a table lookup rather than a call of a C __index; its
                                 fields still go through `field` (gll_newudata) */
} gll_type;

enum { GL_NTYPES = 10 };

extern const gll_type gll_device_type, gll_stream_type, gll_event_type, gll_slice_type, gll_host_type,
    gll_module_type, gll_kernel_type, gll_config_type, gll_graph_type, gll_comm_type;

/* Every type, in the order their metatables are made. */
extern const gll_type *const gll_types[GL_NTYPES];

/* The `gpu` table: its functions, and its values (`version`, `kernels`) as
 * entries with a NULL function, which luaopen_gpulua sets. */
extern const luaL_Reg gll_gpu_lib[];

/* package.preload["gpulua.internal"]: the C helpers of gpulua's own Lua
 * modules (lua/gpulua), not part of the documented API. */
extern const luaL_Reg gll_internal_lib[];

/* ---- gpu.* ---------------------------------------------------------------- */
int gll_gpu_backend(lua_State *L);   /* l_gpu.c */
int gll_gpu_count(lua_State *L);
int gll_gpu_device(lua_State *L);
int gll_gpu_sync(lua_State *L);
int gll_gpu_policy(lua_State *L);
int gll_gpu_peer(lua_State *L);
int gll_gpu_clock(lua_State *L);
int gll_gpu_sim_model(lua_State *L);
int gll_gpu_calibrate(lua_State *L);
int gll_host_new(lua_State *L);          /* l_hostbuf.c: gpu.host */
int gll_host_map(lua_State *L);          /* l_hostbuf.c: gpu.map */
int gll_gpu_compile(lua_State *L);   /* l_module.c */
int gll_gpu_spawn(lua_State *L);     /* l_task.c */
int gll_gpu_loop(lua_State *L);
int gll_gpu_poll(lua_State *L);      /* l_after.c */
int gll_gpu_load(lua_State *L);
int gll_gpu_config(lua_State *L);    /* l_config.c */
int gll_gpu_comm(lua_State *L);      /* l_comm.c */
int gll_trace(lua_State *L);         /* l_trace.c: gpu.trace */
int gll_timeline(lua_State *L);      /* l_trace.c: gpu.timeline */

/* ---- gpulua.Device (l_device.c) -------------------------------------------- */
int gll_dev_stream(lua_State *L);        /* l_stream.c */
int gll_dev_alloc(lua_State *L);         /* l_slice.c */
int gll_dev_zeros(lua_State *L);         /* l_slice.c */
int gll_device_sync(lua_State *L);
int gll_device_free_memory(lua_State *L);
int gll_device_field(lua_State *L);
int gll_device_tostring(lua_State *L);

/* ---- gpulua.Stream (l_stream.c) -------------------------------------------- */
int gll_stream_record(lua_State *L);     /* l_event.c */
int gll_stream_copy(lua_State *L);       /* l_copy.c */
int gll_stream_fill(lua_State *L);       /* l_copy.c */
int gll_stream_launch(lua_State *L);     /* l_launch.c */
int gll_stream_capture(lua_State *L);    /* l_graph.c */
int gll_stream_gemm(lua_State *L);       /* l_blas.c */
int gll_stream_after(lua_State *L);      /* l_after.c */
int gll_stream_await(lua_State *L);      /* l_task.c */
int gll_stream_wait(lua_State *L);
int gll_stream_join(lua_State *L);
int gll_stream_fork(lua_State *L);
int gll_stream_sync(lua_State *L);
int gll_stream_query(lua_State *L);
int gll_stream_field(lua_State *L);
int gll_stream_tostring(lua_State *L);
int gll_stream_release(lua_State *L);

/* ---- gpulua.Event (l_event.c) ---------------------------------------------- */
int gll_event_sync(lua_State *L);
int gll_event_query(lua_State *L);
int gll_event_elapsed(lua_State *L);
int gll_event_await(lua_State *L);
int gll_event_gc(lua_State *L);
int gll_event_tostring(lua_State *L);

/* ---- gpulua.Slice (l_slice.c) ---------------------------------------------- */
int gll_slice_view(lua_State *L);
int gll_slice_split(lua_State *L);
int gll_slice_read(lua_State *L);
int gll_slice_field(lua_State *L);
int gll_slice_len(lua_State *L);
int gll_slice_tostring(lua_State *L);
int gll_slice_release(lua_State *L);

/* ---- gpulua.HostBuffer (l_hostbuf.c) --------------------------------------- */
int gll_hostbuf_totable(lua_State *L);
int gll_hostbuf_fill(lua_State *L);
int gll_hostbuf_view(lua_State *L);
int gll_hostbuf_read_from(lua_State *L);
int gll_hostbuf_write_to(lua_State *L);
int gll_hostbuf_field(lua_State *L);
int gll_hostbuf_newindex(lua_State *L);
int gll_hostbuf_len(lua_State *L);
int gll_hostbuf_tostring(lua_State *L);
int gll_hostbuf_release(lua_State *L);

/* ---- gpulua.Module (l_module.c) -------------------------------------------- */
int gll_module_kernel(lua_State *L);     /* l_kernel.c */
int gll_module_global(lua_State *L);
int gll_module_field(lua_State *L);
int gll_module_gc(lua_State *L);
int gll_module_tostring(lua_State *L);

/* ---- gpulua.Kernel (l_kernel.c) -------------------------------------------- */
int gll_kernel_host(lua_State *L);
int gll_kernel_cost(lua_State *L);
int gll_kernel_field(lua_State *L);
int gll_kernel_gc(lua_State *L);
int gll_kernel_tostring(lua_State *L);

/* ---- gpulua.Config (l_config.c) -------------------------------------------- */
int gll_config_field(lua_State *L);
int gll_config_newindex(lua_State *L);
int gll_config_tostring(lua_State *L);

/* ---- gpulua.Graph (l_graph.c) ---------------------------------------------- */
int gll_graph_launch(lua_State *L);
int gll_graph_update(lua_State *L);
int gll_graph_field(lua_State *L);
int gll_graph_tostring(lua_State *L);
int gll_graph_release(lua_State *L);

/* ---- gpulua.Comm (l_comm.c) ------------------------------------------------ */
int gll_comm_all_reduce(lua_State *L);
int gll_comm_broadcast(lua_State *L);
int gll_comm_reduce(lua_State *L);
int gll_comm_all_gather(lua_State *L);
int gll_comm_reduce_scatter(lua_State *L);
int gll_comm_field(lua_State *L);
int gll_comm_send(lua_State *L); /* l_comm_p2p.c */
int gll_comm_recv(lua_State *L);
int gll_comm_all_to_all(lua_State *L);
int gll_comm_barrier(lua_State *L);
int gll_comm_tostring(lua_State *L);
int gll_comm_release(lua_State *L);

/* ---- gpulua.internal (l_internal.c) ---------------------------------------- */
int gll_internal_given(lua_State *L);
int gll_internal_isatty(lua_State *L);
int gll_internal_peek(lua_State *L);
int gll_internal_contents(lua_State *L);
int gll_internal_dtype_names(lua_State *L);

#endif
