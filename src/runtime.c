/*
 * runtime.c -- the per-Lua-state runtime: devices (opened lazily), the current
 * context, and teardown in a safe order when the state closes.
 *
 * The runtime is a userdata created first by luaopen_gpulua and anchored in
 * the registry; Lua runs finalizers in reverse order of marking, so its
 * finalizer runs after those of every stream, slice and buffer.
 */
#include "core.h"
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char rt_key = 'R';

const char gl_device_mt[] = "gpulua.Device", gl_stream_mt[] = "gpulua.Stream", gl_event_mt[] = "gpulua.Event",
           gl_slice_mt[] = "gpulua.Slice", gl_host_mt[] = "gpulua.HostBuffer", gl_module_mt[] = "gpulua.Module",
           gl_kernel_mt[] = "gpulua.Kernel";

int gl_newmetatable(lua_State *L, const char *tname) {
  if (!luaL_newmetatable(L, tname)) return 0;
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, tname);
  return 1;
}

void gl_set_release(lua_State *L, lua_CFunction release, const char *method) {
  lua_pushinteger(L, GL_RELEASE_METHOD);
  lua_pushcclosure(L, release, 1);
  lua_setfield(L, -2, method);
  lua_pushinteger(L, GL_RELEASE_GC);
  lua_pushcclosure(L, release, 1);
  lua_setfield(L, -3, "__gc");
  lua_pushinteger(L, GL_RELEASE_CLOSE);
  lua_pushcclosure(L, release, 1);
  lua_setfield(L, -3, "__close");
}

void *gl_testudata(lua_State *L, int idx, const char *tname) {
  void *p = lua_touserdata(L, idx);
  if (!p || !lua_getmetatable(L, idx)) return NULL;
  lua_rawgetp(L, LUA_REGISTRYINDEX, tname);
  int same = lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  return same ? p : NULL;
}

void *gl_checkudata(lua_State *L, int idx, const char *tname) {
  void *p = gl_testudata(L, idx, tname);
  if (!p) luaL_typeerror(L, idx, tname);
  return p;
}

void gl_setmetatable(lua_State *L, const char *tname) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, tname);
  lua_setmetatable(L, -2);
}

static _Thread_local CUcontext current_ctx;

gl_runtime *gl_rt(lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &rt_key);
  gl_runtime *rt = lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (!rt) luaL_error(L, "gpulua is not initialised in this Lua state");
  return rt;
}

void gl_set_ctx(gl_device *dev) {
  if (current_ctx != dev->ctx) {
    gl_drv.cuCtxSetCurrent(dev->ctx);
    current_ctx = dev->ctx;
  }
}

static int attr(lua_State *L, gl_device *d, CUdevice_attribute a) {
  int v = 0;
  GL_CALL(L, d, cuDeviceGetAttribute, &v, a, d->cu);
  return v;
}

gl_device *gl_device_open(lua_State *L, int ordinal) {
  gl_runtime *rt = gl_rt(L);
  if (ordinal < 0 || ordinal >= rt->ndev)
    luaL_error(L, "gpu.device: ordinal %d is out of range (%s has %d device%s: 0 to %d)", ordinal,
               gl_backend_name, rt->ndev, rt->ndev == 1 ? "" : "s", rt->ndev - 1);
  gl_device *d = &rt->devs[ordinal];
  if (d->opened) return d;
  d->rt = rt;
  d->ordinal = ordinal;
  GL_CALL(L, d, cuDeviceGet, &d->cu, ordinal);
  GL_CALL(L, d, cuDeviceGetName, d->name, (int)sizeof d->name, d->cu);
  GL_CALL(L, d, cuDeviceTotalMem, &d->memory, d->cu);
  d->cc_major = attr(L, d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  d->cc_minor = attr(L, d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  d->sms = attr(L, d, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  d->max_threads_per_block = attr(L, d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  d->max_block[0] = attr(L, d, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
  d->max_block[1] = attr(L, d, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
  d->max_block[2] = attr(L, d, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
  d->max_grid[0] = attr(L, d, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
  d->max_grid[1] = attr(L, d, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
  d->max_grid[2] = attr(L, d, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
  d->max_shared = attr(L, d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  d->max_shared_optin = attr(L, d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  if (!attr(L, d, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED))
    luaL_error(L, "gpu.device: device %d (%s) does not support stream-ordered allocation (memory pools)",
               ordinal, d->name);
  GL_CALL(L, d, cuDevicePrimaryCtxRetain, &d->ctx, d->cu);
  gl_set_ctx(d);
  GL_CALL(L, d, cuCtxGetStreamPriorityRange, &d->prio_least, &d->prio_greatest);
  /* Keep freed memory in the driver's pool instead of returning it to the OS
   * at every synchronisation: stream-ordered reuse stays cheap. */
  CUmemoryPool pool;
  if (gl_drv.cuDeviceGetDefaultMemPool(&pool, d->cu) == CUDA_SUCCESS) {
    cuuint64_t threshold = UINT64_MAX;
    gl_drv.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
  }
  d->opened = 1;
  d->main = gl_stream_new(L, d, "main", 0, 1);
  return d;
}

int gl_peer_granted(gl_runtime *rt, gl_device *a, gl_device *b) {
  return a == b || (rt->peer && rt->peer[b->ordinal * rt->ndev + a->ordinal]);
}

/* gpu.peer(a, b): let work on device b use memory of device a. */
int gl_peer(lua_State *L) {
  gl_runtime *rt = gl_rt(L);
  lua_Integer ia = luaL_checkinteger(L, 1), ib = luaL_checkinteger(L, 2);
  for (int i = 0; i < 2; i++) {
    lua_Integer o = i ? ib : ia;
    if (o < 0 || o >= rt->ndev)
      return luaL_error(L, "gpu.peer: device ordinal %I is out of range (%s has %d device%s: 0 to %d)",
                        (LUAI_UACINT)o, gl_backend_name, rt->ndev, rt->ndev == 1 ? "" : "s", rt->ndev - 1);
  }
  gl_device *a = gl_device_open(L, (int)ia);
  gl_device *b = gl_device_open(L, (int)ib);
  if (a == b) return 0;
  gl_check_poison(L, a);
  gl_check_poison(L, b);
  int can = 0;
  GL_CALL(L, b, cuDeviceCanAccessPeer, &can, b->cu, a->cu);
  if (!can)
    return luaL_error(L, "gpu.peer: device %d (%s) cannot access the memory of device %d (%s): peer access is not "
                         "supported between them", b->ordinal, b->name, a->ordinal, a->name);
  gl_set_ctx(b);
  CUresult r = gl_drv.cuCtxEnablePeerAccess(a->ctx, 0);
  if (r != CUDA_SUCCESS && r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) gl_check(L, b, r, "cuCtxEnablePeerAccess");
  /* slices come from a's memory pool, which peer access alone does not open:
   * give b read and write access to it */
  CUmemoryPool pool;
  GL_CALL(L, a, cuDeviceGetDefaultMemPool, &pool, a->cu);
  CUmemAccessDesc desc;
  memset(&desc, 0, sizeof desc);
  desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  desc.location.id = b->ordinal;
  desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  GL_CALL(L, a, cuMemPoolSetAccess, pool, &desc, 1);
  rt->peer[b->ordinal * rt->ndev + a->ordinal] = 1;
  return 0;
}

void gl_push_device(lua_State *L, gl_device *dev) {
  gl_runtime *rt = dev->rt;
  lua_rawgeti(L, LUA_REGISTRYINDEX, rt->devices_ref);
  if (lua_rawgeti(L, -1, dev->ordinal) == LUA_TNIL) {
    lua_pop(L, 1);
    gl_device **ud = lua_newuserdatauv(L, sizeof *ud, 1);
    *ud = dev;
    gl_setmetatable(L, GL_DEVICE_MT);
    gl_push_stream(L, dev->main); /* dev.main: one userdata for the device's life */
    lua_setiuservalue(L, -2, 1);
    lua_pushvalue(L, -1);
    lua_rawseti(L, -3, dev->ordinal);
  }
  lua_remove(L, -2);
}

/* Runtimes whose state is open, for exit(): os.exit() without closing the
 * state runs no finalizer, so an atexit handler tears them down. */
static gl_runtime *live[16];
#define NLIVE (int)(sizeof live / sizeof live[0])

static void teardown(gl_runtime *rt);

static void teardown_at_exit(void) {
  if (gl_host_kernel_depth > 0) return; /* exit inside a sim host kernel: its stream cannot drain */
  for (int i = 0; i < NLIVE; i++)
    if (live[i]) teardown(live[i]);
}

static void track(gl_runtime *rt) {
  static int registered;
  if (!registered) registered = atexit(teardown_at_exit) == 0;
  for (int i = 0; i < NLIVE; i++)
    if (!live[i]) {
      live[i] = rt;
      return;
    }
}

/* Teardown: drain every device, destroy what is left, release contexts. */
static int runtime_gc(lua_State *L) {
  teardown(lua_touserdata(L, 1));
  return 0;
}

static void teardown(gl_runtime *rt) {
  for (int i = 0; i < NLIVE; i++)
    if (live[i] == rt) live[i] = NULL;
  if (rt->dead) return;
  gl_trace_finish(rt); /* also after an error: the trace is written */
  gl_hostbuf_reap(1);
  for (int i = 0; i < rt->ndev; i++) {
    gl_device *d = &rt->devs[i];
    if (!d->opened) continue;
    gl_set_ctx(d);
    gl_drv.cuCtxSynchronize();
    while (d->streams) {
      gl_stream *s = d->streams;
      *s->prev_open = s->next_open;
      if (s->next_open) s->next_open->prev_open = s->prev_open;
      s->next_open = NULL;
      s->prev_open = NULL;
      if (s->cu) gl_drv.cuStreamDestroy(s->cu);
      s->cu = NULL;
    }
    gl_stream *m = d->main;
    d->main = NULL;
    gl_stream_unref(m);
    gl_event_pool_clear(d);
  }
  for (int i = 0; i < rt->ndev; i++) {
    gl_device *d = &rt->devs[i];
    if (!d->opened) continue;
    gl_drv.cuDevicePrimaryCtxRelease(d->cu);
    d->opened = 0;
  }
  gl_drv.cuCtxSetCurrent(NULL);
  current_ctx = NULL;
  rt->dead = 1;
  free(rt->devs);
  rt->devs = NULL;
  free(rt->peer);
  rt->peer = NULL;
  free(rt->by_id);
  free(rt->gen);
  rt->by_id = NULL;
  rt->gen = NULL;
  rt->nids = rt->capids = 0;
  rt->ndev = 0;
}

void gl_runtime_create(lua_State *L) {
  gl_runtime *rt = lua_newuserdatauv(L, sizeof *rt, 0);
  memset(rt, 0, sizeof *rt);
  lua_newtable(L);
  lua_pushcfunction(L, runtime_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &rt_key);
  track(rt);
  int n = 0;
  CUresult r = gl_drv.cuDeviceGetCount(&n);
  if (r != CUDA_SUCCESS) {
    gl_push_error(L, r, "cuDeviceGetCount");
    lua_error(L);
  }
  rt->devs = calloc((size_t)(n > 0 ? n : 1), sizeof *rt->devs);
  if (!rt->devs) luaL_error(L, "gpulua: out of host memory");
  rt->ndev = n;
  rt->peer = calloc((size_t)(n > 0 ? n * n : 1), 1);
  if (!rt->peer) luaL_error(L, "gpulua: out of host memory");
  rt->policy = (gl_policy)gl_initial_policy(L);
  lua_newtable(L);
  rt->devices_ref = luaL_ref(L, LUA_REGISTRYINDEX);
}

int gl_runtime_exists(lua_State *L) {
  int t = lua_rawgetp(L, LUA_REGISTRYINDEX, &rt_key);
  lua_pop(L, 1);
  return t != LUA_TNIL;
}
