/*
 * device.c -- devices (see device.h).
 */
#include "device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "after.h"
#include "blas.h"
#include "comm.h"
#include "event.h"
#include "module.h"
#include "runtime.h"
#include "scratch.h"
#include "stream.h"

/* The driver's current context, per thread: setting it costs a call. */
static _Thread_local CUcontext current_ctx;

void gl_set_ctx(gl_device *d) {
  if (current_ctx != d->ctx) {
    gld_drv.cuCtxSetCurrent(d->ctx);
    current_ctx = d->ctx;
  }
}

/* Forget the cached context (teardown released them all). */
void gl_ctx_forget(void) {
  gld_drv.cuCtxSetCurrent(NULL);
  current_ctx = NULL;
}

static int attr(gl_device *d, CUdevice_attribute a, int *v) {
  *v = 0;
  CUresult r = gld_drv.cuDeviceGetAttribute(v, a, d->cu);
  return r == CUDA_SUCCESS ? 0 : gl_fail_cu(d->rt, d, r, "cuDeviceGetAttribute", NULL);
}

#define CALL(d, fn, ...)                                                        \
  do {                                                                          \
    CUresult r_ = gld_drv.fn(__VA_ARGS__);                                       \
    if (r_ != CUDA_SUCCESS) return gl_fail_cu((d)->rt, (d), r_, #fn, NULL);     \
  } while (0)

static int read_limits(gl_device *d) {
  static const struct { CUdevice_attribute a; size_t off; } limits[] = {
#define L_(a, f) {CU_DEVICE_ATTRIBUTE_##a, offsetof(gl_device, f)}
    L_(COMPUTE_CAPABILITY_MAJOR, cc_major),
    L_(COMPUTE_CAPABILITY_MINOR, cc_minor),
    L_(MULTIPROCESSOR_COUNT, sms),
    L_(ASYNC_ENGINE_COUNT, copy_engines),
    L_(MAX_THREADS_PER_BLOCK, max_threads_per_block),
    L_(MAX_THREADS_PER_MULTIPROCESSOR, max_threads_per_sm),
    L_(MAX_REGISTERS_PER_BLOCK, max_regs_per_block),
    L_(MAX_BLOCK_DIM_X, max_block[0]),
    L_(MAX_BLOCK_DIM_Y, max_block[1]),
    L_(MAX_BLOCK_DIM_Z, max_block[2]),
    L_(MAX_GRID_DIM_X, max_grid[0]),
    L_(MAX_GRID_DIM_Y, max_grid[1]),
    L_(MAX_GRID_DIM_Z, max_grid[2]),
    L_(MAX_SHARED_MEMORY_PER_BLOCK, max_shared),
    L_(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, max_shared_optin),
#undef L_
  };
  for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++)
    if (attr(d, limits[i].a, (int *)((char *)d + limits[i].off)) != 0) return -1;
  return 0;
}

int gl_device_open(gl_runtime *rt, int ordinal, const char *call, gl_device **out) {
  if (ordinal < 0 || ordinal >= rt->ndev)
    return gl_fail(rt, "%s: ordinal %d is out of range (%s has %d device%s: 0 to %d)", call, ordinal,
                   gld_backend_name, rt->ndev, rt->ndev == 1 ? "" : "s", rt->ndev - 1);
  gl_device *d = &rt->devs[ordinal];
  *out = d;
  if (d->opened) return 0;
  d->rt = rt;
  d->ordinal = ordinal;
  CALL(d, cuDeviceGet, &d->cu, ordinal);
  CALL(d, cuDeviceGetName, d->name, (int)sizeof d->name, d->cu);
  CALL(d, cuDeviceTotalMem, &d->memory, d->cu);
  if (read_limits(d) != 0) return -1;
  int pools = 0;
  if (attr(d, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, &pools) != 0) return -1;
  if (!pools)
    return gl_fail(rt, "%s: device %d (%s) does not support stream-ordered allocation (memory pools)", call,
                   ordinal, d->name);
  CALL(d, cuDevicePrimaryCtxRetain, &d->ctx, d->cu);
  gl_set_ctx(d);
  CALL(d, cuCtxGetStreamPriorityRange, &d->prio_least, &d->prio_greatest);
  /* Keep freed memory in the driver's pool instead of returning it to the OS
   * at every synchronisation: stream-ordered reuse stays cheap. */
  CUmemoryPool pool;
  if (gld_drv.cuDeviceGetDefaultMemPool(&pool, d->cu) == CUDA_SUCCESS) {
    cuuint64_t threshold = UINT64_MAX;
    gld_drv.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
  }
  d->opened = 1;
  if (gl_stream_new(d, "main", 0, 1, &d->main, NULL) != 0) {
    d->opened = 0;
    gld_drv.cuDevicePrimaryCtxRelease(d->cu);
    return -1;
  }
  return 0;
}

int gl_device_check_slow(gl_device *d) {
  if (!d->opened) return gl_fail(d->rt, "gpulua has been shut down");
  if (gl_device_poisoned(d)) return gl_fail(d->rt, "%s", gl_buf_str(&d->poison));
  if (d->pending.n) {
    gl_fail(d->rt, "%s", gl_buf_str(&d->pending));
    gl_buf_free(&d->pending);
    return -1;
  }
  return 0;
}

void gl_device_keep_error(gl_device *d) {
  if (d->pending.n) return; /* the first is the one to report */
  gl_buf_printf(&d->pending, "an earlier release failed (reported at the next call on device %d): %s", d->ordinal,
                gl_error_message(d->rt));
}

int gl_device_sync(gl_device *d, gl_site *site) {
  if (gl_device_check(d) != 0 || gl_comm_settle(d->rt, d, site) != 0) return -1;
  gl_set_ctx(d);
  CUresult r = gld_drv.cuCtxSynchronize();
  if (r != CUDA_SUCCESS) return gl_fail_cu(d->rt, d, r, "cuCtxSynchronize", site);
  gl_runtime *rt = d->rt; /* every stream of d, the closed ones that records still name included */
  for (int i = 0; i < rt->nids; i++)
    if (rt->by_id[i] && rt->by_id[i]->dev == d) gl_stream_mark_synced(rt->by_id[i]);
  return 0;
}

int gl_device_free_memory(gl_device *d, size_t *free_bytes, size_t *total) {
  if (gl_device_check(d) != 0) return -1;
  gl_set_ctx(d);
  *free_bytes = *total = 0;
  CALL(d, cuMemGetInfo, free_bytes, total);
  return 0;
}

void gl_device_trim(gl_device *d) {
  CUmemoryPool pool;
  gl_set_ctx(d);
  if (gld_drv.cuDeviceGetDefaultMemPool(&pool, d->cu) == CUDA_SUCCESS) gld_drv.cuMemPoolTrimTo(pool, 0);
}

int gl_device_reclaim(gl_device *d, gl_site *site) {
  if (gl_comm_settle(d->rt, d, site) != 0) return -1;
  gl_set_ctx(d);
  CUresult r = gld_drv.cuCtxSynchronize();
  if (r != CUDA_SUCCESS) return gl_fail_cu(d->rt, d, r, "cuCtxSynchronize", site);
  gl_device_trim(d);
  return 0;
}

int gl_peer_grant(gl_runtime *rt, int ia, int ib, const char *call) {
  for (int i = 0; i < 2; i++) {
    int o = i ? ib : ia;
    if (o < 0 || o >= rt->ndev)
      return gl_fail(rt, "%s: device ordinal %d is out of range (%s has %d device%s: 0 to %d)", call, o,
                     gld_backend_name, rt->ndev, rt->ndev == 1 ? "" : "s", rt->ndev - 1);
  }
  gl_device *a, *b;
  if (gl_device_open(rt, ia, rt->names.device, &a) != 0 || gl_device_open(rt, ib, rt->names.device, &b) != 0)
    return -1;
  if (a == b) return 0;
  if (gl_device_check(a) != 0 || gl_device_check(b) != 0) return -1;
  int can = 0;
  CALL(b, cuDeviceCanAccessPeer, &can, b->cu, a->cu);
  if (!can)
    return gl_fail(rt, "%s: device %d (%s) cannot access the memory of device %d (%s): peer access is not "
                       "supported between them", call, b->ordinal, b->name, a->ordinal, a->name);
  gl_set_ctx(b);
  CUresult r = gld_drv.cuCtxEnablePeerAccess(a->ctx, 0);
  if (r != CUDA_SUCCESS && r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
    return gl_fail_cu(rt, b, r, "cuCtxEnablePeerAccess", NULL);
  /* slices come from a's memory pool, which peer access alone does not open:
   * give b read and write access to it */
  CUmemoryPool pool;
  CALL(a, cuDeviceGetDefaultMemPool, &pool, a->cu);
  CUmemAccessDesc desc;
  memset(&desc, 0, sizeof desc);
  desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  desc.location.id = b->ordinal;
  desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CALL(a, cuMemPoolSetAccess, pool, &desc, 1);
  rt->peer[b->ordinal * rt->ndev + a->ordinal] = 1;
  return 0;
}

int gl_peer_granted(const gl_runtime *rt, const gl_device *a, const gl_device *b) {
  return a == b || (rt->peer && rt->peer[b->ordinal * rt->ndev + a->ordinal]);
}

void gl_device_close(gl_device *d) {
  gl_set_ctx(d);
  gld_drv.cuCtxSynchronize();
  gl_blas_device_close(d); /* the streams' workspaces and every cuBLAS handle */
  gl_scratch_device_close(d); /* the streams' reduction scratch */
  gl_after_device_close(d);   /* e:await's idle watchers */
  while (d->streams) {
    gl_stream *s = d->streams;
    *s->prev_open = s->next_open;
    if (s->next_open) s->next_open->prev_open = s->prev_open;
    s->next_open = NULL;
    s->prev_open = NULL;
    if (s->cu) gld_drv.cuStreamDestroy(s->cu);
    s->cu = NULL;
  }
  gl_stream *m = d->main;
  d->main = NULL;
  gl_stream_unref(m);
  m = d->spares;
  d->spares = NULL;
  gl_stream_unref(m);
  gl_builtins_release(d);
  gl_event_pool_clear(d);
  gl_buf_free(&d->poison);
  gl_buf_free(&d->pending);
}
