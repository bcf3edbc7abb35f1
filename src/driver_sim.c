/*
 * driver_sim.c -- the sim backend: the driver table implemented in software.
 *
 * GPULUA_SIM_DEVICES virtual devices (default 2) whose memory is host memory.
 * Each stream is a FIFO of operations executed in order by its own worker
 * thread, so work on different streams really runs concurrently and unordered
 * work really races. Events complete when their stream reaches them; waits
 * block the waiting stream's worker until then.
 *
 * One mutex guards all sim state and one condition variable is broadcast
 * whenever anything completes or is queued: the number of threads is small
 * and this keeps the waiting logic obviously free of lost wake-ups.
 *
 * Environment: GPULUA_SIM_DEVICES (1..64), GPULUA_SIM_MEMORY (bytes per
 * device, suffixes K M G allowed; default 1G), GPULUA_SIM_DELAY_US (added to
 * every queued operation, to make races show in tests), GPULUA_SIM_HOST_MEMORY
 * (a limit on pinned host memory, like GPULUA_SIM_MEMORY; default none: only
 * the host's own memory limits it).
 */

#include "driver.h"
#include "sim.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define SIM_MAX_DEVICES 64
#define SIM_ALIGN 256

struct CUctx_st {
  int ordinal;
  int retained;
  struct CUstream_st *streams; /* live streams of this context */
};

typedef struct sim_device {
  char name[64];
  size_t total;
  size_t used;
  struct CUctx_st ctx;
  unsigned char peer[SIM_MAX_DEVICES]; /* peer access enabled from this ctx */
} sim_device;

/* One cuEventRecord call: what a wait queued after it captures. Records of
 * one event may complete out of order (on different streams), so each has
 * its own completion. */
typedef struct sim_mark {
  int refs;            /* the event (while it is the latest) + queued ops */
  int done;
  double t_ms;         /* host clock when the stream reached it */
} sim_mark;

struct CUevent_st {
  unsigned flags;
  sim_mark *latest;    /* the most recent record, NULL before the first */
};

enum sim_op_kind {
  OP_COPY,    /* memcpy, any direction */
  OP_SET8,
  OP_SET16,
  OP_SET32,
  OP_SET2D32,
  OP_RECORD,
  OP_WAIT,
  OP_FREE,
  OP_HOSTFN,
  OP_SIMFN,
  OP_KERNEL
};

typedef struct sim_op {
  struct sim_op *next;
  enum sim_op_kind kind;
  void *dst;
  const void *src;
  size_t n, pitch, height;
  unsigned value;
  sim_mark *mark;      /* OP_RECORD: completes it; OP_WAIT: waits for it */
  CUhostFn hostfn;
  gl_sim_fn simfn;
  void *user;
  struct CUfunc_st *func; /* OP_KERNEL */
  gl_sim_launch *launch;
} sim_op;

struct CUstream_st {
  struct CUctx_st *ctx;
  struct CUstream_st *next_in_ctx;
  int priority;
  sim_op *head, *tail;
  uint64_t enq, done;
  int destroying;
  CUresult error; /* sticky error of a failed operation */
};

typedef struct sim_block { /* header in front of every sim allocation */
  size_t bytes;
  int ordinal;
  void *base;           /* pinned host memory: what calloc or mmap returned */
  size_t mapped;        /* the length mmap'ed, or 0 */
} sim_block;

static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int initialized;
  int ndev;
  sim_device dev[SIM_MAX_DEVICES];
  unsigned delay_us;
  size_t host_total, host_used; /* pinned host memory: the limit (0: none), in use */
} S = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static _Thread_local struct CUctx_st *cur_ctx;

/* Host kernels that must run on the main (Lua) thread: a worker that reaches
 * one queues a request and waits; the main thread runs requests whenever it
 * waits on the sim, or when the upper layer calls gl_sim_service(). */
typedef struct main_req {
  struct main_req *next;
  gl_sim_kernel_fn fn;
  void *user;
  const gl_sim_launch *launch;
  int done, failed;
} main_req;

static pthread_t main_thread;
static int main_thread_set;
static main_req *main_head, **main_tail = &main_head;

static int is_main(void) { return main_thread_set && pthread_equal(pthread_self(), main_thread); }

/* Run queued main-thread requests; called with S.mu held, returns with it held. */
static int service_locked(void) {
  int ran = 0;
  while (is_main() && main_head) {
    main_req *r = main_head;
    main_head = r->next;
    if (!main_head) main_tail = &main_head;
    pthread_mutex_unlock(&S.mu);
    int rc = r->fn(r->user, r->launch);
    pthread_mutex_lock(&S.mu);
    r->failed = rc != 0;
    r->done = 1;
    ran = 1;
    pthread_cond_broadcast(&S.cv);
  }
  return ran;
}

/* Wait on the sim's condition; on the main thread, serve requests meanwhile. */
static void host_wait_locked(void) {
  if (service_locked()) return; /* state may have changed: let the caller re-check */
  pthread_cond_wait(&S.cv, &S.mu);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- errors ---------------------------------------------------------- */

#define SIM_ERRORS(X)                                                                   \
  X(CUDA_SUCCESS, "no error")                                                           \
  X(CUDA_ERROR_INVALID_VALUE, "invalid argument")                                       \
  X(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")                                          \
  X(CUDA_ERROR_NOT_INITIALIZED, "initialization error")                                 \
  X(CUDA_ERROR_DEINITIALIZED, "driver shutting down")                                   \
  X(CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library")                           \
  X(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected")                         \
  X(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal")                                \
  X(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid")                         \
  X(CUDA_ERROR_INVALID_CONTEXT, "invalid device context")                               \
  X(CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device") \
  X(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed")                             \
  X(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle")                               \
  X(CUDA_ERROR_NOT_FOUND, "named symbol not found")                                     \
  X(CUDA_ERROR_NOT_READY, "device not ready")                                           \
  X(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered")             \
  X(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch")      \
  X(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure")                             \
  X(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "peer access is not supported between these two devices") \
  X(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "peer access is already enabled")           \
  X(CUDA_ERROR_ASSERT, "device-side assert triggered")                                  \
  X(CUDA_ERROR_ILLEGAL_INSTRUCTION, "an illegal instruction was encountered")           \
  X(CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address")                                \
  X(CUDA_ERROR_NOT_SUPPORTED, "operation not supported")                                \
  X(CUDA_ERROR_UNKNOWN, "unknown error")

static CUresult sim_cuGetErrorName(CUresult e, const char **s) {
  switch (e) {
#define NAME_CASE(code, str) case code: *s = #code; return CUDA_SUCCESS;
    SIM_ERRORS(NAME_CASE)
#undef NAME_CASE
  default: *s = NULL; return CUDA_ERROR_INVALID_VALUE;
  }
}

static CUresult sim_cuGetErrorString(CUresult e, const char **s) {
  switch (e) {
#define STR_CASE(code, str) case code: *s = str; return CUDA_SUCCESS;
    SIM_ERRORS(STR_CASE)
#undef STR_CASE
  default: *s = NULL; return CUDA_ERROR_INVALID_VALUE;
  }
}

/* ---- initialisation, devices ----------------------------------------- */

static int parse_size(const char *s, size_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s) return -1;
  unsigned long long mul = 1;
  switch (*end) {
  case 'k': case 'K': mul = 1ULL << 10; end++; break;
  case 'm': case 'M': mul = 1ULL << 20; end++; break;
  case 'g': case 'G': mul = 1ULL << 30; end++; break;
  default: break;
  }
  if (*end != '\0' || v == 0 || v > (1ULL << 50) / mul) return -1;
  *out = (size_t)(v * mul);
  return 0;
}

int gl_sim_config_error(char *why, size_t whylen) {
  const char *s = getenv("GPULUA_SIM_DEVICES");
  if (s && *s) {
    char *end;
    long n = strtol(s, &end, 10);
    if (*end != '\0' || n < 1 || n > SIM_MAX_DEVICES) {
      snprintf(why, whylen, "GPULUA_SIM_DEVICES must be an integer from 1 to %d, got '%s'",
               SIM_MAX_DEVICES, s);
      return -1;
    }
  }
  size_t mem;
  s = getenv("GPULUA_SIM_MEMORY");
  if (s && *s && parse_size(s, &mem) != 0) {
    snprintf(why, whylen, "GPULUA_SIM_MEMORY must be a byte count such as 1073741824 or 512M, got '%s'", s);
    return -1;
  }
  s = getenv("GPULUA_SIM_HOST_MEMORY");
  if (s && *s && parse_size(s, &mem) != 0) {
    snprintf(why, whylen, "GPULUA_SIM_HOST_MEMORY must be a byte count such as 1073741824 or 512M, got '%s'", s);
    return -1;
  }
  s = getenv("GPULUA_SIM_DELAY_US");
  if (s && *s) {
    char *end;
    long n = strtol(s, &end, 10);
    if (*end != '\0' || n < 0 || n > 10000000) {
      snprintf(why, whylen, "GPULUA_SIM_DELAY_US must be an integer from 0 to 10000000, got '%s'", s);
      return -1;
    }
  }
  return 0;
}

static CUresult sim_cuInit(unsigned flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  char why[160];
  if (gl_sim_config_error(why, sizeof why) != 0) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&S.mu);
  if (!S.initialized) {
    const char *s = getenv("GPULUA_SIM_DEVICES");
    S.ndev = (s && *s) ? atoi(s) : 2;
    size_t mem = 1ULL << 30;
    s = getenv("GPULUA_SIM_MEMORY");
    if (s && *s) parse_size(s, &mem);
    s = getenv("GPULUA_SIM_HOST_MEMORY");
    S.host_total = 0;
    S.host_used = 0;
    if (s && *s) parse_size(s, &S.host_total);
    s = getenv("GPULUA_SIM_DELAY_US");
    S.delay_us = (s && *s) ? (unsigned)atol(s) : 0;
    for (int i = 0; i < S.ndev; i++) {
      snprintf(S.dev[i].name, sizeof S.dev[i].name, "gpulua sim device %d", i);
      S.dev[i].total = mem;
      S.dev[i].used = 0;
      S.dev[i].ctx.ordinal = i;
    }
    S.initialized = 1;
  }
  pthread_mutex_unlock(&S.mu);
  return CUDA_SUCCESS;
}

#define NEED_INIT() do { if (!S.initialized) return CUDA_ERROR_NOT_INITIALIZED; } while (0)
#define NEED_DEV(d) do { NEED_INIT(); if ((d) < 0 || (d) >= S.ndev) return CUDA_ERROR_INVALID_DEVICE; } while (0)
#define NEED_CTX() do { NEED_INIT(); if (!cur_ctx) return CUDA_ERROR_INVALID_CONTEXT; } while (0)

static CUresult sim_cuDriverGetVersion(int *v) {
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  *v = CUDA_VERSION;
  return CUDA_SUCCESS;
}

static CUresult sim_cuDeviceGetCount(int *n) {
  NEED_INIT();
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  *n = S.ndev;
  return CUDA_SUCCESS;
}

static CUresult sim_cuDeviceGet(CUdevice *d, int ordinal) {
  NEED_DEV(ordinal);
  *d = ordinal;
  return CUDA_SUCCESS;
}

static CUresult sim_cuDeviceGetName(char *name, int len, CUdevice d) {
  NEED_DEV(d);
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  snprintf(name, (size_t)len, "%s", S.dev[d].name);
  return CUDA_SUCCESS;
}

static CUresult sim_cuDeviceTotalMem(size_t *bytes, CUdevice d) {
  NEED_DEV(d);
  *bytes = S.dev[d].total;
  return CUDA_SUCCESS;
}

/* The stated limits of a sim device: those of a small Hopper (cc 9.0). */
static CUresult sim_cuDeviceGetAttribute(int *pi, CUdevice_attribute a, CUdevice d) {
  NEED_DEV(d);
  int v;
  switch (a) {
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: v = 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: v = 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: v = 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: v = 64; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: v = 2147483647; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: v = 65535; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: v = 65535; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: v = 49152; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: v = 232448; break;
  case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: v = 65536; break;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE: v = 32; break;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: v = 65536; break;
  case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: v = 1000000; break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: v = 4; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: v = 9; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: v = 0; break;
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: v = 1; break;
  case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: v = 2; break;
  case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: v = 1; break;
  case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: v = 1; break;
  case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: v = 1; break;
  case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: v = 4 << 20; break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: v = 2048; break;
  case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: v = 4096; break;
  case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: v = 1000000; break;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  *pi = v;
  return CUDA_SUCCESS;
}

static CUresult sim_cuDeviceCanAccessPeer(int *can, CUdevice d, CUdevice peer) {
  NEED_DEV(d);
  NEED_DEV(peer);
  *can = d != peer;
  return CUDA_SUCCESS;
}

static CUresult sim_cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice d) {
  NEED_DEV(d);
  *pool = (CUmemoryPool)(uintptr_t)(d + 1);
  return CUDA_SUCCESS;
}

static CUresult sim_cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
  NEED_INIT();
  intptr_t d = (intptr_t)(uintptr_t)pool - 1;
  if (d < 0 || d >= S.ndev || !value) return CUDA_ERROR_INVALID_VALUE;
  (void)attr; /* the sim pool has no tunables: accepted and ignored */
  return CUDA_SUCCESS;
}

static CUresult sim_cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count) {
  NEED_INIT();
  intptr_t d = (intptr_t)(uintptr_t)pool - 1;
  if (d < 0 || d >= S.ndev || (!map && count)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; i++)
    if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || map[i].location.id < 0 ||
        map[i].location.id >= S.ndev)
      return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS; /* host memory is reachable from every sim device anyway */
}

static CUresult sim_cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  NEED_INIT();
  intptr_t d = (intptr_t)(uintptr_t)pool - 1;
  if (d < 0 || d >= S.ndev) return CUDA_ERROR_INVALID_VALUE;
  (void)keep; /* the sim pool keeps nothing: a free gives the bytes back at once */
  return CUDA_SUCCESS;
}

static CUresult sim_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice d) {
  NEED_DEV(d);
  pthread_mutex_lock(&S.mu);
  S.dev[d].ctx.retained++;
  pthread_mutex_unlock(&S.mu);
  *pctx = &S.dev[d].ctx;
  return CUDA_SUCCESS;
}

static CUresult sim_cuDevicePrimaryCtxRelease(CUdevice d) {
  NEED_DEV(d);
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&S.mu);
  if (S.dev[d].ctx.retained > 0) S.dev[d].ctx.retained--;
  else r = CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_unlock(&S.mu);
  return r;
}

static CUresult sim_cuCtxSetCurrent(CUcontext ctx) {
  NEED_INIT();
  if (ctx && (ctx->ordinal < 0 || ctx->ordinal >= S.ndev || ctx != &S.dev[ctx->ordinal].ctx))
    return CUDA_ERROR_INVALID_CONTEXT;
  cur_ctx = ctx;
  return CUDA_SUCCESS;
}

static CUresult sim_cuCtxGetStreamPriorityRange(int *least, int *greatest) {
  NEED_CTX();
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return CUDA_SUCCESS;
}

static CUresult sim_cuCtxEnablePeerAccess(CUcontext peer, unsigned flags) {
  NEED_CTX();
  if (!peer || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (peer == cur_ctx) return CUDA_ERROR_INVALID_DEVICE;
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&S.mu);
  unsigned char *p = &S.dev[cur_ctx->ordinal].peer[peer->ordinal];
  if (*p) r = CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  *p = 1;
  pthread_mutex_unlock(&S.mu);
  return r;
}

/* ---- memory ---------------------------------------------------------- */

/* Live allocations: an open-addressing hash set of device pointers, so a
 * free of a pointer the sim did not hand out (or already freed) is refused
 * without touching its memory. Guarded by S.mu. */
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

static CUresult sim_cuMemGetInfo(size_t *free_, size_t *total) {
  NEED_CTX();
  pthread_mutex_lock(&S.mu);
  sim_device *d = &S.dev[cur_ctx->ordinal];
  if (free_) *free_ = d->total - d->used;
  if (total) *total = d->total;
  pthread_mutex_unlock(&S.mu);
  return CUDA_SUCCESS;
}

/* ---- streams and the worker ------------------------------------------ */

static void mark_unref_locked(sim_mark *m) {
  if (m && --m->refs == 0) free(m);
}

static int run_kernel(sim_op *op);

static void run_op(struct CUstream_st *st, sim_op *op) {
  switch (op->kind) {
  case OP_COPY:
    if (op->n) memmove(op->dst, op->src, op->n);
    break;
  case OP_SET8:
    memset(op->dst, (int)(op->value & 0xff), op->n);
    break;
  case OP_SET16: {
    uint16_t v = (uint16_t)op->value, *p = op->dst;
    for (size_t i = 0; i < op->n; i++) p[i] = v;
    break;
  }
  case OP_SET32: {
    uint32_t v = op->value, *p = op->dst;
    for (size_t i = 0; i < op->n; i++) p[i] = v;
    break;
  }
  case OP_SET2D32:
    for (size_t r = 0; r < op->height; r++) {
      uint32_t *p = (uint32_t *)((char *)op->dst + r * op->pitch);
      for (size_t i = 0; i < op->n; i++) p[i] = op->value;
    }
    break;
  case OP_HOSTFN:
    op->hostfn(op->user);
    break;
  case OP_KERNEL:
    if (run_kernel(op) != 0) {
      pthread_mutex_lock(&S.mu);
      st->error = CUDA_ERROR_LAUNCH_FAILED;
      pthread_mutex_unlock(&S.mu);
    }
    break;
  case OP_SIMFN:
    if (op->simfn(op->user) != 0) {
      pthread_mutex_lock(&S.mu);
      st->error = CUDA_ERROR_LAUNCH_FAILED;
      pthread_mutex_unlock(&S.mu);
    }
    break;
  case OP_FREE: {
    sim_block *b = op->dst;
    free(b);
    break;
  }
  case OP_RECORD:
  case OP_WAIT:
    break; /* handled under the lock */
  }
}

static void *worker(void *arg) {
  struct CUstream_st *st = arg;
  pthread_mutex_lock(&S.mu);
  for (;;) {
    sim_op *op = st->head;
    if (!op) {
      if (st->destroying) break;
      pthread_cond_wait(&S.cv, &S.mu);
      continue;
    }
    if (op->kind == OP_WAIT && !op->mark->done) {
      pthread_cond_wait(&S.cv, &S.mu);
      continue;
    }
    if (op->kind != OP_RECORD && op->kind != OP_WAIT) {
      pthread_mutex_unlock(&S.mu);
      if (S.delay_us) usleep(S.delay_us);
      /* After a failed operation the stream's later work is skipped, like a
       * context after a sticky fault; records and waits still complete so
       * nobody waits forever. */
      if (st->error == CUDA_SUCCESS || op->kind == OP_FREE) run_op(st, op);
      pthread_mutex_lock(&S.mu);
    } else if (op->kind == OP_RECORD) {
      op->mark->done = 1;
      op->mark->t_ms = now_ms();
    }
    mark_unref_locked(op->mark);
    free(op->launch);
    st->head = op->next;
    if (!st->head) st->tail = NULL;
    st->done++;
    free(op);
    pthread_cond_broadcast(&S.cv);
  }
  /* destroyed and drained: unlink from the context and go */
  struct CUstream_st **pp = &st->ctx->streams;
  while (*pp && *pp != st) pp = &(*pp)->next_in_ctx;
  if (*pp) *pp = st->next_in_ctx;
  pthread_cond_broadcast(&S.cv);
  pthread_mutex_unlock(&S.mu);
  free(st);
  return NULL;
}

/* A fork() while a worker holds S.mu (workers take it whenever anything is
 * broadcast) would leave the child's copy locked for ever: fork holds it. */
static void fork_prepare(void) { pthread_mutex_lock(&S.mu); }
static void fork_release(void) { pthread_mutex_unlock(&S.mu); }
static void fork_register(void) { pthread_atfork(fork_prepare, fork_release, fork_release); }
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static CUresult sim_cuStreamCreateWithPriority(CUstream *ph, unsigned flags, int priority) {
  NEED_CTX();
  if (!ph || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
  pthread_once(&fork_once, fork_register); /* before the first worker */
  struct CUstream_st *st = calloc(1, sizeof *st);
  if (!st) return CUDA_ERROR_OUT_OF_MEMORY;
  st->ctx = cur_ctx;
  st->priority = priority < -5 ? -5 : priority > 0 ? 0 : priority; /* clamped, like CUDA */
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 1 << 20);
  pthread_mutex_lock(&S.mu);
  st->next_in_ctx = cur_ctx->streams;
  cur_ctx->streams = st;
  pthread_t th;
  int rc = pthread_create(&th, &attr, worker, st);
  if (rc != 0) {
    cur_ctx->streams = st->next_in_ctx;
    pthread_mutex_unlock(&S.mu);
    pthread_attr_destroy(&attr);
    free(st);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  pthread_mutex_unlock(&S.mu);
  pthread_attr_destroy(&attr);
  *ph = st;
  return CUDA_SUCCESS;
}

/* Queue `op` (a template copied into a new node) on stream `st`. */
/* Queue `op` (a template copied into a new node) on stream `st`. For a
 * record or a wait, `ev` is the event. */
static CUresult enqueue_ev(struct CUstream_st *st, const sim_op *tmpl, struct CUevent_st *ev) {
  if (!st) return CUDA_ERROR_INVALID_HANDLE; /* the sim has no NULL stream */
  sim_op *op = malloc(sizeof *op);
  if (!op) return CUDA_ERROR_OUT_OF_MEMORY;
  sim_mark *fresh = NULL;
  if (tmpl->kind == OP_RECORD && !(fresh = calloc(1, sizeof *fresh))) {
    free(op);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *op = *tmpl;
  op->next = NULL;
  op->mark = NULL;
  pthread_mutex_lock(&S.mu);
  if (st->destroying) {
    pthread_mutex_unlock(&S.mu);
    free(op);
    free(fresh);
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (op->kind == OP_RECORD) { /* the event now stands for this record */
    mark_unref_locked(ev->latest);
    fresh->refs = 2;
    ev->latest = fresh;
    op->mark = fresh;
  } else if (op->kind == OP_WAIT) { /* captures the latest record, if any */
    if (!ev->latest || ev->latest->done) {
      pthread_mutex_unlock(&S.mu);
      free(op);
      return CUDA_SUCCESS; /* nothing to wait for: like CUDA, a no-op */
    }
    op->mark = ev->latest;
    op->mark->refs++;
  }
  if (st->tail) st->tail->next = op;
  else st->head = op;
  st->tail = op;
  st->enq++;
  pthread_cond_broadcast(&S.cv);
  pthread_mutex_unlock(&S.mu);
  return CUDA_SUCCESS;
}

static CUresult enqueue(struct CUstream_st *st, const sim_op *tmpl) { return enqueue_ev(st, tmpl, NULL); }

static CUresult sim_cuStreamDestroy(CUstream st) {
  NEED_INIT();
  if (!st) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&S.mu);
  st->destroying = 1; /* queued work still runs; the worker frees the stream */
  pthread_cond_broadcast(&S.cv);
  pthread_mutex_unlock(&S.mu);
  return CUDA_SUCCESS;
}

static CUresult sim_cuStreamWaitEvent(CUstream st, CUevent ev, unsigned flags) {
  NEED_INIT();
  if (!ev || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  sim_op op = {.kind = OP_WAIT};
  return enqueue_ev(st, &op, ev);
}

static CUresult sim_cuStreamSynchronize(CUstream st) {
  NEED_INIT();
  if (!st) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&S.mu);
  uint64_t target = st->enq;
  while (st->done < target) host_wait_locked();
  CUresult r = st->error;
  pthread_mutex_unlock(&S.mu);
  return r;
}

static CUresult sim_cuStreamQuery(CUstream st) {
  NEED_INIT();
  if (!st) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&S.mu);
  service_locked();
  CUresult r = st->error ? st->error : st->done == st->enq ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  pthread_mutex_unlock(&S.mu);
  if (r == CUDA_ERROR_NOT_READY) sched_yield(); /* a loop of queries must let the workers run */
  return r;
}

static CUresult sim_cuCtxSynchronize(void) {
  NEED_CTX();
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&S.mu);
  for (;;) {
    int busy = 0;
    for (struct CUstream_st *st = cur_ctx->streams; st; st = st->next_in_ctx)
      if (st->done < st->enq) busy = 1;
    if (!busy) break;
    host_wait_locked();
  }
  for (struct CUstream_st *st = cur_ctx->streams; st; st = st->next_in_ctx)
    if (st->error) r = st->error;
  pthread_mutex_unlock(&S.mu);
  return r;
}

/* ---- events ---------------------------------------------------------- */

static CUresult sim_cuEventCreate(CUevent *ph, unsigned flags) {
  NEED_CTX();
  if (!ph || (flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING)))
    return CUDA_ERROR_INVALID_VALUE;
  struct CUevent_st *e = calloc(1, sizeof *e);
  if (!e) return CUDA_ERROR_OUT_OF_MEMORY;
  e->flags = flags;
  *ph = e;
  return CUDA_SUCCESS;
}

static CUresult sim_cuEventDestroy(CUevent e) {
  NEED_INIT();
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&S.mu);
  mark_unref_locked(e->latest); /* queued records and waits keep their marks */
  pthread_mutex_unlock(&S.mu);
  free(e);
  return CUDA_SUCCESS;
}

static CUresult sim_cuEventRecord(CUevent e, CUstream st) {
  NEED_INIT();
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  sim_op op = {.kind = OP_RECORD};
  return enqueue_ev(st, &op, e);
}

static CUresult sim_cuEventSynchronize(CUevent e) {
  NEED_INIT();
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&S.mu);
  sim_mark *m = e->latest;
  if (m) {
    m->refs++;
    while (!m->done) host_wait_locked();
    mark_unref_locked(m);
  }
  pthread_mutex_unlock(&S.mu);
  return CUDA_SUCCESS;
}

static CUresult sim_cuEventQuery(CUevent e) {
  NEED_INIT();
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&S.mu);
  service_locked();
  CUresult r = !e->latest || e->latest->done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  pthread_mutex_unlock(&S.mu);
  if (r == CUDA_ERROR_NOT_READY) sched_yield(); /* a loop of queries must let the workers run */
  return r;
}

static CUresult sim_cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
  NEED_INIT();
  if (!ms || !a || !b) return CUDA_ERROR_INVALID_HANDLE;
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&S.mu);
  if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING) r = CUDA_ERROR_INVALID_HANDLE;
  else if (!a->latest || !b->latest) r = CUDA_ERROR_INVALID_HANDLE;
  else if (!a->latest->done || !b->latest->done) r = CUDA_ERROR_NOT_READY;
  else *ms = (float)(b->latest->t_ms - a->latest->t_ms);
  pthread_mutex_unlock(&S.mu);
  return r;
}

/* ---- stream-ordered allocation and copies ---------------------------- */

static CUresult sim_cuMemAllocAsync(CUdeviceptr *dptr, size_t bytes, CUstream st) {
  NEED_INIT();
  if (!dptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (!st) return CUDA_ERROR_INVALID_HANDLE;
  sim_device *d = &S.dev[st->ctx->ordinal];
  if (bytes > d->total) return CUDA_ERROR_OUT_OF_MEMORY;
  size_t rounded = (bytes + SIM_ALIGN - 1) / SIM_ALIGN * SIM_ALIGN;
  pthread_mutex_lock(&S.mu);
  if (d->used + rounded > d->total) {
    pthread_mutex_unlock(&S.mu);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  d->used += rounded;
  pthread_mutex_unlock(&S.mu);
  sim_block *b = aligned_alloc(SIM_ALIGN, SIM_ALIGN + rounded);
  if (!b) {
    pthread_mutex_lock(&S.mu);
    d->used -= rounded;
    pthread_mutex_unlock(&S.mu);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  b->bytes = rounded;
  b->ordinal = st->ctx->ordinal;
  /* Contents are undefined: poison them so a script that forgets to write
   * memory sees garbage (NaN for floats), as it may on a GPU. */
  memset((char *)b + SIM_ALIGN, 0xff, rounded);
  uintptr_t p = (uintptr_t)((char *)b + SIM_ALIGN);
  pthread_mutex_lock(&S.mu);
  int rc = live_add(p);
  if (rc != 0) d->used -= rounded;
  pthread_mutex_unlock(&S.mu);
  if (rc != 0) {
    free(b);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *dptr = (CUdeviceptr)p;
  return CUDA_SUCCESS;
}

static CUresult sim_cuMemFreeAsync(CUdeviceptr p, CUstream st) {
  NEED_INIT();
  if (!st) return CUDA_ERROR_INVALID_HANDLE;
  /* The pool may hand the bytes out again in stream order at once; the host
   * memory itself goes when the stream reaches the free. */
  pthread_mutex_lock(&S.mu);
  size_t at;
  if (!live_find((uintptr_t)p, &at)) {
    pthread_mutex_unlock(&S.mu);
    return CUDA_ERROR_INVALID_VALUE;
  }
  sim_block *b = block_of(p);
  live_remove(at);
  S.dev[b->ordinal].used -= b->bytes;
  pthread_mutex_unlock(&S.mu);
  sim_op op = {.kind = OP_FREE, .dst = b};
  CUresult r = enqueue(st, &op);
  if (r != CUDA_SUCCESS) {
    pthread_mutex_lock(&S.mu);
    live_add((uintptr_t)p);
    S.dev[b->ordinal].used += b->bytes;
    pthread_mutex_unlock(&S.mu);
  }
  return r;
}

/* Pinned memory carries a header like device memory, for the limit. It is
 * zeroed, as sim.h promises: large sizes are fresh mmap pages, untouched
 * until used (even under sanitizers, whose calloc may clear every page). */
static CUresult sim_cuMemHostAlloc(void **pp, size_t bytes, unsigned flags) {
  NEED_CTX();
  (void)flags;
  if (!pp || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (bytes > ((size_t)1 << 50)) return CUDA_ERROR_OUT_OF_MEMORY;
  size_t rounded = (bytes + SIM_ALIGN - 1) / SIM_ALIGN * SIM_ALIGN;
  pthread_mutex_lock(&S.mu);
  if (S.host_total && S.host_used + rounded > S.host_total) {
    pthread_mutex_unlock(&S.mu);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  S.host_used += rounded;
  pthread_mutex_unlock(&S.mu);
  size_t mapped = rounded >= ((size_t)1 << 20) ? SIM_ALIGN + rounded : 0;
  char *raw;
  if (mapped) {
    raw = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) raw = NULL;
  } else {
    raw = calloc(1, 2 * SIM_ALIGN + rounded);
  }
  if (!raw) {
    pthread_mutex_lock(&S.mu);
    S.host_used -= rounded;
    pthread_mutex_unlock(&S.mu);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  char *user = mapped ? raw + SIM_ALIGN : (char *)(((uintptr_t)raw + 2 * SIM_ALIGN - 1) / SIM_ALIGN * SIM_ALIGN);
  sim_block *b = (sim_block *)(user - SIM_ALIGN);
  b->bytes = rounded;
  b->ordinal = -1;
  b->base = raw;
  b->mapped = mapped;
  *pp = user;
  return CUDA_SUCCESS;
}

static CUresult sim_cuMemFreeHost(void *p) {
  NEED_INIT();
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  sim_block *b = (sim_block *)((char *)p - SIM_ALIGN);
  pthread_mutex_lock(&S.mu);
  S.host_used -= b->bytes;
  pthread_mutex_unlock(&S.mu);
  if (b->mapped) munmap(b->base, b->mapped);
  else free(b->base);
  return CUDA_SUCCESS;
}

int gl_sim_host_memory(size_t *avail, size_t *total) {
  pthread_mutex_lock(&S.mu);
  int limited = S.host_total != 0;
  if (limited) {
    *total = S.host_total;
    *avail = S.host_total - S.host_used;
  }
  pthread_mutex_unlock(&S.mu);
  return limited;
}

static CUresult copy_op(void *dst, const void *src, size_t n, CUstream st) {
  NEED_INIT();
  if ((!dst || !src) && n) return CUDA_ERROR_INVALID_VALUE;
  sim_op op = {.kind = OP_COPY, .dst = dst, .src = src, .n = n};
  return enqueue(st, &op);
}

static CUresult sim_cuMemcpyHtoDAsync(CUdeviceptr d, const void *h, size_t n, CUstream st) {
  return copy_op((void *)(uintptr_t)d, h, n, st);
}

static CUresult sim_cuMemcpyDtoHAsync(void *h, CUdeviceptr d, size_t n, CUstream st) {
  return copy_op(h, (const void *)(uintptr_t)d, n, st);
}

static CUresult sim_cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) {
  return copy_op((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n, st);
}

static CUresult sim_cuMemcpyPeerAsync(CUdeviceptr d, CUcontext dctx, CUdeviceptr s, CUcontext sctx,
                                      size_t n, CUstream st) {
  if (!dctx || !sctx) return CUDA_ERROR_INVALID_CONTEXT;
  return copy_op((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n, st);
}

static CUresult set_op(enum sim_op_kind k, CUdeviceptr d, unsigned v, size_t n, CUstream st) {
  NEED_INIT();
  if (!d && n) return CUDA_ERROR_INVALID_VALUE;
  sim_op op = {.kind = k, .dst = (void *)(uintptr_t)d, .value = v, .n = n};
  return enqueue(st, &op);
}

static CUresult sim_cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream st) {
  return set_op(OP_SET8, d, v, n, st);
}

static CUresult sim_cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream st) {
  if (d % 2) return CUDA_ERROR_INVALID_VALUE;
  return set_op(OP_SET16, d, v, n, st);
}

static CUresult sim_cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream st) {
  if (d % 4) return CUDA_ERROR_INVALID_VALUE;
  return set_op(OP_SET32, d, v, n, st);
}

static CUresult sim_cuMemsetD2D32Async(CUdeviceptr d, size_t pitch, unsigned v, size_t w, size_t h,
                                       CUstream st) {
  NEED_INIT();
  if (d % 4 || (h > 1 && pitch < w * 4)) return CUDA_ERROR_INVALID_VALUE;
  sim_op op = {.kind = OP_SET2D32, .dst = (void *)(uintptr_t)d, .value = v, .n = w,
               .pitch = pitch, .height = h};
  return enqueue(st, &op);
}

static CUresult sim_cuLaunchHostFunc(CUstream st, CUhostFn fn, void *user) {
  NEED_INIT();
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  sim_op op = {.kind = OP_HOSTFN, .hostfn = fn, .user = user};
  return enqueue(st, &op);
}

/* ---- modules and launches ------------------------------------------------
 * A sim module keeps its image. Kernels are found by name in PTX (".entry
 * name"); other images (CUBIN, fatbin) cannot be read, and any name is
 * accepted. No device code ever runs: a launch runs the host implementation
 * the upper layer gave with gl_sim_func_set_host, on the stream's worker or,
 * for Lua kernels, on the main thread. */

struct CUmod_st {
  char *image;
  size_t len;
  int is_ptx;
  int ordinal;
};

struct CUfunc_st {
  struct CUfunc_st *next; /* functions of the same module, freed with it */
  struct CUmod_st *mod;
  char name[256];
  gl_sim_kernel_fn host;
  void *user;
  int on_main;
  int nparams;
  size_t sizes[GL_SIM_MAX_PARAMS];
  int ptx_nparams;        /* parameters read from the PTX entry, -1 unknown */
  int max_threads;        /* per block: 1024, or the entry's .maxntid (__launch_bounds__) */
  size_t ptx_offset[GL_SIM_MAX_PARAMS], ptx_size[GL_SIM_MAX_PARAMS];
};

static struct CUfunc_st *all_funcs; /* guarded by S.mu */

static int run_kernel(sim_op *op) {
  struct CUfunc_st *f = op->func;
  /* read under the lock: gl_sim_func_set_host (k:host again) may write these
   * while this launch is on its way (a data race, ThreadSanitizer found) */
  pthread_mutex_lock(&S.mu);
  main_req r = {NULL, f->host, f->user, op->launch, 0, 0};
  if (!f->on_main) {
    pthread_mutex_unlock(&S.mu);
    return r.fn(r.user, op->launch);
  }
  *main_tail = &r;
  main_tail = &r.next;
  pthread_cond_broadcast(&S.cv);
  while (!r.done) pthread_cond_wait(&S.cv, &S.mu);
  pthread_mutex_unlock(&S.mu);
  return r.failed;
}

static CUresult sim_cuModuleLoadData(CUmodule *m, const void *image) {
  NEED_CTX();
  if (!m || !image) return CUDA_ERROR_INVALID_VALUE;
  const unsigned char *p = image;
  struct CUmod_st *mod = calloc(1, sizeof *mod);
  if (!mod) return CUDA_ERROR_OUT_OF_MEMORY;
  mod->ordinal = cur_ctx->ordinal;
  if (p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F') {
    mod->is_ptx = 0; /* CUBIN: names cannot be checked */
  } else if (p[0] == 0x50 && p[1] == 0xed && p[2] == 0x55 && p[3] == 0xba) {
    mod->is_ptx = 0; /* fatbin */
  } else {
    mod->len = strlen(image);
    if (!strstr(image, ".version") || !strstr(image, ".target")) {
      free(mod);
      return CUDA_ERROR_INVALID_IMAGE;
    }
    mod->image = malloc(mod->len + 1);
    if (!mod->image) {
      free(mod);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(mod->image, image, mod->len + 1);
    mod->is_ptx = 1;
  }
  *m = mod;
  return CUDA_SUCCESS;
}

static CUresult sim_cuModuleUnload(CUmodule m) {
  NEED_INIT();
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&S.mu);
  for (struct CUfunc_st **pp = &all_funcs; *pp;) {
    if ((*pp)->mod == m) {
      struct CUfunc_st *dead = *pp;
      *pp = dead->next;
      free(dead);
    } else {
      pp = &(*pp)->next;
    }
  }
  pthread_mutex_unlock(&S.mu);
  free(m->image);
  free(m);
  return CUDA_SUCCESS;
}

/* The text after ".entry name", or NULL. */
static const char *ptx_entry(const char *ptx, const char *name) {
  size_t n = strlen(name);
  for (const char *p = strstr(ptx, ".entry"); p; p = strstr(p + 6, ".entry")) {
    const char *q = p + 6;
    while (*q == ' ' || *q == '\t') q++;
    if (strncmp(q, name, n) == 0 && (q[n] == '(' || q[n] == ' ' || q[n] == '\n' || q[n] == '\r' || q[n] == '\t'))
      return q + n;
  }
  return NULL;
}

/* Read ".param [.align A] .type name[[N]]" declarations, as the driver's
 * cuFuncGetParamInfo reports them (offsets aligned). An ".align" after the
 * type (".ptr .align 1") is the pointee's, not the parameter's. A list this
 * reader cannot make sense of leaves the parameters unknown (-1), as for a
 * CUBIN, rather than reporting a wrong layout. */
static void ptx_params(const char *after, struct CUfunc_st *f) {
  f->ptx_nparams = -1;
  const char *p = after;
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  if (*p != '(') {
    f->ptx_nparams = 0; /* no parameter list */
    return;
  }
  const char *end = strchr(p, ')');
  if (!end) return;
  int n = 0;
  size_t off = 0;
  for (const char *q = strstr(p, ".param"); q && q < end; q = strstr(q + 6, ".param")) {
    if (n == GL_SIM_MAX_PARAMS) return;
    size_t align = 0, size = 0, count = 1;
    const char *next = strstr(q + 6, ".param");
    if (!next || next > end) next = end;
    static const struct { const char *t; size_t n; } types[] = {
      {".u8", 1}, {".s8", 1}, {".b8", 1}, {".u16", 2}, {".s16", 2}, {".b16", 2}, {".f16", 2},
      {".u32", 4}, {".s32", 4}, {".b32", 4}, {".f32", 4}, {".u64", 8}, {".s64", 8}, {".b64", 8}, {".f64", 8}};
    const char *type_at = NULL;
    for (const char *t = q + 6; t < next && !size; t++) {
      if (*t != '.') continue;
      for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        size_t len = strlen(types[i].t);
        if (strncmp(t, types[i].t, len) == 0 && (t[len] == ' ' || t[len] == '\t')) {
          size = types[i].n;
          type_at = t;
          break;
        }
      }
    }
    if (!size) return;
    const char *a = strstr(q + 6, ".align");
    if (a && a < type_at) {
      char *e;
      unsigned long v = strtoul(a + 6, &e, 10);
      if (e == a + 6 || v == 0 || v > 256 || (v & (v - 1))) return; /* a power of two */
      align = v;
    }
    const char *br = memchr(type_at, '[', (size_t)(next - type_at));
    if (br) {
      char *e;
      unsigned long v = strtoul(br + 1, &e, 10);
      if (e == br + 1 || *e != ']' || v == 0 || v > 32768) return;
      count = v;
    }
    if (!align) align = size;
    off = (off + align - 1) / align * align;
    if (off + size * count > 32768) return; /* past the driver's limit on parameter bytes */
    f->ptx_offset[n] = off;
    f->ptx_size[n] = size * count;
    off += size * count;
    n++;
  }
  f->ptx_nparams = n;
}

/* The entry's ".maxntid x[, y[, z]]" (from __launch_bounds__), between its
 * parameter list and its body: the threads a block may have, or 1024. */
static int ptx_max_threads(const char *after) {
  const char *body = strchr(after, '{');
  const char *m = strstr(after, ".maxntid");
  if (!m || (body && m > body)) return 1024;
  unsigned long long threads = 1;
  char *p = (char *)m + 8;
  for (int i = 0; i < 3; i++) {
    char *end;
    unsigned long v = strtoul(p, &end, 10);
    if (end == p) break;
    threads *= v;
    p = end;
    while (*p == ' ' || *p == '\t') p++;
    if (*p != ',') break;
    p++;
  }
  return threads >= 1 && threads <= 1024 ? (int)threads : 1024;
}

static CUresult sim_cuModuleGetFunction(CUfunction *pf, CUmodule m, const char *name) {
  NEED_INIT();
  if (!pf || !m || !name) return CUDA_ERROR_INVALID_VALUE;
  if (strlen(name) >= sizeof((struct CUfunc_st *)0)->name) return CUDA_ERROR_NOT_FOUND;
  const char *entry = m->is_ptx ? ptx_entry(m->image, name) : NULL;
  if (m->is_ptx && !entry) return CUDA_ERROR_NOT_FOUND;
  pthread_mutex_lock(&S.mu);
  for (struct CUfunc_st *f = all_funcs; f; f = f->next)
    if (f->mod == m && strcmp(f->name, name) == 0) {
      *pf = f;
      pthread_mutex_unlock(&S.mu);
      return CUDA_SUCCESS;
    }
  struct CUfunc_st *f = calloc(1, sizeof *f);
  if (!f) {
    pthread_mutex_unlock(&S.mu);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  f->mod = m;
  snprintf(f->name, sizeof f->name, "%s", name);
  f->ptx_nparams = -1;
  f->max_threads = entry ? ptx_max_threads(entry) : 1024;
  if (entry) ptx_params(entry, f);
  f->next = all_funcs;
  all_funcs = f;
  pthread_mutex_unlock(&S.mu);
  *pf = f;
  return CUDA_SUCCESS;
}

static CUresult sim_cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size) {
  NEED_INIT();
  if (!f || !off || !size) return CUDA_ERROR_INVALID_VALUE;
  if (f->ptx_nparams < 0) return CUDA_ERROR_NOT_SUPPORTED; /* not PTX: unknown */
  if (i >= (size_t)f->ptx_nparams) return CUDA_ERROR_INVALID_VALUE;
  *off = f->ptx_offset[i];
  *size = f->ptx_size[i];
  return CUDA_SUCCESS;
}

static CUresult sim_cuFuncGetAttribute(int *pi, CUfunction_attribute a, CUfunction f) {
  NEED_INIT();
  if (!pi || !f) return CUDA_ERROR_INVALID_VALUE;
  switch (a) {
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = f->max_threads; break;
  case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *pi = 0; break;
  case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = 32; break;
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = 49152; break;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

static CUresult sim_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                   unsigned by, unsigned bz, unsigned shared, CUstream st,
                                   void **params, void **extra) {
  NEED_INIT();
  if (!f || extra) return CUDA_ERROR_INVALID_VALUE;
  if (!gx || !gy || !gz || !bx || !by || !bz) return CUDA_ERROR_INVALID_VALUE;
  if ((unsigned long long)bx * by * bz > 1024 || bz > 64) return CUDA_ERROR_INVALID_VALUE;
  if (shared > 232448) return CUDA_ERROR_INVALID_VALUE;
  if (!st) return CUDA_ERROR_INVALID_HANDLE;
  if ((unsigned long long)bx * by * bz > (unsigned long long)f->max_threads) return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  if (f->mod->ordinal != st->ctx->ordinal) return CUDA_ERROR_INVALID_HANDLE;
  if (!f->host) return CUDA_ERROR_NOT_SUPPORTED; /* no device code runs on sim */
  size_t total = 0;
  for (int i = 0; i < f->nparams; i++) total += (f->sizes[i] + 7) / 8 * 8;
  gl_sim_launch *l = calloc(1, sizeof *l + total);
  if (!l) return CUDA_ERROR_OUT_OF_MEMORY;
  l->grid[0] = gx, l->grid[1] = gy, l->grid[2] = gz;
  l->block[0] = bx, l->block[1] = by, l->block[2] = bz;
  l->shared = shared;
  l->nparams = f->nparams;
  unsigned char *store = (unsigned char *)(l + 1);
  for (int i = 0; i < f->nparams; i++) { /* copied now, as the driver does */
    if (!params || !params[i]) {
      free(l);
      return CUDA_ERROR_INVALID_VALUE;
    }
    memcpy(store, params[i], f->sizes[i]);
    l->params[i] = store;
    store += (f->sizes[i] + 7) / 8 * 8;
  }
  sim_op op = {.kind = OP_KERNEL, .func = f, .launch = l};
  CUresult r = enqueue(st, &op);
  if (r != CUDA_SUCCESS) free(l);
  return r;
}

CUresult gl_sim_func_set_host(CUfunction f, gl_sim_kernel_fn fn, void *user, int on_main, int nparams,
                              const size_t *sizes) {
  if (!f || nparams < 0 || nparams > GL_SIM_MAX_PARAMS) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&S.mu);
  f->host = fn;
  f->user = user;
  f->on_main = on_main;
  f->nparams = nparams;
  for (int i = 0; i < nparams; i++) f->sizes[i] = sizes[i];
  pthread_mutex_unlock(&S.mu);
  return CUDA_SUCCESS;
}

void gl_sim_set_main_thread(void) {
  pthread_mutex_lock(&S.mu);
  main_thread = pthread_self();
  main_thread_set = 1;
  pthread_mutex_unlock(&S.mu);
}

void gl_sim_service(void) {
  if (!is_main() || !main_head) return; /* unlocked peek: a miss is served next time */
  pthread_mutex_lock(&S.mu);
  service_locked();
  pthread_mutex_unlock(&S.mu);
}

CUresult gl_sim_enqueue(CUstream st, gl_sim_fn fn, void *user) {
  NEED_INIT();
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  sim_op op = {.kind = OP_SIMFN, .simfn = fn, .user = user};
  return enqueue(st, &op);
}

int gl_sim_device_of(CUstream st) {
  return st ? st->ctx->ordinal : -1;
}

void gl_driver_sim_load(gl_driver *d) {
  memset(d, 0, sizeof *d);
#define SIM_SET(name, params) d->name = sim_##name;
  GL_DRIVER_CALLS(SIM_SET)
#undef SIM_SET
  d->cuFuncGetParamInfo = sim_cuFuncGetParamInfo;
}
