/*
 * sim_memory.c -- the sim's memory: device allocations (host memory with a
 * header, in the set of live allocations and in the memory map,
 * sim_memmap.h), their accounting, pinned host memory (allocated or
 * registered), and the copies, memsets and host functions queued on streams.
 */

#include "sim_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---- memory ---------------------------------------------------------- */

/* Live allocations: an open-addressing hash set of device pointers, so a
 * free of a pointer the sim did not hand out (or already freed) is refused
 * without touching its memory. Guarded by sim_S.mu. */
static struct {
  uintptr_t *slot; /* 0 empty, 1 deleted, else a pointer */
  size_t cap, used, live;
} live;

static size_t live_hash(uintptr_t p) { return (size_t)((p >> 8) * 0x9E3779B97F4A7C15ULL); }

static int live_find(uintptr_t p, size_t *at) {
  if (!live.cap) return 0;
  for (size_t i = live_hash(p) & (live.cap - 1), n = 0; n < live.cap; i = (i + 1) & (live.cap - 1), n++) {
    if (live.slot[i] == 0) return 0;
    if (live.slot[i] == p) {
      *at = i;
      return 1;
    }
  }
  return 0;
}

static int live_add(uintptr_t p) {
  if ((live.used + 1) * 2 > live.cap) { /* grow (and drop tombstones) */
    size_t cap = live.cap ? live.cap * 2 : 1024;
    while (live.live * 4 > cap) cap *= 2;
    uintptr_t *slot = calloc(cap, sizeof *slot), *old = live.slot;
    if (!slot) return -1;
    size_t oldcap = live.cap;
    live.slot = slot;
    live.cap = cap;
    live.used = live.live = 0;
    for (size_t i = 0; i < oldcap; i++)
      if (old[i] > 1) live_add(old[i]);
    free(old);
  }
  size_t i = live_hash(p) & (live.cap - 1);
  while (live.slot[i] > 1) i = (i + 1) & (live.cap - 1);
  if (live.slot[i] == 0) live.used++;
  live.slot[i] = p;
  live.live++;
  return 0;
}

static void live_remove(size_t at) {
  live.slot[at] = 1;
  live.live--;
}

static sim_block *block_of(CUdeviceptr p) {
  return (sim_block *)((char *)(uintptr_t)p - SIM_ALIGN);
}

CUresult sim_cuMemGetInfo(size_t *free_, size_t *total) {
  NEED_CTX();
  NEED_HEALTHY(sim_cur_ctx);
  pthread_mutex_lock(&sim_S.mu);
  sim_device *d = &sim_S.dev[sim_cur_ctx->ordinal];
  if (free_) *free_ = d->total - d->used;
  if (total) *total = d->total;
  pthread_mutex_unlock(&sim_S.mu);
  return CUDA_SUCCESS;
}

/* ---- stream-ordered allocation and copies ---------------------------- */

CUresult sim_cuMemAllocAsync(CUdeviceptr *dptr, size_t bytes, CUstream st) {
  NEED_INIT();
  if (!dptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (!st) return CUDA_ERROR_INVALID_HANDLE;
  NEED_HEALTHY(st->ctx);
  sim_device *d = &sim_S.dev[st->ctx->ordinal];
  if (bytes > d->total) return CUDA_ERROR_OUT_OF_MEMORY;
  size_t rounded = (bytes + SIM_ALIGN - 1) / SIM_ALIGN * SIM_ALIGN;
  pthread_mutex_lock(&sim_S.mu);
  if (st->capture) { /* the sim has no allocation nodes: unsupported, and the capture is invalidated */
    sim_capture_invalidate_locked(st);
    pthread_mutex_unlock(&sim_S.mu);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  if (d->used + rounded > d->total) {
    pthread_mutex_unlock(&sim_S.mu);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  d->used += rounded;
  pthread_mutex_unlock(&sim_S.mu);
  sim_block *b = aligned_alloc(SIM_ALIGN, SIM_ALIGN + rounded);
  if (!b) {
    pthread_mutex_lock(&sim_S.mu);
    d->used -= rounded;
    pthread_mutex_unlock(&sim_S.mu);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  b->bytes = rounded;
  b->ordinal = st->ctx->ordinal;
  /* Contents are undefined: poison them so a script that forgets to write
   * memory sees garbage (NaN for floats), as it may on a GPU. */
  memset((char *)b + SIM_ALIGN, 0xff, rounded);
  uintptr_t p = (uintptr_t)((char *)b + SIM_ALIGN);
  if (sim_mem_add(p, bytes, b->ordinal, SIM_MEM_DEVICE) != 0) { /* forgotten when the free runs (sim_stream.c) */
    pthread_mutex_lock(&sim_S.mu);
    d->used -= rounded;
    pthread_mutex_unlock(&sim_S.mu);
    free(b);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  pthread_mutex_lock(&sim_S.mu);
  int rc = live_add(p);
  if (rc != 0) d->used -= rounded;
  pthread_mutex_unlock(&sim_S.mu);
  if (rc != 0) {
    sim_mem_forget(p);
    free(b);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *dptr = (CUdeviceptr)p;
  return CUDA_SUCCESS;
}

CUresult sim_cuMemFreeAsync(CUdeviceptr p, CUstream st) {
  NEED_INIT();
  if (!st) return CUDA_ERROR_INVALID_HANDLE;
  /* The pool may hand the bytes out again in stream order at once; the host
   * memory itself goes when the stream reaches the free. */
  pthread_mutex_lock(&sim_S.mu);
  size_t at;
  if (!live_find((uintptr_t)p, &at)) {
    pthread_mutex_unlock(&sim_S.mu);
    return CUDA_ERROR_INVALID_VALUE;
  }
  sim_block *b = block_of(p);
  live_remove(at);
  sim_S.dev[b->ordinal].used -= b->bytes;
  pthread_mutex_unlock(&sim_S.mu);
  sim_op op = {.kind = OP_FREE, .dst = b};
  CUresult r = sim_enqueue(st, &op);
  if (r != CUDA_SUCCESS) {
    pthread_mutex_lock(&sim_S.mu);
    live_add((uintptr_t)p);
    sim_S.dev[b->ordinal].used += b->bytes;
    pthread_mutex_unlock(&sim_S.mu);
  }
  return r;
}

/* Pinned memory carries a header like device memory, for the limit. It is
 * zeroed, as sim.h promises: large sizes are fresh mmap pages, untouched
 * until used (even under sanitizers, whose calloc may clear every page). */
CUresult sim_cuMemHostAlloc(void **pp, size_t bytes, unsigned flags) {
  NEED_CTX();
  (void)flags;
  if (!pp || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (bytes > ((size_t)1 << 50)) return CUDA_ERROR_OUT_OF_MEMORY;
  size_t rounded = (bytes + SIM_ALIGN - 1) / SIM_ALIGN * SIM_ALIGN;
  pthread_mutex_lock(&sim_S.mu);
  if (sim_S.host_total && sim_S.host_used + rounded > sim_S.host_total) {
    pthread_mutex_unlock(&sim_S.mu);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  sim_S.host_used += rounded;
  pthread_mutex_unlock(&sim_S.mu);
  size_t mapped = rounded >= ((size_t)1 << 20) ? SIM_ALIGN + rounded : 0;
  char *raw;
  if (mapped) {
    raw = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) raw = NULL;
  } else {
    raw = calloc(1, 2 * SIM_ALIGN + rounded);
  }
  if (!raw) {
    pthread_mutex_lock(&sim_S.mu);
    sim_S.host_used -= rounded;
    pthread_mutex_unlock(&sim_S.mu);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  char *user = mapped ? raw + SIM_ALIGN : (char *)(((uintptr_t)raw + 2 * SIM_ALIGN - 1) / SIM_ALIGN * SIM_ALIGN);
  sim_block *b = (sim_block *)(user - SIM_ALIGN);
  b->bytes = rounded;
  b->ordinal = -1;
  b->base = raw;
  b->mapped = mapped;
  if (sim_mem_add((uintptr_t)user, bytes, -1, SIM_MEM_HOST) != 0) { /* the sim's devices address it directly */
    if (mapped) munmap(raw, mapped);
    else free(raw);
    pthread_mutex_lock(&sim_S.mu);
    sim_S.host_used -= rounded;
    pthread_mutex_unlock(&sim_S.mu);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *pp = user;
  return CUDA_SUCCESS;
}

CUresult sim_cuMemFreeHost(void *p) {
  NEED_INIT();
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  sim_block *b = (sim_block *)((char *)p - SIM_ALIGN);
  sim_mem_forget((uintptr_t)p);
  pthread_mutex_lock(&sim_S.mu);
  sim_S.host_used -= b->bytes;
  pthread_mutex_unlock(&sim_S.mu);
  if (b->mapped) munmap(b->base, b->mapped);
  else free(b->base);
  return CUDA_SUCCESS;
}

/* ---- registered host memory (cuMemHostRegister) ---------------------- */

/* The caller's memory registered as pinned: in the memory map as host
 * memory (the sim's devices address it directly), counted against the
 * pinned limit, and listed here with its flags for the unregister. A
 * program registers few ranges: a plain array. Guarded by sim_S.mu, taken
 * before the map's lock. */
typedef struct reg_range {
  uintptr_t base;
  size_t bytes, counted; /* as given; as counted against the limit */
  unsigned flags;
} reg_range;

static struct {
  reg_range *r;
  size_t n, cap;
} reg;
static atomic_int reg_readonly; /* read-only ranges: a device->host copy looks only when there are some */

#define REG_FLAGS (CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_READ_ONLY)

/* Memory the sim knows already (pinned, registered, a device's) cannot be
 * registered: page-locked memory is refused as the driver refuses it, the
 * rest as an invalid value. I/O memory is not supported. */
CUresult sim_cuMemHostRegister(void *p, size_t bytes, unsigned flags) {
  NEED_CTX();
  if (flags & CU_MEMHOSTREGISTER_IOMEMORY) return CUDA_ERROR_NOT_SUPPORTED;
  uintptr_t base = (uintptr_t)p;
  if (!p || bytes == 0 || (flags & ~REG_FLAGS) || base + bytes < base) return CUDA_ERROR_INVALID_VALUE;
  size_t counted = (bytes + SIM_ALIGN - 1) / SIM_ALIGN * SIM_ALIGN;
  CUresult r = CUDA_SUCCESS;
  sim_mem_hit hit;
  pthread_mutex_lock(&sim_S.mu);
  if (sim_mem_overlap(base, bytes, &hit)) {
    r = hit.kind == SIM_MEM_HOST ? CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED : CUDA_ERROR_INVALID_VALUE;
  } else if (sim_S.host_total && sim_S.host_used + counted > sim_S.host_total) {
    r = CUDA_ERROR_OUT_OF_MEMORY;
  } else if (reg.n == reg.cap) {
    size_t cap = reg.cap ? reg.cap * 2 : 16;
    reg_range *v = realloc(reg.r, cap * sizeof *v);
    if (v) {
      reg.r = v;
      reg.cap = cap;
    } else {
      r = CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  if (r == CUDA_SUCCESS && sim_mem_add(base, bytes, -1, SIM_MEM_HOST) != 0) r = CUDA_ERROR_OUT_OF_MEMORY;
  if (r == CUDA_SUCCESS) {
    reg.r[reg.n++] = (reg_range){base, bytes, counted, flags};
    if (flags & CU_MEMHOSTREGISTER_READ_ONLY) atomic_fetch_add(&reg_readonly, 1);
    sim_S.host_used += counted;
  }
  pthread_mutex_unlock(&sim_S.mu);
  return r;
}

/* Only the pointer a registration was given unregisters it. */
CUresult sim_cuMemHostUnregister(void *p) {
  NEED_INIT();
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&sim_S.mu);
  size_t i = 0;
  while (i < reg.n && reg.r[i].base != (uintptr_t)p) i++;
  if (i == reg.n) {
    pthread_mutex_unlock(&sim_S.mu);
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  }
  sim_mem_forget(reg.r[i].base);
  sim_S.host_used -= reg.r[i].counted;
  if (reg.r[i].flags & CU_MEMHOSTREGISTER_READ_ONLY) atomic_fetch_sub(&reg_readonly, 1);
  reg.r[i] = reg.r[--reg.n];
  pthread_mutex_unlock(&sim_S.mu);
  return CUDA_SUCCESS;
}

/* Whether [p, p + n) shares a byte with memory registered read-only, which
 * the device may not write: the driver refuses a device->host copy into it
 * at the call, with CUDA_ERROR_INVALID_VALUE. */
static int registered_readonly(const void *p, size_t n) {
  uintptr_t lo = (uintptr_t)p, hi = lo + n;
  int found = 0;
  if (!atomic_load(&reg_readonly)) return 0;
  pthread_mutex_lock(&sim_S.mu);
  for (size_t i = 0; i < reg.n && !found; i++)
    found = (reg.r[i].flags & CU_MEMHOSTREGISTER_READ_ONLY) && lo < reg.r[i].base + reg.r[i].bytes &&
            reg.r[i].base < hi;
  pthread_mutex_unlock(&sim_S.mu);
  return found;
}

int gld_sim_host_memory(size_t *avail, size_t *total) {
  pthread_mutex_lock(&sim_S.mu);
  int limited = sim_S.host_total != 0;
  if (limited) {
    *total = sim_S.host_total;
    *avail = sim_S.host_total - sim_S.host_used;
  }
  pthread_mutex_unlock(&sim_S.mu);
  return limited;
}

/* cls: the copy's kind for the timing model (MC_MEM: within a device) */
static CUresult copy_op(void *dst, const void *src, size_t n, CUstream st, enum sim_mclass cls) {
  NEED_INIT();
  if ((!dst || !src) && n) return CUDA_ERROR_INVALID_VALUE;
  sim_op op = {.kind = OP_COPY, .dst = dst, .src = src, .n = n, .mw = sim_model_copy(cls, n)};
  return sim_enqueue(st, &op);
}

CUresult sim_cuMemcpyHtoDAsync(CUdeviceptr d, const void *h, size_t n, CUstream st) {
  return copy_op((void *)(uintptr_t)d, h, n, st, MC_H2D);
}

CUresult sim_cuMemcpyDtoHAsync(void *h, CUdeviceptr d, size_t n, CUstream st) {
  if (n && registered_readonly(h, n)) return CUDA_ERROR_INVALID_VALUE;
  return copy_op(h, (const void *)(uintptr_t)d, n, st, MC_D2H);
}

CUresult sim_cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) {
  return copy_op((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n, st, MC_MEM);
}

CUresult sim_cuMemcpyPeerAsync(CUdeviceptr d, CUcontext dctx, CUdeviceptr s, CUcontext sctx,
                                      size_t n, CUstream st) {
  if (!dctx || !sctx) return CUDA_ERROR_INVALID_CONTEXT;
  return copy_op((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n, st, dctx == sctx ? MC_MEM : MC_PEER);
}

static CUresult set_op(enum sim_op_kind k, CUdeviceptr d, unsigned v, size_t n, CUstream st) {
  NEED_INIT();
  if (!d && n) return CUDA_ERROR_INVALID_VALUE;
  size_t width = k == OP_SET8 ? 1 : k == OP_SET16 ? 2 : 4;
  sim_op op = {.kind = k, .dst = (void *)(uintptr_t)d, .value = v, .n = n, .mw = sim_model_fill(n * width)};
  return sim_enqueue(st, &op);
}

CUresult sim_cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream st) {
  return set_op(OP_SET8, d, v, n, st);
}

CUresult sim_cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream st) {
  if (d % 2) return CUDA_ERROR_INVALID_VALUE;
  return set_op(OP_SET16, d, v, n, st);
}

CUresult sim_cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream st) {
  if (d % 4) return CUDA_ERROR_INVALID_VALUE;
  return set_op(OP_SET32, d, v, n, st);
}

CUresult sim_cuMemsetD2D32Async(CUdeviceptr d, size_t pitch, unsigned v, size_t w, size_t h,
                                       CUstream st) {
  NEED_INIT();
  if (d % 4 || (h > 1 && pitch < w * 4)) return CUDA_ERROR_INVALID_VALUE;
  sim_op op = {.kind = OP_SET2D32, .dst = (void *)(uintptr_t)d, .value = v, .n = w,
               .pitch = pitch, .height = h, .mw = sim_model_fill(4 * w * h)};
  return sim_enqueue(st, &op);
}

CUresult sim_cuLaunchHostFunc(CUstream st, CUhostFn fn, void *user) {
  NEED_INIT();
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  sim_op op = {.kind = OP_HOSTFN, .hostfn = fn, .user = user};
  return sim_enqueue(st, &op);
}
