/*
 * l_surface.c -- the whole Lua surface of gpulua in one place (surface.h):
 * the `gpu` table, then each object type: its methods, the fields its
 * __index serves, its metamethods, its release (the method named here,
 * __gc and __close: l_types.c makes the three from the one function).
 * Every name a script can call or read on gpulua's objects is listed here
 * once; messages ("fields: ...; methods: ..."), the REPL's completion
 * (gpulua_object_names) and docs/API.md's check (tests/surface_docs_check.sh)
 * read their names from these tables. Each function is defined in the file
 * of its type.
 */
#include "surface.h"

#include <stddef.h>

/* ---- gpu ------------------------------------------------------------------ */

const luaL_Reg gl_gpu_lib[] = {
  {"backend", gl_gpu_backend_lua},
  {"count", gl_gpu_count_lua},
  {"device", gl_gpu_device_lua},
  {"sync", gl_gpu_sync_lua},
  {"policy", gl_gpu_policy_lua},
  {"host", gl_host_new},
  {"peer", gl_gpu_peer_lua},
  {"clock", gl_gpu_clock_lua},
  {"trace", gl_trace_lua},
  {"timeline", gl_timeline_lua},
  {"calibrate", gl_gpu_calibrate_lua},
  {"sim_model", gl_gpu_sim_model_lua},
  {"compile", gl_gpu_compile_lua},
  {"load", gl_gpu_load_lua},
  {"config", gl_gpu_config_lua},
  {"comm", gl_gpu_comm_lua},
  {"version", NULL}, /* values, set by luaopen_gpulua (l_gpu.c) */
  {"kernels", NULL}, /* the built-in kernels (l_kernel.c) */
  {NULL, NULL}};

/* ---- gpulua.Device: dev --------------------------------------------------- */

static const luaL_Reg device_methods[] = {
  {"stream", gl_dev_stream},
  {"alloc", gl_dev_alloc},
  {"zeros", gl_dev_zeros},
  {"sync", gl_device_sync_lua},
  {"free_memory", gl_device_free_memory_lua},
  {NULL, NULL}};
static const char *const device_fields[] = {"ordinal", "name", "memory", "cc", "sms", "copy_engines", "main", NULL};
static const luaL_Reg device_meta[] = {{"__tostring", gl_device_tostring_lua}, {NULL, NULL}};

const gl_type gl_device_type = {
  .name = "gpulua.Device",
  .methods = device_methods,
  .fields = device_fields,
  .field = gl_device_field_lua,
  .meta = device_meta,
};

/* ---- gpulua.Stream: s ----------------------------------------------------- */

static const luaL_Reg stream_methods[] = {
  {"record", gl_stream_record},
  {"wait", gl_stream_wait_lua},
  {"join", gl_stream_join_lua},
  {"fork", gl_stream_fork_lua},
  {"sync", gl_stream_sync_lua},
  {"query", gl_stream_query_lua},
  {"copy", gl_stream_copy},
  {"fill", gl_stream_fill},
  {"launch", gl_stream_launch},
  {"capture", gl_stream_capture},
  {"gemm", gl_stream_gemm},
  {NULL, NULL}};
static const char *const stream_fields[] = {"name", "device", NULL};
static const luaL_Reg stream_meta[] = {{"__tostring", gl_stream_tostring_lua}, {NULL, NULL}};

const gl_type gl_stream_type = {
  .name = "gpulua.Stream",
  .methods = stream_methods,
  .fields = stream_fields,
  .field = gl_stream_field_lua,
  .meta = stream_meta,
  .release = gl_stream_release_lua,
  .release_method = "close",
  .own_methods = 1,
};

/* ---- gpulua.Event: e ------------------------------------------------------ */

static const luaL_Reg event_methods[] = {
  {"sync", gl_event_sync_lua},
  {"query", gl_event_query_lua},
  {"elapsed", gl_event_elapsed_lua},
  {NULL, NULL}};
static const luaL_Reg event_meta[] = {{"__gc", gl_event_gc_lua}, {"__tostring", gl_event_tostring_lua}, {NULL, NULL}};

const gl_type gl_event_type = {
  .name = "gpulua.Event",
  .methods = event_methods,
  .meta = event_meta,
};

/* ---- gpulua.Slice: x ------------------------------------------------------ */

static const luaL_Reg slice_methods[] = {
  {"view", gl_slice_view_lua},
  {"split", gl_slice_split_lua},
  {"read", gl_slice_read_lua},
  {NULL, NULL}};
static const char *const slice_fields[] = {"dtype", "bytes", "device", NULL};
static const luaL_Reg slice_meta[] = {{"__len", gl_slice_len_lua}, {"__tostring", gl_slice_tostring_lua}, {NULL, NULL}};

const gl_type gl_slice_type = {
  .name = "gpulua.Slice",
  .methods = slice_methods,
  .fields = slice_fields,
  .field = gl_slice_field_lua,
  .meta = slice_meta,
  .release = gl_slice_release_lua,
  .release_method = "free",
  .hint = "a slice's elements are in device memory: read them into a host buffer with "
          "x:read() (x:read()[1]), or copy them with s:copy(h, x)",
};

/* ---- gpulua.HostBuffer: h (its __index also serves h[i]) ------------------ */

static const luaL_Reg host_methods[] = {
  {"totable", gl_hostbuf_totable_lua},
  {"fill", gl_hostbuf_fill_lua},
  {"view", gl_hostbuf_view_lua},
  {NULL, NULL}};
static const char *const host_fields[] = {"dtype", "bytes", "pinned", NULL};
static const luaL_Reg host_meta[] = {
  {"__newindex", gl_hostbuf_newindex_lua},
  {"__len", gl_hostbuf_len_lua},
  {"__tostring", gl_hostbuf_tostring_lua},
  {NULL, NULL}};

const gl_type gl_host_type = {
  .name = "gpulua.HostBuffer",
  .methods = host_methods,
  .fields = host_fields,
  .field = gl_hostbuf_field_lua,
  .meta = host_meta,
  .release = gl_hostbuf_release_lua,
  .release_method = "free",
};

/* ---- gpulua.Module: m ----------------------------------------------------- */

static const luaL_Reg module_methods[] = {{"kernel", gl_module_kernel}, {NULL, NULL}};
static const char *const module_fields[] = {"name", "device", NULL};
static const luaL_Reg module_meta[] = {{"__gc", gl_module_gc_lua}, {"__tostring", gl_module_tostring_lua}, {NULL, NULL}};

const gl_type gl_module_type = {
  .name = "gpulua.Module",
  .methods = module_methods,
  .fields = module_fields,
  .field = gl_module_field_lua,
  .meta = module_meta,
};

/* ---- gpulua.Kernel: k ----------------------------------------------------- */

static const luaL_Reg kernel_methods[] = {{"host", gl_kernel_host_lua}, {"cost", gl_kernel_cost_lua}, {NULL, NULL}};
static const char *const kernel_fields[] = {"name", "signature", "doc", NULL};
static const luaL_Reg kernel_meta[] = {{"__gc", gl_kernel_gc_lua}, {"__tostring", gl_kernel_tostring_lua}, {NULL, NULL}};

const gl_type gl_kernel_type = {
  .name = "gpulua.Kernel",
  .methods = kernel_methods,
  .fields = kernel_fields,
  .field = gl_kernel_field_lua,
  .meta = kernel_meta,
};

/* ---- gpulua.Config: cfg --------------------------------------------------- */

static const char *const config_fields[] = {"grid", "block", "shared", NULL};
static const luaL_Reg config_meta[] = {
  {"__newindex", gl_config_newindex_lua},
  {"__tostring", gl_config_tostring_lua},
  {NULL, NULL}};

const gl_type gl_config_type = {
  .name = "gpulua.Config",
  .fields = config_fields,
  .field = gl_config_field_lua,
  .meta = config_meta,
};

/* ---- gpulua.Graph: g ------------------------------------------------------ */

static const luaL_Reg graph_methods[] = {{"launch", gl_graph_launch_lua}, {"update", gl_graph_update_lua}, {NULL, NULL}};
static const char *const graph_fields[] = {"name", "nodes", "device", "launches", NULL};
static const luaL_Reg graph_meta[] = {{"__tostring", gl_graph_tostring_lua}, {NULL, NULL}};

const gl_type gl_graph_type = {
  .name = "gpulua.Graph",
  .methods = graph_methods,
  .fields = graph_fields,
  .field = gl_graph_field_lua,
  .meta = graph_meta,
  .release = gl_graph_release_lua,
  .release_method = "close",
  .own_methods = 1,
};

/* ---- gpulua.Comm: comm ---------------------------------------------------- */

static const luaL_Reg comm_methods[] = {
  {"all_reduce", gl_comm_all_reduce_lua},
  {"broadcast", gl_comm_broadcast_lua},
  {"reduce", gl_comm_reduce_lua},
  {"all_gather", gl_comm_all_gather_lua},
  {"reduce_scatter", gl_comm_reduce_scatter_lua},
  {NULL, NULL}};
static const char *const comm_fields[] = {"size", "devices", NULL};
static const luaL_Reg comm_meta[] = {{"__tostring", gl_comm_tostring_lua}, {NULL, NULL}};

const gl_type gl_comm_type = {
  .name = "gpulua.Comm",
  .methods = comm_methods,
  .fields = comm_fields,
  .field = gl_comm_field_lua,
  .meta = comm_meta,
  .release = gl_comm_release_lua,
  .release_method = "close",
};

/* ---- every type ----------------------------------------------------------- */

const gl_type *const gl_types[GL_NTYPES] = {&gl_device_type, &gl_stream_type, &gl_event_type, &gl_slice_type,
                                            &gl_host_type,   &gl_module_type, &gl_kernel_type, &gl_config_type,
                                            &gl_graph_type,  &gl_comm_type};

/* ---- gpulua.internal: for gpulua's own Lua modules, not the API ----------- */

const luaL_Reg gl_internal_lib[] = {
  {"given", gl_internal_given_lua},
  {"isatty", gl_internal_isatty_lua},
  {"peek", gl_internal_peek_lua},
  {"contents", gl_internal_contents_lua},
  {NULL, NULL}};
