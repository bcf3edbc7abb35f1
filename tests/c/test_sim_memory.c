/*
 * test_sim_memory.c -- tests of the sim's device memory: accounting per
 * device, out of memory and recovery, frees the sim must refuse, copies
 * (host, device, peer, pinned host memory, peer access) and memsets.
 *
 * Calls that would crash the process if the sim read memory it does not own
 * (frees of pointers it did not hand out, or no longer owns) run in a forked
 * child (in_child), so a crash fails one test instead of the run.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sim_driver_harness.h"
#include "sim_driver_tests.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* Run fn(arg) in a forked child: for calls that may crash the process.
 * Returns 1 when the child exited with status 0. Only fork while every sim
 * stream is idle (no worker holds the sim's lock). */
static int in_child(int (*fn)(void *), void *arg, const char *what) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    perror("fork");
    return 0;
  }
  if (pid == 0) {
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    int rc = fn(arg);
    fflush(NULL);
    _exit(rc);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return 0;
  if (WIFSIGNALED(st)) {
    fprintf(stderr, "    (%s: child killed by signal %d, %s)\n", what, WTERMSIG(st),
            strsignal(WTERMSIG(st)));
    return 0;
  }
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "    (%s: child exited with status %d)\n", what,
            WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 0;
  }
  return 1;
}

void test_mem_accounting(void) {
  CUstream s1 = mkstream_on(1);
  CUstream s0 = mkstream_on(0);
  size_t f0, t0, f, t;
  OK(d.cuMemGetInfo(&f0, &t0));
  CHECK(t0 == SIM_MEMORY_BYTES);
  CHECK(f0 == t0); /* every earlier test gave its memory back */

  CUdeviceptr a = 0, b = 0, c = 0, x = 0;
  OK(d.cuMemAllocAsync(&a, 1 << 20, s0));
  CHECK(a != 0 && a % 256 == 0);
  OK(d.cuMemGetInfo(&f, &t));
  CHECK(t == t0 && f0 - f >= (1u << 20));
  size_t f1 = f;
  OK(d.cuMemAllocAsync(&b, 1000, s0));
  CHECK(b != 0 && b % 256 == 0 && b != a);
  OK(d.cuMemGetInfo(&f, NULL));
  CHECK(f < f1 && f1 - f >= 1000);
  size_t f2 = f;

  /* device 1's allocations count against device 1 only: the pool is the
   * stream's device's, whichever context is current */
  OK(d.cuMemAllocAsync(&c, 2 << 20, s1));
  OK(d.cuMemGetInfo(&f, NULL));
  CHECK(f == f2);
  use_ctx(1);
  size_t g;
  OK(d.cuMemGetInfo(&g, NULL));
  CHECK(SIM_MEMORY_BYTES - g >= (2u << 20));
  OK(d.cuMemFreeAsync(c, s1));
  OK(d.cuStreamSynchronize(s1));
  OK(d.cuMemGetInfo(&g, NULL));
  CHECK(g == SIM_MEMORY_BYTES);
  use_ctx(0);

  /* the memory is usable: a round trip through both allocations */
  static uint8_t src[1000], dst[1000];
  for (int i = 0; i < 1000; i++) src[i] = (uint8_t)(i * 13 + 1);
  memset(dst, 0, sizeof dst);
  OK(d.cuMemcpyHtoDAsync(b, src, 1000, s0));
  OK(d.cuMemcpyDtoDAsync(a + 4096, b, 1000, s0));
  OK(d.cuMemcpyDtoHAsync(dst, a + 4096, 1000, s0));
  OK(d.cuStreamSynchronize(s0));
  CHECK(memcmp(src, dst, 1000) == 0);

  /* freeing gives the bytes back (the sim's pool keeps nothing reserved) */
  OK(d.cuMemFreeAsync(a, s0));
  OK(d.cuMemFreeAsync(b, s0));
  OK(d.cuStreamSynchronize(s0));
  OK(d.cuMemGetInfo(&f, NULL));
  CHECK(f == f0);

  /* bad arguments */
  CHECK_RC(d.cuMemAllocAsync(&x, 0, s0), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(d.cuMemAllocAsync(NULL, 16, s0), CUDA_ERROR_INVALID_VALUE);
  OK(d.cuMemGetInfo(&f, NULL));
  CHECK(f == f0);

  OK(d.cuStreamDestroy(s0));
  OK(d.cuStreamDestroy(s1));
}

void test_out_of_memory(void) {
  CUstream s = mkstream();
  size_t f0, t;
  OK(d.cuMemGetInfo(&f0, &t));
  CHECK(f0 == t);
  CUdeviceptr big = 0, small = 0, x = 0, y = 0;
  CHECK_RC(d.cuMemAllocAsync(&x, t + 1, s), CUDA_ERROR_OUT_OF_MEMORY);
  CHECK_RC(d.cuMemAllocAsync(&x, (size_t)-1, s), CUDA_ERROR_OUT_OF_MEMORY);
  CHECK_RC(d.cuMemAllocAsync(&x, (size_t)-1 - 255, s), CUDA_ERROR_OUT_OF_MEMORY);

  OK(d.cuMemAllocAsync(&big, f0 - (1 << 20), s));
  OK(d.cuMemAllocAsync(&small, 1 << 20, s));
  size_t f;
  OK(d.cuMemGetInfo(&f, NULL));
  CHECK(f == 0);
  CHECK_RC(d.cuMemAllocAsync(&x, 1, s), CUDA_ERROR_OUT_OF_MEMORY);
  CHECK_RC(d.cuMemAllocAsync(&x, 1 << 20, s), CUDA_ERROR_OUT_OF_MEMORY);

  /* recovery after a free */
  OK(d.cuMemFreeAsync(small, s));
  OK(d.cuStreamSynchronize(s));
  OK(d.cuMemAllocAsync(&x, 1, s));
  OK(d.cuMemAllocAsync(&y, (1 << 20) - 256, s));
  CHECK_RC(d.cuMemAllocAsync(&small, 1, s), CUDA_ERROR_OUT_OF_MEMORY);
  OK(d.cuMemFreeAsync(x, s));
  OK(d.cuMemFreeAsync(y, s));
  OK(d.cuMemAllocAsync(&small, 1 << 20, s));

  OK(d.cuMemFreeAsync(small, s));
  OK(d.cuMemFreeAsync(big, s));
  OK(d.cuStreamSynchronize(s));
  OK(d.cuMemGetInfo(&f, NULL));
  CHECK(f == f0);
  OK(d.cuStreamDestroy(s));
}

void test_free_errors(void) {
  CUstream s = mkstream();
  CUdeviceptr p = 0;
  static _Alignas(256) unsigned char host_arr[1024];
  CHECK_RC(d.cuMemFreeAsync(0, s), CUDA_ERROR_INVALID_VALUE);
  OK(d.cuMemAllocAsync(&p, 4096, s));
  CHECK_RC(d.cuMemFreeAsync(p + 1, s), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(d.cuMemFreeAsync(p + 8, s), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(d.cuMemFreeAsync(p + 256, s), CUDA_ERROR_INVALID_VALUE); /* interior */
  CHECK_RC(d.cuMemFreeAsync(p + 1024, s), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(d.cuMemFreeAsync((CUdeviceptr)(uintptr_t)(host_arr + 512), s), CUDA_ERROR_INVALID_VALUE);

  /* double free while the first free is still queued (the stream is held
   * back, so the sim's block is certainly still there) */
  gate g;
  gate_init(&g);
  size_t f_before, f_after;
  OK(d.cuMemGetInfo(&f_before, NULL));
  OK(d.cuLaunchHostFunc(s, gate_fn, &g));
  OK(d.cuMemFreeAsync(p, s));
  CHECK_RC(d.cuMemFreeAsync(p, s), CUDA_ERROR_INVALID_VALUE);
  OK(d.cuMemGetInfo(&f_after, NULL));
  CHECK(f_after - f_before == 4096); /* counted back once */
  latch_set(&g.open);
  OK(d.cuStreamSynchronize(s));
  OK(d.cuStreamDestroy(s));
  gate_destroy(&g);
}

typedef struct {
  CUdeviceptr p;
  CUstream s;
} free_args;

static int child_free_expect_invalid(void *arg) {
  free_args *a = arg;
  CUresult r = d.cuMemFreeAsync(a->p, a->s);
  if (r != CUDA_ERROR_INVALID_VALUE) {
    fprintf(stderr, "    (child: cuMemFreeAsync(%#llx) returned %s, expected CUDA_ERROR_INVALID_VALUE)\n",
            (unsigned long long)a->p, rname(r));
    return 2;
  }
  return 0;
}

/* Freeing an allocation again after its free has run returns
 * CUDA_ERROR_INVALID_VALUE, as CUDA does, without reading the freed memory (a
 * header 256 bytes in front of the pointer: for a large block, mmapped by
 * malloc and unmapped on free, reading it would be SIGSEGV; under valgrind
 * both sizes would report invalid reads). Run in a child. */
void test_double_free_after_the_free_ran_is_refused(void) {
  CUstream s = mkstream();
  free_args a = {0, s};
  OK(d.cuMemAllocAsync(&a.p, 40u << 20, s)); /* > glibc's largest mmap threshold */
  OK(d.cuMemFreeAsync(a.p, s));
  OK(d.cuStreamSynchronize(s)); /* the free has run */
  CHECK(in_child(child_free_expect_invalid, &a, "double free of a 40 MiB block"));

  OK(d.cuMemAllocAsync(&a.p, 4096, s));
  OK(d.cuMemFreeAsync(a.p, s));
  OK(d.cuStreamSynchronize(s));
  CHECK(in_child(child_free_expect_invalid, &a, "double free of a 4 KiB block"));
  OK(d.cuStreamDestroy(s));
}

/* The same for a 256-aligned pointer the sim never handed out: a free of it
 * returns CUDA_ERROR_INVALID_VALUE without reading p - 256 (SIGSEGV for a low
 * address; an out-of-bounds heap read for a host buffer). Run in a child. */
void test_free_of_a_foreign_pointer_is_refused(void) {
  CUstream s = mkstream();
  free_args a = {(CUdeviceptr)0x10000, s};
  CHECK(in_child(child_free_expect_invalid, &a, "free of 0x10000"));
  void *h = aligned_alloc(256, 4096);
  a.p = (CUdeviceptr)(uintptr_t)h;
  CHECK(in_child(child_free_expect_invalid, &a, "free of a malloc'ed host pointer"));
  free(h);
  OK(d.cuStreamDestroy(s));
}

void test_memcpy(void) {
  CUstream s1 = mkstream_on(1);
  CUstream s0 = mkstream_on(0);
  enum { N = 1000 };
  static uint8_t src[N], dst[N], dst2[N], dst3[N];
  for (int i = 0; i < N; i++) src[i] = (uint8_t)(i * 31 + 7);
  memset(dst, 0, N);
  memset(dst2, 0, N);
  memset(dst3, 0, N);
  CUdeviceptr a0, b0, c0, a1;
  OK(d.cuMemAllocAsync(&a0, N, s0));
  OK(d.cuMemAllocAsync(&b0, N, s0));
  OK(d.cuMemAllocAsync(&c0, N, s0));
  OK(d.cuMemAllocAsync(&a1, N, s1));

  /* H2D, D2D, D2H */
  OK(d.cuMemcpyHtoDAsync(a0, src, N, s0));
  OK(d.cuMemcpyDtoDAsync(b0, a0, N, s0));
  OK(d.cuMemcpyDtoHAsync(dst, b0, N, s0));
  OK(d.cuStreamSynchronize(s0));
  CHECK(memcmp(src, dst, N) == 0);

  /* peer: device 0 -> device 1 on s0, read back on s1 after an event */
  CUevent e;
  OK(d.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  OK(d.cuMemcpyPeerAsync(a1, g_ctx[1], b0, g_ctx[0], N, s0));
  OK(d.cuEventRecord(e, s0));
  OK(d.cuStreamWaitEvent(s1, e, 0));
  OK(d.cuMemcpyDtoHAsync(dst2, a1, N, s1));
  OK(d.cuStreamSynchronize(s1));
  CHECK(memcmp(src, dst2, N) == 0);
  /* and back: device 1 -> device 0 on s1 */
  OK(d.cuMemsetD8Async(c0, 0, N, s0));
  OK(d.cuStreamSynchronize(s0));
  OK(d.cuMemcpyPeerAsync(c0, g_ctx[0], a1, g_ctx[1], N, s1));
  OK(d.cuStreamSynchronize(s1));
  OK(d.cuMemcpyDtoHAsync(dst3, c0, N, s0));
  OK(d.cuStreamSynchronize(s0));
  CHECK(memcmp(src, dst3, N) == 0);

  /* offsets */
  memset(dst, 0, N);
  OK(d.cuMemcpyHtoDAsync(a0 + 10, src + 500, 100, s0));
  OK(d.cuMemcpyDtoHAsync(dst + 3, a0 + 10, 100, s0));
  OK(d.cuStreamSynchronize(s0));
  CHECK(memcmp(dst + 3, src + 500, 100) == 0);
  CHECK(dst[2] == 0 && dst[103] == 0);

  /* zero-length copies are fine; missing pointers are not */
  OK(d.cuMemcpyHtoDAsync(a0, src, 0, s0));
  OK(d.cuMemcpyDtoDAsync(a0, b0, 0, s0));
  CHECK_RC(d.cuMemcpyHtoDAsync(a0, NULL, 4, s0), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(d.cuMemcpyDtoHAsync(NULL, a0, 4, s0), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(d.cuMemcpyDtoDAsync(0, a0, 4, s0), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(d.cuMemcpyPeerAsync(a1, NULL, a0, g_ctx[0], 4, s0), CUDA_ERROR_INVALID_CONTEXT);
  CHECK_RC(d.cuMemcpyPeerAsync(a1, g_ctx[1], a0, NULL, 4, s0), CUDA_ERROR_INVALID_CONTEXT);

  /* peer access */
  use_ctx(0);
  OK(d.cuCtxEnablePeerAccess(g_ctx[1], 0));
  CHECK_RC(d.cuCtxEnablePeerAccess(g_ctx[1], 0), CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
  CHECK_RC(d.cuCtxEnablePeerAccess(g_ctx[0], 0), CUDA_ERROR_INVALID_DEVICE);
  CHECK_RC(d.cuCtxEnablePeerAccess(g_ctx[1], 1), CUDA_ERROR_INVALID_VALUE);

  /* pinned host memory */
  void *hp = NULL;
  OK(d.cuMemHostAlloc(&hp, 4096, 0));
  CHECK(hp != NULL);
  if (hp) {
    memcpy(hp, src, N);
    OK(d.cuMemcpyHtoDAsync(b0, hp, N, s0));
    memset(dst, 0, N);
    OK(d.cuMemcpyDtoHAsync(dst, b0, N, s0));
    OK(d.cuStreamSynchronize(s0));
    CHECK(memcmp(dst, src, N) == 0);
    OK(d.cuMemFreeHost(hp));
  }
  CHECK_RC(d.cuMemHostAlloc(&hp, 0, 0), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(d.cuMemHostAlloc(NULL, 16, 0), CUDA_ERROR_INVALID_VALUE);

  OK(d.cuEventDestroy(e));
  OK(d.cuMemFreeAsync(a0, s0));
  OK(d.cuMemFreeAsync(b0, s0));
  OK(d.cuMemFreeAsync(c0, s0));
  OK(d.cuMemFreeAsync(a1, s1));
  OK(d.cuStreamSynchronize(s0));
  OK(d.cuStreamSynchronize(s1));
  OK(d.cuStreamDestroy(s0));
  OK(d.cuStreamDestroy(s1));
}

void test_memset(void) {
  CUstream s = mkstream();
  CUdeviceptr m;
  OK(d.cuMemAllocAsync(&m, 256, s));
  OK(d.cuMemsetD8Async(m, 0, 256, s));

  /* bytes 0..7: D8 */
  OK(d.cuMemsetD8Async(m + 1, 0xAB, 6, s));
  /* bytes 8..15: D16 */
  OK(d.cuMemsetD16Async(m + 8, 0xBEEF, 3, s));
  CHECK_RC(d.cuMemsetD16Async(m + 9, 0xBEEF, 1, s), CUDA_ERROR_INVALID_VALUE);
  /* bytes 16..23: D32 */
  OK(d.cuMemsetD32Async(m + 16, 0xDEADBEEFu, 1, s));
  OK(d.cuMemsetD32Async(m + 20, 0x01020304u, 1, s));
  OK(d.cuMemsetD32Async(m + 24, 0xFFFFFFFFu, 0, s)); /* nothing */
  CHECK_RC(d.cuMemsetD32Async(m + 18, 0, 1, s), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(d.cuMemsetD32Async(m + 17, 0, 1, s), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(d.cuMemsetD8Async(0, 0, 4, s), CUDA_ERROR_INVALID_VALUE);
  /* bytes 64..191: 16 8-byte patterns from two D2D32 passes with pitch 8 */
  OK(d.cuMemsetD2D32Async(m + 64, 8, 0x11111111u, 1, 16, s));
  OK(d.cuMemsetD2D32Async(m + 68, 8, 0x22222222u, 1, 16, s));
  /* bytes 192..255: 4 rows of pitch 16, 2 words each, gaps untouched */
  OK(d.cuMemsetD2D32Async(m + 192, 16, 0x33333333u, 2, 4, s));
  CHECK_RC(d.cuMemsetD2D32Async(m + 192, 4, 0, 2, 2, s), CUDA_ERROR_INVALID_VALUE); /* pitch < width */
  CHECK_RC(d.cuMemsetD2D32Async(m + 194, 16, 0, 1, 2, s), CUDA_ERROR_INVALID_VALUE); /* misaligned */

  union {
    uint8_t b[256];
    uint16_t h[128];
    uint32_t w[64];
    uint64_t q[32];
  } out;
  memset(&out, 0x5A, sizeof out);
  OK(d.cuMemcpyDtoHAsync(&out, m, 256, s));
  OK(d.cuStreamSynchronize(s));

  CHECK(out.b[0] == 0 && out.b[7] == 0);
  int bad = 0;
  for (int i = 1; i <= 6; i++) bad += out.b[i] != 0xAB;
  CHECK(bad == 0);
  CHECK(out.h[4] == 0xBEEF && out.h[5] == 0xBEEF && out.h[6] == 0xBEEF && out.h[7] == 0);
  CHECK(out.w[4] == 0xDEADBEEFu && out.w[5] == 0x01020304u);
  bad = 0;
  for (int i = 24; i < 64; i++) bad += out.b[i] != 0;
  CHECK(bad == 0);
  bad = 0;
  for (int i = 8; i < 24; i++) bad += out.q[i] != 0x2222222211111111ull;
  CHECK(bad == 0);
  bad = 0;
  for (int r = 0; r < 4; r++) {
    const uint32_t *row = &out.w[48 + 4 * r];
    bad += row[0] != 0x33333333u || row[1] != 0x33333333u || row[2] != 0 || row[3] != 0;
  }
  CHECK(bad == 0);

  OK(d.cuMemFreeAsync(m, s));
  OK(d.cuStreamSynchronize(s));
  OK(d.cuStreamDestroy(s));
}
