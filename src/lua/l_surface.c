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

const luaL_Reg gll_gpu_lib[] = {
  {"backend", gll_gpu_backend},
  {"count", gll_gpu_count},
  {"device", gll_gpu_device},
  {"sync", gll_gpu_sync},
  {"policy", gll_gpu_policy},
  {"host", gll_host_new},
  {"map", gll_host_map},
  {"peer", gll_gpu_peer},
  {"clock", gll_gpu_clock},
  {"trace", gll_trace},
  {"timeline", gll_timeline},
  {"calibrate", gll_gpu_calibrate},
  {"sim_model", gll_gpu_sim_model},
  {"compile", gll_gpu_compile},
  {"load", gll_gpu_load},
  {"config", gll_gpu_config},
  {"comm", gll_gpu_comm},
  {"spawn", gll_gpu_spawn},
  {"loop", gll_gpu_loop},
  {"poll", gll_gpu_poll},
  {"version", NULL}, /* values, set by luaopen_gpulua (l_gpu.c) */
  {"kernels", NULL}, /* the built-in kernels (l_kernel.c) */
  {NULL, NULL}};

/* ---- gpulua.Device: dev --------------------------------------------------- */

static const luaL_Reg device_methods[] = {
  {"stream", gll_dev_stream},
  {"alloc", gll_dev_alloc},
  {"zeros", gll_dev_zeros},
  {"sync", gll_device_sync},
  {"free_memory", gll_device_free_memory},
  {NULL, NULL}};
static const char *const device_fields[] = {"ordinal", "name", "memory", "cc", "sms", "copy_engines", "main", NULL};
static const luaL_Reg device_meta[] = {{"__tostring", gll_device_tostring}, {NULL, NULL}};

const gll_type gll_device_type = {
  .name = "gpulua.Device",
  .methods = device_methods,
  .fields = device_fields,
  .field = gll_device_field,
  .meta = device_meta,
};

/* ---- gpulua.Stream: s ----------------------------------------------------- */

static const luaL_Reg stream_methods[] = {
  {"record", gll_stream_record},
  {"wait", gll_stream_wait},
  {"join", gll_stream_join},
  {"fork", gll_stream_fork},
  {"sync", gll_stream_sync},
  {"query", gll_stream_query},
  {"copy", gll_stream_copy},
  {"fill", gll_stream_fill},
  {"launch", gll_stream_launch},
  {"capture", gll_stream_capture},
  {"gemm", gll_stream_gemm},
  {"after", gll_stream_after},
  {"await", gll_stream_await},
  {NULL, NULL}};
static const char *const stream_fields[] = {"name", "device", NULL};
static const luaL_Reg stream_meta[] = {{"__tostring", gll_stream_tostring}, {NULL, NULL}};

const gll_type gll_stream_type = {
  .name = "gpulua.Stream",
  .methods = stream_methods,
  .fields = stream_fields,
  .field = gll_stream_field,
  .meta = stream_meta,
  .release = gll_stream_release,
  .release_method = "close",
  .own_methods = 1,
};

/* ---- gpulua.Event: e ------------------------------------------------------ */

static const luaL_Reg event_methods[] = {
  {"sync", gll_event_sync},
  {"query", gll_event_query},
  {"elapsed", gll_event_elapsed},
  {"await", gll_event_await},
  {NULL, NULL}};
static const luaL_Reg event_meta[] = {{"__gc", gll_event_gc}, {"__tostring", gll_event_tostring}, {NULL, NULL}};

const gll_type gll_event_type = {
  .name = "gpulua.Event",
  .methods = event_methods,
  .meta = event_meta,
};

/* ---- gpulua.Slice: x ------------------------------------------------------ */

static const luaL_Reg slice_methods[] = {
  {"view", gll_slice_view},
  {"split", gll_slice_split},
  {"read", gll_slice_read},
  {NULL, NULL}};
static const char *const slice_fields[] = {"dtype", "bytes", "device", NULL};
static const luaL_Reg slice_meta[] = {{"__len", gll_slice_len}, {"__tostring", gll_slice_tostring}, {NULL, NULL}};

const gll_type gll_slice_type = {
  .name = "gpulua.Slice",
  .methods = slice_methods,
  .fields = slice_fields,
  .field = gll_slice_field,
  .meta = slice_meta,
  .release = gll_slice_release,
  .release_method = "free",
  .hint = "a slice's elements are in device memory: read them into a host buffer with "
          "x:read() (x:read()[1]), or copy them with s:copy(h, x)",
};

/* ---- gpulua.HostBuffer: h (its __index also serves h[i]) ------------------ */

static const luaL_Reg host_methods[] = {
  {"totable", gll_hostbuf_totable},
  {"fill", gll_hostbuf_fill},
  {"view", gll_hostbuf_view},
  {"read_from", gll_hostbuf_read_from},
  {"write_to", gll_hostbuf_write_to},
  {NULL, NULL}};
static const char *const host_fields[] = {"dtype", "bytes", "pinned", NULL};
static const luaL_Reg host_meta[] = {
  {"__newindex", gll_hostbuf_newindex},
  {"__len", gll_hostbuf_len},
  {"__tostring", gll_hostbuf_tostring},
  {NULL, NULL}};

const gll_type gll_host_type = {
  .name = "gpulua.HostBuffer",
  .methods = host_methods,
  .fields = host_fields,
  .field = gll_hostbuf_field,
  .meta = host_meta,
  .release = gll_hostbuf_release,
  .release_method = "free",
};

/* ---- gpulua.Module: m ----------------------------------------------------- */

static const luaL_Reg module_methods[] = {{"kernel", gll_module_kernel}, {"global", gll_module_global}, {NULL, NULL}};
static const char *const module_fields[] = {"name", "device", NULL};
static const luaL_Reg module_meta[] = {{"__gc", gll_module_gc}, {"__tostring", gll_module_tostring}, {NULL, NULL}};

const gll_type gll_module_type = {
  .name = "gpulua.Module",
  .methods = module_methods,
  .fields = module_fields,
  .field = gll_module_field,
  .meta = module_meta,
};

/* ---- gpulua.Kernel: k ----------------------------------------------------- */

static const luaL_Reg kernel_methods[] = {{"host", gll_kernel_host}, {"cost", gll_kernel_cost}, {NULL, NULL}};
static const char *const kernel_fields[] = {"name", "signature", "doc", NULL};
static const luaL_Reg kernel_meta[] = {{"__gc", gll_kernel_gc}, {"__tostring", gll_kernel_tostring}, {NULL, NULL}};

const gll_type gll_kernel_type = {
  .name = "gpulua.Kernel",
  .methods = kernel_methods,
  .fields = kernel_fields,
  .field = gll_kernel_field,
  .meta = kernel_meta,
};

/* ---- gpulua.Config: cfg --------------------------------------------------- */

static const char *const config_fields[] = {"grid", "block", "shared", NULL};
static const luaL_Reg config_meta[] = {
  {"__newindex", gll_config_newindex},
  {"__tostring", gll_config_tostring},
  {NULL, NULL}};

const gll_type gll_config_type = {
  .name = "gpulua.Config",
  .fields = config_fields,
  .field = gll_config_field,
  .meta = config_meta,
};

/* ---- gpulua.Graph: g ------------------------------------------------------ */

static const luaL_Reg graph_methods[] = {{"launch", gll_graph_launch}, {"update", gll_graph_update}, {NULL, NULL}};
static const char *const graph_fields[] = {"name", "nodes", "device", "launches", NULL};
static const luaL_Reg graph_meta[] = {{"__tostring", gll_graph_tostring}, {NULL, NULL}};

const gll_type gll_graph_type = {
  .name = "gpulua.Graph",
  .methods = graph_methods,
  .fields = graph_fields,
  .field = gll_graph_field,
  .meta = graph_meta,
  .release = gll_graph_release,
  .release_method = "close",
  .own_methods = 1,
};

/* ---- gpulua.Comm: comm ---------------------------------------------------- */

static const luaL_Reg comm_methods[] = {
  {"all_reduce", gll_comm_all_reduce},
  {"broadcast", gll_comm_broadcast},
  {"reduce", gll_comm_reduce},
  {"all_gather", gll_comm_all_gather},
  {"reduce_scatter", gll_comm_reduce_scatter},
  {"send", gll_comm_send},
  {"recv", gll_comm_recv},
  {"all_to_all", gll_comm_all_to_all},
  {"barrier", gll_comm_barrier},
  {NULL, NULL}};
static const char *const comm_fields[] = {"size", "devices", "rank", "local_rank", "device", NULL};
static const luaL_Reg comm_meta[] = {{"__tostring", gll_comm_tostring}, {NULL, NULL}};

const gll_type gll_comm_type = {
  .name = "gpulua.Comm",
  .methods = comm_methods,
  .fields = comm_fields,
  .field = gll_comm_field,
  .meta = comm_meta,
  .release = gll_comm_release,
  .release_method = "close",
};

/* ---- every type ----------------------------------------------------------- */

const gll_type *const gll_types[GL_NTYPES] = {&gll_device_type, &gll_stream_type, &gll_event_type, &gll_slice_type,
                                            &gll_host_type,   &gll_module_type, &gll_kernel_type, &gll_config_type,
                                            &gll_graph_type,  &gll_comm_type};

/* ---- gpulua.internal: for gpulua's own Lua modules, not the API ----------- */

const luaL_Reg gll_internal_lib[] = {
  {"given", gll_internal_given},
  {"isatty", gll_internal_isatty},
  {"peek", gll_internal_peek},
  {"contents", gll_internal_contents},
  {"dtype_names", gll_internal_dtype_names},
  {NULL, NULL}};
