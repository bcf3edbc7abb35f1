/*
 * test_sim_queue.c -- tests of a sim stream's queue: a bounded ring that
 * blocks the host when full and lets it go on at the low-water mark, a
 * worker that starts in batches or when the host waits or asks, and a ring
 * that grows instead of blocking while its worker waits for another stream.
 */
#include "sim_driver_harness.h"
#include "sim_driver_tests.h"

#include <sched.h>

enum { RING = 1024, LOW = 256, BATCH = 64 };

typedef struct {
  CUstream s;
  gate *g1, *g2;       /* queued first, and as the (RING - LOW)-th operation */
  atomic_int queued;   /* memsets queued so far */
  long pending_after;  /* the stream's pending count right after the blocked one returned */
  int blocked_at;      /* the memset that was blocked, or -1 */
  atomic_int finished;
  CUdeviceptr word;
} producer;

static void *produce(void *p) {
  producer *pr = p;
  use_ctx(0);
  OK(d.cuLaunchHostFunc(pr->s, gate_fn, pr->g1));
  for (int i = 0; i < 2 * RING; i++) {
    if (i == RING - LOW - 2) OK(d.cuLaunchHostFunc(pr->s, gate_fn, pr->g2));
    long before = gld_sim_stream_pending(pr->s);
    if (d.cuMemsetD32Async(pr->word, (unsigned)i, 1, pr->s) != CUDA_SUCCESS) break;
    atomic_store(&pr->queued, i + 1);
    if (before >= RING && pr->blocked_at < 0) { /* this one waited for room */
      pr->blocked_at = i;
      pr->pending_after = gld_sim_stream_pending(pr->s);
    }
  }
  atomic_store(&pr->finished, 1);
  return NULL;
}

/* The host blocks at RING pending operations and goes on once LOW remain,
 * not at the first free slot. */
void test_queue_bounded(void) {
  CUstream s = mkstream();
  gate g1, g2;
  gate_init(&g1);
  gate_init(&g2);
  producer pr = {.s = s, .g1 = &g1, .g2 = &g2, .blocked_at = -1};
  OK(d.cuMemAllocAsync(&pr.word, 4, s));
  OK(d.cuStreamSynchronize(s));
  pthread_t th;
  CHECK(pthread_create(&th, NULL, produce, &pr) == 0);
  /* the ring fills: the gates and RING - 2 memsets, and no more */
  while (gld_sim_stream_pending(s) < RING && !atomic_load(&pr.finished)) sched_yield();
  short_wait(); /* the harness's: only to see that nothing more happens */
  CHECK(gld_sim_stream_pending(s) == RING);
  CHECK(atomic_load(&pr.queued) == RING - 2);
  CHECK(!atomic_load(&pr.finished));
  /* the worker runs up to the second gate: LOW + 1 remain, still too many */
  latch_set(&g1.open);
  latch_wait(&g2.entered);
  short_wait();
  CHECK(gld_sim_stream_pending(s) > LOW); /* the gate, and at least LOW behind it */
  CHECK(atomic_load(&pr.queued) == RING - 2);
  latch_set(&g2.open);
  pthread_join(th, NULL);
  CHECK(atomic_load(&pr.queued) == 2 * RING);
  CHECK(pr.blocked_at == RING - 2);
  /* the memset that waited found at most LOW others still queued (none, where the worker ran
   * them all, itself too, before the producer looked: a busy machine) */
  CHECK(pr.pending_after >= 0 && pr.pending_after <= LOW + 1);
  OK(d.cuStreamSynchronize(s));
  CHECK(gld_sim_stream_pending(s) == 0);
  unsigned v = 0;
  OK(d.cuMemcpyDtoHAsync(&v, pr.word, 4, s));
  OK(d.cuStreamSynchronize(s));
  CHECK(v == 2 * RING - 1);
  OK(d.cuMemFreeAsync(pr.word, s));
  OK(d.cuStreamDestroy(s));
  gate_destroy(&g1);
  gate_destroy(&g2);
}

/* A worker wakes for a batch of BATCH operations, or when the host waits or
 * asks; fewer stay queued until then. */
void test_queue_wakes_in_batches(void) {
  CUstream s = mkstream();
  atomic_int ran = 0, first = 0;
  OK(d.cuLaunchHostFunc(s, flag_fn, &first)); /* a new worker may start on its own */
  OK(d.cuStreamSynchronize(s));              /* after a synchronize, it sleeps */
  OK(d.cuLaunchHostFunc(s, flag_fn, &ran));
  short_wait();
  CHECK(atomic_load(&ran) == 0); /* one operation: not started on its own */
  CHECK(gld_sim_stream_pending(s) == 1);
  (void)d.cuStreamQuery(s); /* asking starts it */
  while (!atomic_load(&ran)) sched_yield();
  OK(d.cuStreamSynchronize(s));

  atomic_int last = 0;
  CUdeviceptr w;
  OK(d.cuMemAllocAsync(&w, 4, s));
  OK(d.cuStreamSynchronize(s));
  for (int i = 0; i < BATCH - 1; i++) OK(d.cuMemsetD32Async(w, (unsigned)i, 1, s));
  OK(d.cuLaunchHostFunc(s, flag_fn, &last)); /* the BATCH-th: the worker starts by itself */
  for (long i = 0; !atomic_load(&last) && i < 100000000L; i++) sched_yield();
  CHECK(atomic_load(&last) == 1);
  OK(d.cuStreamSynchronize(s));
  OK(d.cuMemFreeAsync(w, s));
  OK(d.cuStreamDestroy(s));
}

/* While a worker waits for another stream's record, its ring grows: the
 * host is never blocked behind work that only the host could release. */
void test_queue_grows_while_its_worker_waits(void) {
  CUstream a = mkstream(), b = mkstream();
  gate g;
  gate_init(&g);
  CUevent e;
  OK(d.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  CUdeviceptr w;
  OK(d.cuMemAllocAsync(&w, 4, a));
  OK(d.cuStreamSynchronize(a));
  OK(d.cuLaunchHostFunc(b, gate_fn, &g));
  OK(d.cuEventRecord(e, b));
  OK(d.cuStreamWaitEvent(a, e, 0));
  (void)d.cuStreamQuery(a); /* a's worker reaches the wait, b's the gate */
  latch_wait(&g.entered);
  for (int i = 0; i < 3 * RING; i++) OK(d.cuMemsetD32Async(w, (unsigned)i, 1, a));
  CHECK(gld_sim_stream_pending(a) > RING); /* grown, not blocked */
  latch_set(&g.open);
  OK(d.cuStreamSynchronize(a));
  unsigned v = 0;
  OK(d.cuMemcpyDtoHAsync(&v, w, 4, a));
  OK(d.cuStreamSynchronize(a));
  CHECK(v == 3 * RING - 1);
  OK(d.cuMemFreeAsync(w, a));
  OK(d.cuStreamSynchronize(a));
  OK(d.cuEventDestroy(e));
  OK(d.cuStreamDestroy(a));
  OK(d.cuStreamDestroy(b));
  gate_destroy(&g);
}
