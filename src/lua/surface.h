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
typedef struct gl_type {
  const char *name;           /* the metatable's __name: "gpulua.Stream" */
  const luaL_Reg *methods;    /* NULL-terminated; may be NULL */
  const char *const *fields;  /* the names `field` serves, NULL-terminated, in the order messages list them;
                                 may be NULL (none) */
  int (*field)(lua_State *L); /* the field of the object at 1 named by the key at 2 (called from the
                                 type's __index, whose upvalue 1 is the methods table: gl_push_methods
                                 lists them): pushes it and returns 1 (nil for a released object), or
                                 returns 0: no such field, an error naming the key, the fields and the
                                 methods */
  const luaL_Reg *meta;       /* metamethods other than __index; may be NULL */
  lua_CFunction release;      /* a closeable handle: its method, __gc and __close (gl_release_how as upvalue 1) */
  const char *release_method; /* that method's name: "close", "free" */
  const char *hint;           /* what to say of a number key (x[1]), or NULL */
  int own_methods;            /* each object gets its own metatable whose __index is a table of the
                                 methods (streams, graphs: the receivers of the hot calls), so that
                                 s:launch is a table lookup rather than a call of a C __index; its
                                 fields still go through `field` (gl_newudata) */
} gl_type;

enum { GL_NTYPES = 10 };

extern const gl_type gl_device_type, gl_stream_type, gl_event_type, gl_slice_type, gl_host_type,
    gl_module_type, gl_kernel_type, gl_config_type, gl_graph_type, gl_comm_type;

/* Every type, in the order their metatables are made. */
extern const gl_type *const gl_types[GL_NTYPES];

/* The `gpu` table: its functions, and its values (`version`, `kernels`) as
 * entries with a NULL function, which luaopen_gpulua sets. */
extern const luaL_Reg gl_gpu_lib[];

/* package.preload["gpulua.internal"]: the C helpers of gpulua's own Lua
 * modules (lua/gpulua), not part of the documented API. */
extern const luaL_Reg gl_internal_lib[];

/* ---- gpu.* ---------------------------------------------------------------- */
int gl_gpu_backend_lua(lua_State *L);   /* l_gpu.c */
int gl_gpu_count_lua(lua_State *L);
int gl_gpu_device_lua(lua_State *L);
int gl_gpu_sync_lua(lua_State *L);
int gl_gpu_policy_lua(lua_State *L);
int gl_gpu_peer_lua(lua_State *L);
int gl_gpu_clock_lua(lua_State *L);
int gl_gpu_sim_model_lua(lua_State *L);
int gl_gpu_calibrate_lua(lua_State *L);
int gl_host_new(lua_State *L);          /* l_hostbuf.c: gpu.host */
int gl_gpu_compile_lua(lua_State *L);   /* l_module.c */
int gl_gpu_load_lua(lua_State *L);
int gl_gpu_config_lua(lua_State *L);    /* l_config.c */
int gl_gpu_comm_lua(lua_State *L);      /* l_comm.c */
int gl_trace_lua(lua_State *L);         /* l_trace.c: gpu.trace */
int gl_timeline_lua(lua_State *L);      /* l_trace.c: gpu.timeline */

/* ---- gpulua.Device (l_device.c) -------------------------------------------- */
int gl_dev_stream(lua_State *L);        /* l_stream.c */
int gl_dev_alloc(lua_State *L);         /* l_slice.c */
int gl_dev_zeros(lua_State *L);         /* l_slice.c */
int gl_device_sync_lua(lua_State *L);
int gl_device_free_memory_lua(lua_State *L);
int gl_device_field_lua(lua_State *L);
int gl_device_tostring_lua(lua_State *L);

/* ---- gpulua.Stream (l_stream.c) -------------------------------------------- */
int gl_stream_record(lua_State *L);     /* l_event.c */
int gl_stream_copy(lua_State *L);       /* l_copy.c */
int gl_stream_fill(lua_State *L);       /* l_copy.c */
int gl_stream_launch(lua_State *L);     /* l_launch.c */
int gl_stream_capture(lua_State *L);    /* l_graph.c */
int gl_stream_gemm(lua_State *L);       /* l_blas.c */
int gl_stream_wait_lua(lua_State *L);
int gl_stream_join_lua(lua_State *L);
int gl_stream_fork_lua(lua_State *L);
int gl_stream_sync_lua(lua_State *L);
int gl_stream_query_lua(lua_State *L);
int gl_stream_field_lua(lua_State *L);
int gl_stream_tostring_lua(lua_State *L);
int gl_stream_release_lua(lua_State *L);

/* ---- gpulua.Event (l_event.c) ---------------------------------------------- */
int gl_event_sync_lua(lua_State *L);
int gl_event_query_lua(lua_State *L);
int gl_event_elapsed_lua(lua_State *L);
int gl_event_gc_lua(lua_State *L);
int gl_event_tostring_lua(lua_State *L);

/* ---- gpulua.Slice (l_slice.c) ---------------------------------------------- */
int gl_slice_view_lua(lua_State *L);
int gl_slice_split_lua(lua_State *L);
int gl_slice_read_lua(lua_State *L);
int gl_slice_field_lua(lua_State *L);
int gl_slice_len_lua(lua_State *L);
int gl_slice_tostring_lua(lua_State *L);
int gl_slice_release_lua(lua_State *L);

/* ---- gpulua.HostBuffer (l_hostbuf.c) --------------------------------------- */
int gl_hostbuf_totable_lua(lua_State *L);
int gl_hostbuf_fill_lua(lua_State *L);
int gl_hostbuf_view_lua(lua_State *L);
int gl_hostbuf_field_lua(lua_State *L);
int gl_hostbuf_newindex_lua(lua_State *L);
int gl_hostbuf_len_lua(lua_State *L);
int gl_hostbuf_tostring_lua(lua_State *L);
int gl_hostbuf_release_lua(lua_State *L);

/* ---- gpulua.Module (l_module.c) -------------------------------------------- */
int gl_module_kernel(lua_State *L);     /* l_kernel.c */
int gl_module_field_lua(lua_State *L);
int gl_module_gc_lua(lua_State *L);
int gl_module_tostring_lua(lua_State *L);

/* ---- gpulua.Kernel (l_kernel.c) -------------------------------------------- */
int gl_kernel_host_lua(lua_State *L);
int gl_kernel_cost_lua(lua_State *L);
int gl_kernel_field_lua(lua_State *L);
int gl_kernel_gc_lua(lua_State *L);
int gl_kernel_tostring_lua(lua_State *L);

/* ---- gpulua.Config (l_config.c) -------------------------------------------- */
int gl_config_field_lua(lua_State *L);
int gl_config_newindex_lua(lua_State *L);
int gl_config_tostring_lua(lua_State *L);

/* ---- gpulua.Graph (l_graph.c) ---------------------------------------------- */
int gl_graph_launch_lua(lua_State *L);
int gl_graph_update_lua(lua_State *L);
int gl_graph_field_lua(lua_State *L);
int gl_graph_tostring_lua(lua_State *L);
int gl_graph_release_lua(lua_State *L);

/* ---- gpulua.Comm (l_comm.c) ------------------------------------------------ */
int gl_comm_all_reduce_lua(lua_State *L);
int gl_comm_broadcast_lua(lua_State *L);
int gl_comm_reduce_lua(lua_State *L);
int gl_comm_all_gather_lua(lua_State *L);
int gl_comm_reduce_scatter_lua(lua_State *L);
int gl_comm_field_lua(lua_State *L);
int gl_comm_tostring_lua(lua_State *L);
int gl_comm_release_lua(lua_State *L);

/* ---- gpulua.internal (l_internal.c) ---------------------------------------- */
int gl_internal_given_lua(lua_State *L);
int gl_internal_isatty_lua(lua_State *L);
int gl_internal_peek_lua(lua_State *L);
int gl_internal_contents_lua(lua_State *L);

#endif
