/*
 * test_sim_hostreg.c -- tests of the sim's registered host memory
 * (cuMemHostRegister, cuMemHostUnregister): what it refuses as the driver
 * does (a range registered already, or overlapping one, memory the sim
 * allocated, a pointer that is not a registration's), read-only
 * registrations, the memory map, and registrations from several threads.
 *
 * The sim never touches registered memory but in copies, so the ranges are
 * the test's own pages.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sim_driver_harness.h"
#include "sim_driver_tests.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_memmap.h"

enum { PAGE = 4096 };

void test_host_register_refusals(void) {
  use_ctx(0);
  char *p = aligned_alloc(PAGE, 4 * PAGE);
  CHECK(p != NULL);
  if (!p) return;
  size_t live = sim_mem_live();
  OK(d.cuMemHostRegister(p + PAGE, 2 * PAGE, CU_MEMHOSTREGISTER_PORTABLE));
  CHECK(sim_mem_live() == live + 1);
  /* the same range again, a part of it, and ranges that overlap either end */
  CHECK_RC(d.cuMemHostRegister(p + PAGE, 2 * PAGE, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  CHECK_RC(d.cuMemHostRegister(p + 2 * PAGE, 16, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  CHECK_RC(d.cuMemHostRegister(p, PAGE + 1, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  CHECK_RC(d.cuMemHostRegister(p + 3 * PAGE - 1, PAGE, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  CHECK_RC(d.cuMemHostRegister(p, 4 * PAGE, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  /* the neighbours, which touch it but do not overlap, may be registered */
  OK(d.cuMemHostRegister(p, PAGE, 0));
  OK(d.cuMemHostRegister(p + 3 * PAGE, PAGE, CU_MEMHOSTREGISTER_DEVICEMAP));
  CHECK(sim_mem_live() == live + 3);

  /* pinned memory the sim allocated is page-locked already; device memory
   * is no host memory */
  void *pinned = NULL;
  OK(d.cuMemHostAlloc(&pinned, 256, 0));
  CHECK_RC(d.cuMemHostRegister(pinned, 256, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  CHECK_RC(d.cuMemHostUnregister(pinned), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  OK(d.cuMemFreeHost(pinned));
  CUstream s = mkstream_on(0);
  CUdeviceptr dp = 0;
  OK(d.cuMemAllocAsync(&dp, 256, s));
  CHECK_RC(d.cuMemHostRegister((void *)(uintptr_t)dp, 256, 0), CUDA_ERROR_INVALID_VALUE);
  OK(d.cuMemFreeAsync(dp, s));
  OK(d.cuStreamSynchronize(s));
  OK(d.cuStreamDestroy(s));

  /* bad arguments: no pointer, no bytes, a range past the top, unknown flags, I/O memory */
  char q[64];
  CHECK_RC(d.cuMemHostRegister(NULL, 64, 0), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(d.cuMemHostRegister(q, 0, 0), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(d.cuMemHostRegister((void *)(UINTPTR_MAX - 8), 64, 0), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(d.cuMemHostRegister(q, sizeof q, 0x10), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(d.cuMemHostRegister(q, sizeof q, CU_MEMHOSTREGISTER_IOMEMORY), CUDA_ERROR_NOT_SUPPORTED);

  OK(d.cuMemHostUnregister(p));
  OK(d.cuMemHostUnregister(p + 3 * PAGE));
  OK(d.cuMemHostUnregister(p + PAGE));
  CHECK(sim_mem_live() == live);
  free(p);
}

void test_host_unregister_refusals(void) {
  use_ctx(0);
  char *p = aligned_alloc(PAGE, 2 * PAGE);
  CHECK(p != NULL);
  if (!p) return;
  char other[16];
  /* nothing registered there, ever */
  CHECK_RC(d.cuMemHostUnregister(other), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  CHECK_RC(d.cuMemHostUnregister(NULL), CUDA_ERROR_INVALID_VALUE);
  OK(d.cuMemHostRegister(p, 2 * PAGE, 0));
  /* only the pointer registered unregisters: not one inside the range */
  CHECK_RC(d.cuMemHostUnregister(p + 8), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  CHECK_RC(d.cuMemHostUnregister(p + PAGE), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  sim_mem_hit h;
  CHECK(sim_mem_lookup((uintptr_t)p + PAGE, 8, &h) == SIM_MEM_INSIDE);
  CHECK(h.kind == SIM_MEM_HOST && h.ordinal == -1 && h.base == (uintptr_t)p && h.size == 2 * PAGE);
  OK(d.cuMemHostUnregister(p));
  /* twice: the second is refused; the range is now freed memory */
  CHECK_RC(d.cuMemHostUnregister(p), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  CHECK(sim_mem_lookup((uintptr_t)p, 8, &h) == SIM_MEM_FREED);
  /* and may be registered again */
  OK(d.cuMemHostRegister(p, PAGE, 0));
  OK(d.cuMemHostUnregister(p));
  free(p);
}

/* A read-only registration is a copy's source, never its destination. */
void test_host_register_read_only(void) {
  CUstream s = mkstream_on(0);
  enum { N = 3 * PAGE };
  uint8_t *ro = aligned_alloc(PAGE, N), *rw = aligned_alloc(PAGE, N);
  CHECK(ro && rw);
  if (!ro || !rw) return;
  for (int i = 0; i < N; i++) ro[i] = (uint8_t)(i * 7 + 1);
  memset(rw, 0, N);
  OK(d.cuMemHostRegister(ro, N, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_READ_ONLY));
  OK(d.cuMemHostRegister(rw, N, CU_MEMHOSTREGISTER_PORTABLE));
  CUdeviceptr dp = 0;
  OK(d.cuMemAllocAsync(&dp, N, s));
  OK(d.cuMemcpyHtoDAsync(dp, ro, N, s));
  CHECK_RC(d.cuMemcpyDtoHAsync(ro, dp, N, s), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(d.cuMemcpyDtoHAsync(ro + N - 1, dp, 1, s), CUDA_ERROR_INVALID_VALUE); /* its last byte */
  OK(d.cuMemcpyDtoHAsync(rw, dp, N, s));
  OK(d.cuStreamSynchronize(s));
  CHECK(memcmp(ro, rw, N) == 0);
  /* once unregistered it is the caller's plain memory again */
  OK(d.cuMemHostUnregister(ro));
  OK(d.cuMemcpyDtoHAsync(ro, dp, N, s));
  OK(d.cuMemHostUnregister(rw));
  OK(d.cuMemFreeAsync(dp, s));
  OK(d.cuStreamSynchronize(s));
  OK(d.cuStreamDestroy(s));
  free(ro);
  free(rw);
}

/* Threads registering at once: of those racing for one range exactly one
 * wins; ranges of their own all register and unregister. A thread with no
 * context current is refused. */
enum { THREADS = 8, ROUNDS = 200 };
typedef struct {
  char *shared, *own;
  CUresult shared_rc;
  int own_failures;
  CUresult no_ctx_rc;
  latch *go;
} reg_arg;

static void *reg_thread(void *p) {
  reg_arg *a = p;
  a->no_ctx_rc = d.cuMemHostRegister(a->own, PAGE, 0);
  d.cuCtxSetCurrent(g_ctx[0]);
  latch_wait(a->go);
  a->shared_rc = d.cuMemHostRegister(a->shared, PAGE, 0);
  for (int r = 0; r < ROUNDS; r++) {
    char *q = a->own + (r % 4) * PAGE / 4;
    if (d.cuMemHostRegister(q, PAGE / 4, CU_MEMHOSTREGISTER_READ_ONLY) != CUDA_SUCCESS) a->own_failures++;
    if (d.cuMemHostUnregister(q) != CUDA_SUCCESS) a->own_failures++;
  }
  return NULL;
}

void test_host_register_concurrent(void) {
  char *shared = aligned_alloc(PAGE, PAGE), *own = aligned_alloc(PAGE, THREADS * PAGE);
  CHECK(shared && own);
  if (!shared || !own) return;
  size_t live = sim_mem_live();
  latch go = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
  reg_arg a[THREADS];
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; i++) {
    a[i] = (reg_arg){.shared = shared, .own = own + i * PAGE, .go = &go};
    CHECK(pthread_create(&th[i], NULL, reg_thread, &a[i]) == 0);
  }
  latch_set(&go);
  int won = 0;
  for (int i = 0; i < THREADS; i++) {
    pthread_join(th[i], NULL);
    CHECK_RC(a[i].no_ctx_rc, CUDA_ERROR_INVALID_CONTEXT);
    CHECK(a[i].own_failures == 0);
    if (a[i].shared_rc == CUDA_SUCCESS) won++;
    else CHECK_RC(a[i].shared_rc, CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  }
  CHECK(won == 1);
  CHECK(sim_mem_live() == live + 1);
  use_ctx(0);
  OK(d.cuMemHostUnregister(shared));
  CHECK(sim_mem_live() == live);
  latch_destroy(&go);
  free(shared);
  free(own);
}
