/*
 * sim_device.c -- the sim's devices: its configuration from the environment,
 * cuInit, devices and their attributes, primary contexts, peer access, memory
 * pools, error names and strings, and gld_driver_sim_load, which fills the
 * table from the calls of all the sim's files.
 *
 * Environment: GPULUA_SIM_DEVICES (1..64), GPULUA_SIM_MEMORY (bytes per
 * device, suffixes K M G allowed; default 1G), GPULUA_SIM_DELAY_US (added to
 * every queued operation, to make races show in tests), GPULUA_SIM_HOST_MEMORY
 * (a limit on pinned host memory, like GPULUA_SIM_MEMORY; default none: only
 * the host's own memory limits it), GPULUA_SIM_NCCL_FAULT (a test hook: "N"
 * makes the N-th collective call of the process fail with ncclInternalError,
 * "async:N" makes the communicator of the N-th report ncclRemoteError
 * asynchronously after it; see sim_nccl.c), GPULUA_SIM_KERNELS (what a launch
 * runs: host, the host implementation; ptx (the default), its PTX through the interpreter;
 * compare, both, what they write compared: sim_compare.c), GPULUA_SIM_SCHEDULE (the order a PTX launch
 * runs in: fixed, or random:SEED; ptx_sched.c), GPULUA_SIM_RACECHECK (on, the
 * default, or off: whether kernels run as PTX are checked for data races,
 * ptx_race.c), GPULUA_SIM_BUILTINS (what a built-in's launch runs: c, the
 * default, its C implementation; ptx, kernels/builtins.cu's PTX through the
 * interpreter, whatever GPULUA_SIM_KERNELS says), GPULUA_SIM_NCCL_ADDR (the
 * address a job's hub listens on: sim_nccl_net.c).
 */

#include "sim_internal.h"
#include "sim_nccl.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

sim_state sim_S = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

_Thread_local struct CUctx_st *sim_cur_ctx;

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
  X(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "part or all of the requested memory range is already mapped") \
  X(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "pointer does not correspond to a registered memory region") \
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

/* "N" or "async:N" (N >= 1): N, with *async set when asked; 0 when malformed. */
static long parse_nccl_fault(const char *s, int *async) {
  int a = strncmp(s, "async:", 6) == 0;
  if (a) s += 6;
  char *end;
  long n = strtol(s, &end, 10);
  if (*s < '0' || *s > '9' || *end != '\0' || n < 1) return 0;
  if (async) *async = a;
  return n;
}

/* GPULUA_SIM_KERNELS: its values. */
static const struct {
  const char *name;
  sim_kernel_mode mode;
} kernel_modes[] = {
  {"ptx", SIM_KERNELS_PTX},
  {"host", SIM_KERNELS_HOST},
  {"compare", SIM_KERNELS_COMPARE},
};
#define NKERNEL_MODES (sizeof kernel_modes / sizeof kernel_modes[0])

/* The entry of kernel_modes s names, or -1. */
static int parse_kernels(const char *s) {
  for (size_t i = 0; i < NKERNEL_MODES; i++)
    if (strcmp(s, kernel_modes[i].name) == 0) return (int)i;
  return -1;
}

sim_kernel_mode sim_kernels(void) { return sim_S.kernels; }

/* GPULUA_SIM_SCHEDULE: "fixed" (0), or "random:SEED" (1, *seed set), SEED
 * a decimal integer below 2^64; -1 for anything else. */
static int parse_schedule(const char *s, uint64_t *seed) {
  if (strcmp(s, "fixed") == 0) return 0;
  if (strncmp(s, "random:", 7) != 0) return -1;
  s += 7;
  if (*s < '0' || *s > '9') return -1;
  char *end;
  errno = 0;
  unsigned long long n = strtoull(s, &end, 10);
  if (*end != '\0' || errno == ERANGE) return -1;
  if (seed) *seed = (uint64_t)n;
  return 1;
}

int sim_schedule(uint64_t *seed) {
  *seed = sim_S.schedule_seed;
  return sim_S.schedule_random;
}
/* GPULUA_SIM_RACECHECK: 1 for on, 0 for off, -1 for anything else. */
static int parse_racecheck(const char *s) { return strcmp(s, "on") == 0 ? 1 : strcmp(s, "off") == 0 ? 0 : -1; }

int sim_racecheck(void) { return sim_S.racecheck; }

/* GPULUA_SIM_BUILTINS: 0 for c, 1 for ptx, -1 for anything else. */
int sim_parse_builtins(const char *s) { return strcmp(s, "c") == 0 ? 0 : strcmp(s, "ptx") == 0 ? 1 : -1; }

int sim_builtins_ptx(void) { return sim_S.builtins_ptx; }

int gld_sim_config_error(char *why, size_t whylen) {
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
  s = getenv("GPULUA_SIM_NCCL_FAULT");
  if (s && *s && parse_nccl_fault(s, NULL) <= 0) {
    snprintf(why, whylen, "GPULUA_SIM_NCCL_FAULT must be N or async:N, N a collective call from 1, got '%s'", s);
    return -1;
  }
  s = getenv("GPULUA_SIM_KERNELS");
  if (s && *s && parse_kernels(s) < 0) {
    snprintf(why, whylen, "GPULUA_SIM_KERNELS must be ptx, host or compare, got '%s'", s);
    return -1;
  }
  s = getenv("GPULUA_SIM_SCHEDULE");
  if (s && *s && parse_schedule(s, NULL) < 0) {
    snprintf(why, whylen, "GPULUA_SIM_SCHEDULE must be fixed or random:SEED (SEED an integer from 0 to 2^64-1), got '%s'",
             s);
    return -1;
  }
  s = getenv("GPULUA_SIM_RACECHECK");
  if (s && *s && parse_racecheck(s) < 0) {
    snprintf(why, whylen, "GPULUA_SIM_RACECHECK must be on or off, got '%s'", s);
    return -1;
  }
  s = getenv("GPULUA_SIM_NCCL_ADDR");
  if (s && *s && sim_net_parse_addr(s) != 0) {
    snprintf(why, whylen, "GPULUA_SIM_NCCL_ADDR must be a numeric IPv4 or IPv6 address such as 127.0.0.1, got '%.64s'",
             s);
    return -1;
  }
  s = getenv("GPULUA_SIM_BUILTINS");
  if (s && *s && sim_parse_builtins(s) < 0) {
    snprintf(why, whylen, "GPULUA_SIM_BUILTINS must be c or ptx, got '%s'", s);
    return -1;
  }
  return 0;
}

static CUresult sim_cuInit(unsigned flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  char why[160];
  if (gld_sim_config_error(why, sizeof why) != 0) return CUDA_ERROR_INVALID_VALUE;
  sim_install_process_handlers(); /* first: the exit handlers registered later run before it */
  pthread_mutex_lock(&sim_S.mu);
  if (!sim_S.initialized) {
    const char *s = getenv("GPULUA_SIM_DEVICES");
    sim_S.ndev = (s && *s) ? atoi(s) : 2;
    size_t mem = 1ULL << 30;
    s = getenv("GPULUA_SIM_MEMORY");
    if (s && *s) parse_size(s, &mem);
    s = getenv("GPULUA_SIM_HOST_MEMORY");
    sim_S.host_total = 0;
    sim_S.host_used = 0;
    if (s && *s) parse_size(s, &sim_S.host_total);
    s = getenv("GPULUA_SIM_DELAY_US");
    sim_S.delay_us = (s && *s) ? (unsigned)atol(s) : 0;
    s = getenv("GPULUA_SIM_NCCL_FAULT");
    sim_S.nccl_fault_async = 0;
    sim_S.nccl_fault_at = (s && *s) ? parse_nccl_fault(s, &sim_S.nccl_fault_async) : 0;
    s = getenv("GPULUA_SIM_KERNELS");
    sim_S.kernels = (s && *s) ? kernel_modes[parse_kernels(s)].mode : SIM_KERNELS_PTX;
    s = getenv("GPULUA_SIM_SCHEDULE");
    sim_S.schedule_seed = 0;
    sim_S.schedule_random = (s && *s) ? parse_schedule(s, &sim_S.schedule_seed) == 1 : 0;
    s = getenv("GPULUA_SIM_RACECHECK");
    sim_S.racecheck = (s && *s) ? parse_racecheck(s) : 1;
    s = getenv("GPULUA_SIM_BUILTINS");
    sim_S.builtins_ptx = (s && *s) ? sim_parse_builtins(s) == 1 : 0;
    for (int i = 0; i < sim_S.ndev; i++) {
      snprintf(sim_S.dev[i].name, sizeof sim_S.dev[i].name, "gpulua sim device %d", i);
      sim_S.dev[i].total = mem;
      sim_S.dev[i].used = 0;
      sim_S.dev[i].ctx.ordinal = i;
    }
    sim_S.initialized = 1;
  }
  pthread_mutex_unlock(&sim_S.mu);
  return CUDA_SUCCESS;
}

static CUresult sim_cuDriverGetVersion(int *v) {
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  *v = GL_CUDA_API_VERSION;
  return CUDA_SUCCESS;
}

static CUresult sim_cuDeviceGetCount(int *n) {
  NEED_INIT();
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  *n = sim_S.ndev;
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
  snprintf(name, (size_t)len, "%s", sim_S.dev[d].name);
  return CUDA_SUCCESS;
}

static CUresult sim_cuDeviceTotalMem(size_t *bytes, CUdevice d) {
  NEED_DEV(d);
  *bytes = sim_S.dev[d].total;
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
  if (d < 0 || d >= sim_S.ndev || !value) return CUDA_ERROR_INVALID_VALUE;
  (void)attr; /* the sim pool has no tunables: accepted and ignored */
  return CUDA_SUCCESS;
}

static CUresult sim_cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count) {
  NEED_INIT();
  intptr_t d = (intptr_t)(uintptr_t)pool - 1;
  if (d < 0 || d >= sim_S.ndev || (!map && count)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; i++)
    if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || map[i].location.id < 0 ||
        map[i].location.id >= sim_S.ndev)
      return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS; /* host memory is reachable from every sim device anyway */
}

static CUresult sim_cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  NEED_INIT();
  intptr_t d = (intptr_t)(uintptr_t)pool - 1;
  if (d < 0 || d >= sim_S.ndev) return CUDA_ERROR_INVALID_VALUE;
  (void)keep; /* the sim pool keeps nothing: a free gives the bytes back at once */
  return CUDA_SUCCESS;
}

static CUresult sim_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice d) {
  NEED_DEV(d);
  pthread_mutex_lock(&sim_S.mu);
  sim_S.dev[d].ctx.retained++;
  pthread_mutex_unlock(&sim_S.mu);
  *pctx = &sim_S.dev[d].ctx;
  return CUDA_SUCCESS;
}

static CUresult sim_cuDevicePrimaryCtxRelease(CUdevice d) {
  NEED_DEV(d);
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&sim_S.mu);
  if (sim_S.dev[d].ctx.retained > 0) sim_S.dev[d].ctx.retained--;
  else r = CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_unlock(&sim_S.mu);
  return r;
}

static CUresult sim_cuCtxSetCurrent(CUcontext ctx) {
  NEED_INIT();
  if (ctx && (ctx->ordinal < 0 || ctx->ordinal >= sim_S.ndev || ctx != &sim_S.dev[ctx->ordinal].ctx))
    return CUDA_ERROR_INVALID_CONTEXT;
  sim_cur_ctx = ctx;
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
  if (peer == sim_cur_ctx) return CUDA_ERROR_INVALID_DEVICE;
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&sim_S.mu);
  unsigned char *p = &sim_S.dev[sim_cur_ctx->ordinal].peer[peer->ordinal];
  if (*p) r = CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  *p = 1;
  pthread_mutex_unlock(&sim_S.mu);
  return r;
}

/* ---- the table ------------------------------------------------------- */

void gld_driver_sim_load(gld_driver *d) {
  memset(d, 0, sizeof *d);
#define SIM_SET(name, version, params) d->name = sim_##name;
  GL_DRIVER_CALLS(SIM_SET)
#undef SIM_SET
  d->cuFuncGetParamInfo = sim_cuFuncGetParamInfo;
}
