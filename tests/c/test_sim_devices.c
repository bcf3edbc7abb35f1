/*
 * test_sim_devices.c -- tests of the sim's driver table itself, cuInit,
 * devices (names, memory, attributes, peers, memory pools), invalid
 * ordinals, calls without a current context, the primary contexts (which
 * test_primary_ctx sets up for the rest of the run) and stream priorities.
 */
#include "sim_driver_harness.h"
#include "sim_driver_tests.h"
#include "sim/sim_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static CUdevice g_dev[2];

void test_table_filled(void) {
#define NONNULL(name, version, params) CHECK(d.name != NULL);
  GL_DRIVER_CALLS(NONNULL)
#undef NONNULL
  CHECK(d.cuFuncGetParamInfo != NULL); /* optional in drivers; the sim reads PTX */
}

/* Must run before any cuInit. */
void test_not_initialized(void) {
  int n = -1;
  CUdevice dv;
  CHECK_RC(d.cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
  CHECK_RC(d.cuDeviceGet(&dv, 0), CUDA_ERROR_NOT_INITIALIZED);
  CHECK_RC(d.cuCtxSynchronize(), CUDA_ERROR_NOT_INITIALIZED);
  int v = 0; /* like CUDA: the version needs no cuInit */
  OK(d.cuDriverGetVersion(&v));
  CHECK(v == GL_CUDA_API_VERSION);
  CHECK_RC(d.cuDriverGetVersion(NULL), CUDA_ERROR_INVALID_VALUE);
}

/* GPULUA_SIM_KERNELS: a value that is not a mode names the accepted ones
 * (and cuInit refuses it); ptx, host and compare are accepted; ptx is the
 * default. GPULUA_SIM_RACECHECK: on or off. GPULUA_SIM_BUILTINS: c or ptx.
 * Runs before cuInit, which reads the settings. */
void test_kernels_setting(void) {
  char why[160];
  setenv("GPULUA_SIM_KERNELS", "gpu", 1);
  CHECK(gld_sim_config_error(why, sizeof why) == -1);
  CHECK(strcmp(why, "GPULUA_SIM_KERNELS must be ptx, host or compare, got 'gpu'") == 0);
  CHECK_RC(d.cuInit(0), CUDA_ERROR_INVALID_VALUE);
  setenv("GPULUA_SIM_KERNELS", "compare", 1);
  CHECK(gld_sim_config_error(why, sizeof why) == 0);
  setenv("GPULUA_SIM_KERNELS", "ptx", 1);
  CHECK(gld_sim_config_error(why, sizeof why) == 0);
  setenv("GPULUA_SIM_KERNELS", "host", 1);
  CHECK(gld_sim_config_error(why, sizeof why) == 0);
  unsetenv("GPULUA_SIM_KERNELS");
  CHECK(gld_sim_config_error(why, sizeof why) == 0);
  /* GPULUA_SIM_RACECHECK: on or off; anything else is refused, naming both */
  setenv("GPULUA_SIM_RACECHECK", "yes", 1);
  CHECK(gld_sim_config_error(why, sizeof why) == -1);
  CHECK(strcmp(why, "GPULUA_SIM_RACECHECK must be on or off, got 'yes'") == 0);
  setenv("GPULUA_SIM_RACECHECK", "off", 1);
  CHECK(gld_sim_config_error(why, sizeof why) == 0);
  setenv("GPULUA_SIM_RACECHECK", "on", 1);
  CHECK(gld_sim_config_error(why, sizeof why) == 0);
  unsetenv("GPULUA_SIM_RACECHECK");
  /* GPULUA_SIM_BUILTINS: c or ptx; anything else is refused, naming both */
  setenv("GPULUA_SIM_BUILTINS", "cuda", 1);
  CHECK(gld_sim_config_error(why, sizeof why) == -1);
  CHECK(strcmp(why, "GPULUA_SIM_BUILTINS must be c or ptx, got 'cuda'") == 0);
  setenv("GPULUA_SIM_BUILTINS", "c", 1);
  CHECK(gld_sim_config_error(why, sizeof why) == 0);
  /* the tests below drive host implementations and the module variables'
   * layout as the host mode does (the interpreter has test_ptx); the
   * built-ins run their PTX all the same (test_builtins_run_ptx) */
  setenv("GPULUA_SIM_KERNELS", "host", 1);
  setenv("GPULUA_SIM_BUILTINS", "ptx", 1);
  CHECK(gld_sim_config_error(why, sizeof why) == 0);
  int n;
  CHECK_RC(d.cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED); /* the refused cuInit did nothing */
}

/* GPULUA_SIM_SCHEDULE: fixed or random:SEED, SEED from 0 to 2^64-1;
 * anything else names what was given. Runs before cuInit. */
void test_schedule_setting(void) {
  char why[256];
  static const char *const bad[] = {"random", "random:", "random:-1", "random:12x", "random:18446744073709551616",
                                    "Fixed", "random: 4", "seed:4"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    setenv("GPULUA_SIM_SCHEDULE", bad[i], 1);
    char want[200];
    snprintf(want, sizeof want,
             "GPULUA_SIM_SCHEDULE must be fixed or random:SEED (SEED an integer from 0 to 2^64-1), got '%s'", bad[i]);
    CHECK(gld_sim_config_error(why, sizeof why) == -1);
    CHECK(strcmp(why, want) == 0);
  }
  CHECK_RC(d.cuInit(0), CUDA_ERROR_INVALID_VALUE);
  static const char *const good[] = {"fixed", "random:0", "random:42", "random:18446744073709551615"};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
    setenv("GPULUA_SIM_SCHEDULE", good[i], 1);
    CHECK(gld_sim_config_error(why, sizeof why) == 0);
  }
  setenv("GPULUA_SIM_SCHEDULE", "random:18446744073709551615", 1); /* what cuInit reads: test_init checks it */
}

void test_init(void) {
  CHECK_RC(d.cuInit(1), CUDA_ERROR_INVALID_VALUE);
  OK(d.cuInit(0));
  OK(d.cuInit(0)); /* again: harmless */
  CHECK(sim_kernels() == SIM_KERNELS_HOST); /* as test_kernels_setting left it */
  uint64_t seed = 0;
  CHECK(sim_schedule(&seed) == 1 && seed == UINT64_MAX); /* GPULUA_SIM_SCHEDULE=random:2^64-1 */
  unsetenv("GPULUA_SIM_SCHEDULE");
  CHECK(sim_racecheck() == 1);               /* GPULUA_SIM_RACECHECK unset: on */
}

void test_devices(void) {
  int n = -1;
  OK(d.cuDeviceGetCount(&n));
  CHECK(n == g_ndev_expected);
  CHECK(n >= 2); /* the multi-device tests need two */
  CHECK_RC(d.cuDeviceGetCount(NULL), CUDA_ERROR_INVALID_VALUE);

  char names[2][64];
  for (int i = 0; i < 2 && i < n; i++) {
    CUdevice dv = -1;
    OK(d.cuDeviceGet(&dv, i));
    CHECK(dv == i);
    g_dev[i] = dv;
    memset(names[i], 0, sizeof names[i]);
    OK(d.cuDeviceGetName(names[i], (int)sizeof names[i], dv));
    CHECK(strlen(names[i]) > 0);
    size_t total = 0;
    OK(d.cuDeviceTotalMem(&total, dv));
    CHECK(total == SIM_MEMORY_BYTES);
  }
  CHECK(strcmp(names[0], names[1]) != 0);

  /* a short buffer truncates and stays NUL-terminated */
  char small[5];
  memset(small, 'x', sizeof small);
  OK(d.cuDeviceGetName(small, (int)sizeof small, g_dev[0]));
  CHECK(small[4] == '\0' && strlen(small) == 4 && strncmp(small, names[0], 4) == 0);
  CHECK_RC(d.cuDeviceGetName(small, 0, g_dev[0]), CUDA_ERROR_INVALID_VALUE);

  /* attributes: a small Hopper, compute capability 9.0 */
  struct {
    CUdevice_attribute a;
    int want; /* -1: any positive value */
  } attrs[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
      {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 49152},
      {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
      {CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, -1},
      {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, -1},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, -1},
  };
  for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
    for (int dv = 0; dv < 2; dv++) {
      int v = -12345;
      CUresult r = d.cuDeviceGetAttribute(&v, attrs[i].a, g_dev[dv]);
      if (r != CUDA_SUCCESS)
        fail_at(__FILE__, __LINE__, "attribute %d on device %d: %s", (int)attrs[i].a, dv, rname(r));
      else if (attrs[i].want >= 0 ? v != attrs[i].want : v <= 0)
        fail_at(__FILE__, __LINE__, "attribute %d on device %d is %d, expected %d", (int)attrs[i].a,
                dv, v, attrs[i].want);
    }
  }
  int v = 7;
  CHECK_RC(d.cuDeviceGetAttribute(&v, (CUdevice_attribute)100000, g_dev[0]),
           CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(d.cuDeviceGetAttribute(&v, (CUdevice_attribute)-1, g_dev[0]), CUDA_ERROR_INVALID_VALUE);

  int can = -1;
  OK(d.cuDeviceCanAccessPeer(&can, g_dev[0], g_dev[1]));
  CHECK(can == 1);
  OK(d.cuDeviceCanAccessPeer(&can, g_dev[0], g_dev[0]));
  CHECK(can == 0);

  CUmemoryPool pool = NULL;
  OK(d.cuDeviceGetDefaultMemPool(&pool, g_dev[0]));
  CHECK(pool != NULL);
  cuuint64_t thr = 0;
  OK(d.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &thr));
  CHECK_RC(d.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, NULL),
           CUDA_ERROR_INVALID_VALUE);
}

void test_invalid_ordinals(void) {
  int n = 0;
  OK(d.cuDeviceGetCount(&n));
  int bad[] = {n, n + 1, -1, 64, 1000};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CUdevice dv = -7;
    char name[32];
    size_t bytes;
    int v, can;
    CUcontext c;
    CUmemoryPool pool;
    CHECK_RC(d.cuDeviceGet(&dv, bad[i]), CUDA_ERROR_INVALID_DEVICE);
    CHECK_RC(d.cuDeviceGetName(name, (int)sizeof name, bad[i]), CUDA_ERROR_INVALID_DEVICE);
    CHECK_RC(d.cuDeviceTotalMem(&bytes, bad[i]), CUDA_ERROR_INVALID_DEVICE);
    CHECK_RC(d.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, bad[i]),
             CUDA_ERROR_INVALID_DEVICE);
    CHECK_RC(d.cuDeviceCanAccessPeer(&can, 0, bad[i]), CUDA_ERROR_INVALID_DEVICE);
    CHECK_RC(d.cuDeviceCanAccessPeer(&can, bad[i], 0), CUDA_ERROR_INVALID_DEVICE);
    CHECK_RC(d.cuDeviceGetDefaultMemPool(&pool, bad[i]), CUDA_ERROR_INVALID_DEVICE);
    CHECK_RC(d.cuDevicePrimaryCtxRetain(&c, bad[i]), CUDA_ERROR_INVALID_DEVICE);
    CHECK_RC(d.cuDevicePrimaryCtxRelease(bad[i]), CUDA_ERROR_INVALID_DEVICE);
  }
}

void test_no_context(void) {
  OK(d.cuCtxSetCurrent(NULL));
  size_t f, t;
  int lo, hi;
  CUstream s = NULL;
  CUevent e = NULL;
  void *hp = NULL;
  CHECK_RC(d.cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
  CHECK_RC(d.cuMemGetInfo(&f, &t), CUDA_ERROR_INVALID_CONTEXT);
  CHECK_RC(d.cuCtxGetStreamPriorityRange(&lo, &hi), CUDA_ERROR_INVALID_CONTEXT);
  CHECK_RC(d.cuStreamCreateWithPriority(&s, 0, 0), CUDA_ERROR_INVALID_CONTEXT);
  CHECK(s == NULL);
  CHECK_RC(d.cuEventCreate(&e, 0), CUDA_ERROR_INVALID_CONTEXT);
  CHECK(e == NULL);
  CHECK_RC(d.cuMemHostAlloc(&hp, 64, 0), CUDA_ERROR_INVALID_CONTEXT);
  CHECK_RC(d.cuCtxEnablePeerAccess(g_ctx[1], 0), CUDA_ERROR_INVALID_CONTEXT);
}

void test_primary_ctx(void) {
  for (int i = 0; i < 2; i++) {
    CUcontext c = NULL, c2 = NULL;
    OK(d.cuDevicePrimaryCtxRetain(&c, g_dev[i]));
    CHECK(c != NULL);
    OK(d.cuDevicePrimaryCtxRetain(&c2, g_dev[i]));
    CHECK(c2 == c); /* one primary context per device */
    OK(d.cuDevicePrimaryCtxRelease(g_dev[i]));
    g_ctx[i] = c; /* still retained once, for the rest of the run */
  }
  CHECK(g_ctx[0] != g_ctx[1]);

  size_t f, t;
  OK(d.cuCtxSetCurrent(g_ctx[1]));
  OK(d.cuMemGetInfo(&f, &t));
  CHECK(t == SIM_MEMORY_BYTES && f <= t);
  OK(d.cuCtxSetCurrent(g_ctx[0]));
  OK(d.cuMemGetInfo(&f, &t));
  CHECK(t == SIM_MEMORY_BYTES && f <= t);
  OK(d.cuMemGetInfo(NULL, NULL));

  /* the current context is per thread: a new thread has none */
  helper h = {.ctx = NULL, .what = DO_MEMGETINFO};
  pthread_t th;
  helper_start(&h, &th);
  pthread_join(th, NULL);
  CHECK_RC(h.r, CUDA_ERROR_INVALID_CONTEXT);
  latch_destroy(&h.returned);
  /* ... and the main thread's is untouched */
  OK(d.cuMemGetInfo(&f, &t));

  /* a retained-and-released device can be retained again */
  CUcontext c = NULL;
  OK(d.cuDevicePrimaryCtxRetain(&c, g_dev[1]));
  CHECK(c == g_ctx[1]);
  OK(d.cuDevicePrimaryCtxRelease(g_dev[1]));
}

void test_priority_range(void) {
  use_ctx(0);
  int least = 99, greatest = 99;
  OK(d.cuCtxGetStreamPriorityRange(&least, &greatest));
  CHECK(least == 0);
  CHECK(greatest == -5);
  CHECK(greatest <= least); /* CUDA: lower numbers are higher priority */
  OK(d.cuCtxGetStreamPriorityRange(NULL, &greatest));
  OK(d.cuCtxGetStreamPriorityRange(&least, NULL));

  int prios[] = {least, greatest, (least + greatest) / 2, greatest - 10, least + 10};
  for (size_t i = 0; i < sizeof prios / sizeof prios[0]; i++) {
    CUstream s = NULL; /* out-of-range priorities are clamped, like CUDA */
    OK(d.cuStreamCreateWithPriority(&s, 0, prios[i]));
    CHECK(s != NULL);
    OK(d.cuStreamSynchronize(s));
    OK(d.cuStreamDestroy(s));
  }
}
