/*
 * test_sim_streams.c -- tests of the sim's streams: creation and
 * destruction, FIFO order of everything queued on one stream, queries and
 * synchronisation, cuCtxSynchronize across a context's streams, a
 * stream destroyed with work still queued, and the workers of destroyed
 * streams joined once they end.
 */
#include "sim_driver_harness.h"
#include "sim_driver_tests.h"

#include <stdint.h>

static int simmark_fn(void *p) {
  mark_fn(p);
  return 0;
}

static int seq_count(seqlog *l) {
  pthread_mutex_lock(&l->mu);
  int n = l->n;
  pthread_mutex_unlock(&l->mu);
  return n;
}

void test_stream_create_destroy(void) {
  use_ctx(0);
  CUstream a = NULL, b = NULL, x = NULL;
  OK(d.cuStreamCreateWithPriority(&a, 0, 0));
  OK(d.cuStreamCreateWithPriority(&b, CU_STREAM_NON_BLOCKING, 0));
  CHECK(a != NULL && b != NULL && a != b);
  CHECK_RC(d.cuStreamCreateWithPriority(&x, 0x80, 0), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(d.cuStreamCreateWithPriority(NULL, 0, 0), CUDA_ERROR_INVALID_VALUE);
  OK(d.cuStreamQuery(a)); /* a new stream has nothing pending */
  OK(d.cuStreamSynchronize(a));
  CHECK(gld_sim_device_of(a) == 0);
  CHECK(gld_sim_device_of(NULL) == -1);
  OK(d.cuStreamDestroy(a));
  OK(d.cuStreamDestroy(b));
  CHECK_RC(d.cuStreamDestroy(NULL), CUDA_ERROR_INVALID_HANDLE);

  CUstream c = mkstream_on(1);
  CHECK(gld_sim_device_of(c) == 1);
  OK(d.cuStreamDestroy(c));
  use_ctx(0);

  /* many streams, created and destroyed */
  CUstream many[32];
  for (int i = 0; i < 32; i++) OK(d.cuStreamCreateWithPriority(&many[i], 0, -(i % 6)));
  for (int i = 0; i < 32; i++) OK(d.cuStreamDestroy(many[i]));
  OK(d.cuCtxSynchronize());
}

void test_fifo_order(void) {
  CUstream s = mkstream();
  enum { N = 256, NB = 64, NH = 32, NV = 100, NMARK = 200 };
  CUdeviceptr w32, w8, w16, chain, word, acc;
  OK(d.cuMemAllocAsync(&w32, N * 4, s));
  OK(d.cuMemAllocAsync(&w8, NB, s));
  OK(d.cuMemAllocAsync(&w16, NH * 2, s));
  OK(d.cuMemAllocAsync(&chain, N * 4, s));
  OK(d.cuMemAllocAsync(&word, 4, s));
  OK(d.cuMemAllocAsync(&acc, NV * 4, s));

  /* overlapping memsets: op i covers elements i..N-1, so in FIFO order the
   * last one to touch element j is op j */
  for (unsigned i = 0; i < N; i++) OK(d.cuMemsetD32Async(w32 + 4 * i, i, N - i, s));
  for (unsigned i = 0; i < NB; i++) OK(d.cuMemsetD8Async(w8 + i, (unsigned char)(i + 1), NB - i, s));
  for (unsigned i = 0; i < NH; i++)
    OK(d.cuMemsetD16Async(w16 + 2 * i, (unsigned short)(0x100 + i), NH - i, s));

  /* a chain of device copies: in order, the head value travels to the end */
  static const uint32_t head = 0xC0FFEE;
  OK(d.cuMemsetD32Async(chain, 0, N, s));
  OK(d.cuMemcpyHtoDAsync(chain, &head, 4, s));
  for (unsigned k = 0; k + 1 < N; k++) OK(d.cuMemcpyDtoDAsync(chain + 4 * (k + 1), chain + 4 * k, 4, s));

  /* one device word rewritten from the host and saved after each write */
  static uint32_t hv[NV];
  for (unsigned i = 0; i < NV; i++) hv[i] = 0x5000 + i * 7;
  for (unsigned i = 0; i < NV; i++) {
    OK(d.cuMemcpyHtoDAsync(word, &hv[i], 4, s));
    OK(d.cuMemcpyDtoDAsync(acc + 4 * i, word, 4, s));
  }

  /* host functions and sim functions, interleaved */
  static seqlog log;
  static mark marks[NMARK];
  seq_init(&log);
  for (int i = 0; i < NMARK; i++) {
    marks[i] = (mark){&log, i};
    if (i % 2) OK(gld_sim_enqueue(s, simmark_fn, &marks[i]));
    else OK(d.cuLaunchHostFunc(s, mark_fn, &marks[i]));
  }

  static uint32_t h32[N], hchain[N], hacc[NV];
  static uint8_t h8[NB];
  static uint16_t h16[NH];
  OK(d.cuMemcpyDtoHAsync(h32, w32, sizeof h32, s));
  OK(d.cuMemcpyDtoHAsync(h8, w8, sizeof h8, s));
  OK(d.cuMemcpyDtoHAsync(h16, w16, sizeof h16, s));
  OK(d.cuMemcpyDtoHAsync(hchain, chain, sizeof hchain, s));
  OK(d.cuMemcpyDtoHAsync(hacc, acc, sizeof hacc, s));
  OK(d.cuStreamSynchronize(s));

  int bad = 0;
  for (unsigned j = 0; j < N; j++) bad += h32[j] != j;
  CHECK(bad == 0);
  bad = 0;
  for (unsigned j = 0; j < NB; j++) bad += h8[j] != (uint8_t)(j + 1);
  CHECK(bad == 0);
  bad = 0;
  for (unsigned j = 0; j < NH; j++) bad += h16[j] != (uint16_t)(0x100 + j);
  CHECK(bad == 0);
  bad = 0;
  for (unsigned j = 0; j < N; j++) bad += hchain[j] != head;
  CHECK(bad == 0);
  bad = 0;
  for (unsigned j = 0; j < NV; j++) bad += hacc[j] != hv[j];
  CHECK(bad == 0);
  CHECK(seq_count(&log) == NMARK);
  bad = 0;
  for (int i = 0; i < NMARK; i++) bad += log.ids[i] != i;
  CHECK(bad == 0);

  OK(d.cuMemFreeAsync(w32, s));
  OK(d.cuMemFreeAsync(w8, s));
  OK(d.cuMemFreeAsync(w16, s));
  OK(d.cuMemFreeAsync(chain, s));
  OK(d.cuMemFreeAsync(word, s));
  OK(d.cuMemFreeAsync(acc, s));
  OK(d.cuStreamSynchronize(s));
  OK(d.cuStreamDestroy(s));
  seq_destroy(&log);
}

void test_stream_query(void) {
  CUstream s = mkstream();
  gate g;
  gate_init(&g);
  atomic_int after = 0;
  OK(d.cuStreamQuery(s));
  OK(d.cuLaunchHostFunc(s, gate_fn, &g));
  OK(d.cuLaunchHostFunc(s, flag_fn, &after));
  CHECK_RC(d.cuStreamQuery(s), CUDA_ERROR_NOT_READY); /* the gate is closed */
  latch_wait(&g.entered);
  CHECK_RC(d.cuStreamQuery(s), CUDA_ERROR_NOT_READY);
  CHECK(atomic_load(&after) == 0);
  latch_set(&g.open);
  OK(d.cuStreamSynchronize(s));
  OK(d.cuStreamQuery(s));
  CHECK(atomic_load(&after) == 1);

  CHECK_RC(d.cuLaunchHostFunc(s, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(d.cuStreamQuery(NULL), CUDA_ERROR_INVALID_HANDLE);
  CHECK_RC(d.cuStreamSynchronize(NULL), CUDA_ERROR_INVALID_HANDLE);
  OK(d.cuStreamDestroy(s));
  gate_destroy(&g);
}

void test_stream_sync_waits(void) {
  CUstream s = mkstream();
  /* the sync must outwait a slow operation */
  sleepy sl = {.ms = 30};
  atomic_init(&sl.flag, 0);
  OK(d.cuLaunchHostFunc(s, sleepy_fn, &sl));
  OK(d.cuStreamSynchronize(s));
  CHECK(atomic_load(&sl.flag) == 1);

  /* and it must block while the stream is held back */
  gate g;
  gate_init(&g);
  atomic_int after = 0;
  OK(d.cuLaunchHostFunc(s, gate_fn, &g));
  OK(d.cuLaunchHostFunc(s, flag_fn, &after));
  helper h = {.stream = s, .what = DO_STREAM_SYNC};
  pthread_t th;
  helper_start(&h, &th);
  latch_wait(&g.entered);
  CHECK(!latch_wait_ms(&h.returned, SHORT_WAIT_MS));
  CHECK(atomic_load(&after) == 0);
  latch_set(&g.open);
  CHECK(latch_wait_ms(&h.returned, 5000));
  pthread_join(th, NULL);
  OK(h.r);
  CHECK(atomic_load(&after) == 1);
  latch_destroy(&h.returned);
  gate_destroy(&g);
  OK(d.cuStreamDestroy(s));
}

void test_ctx_sync(void) {
  CUstream sx = mkstream_on(1); /* another context's stream */
  CUstream s1 = mkstream_on(0), s2 = mkstream_on(0);
  OK(d.cuCtxSynchronize()); /* all idle: returns at once */

  gate g1, g2, gx;
  gate_init(&g1);
  gate_init(&g2);
  gate_init(&gx);
  atomic_int f1 = 0, f2 = 0, fx = 0;
  OK(d.cuLaunchHostFunc(s1, gate_fn, &g1));
  OK(d.cuLaunchHostFunc(s1, flag_fn, &f1));
  OK(d.cuLaunchHostFunc(s2, gate_fn, &g2));
  OK(d.cuLaunchHostFunc(s2, flag_fn, &f2));
  OK(d.cuLaunchHostFunc(sx, gate_fn, &gx));
  OK(d.cuLaunchHostFunc(sx, flag_fn, &fx));

  helper h = {.ctx = g_ctx[0], .what = DO_CTX_SYNC};
  pthread_t th;
  helper_start(&h, &th);
  latch_wait(&g1.entered);
  latch_wait(&g2.entered);
  CHECK(!latch_wait_ms(&h.returned, SHORT_WAIT_MS));
  latch_set(&g1.open);
  OK(d.cuStreamSynchronize(s1));
  CHECK(!latch_wait_ms(&h.returned, SHORT_WAIT_MS)); /* s2 is still held */
  latch_set(&g2.open);
  /* returns although device 1's stream is still held */
  CHECK(latch_wait_ms(&h.returned, 5000));
  CHECK(atomic_load(&f1) == 1 && atomic_load(&f2) == 1);
  CHECK(atomic_load(&fx) == 0);
  latch_set(&gx.open);
  pthread_join(th, NULL);
  OK(h.r);
  OK(d.cuStreamSynchronize(sx));
  CHECK(atomic_load(&fx) == 1);

  /* in the main thread too: it waits for a slow operation */
  sleepy sl = {.ms = 30};
  atomic_init(&sl.flag, 0);
  OK(d.cuLaunchHostFunc(s2, sleepy_fn, &sl));
  OK(d.cuCtxSynchronize());
  CHECK(atomic_load(&sl.flag) == 1);

  latch_destroy(&h.returned);
  OK(d.cuStreamDestroy(s1));
  OK(d.cuStreamDestroy(s2));
  OK(d.cuStreamDestroy(sx));
  gate_destroy(&g1);
  gate_destroy(&g2);
  gate_destroy(&gx);
}

void test_destroy_with_work(void) {
  CUstream A = mkstream(), B = mkstream();
  CUevent e;
  OK(d.cuEventCreate(&e, 0));
  gate g;
  gate_init(&g);
  seqlog log;
  seq_init(&log);
  mark a1 = {&log, 1}, b2 = {&log, 2};
  atomic_int a_flag = 0;
  CUdeviceptr p;
  static uint32_t val = 0x600DF00D, back = 0;
  back = 0;
  OK(d.cuMemAllocAsync(&p, 4, A));

  OK(d.cuLaunchHostFunc(A, gate_fn, &g));
  OK(d.cuLaunchHostFunc(A, flag_fn, &a_flag));
  OK(d.cuMemcpyHtoDAsync(p, &val, 4, A));
  OK(d.cuLaunchHostFunc(A, mark_fn, &a1));
  OK(d.cuEventRecord(e, A));
  OK(d.cuStreamDestroy(A)); /* with all of that still queued */
  OK(d.cuStreamWaitEvent(B, e, 0));
  OK(d.cuLaunchHostFunc(B, mark_fn, &b2));
  OK(d.cuMemcpyDtoHAsync(&back, p, 4, B));
  short_wait();
  CHECK(atomic_load(&a_flag) == 0);
  CHECK(seq_pos(&log, 2) < 0);

  latch_set(&g.open);
  OK(d.cuStreamSynchronize(B));
  CHECK(atomic_load(&a_flag) == 1);
  CHECK(seq_pos(&log, 1) >= 0 && seq_pos(&log, 1) < seq_pos(&log, 2));
  CHECK(back == val);
  OK(d.cuEventQuery(e));

  OK(d.cuMemFreeAsync(p, B));
  OK(d.cuStreamSynchronize(B));
  OK(d.cuCtxSynchronize());
  OK(d.cuEventDestroy(e));
  OK(d.cuStreamDestroy(B));
  gate_destroy(&g);
  seq_destroy(&log);
}

/* A destroyed stream's worker drains, ends and is joined (at the next
 * create or destroy, and at exit, which waits for it a bounded time):
 * none is left running or unjoined when the process exits. */
void test_workers_joined(void) {
  use_ctx(0);
  CHECK(gld_sim_workers_settle(30000) == 0); /* the earlier tests' streams */
  int base = gld_sim_workers_live();
  CUstream s[8];
  for (int i = 0; i < 8; i++) s[i] = mkstream();
  CHECK(gld_sim_workers_live() == base + 8);
  gate g;
  gate_init(&g);
  OK(d.cuLaunchHostFunc(s[0], gate_fn, &g));
  for (int i = 0; i < 8; i++) OK(d.cuStreamDestroy(s[i])); /* a destroy wakes the worker */
  latch_wait(&g.entered);
  /* s[0]'s worker is held in the gate: the wait gives up, nothing hangs */
  CHECK(gld_sim_workers_settle(SHORT_WAIT_MS) >= 1);
  CHECK(gld_sim_workers_live() >= base + 1);
  latch_set(&g.open);
  CHECK(gld_sim_workers_settle(30000) == 0);
  CHECK(gld_sim_workers_live() == base);
  gate_destroy(&g);
}
