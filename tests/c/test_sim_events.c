/*
 * test_sim_events.c -- tests of the sim's events: creation, records,
 * queries and cuEventSynchronize, re-recording, which record a
 * cuStreamWaitEvent captures, waits across streams and devices, and
 * cuEventElapsedTime.
 */
#include "sim_driver_harness.h"
#include "sim_driver_tests.h"

void test_events_basic(void) {
  CUstream s = mkstream();
  CUevent e = NULL, x = NULL;
  OK(d.cuEventCreate(&e, 0));
  CHECK(e != NULL);
  /* never recorded: complete */
  OK(d.cuEventQuery(e));
  OK(d.cuEventSynchronize(e));
  CHECK_RC(d.cuEventCreate(&x, 0x100), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(d.cuEventCreate(NULL, 0), CUDA_ERROR_INVALID_VALUE);
  OK(d.cuEventCreate(&x, CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING));
  OK(d.cuEventDestroy(x));
  CHECK_RC(d.cuEventRecord(NULL, s), CUDA_ERROR_INVALID_HANDLE);
  CHECK_RC(d.cuEventQuery(NULL), CUDA_ERROR_INVALID_HANDLE);
  CHECK_RC(d.cuEventSynchronize(NULL), CUDA_ERROR_INVALID_HANDLE);
  CHECK_RC(d.cuEventDestroy(NULL), CUDA_ERROR_INVALID_HANDLE);

  /* recorded behind a closed gate: not ready until the stream gets there */
  gate g;
  gate_init(&g);
  OK(d.cuLaunchHostFunc(s, gate_fn, &g));
  OK(d.cuEventRecord(e, s));
  CHECK_RC(d.cuEventQuery(e), CUDA_ERROR_NOT_READY);
  latch_wait(&g.entered);
  CHECK_RC(d.cuEventQuery(e), CUDA_ERROR_NOT_READY);
  /* cuEventSynchronize blocks meanwhile */
  helper h = {.event = e, .what = DO_EVENT_SYNC};
  pthread_t th;
  helper_start(&h, &th);
  CHECK(!latch_wait_ms(&h.returned, SHORT_WAIT_MS));
  latch_set(&g.open);
  OK(d.cuEventSynchronize(e));
  OK(d.cuEventQuery(e));
  CHECK(latch_wait_ms(&h.returned, 5000));
  pthread_join(th, NULL);
  OK(h.r);
  latch_destroy(&h.returned);

  /* cuEventSynchronize outwaits a slow operation before the record */
  sleepy sl = {.ms = 30};
  atomic_init(&sl.flag, 0);
  OK(d.cuLaunchHostFunc(s, sleepy_fn, &sl));
  OK(d.cuEventRecord(e, s));
  OK(d.cuEventSynchronize(e));
  CHECK(atomic_load(&sl.flag) == 1);
  OK(d.cuEventQuery(e));

  OK(d.cuStreamSynchronize(s));
  OK(d.cuEventDestroy(e));
  OK(d.cuStreamDestroy(s));
  gate_destroy(&g);
}

/* Re-recording: queries and waits look at the most recent record. */
void test_event_rerecord(void) {
  CUstream A = mkstream(), B = mkstream(), C = mkstream();
  CUevent e;
  OK(d.cuEventCreate(&e, 0));
  gate g;
  gate_init(&g);
  seqlog log;
  seq_init(&log);
  mark a1 = {&log, 1}, b2 = {&log, 2}, b3 = {&log, 3};

  OK(d.cuLaunchHostFunc(A, gate_fn, &g));
  OK(d.cuLaunchHostFunc(A, mark_fn, &a1));
  OK(d.cuEventRecord(e, A)); /* pending behind the gate */
  CHECK_RC(d.cuEventQuery(e), CUDA_ERROR_NOT_READY);
  OK(d.cuEventRecord(e, C)); /* re-recorded on an idle stream */
  OK(d.cuStreamSynchronize(C));
  OK(d.cuEventQuery(e));       /* the most recent record is complete */
  OK(d.cuEventSynchronize(e)); /* returns although A is still held */
  OK(d.cuStreamWaitEvent(B, e, 0));
  OK(d.cuLaunchHostFunc(B, mark_fn, &b2));
  OK(d.cuStreamSynchronize(B)); /* B waited for C's record only */
  CHECK(seq_pos(&log, 2) >= 0);
  CHECK(seq_pos(&log, 1) < 0);

  /* a wait taken before a re-record keeps the record it saw */
  OK(d.cuEventRecord(e, C));
  OK(d.cuStreamSynchronize(C));
  OK(d.cuStreamWaitEvent(B, e, 0)); /* captures C's completed record */
  OK(d.cuEventRecord(e, A));        /* re-recorded behind the gate */
  CHECK_RC(d.cuEventQuery(e), CUDA_ERROR_NOT_READY);
  OK(d.cuLaunchHostFunc(B, mark_fn, &b3));
  OK(d.cuStreamSynchronize(B));
  CHECK(seq_pos(&log, 3) >= 0);
  CHECK(seq_pos(&log, 1) < 0);
  CHECK_RC(d.cuEventQuery(e), CUDA_ERROR_NOT_READY);

  latch_set(&g.open);
  OK(d.cuEventSynchronize(e));
  OK(d.cuStreamSynchronize(A));
  CHECK(seq_pos(&log, 1) >= 0);
  OK(d.cuEventQuery(e));

  OK(d.cuEventDestroy(e));
  OK(d.cuStreamDestroy(A));
  OK(d.cuStreamDestroy(B));
  OK(d.cuStreamDestroy(C));
  gate_destroy(&g);
  seq_destroy(&log);
}

/* A wait captures the record that is most recent at cuStreamWaitEvent time
 * (CUDA: "wait for all work captured in hEvent"; later records do not modify
 * what an earlier wait waits for): when a *later* record of the same event
 * completes first (on another stream), the earlier wait still holds until the
 * work it captured has run. */
void test_wait_captures_the_record_at_the_wait(void) {
  CUstream A = mkstream(), B = mkstream(), C = mkstream();
  CUevent e;
  OK(d.cuEventCreate(&e, 0));
  gate g;
  gate_init(&g);
  seqlog log;
  seq_init(&log);
  mark a1 = {&log, 1}, b2 = {&log, 2};

  OK(d.cuLaunchHostFunc(A, gate_fn, &g));
  OK(d.cuLaunchHostFunc(A, mark_fn, &a1));
  OK(d.cuEventRecord(e, A));        /* record 1: pending behind the gate */
  OK(d.cuStreamWaitEvent(B, e, 0)); /* B must wait for record 1 */
  OK(d.cuLaunchHostFunc(B, mark_fn, &b2));
  OK(d.cuEventRecord(e, C)); /* record 2 on an idle stream */
  OK(d.cuStreamSynchronize(C));
  (void)d.cuStreamQuery(A); /* asking starts queued work (the sim's rule) */
  latch_wait(&g.entered);
  short_wait();
  CHECK(seq_pos(&log, 2) < 0); /* B ran before A's captured work */
  CHECK_RC(d.cuStreamQuery(B), CUDA_ERROR_NOT_READY);

  latch_set(&g.open);
  OK(d.cuStreamSynchronize(B));
  OK(d.cuStreamSynchronize(A));
  CHECK(seq_pos(&log, 1) >= 0 && seq_pos(&log, 2) >= 0);
  CHECK(seq_pos(&log, 1) < seq_pos(&log, 2));

  OK(d.cuEventDestroy(e));
  OK(d.cuStreamDestroy(A));
  OK(d.cuStreamDestroy(B));
  OK(d.cuStreamDestroy(C));
  gate_destroy(&g);
  seq_destroy(&log);
}

static void cross_stream_wait_case(int dev_a, int dev_b) {
  CUstream A = mkstream_on(dev_a), B = mkstream_on(dev_b);
  use_ctx(dev_a);
  CUevent e;
  OK(d.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  gate g;
  gate_init(&g);
  seqlog log;
  seq_init(&log);
  mark a1 = {&log, 1}, b2 = {&log, 2};
  atomic_int b_flag = 0;

  OK(d.cuLaunchHostFunc(A, gate_fn, &g));
  OK(d.cuLaunchHostFunc(A, mark_fn, &a1));
  OK(d.cuEventRecord(e, A));
  OK(d.cuStreamWaitEvent(B, e, 0));
  OK(d.cuLaunchHostFunc(B, mark_fn, &b2));
  OK(d.cuLaunchHostFunc(B, flag_fn, &b_flag));
  /* the event may go while a wait on it is still queued */
  OK(d.cuEventDestroy(e));
  (void)d.cuStreamQuery(A); /* asking starts queued work (the sim's rule) */
  latch_wait(&g.entered);
  short_wait();
  CHECK(atomic_load(&b_flag) == 0);
  CHECK(seq_pos(&log, 2) < 0);
  CHECK_RC(d.cuStreamQuery(B), CUDA_ERROR_NOT_READY);
  CHECK_RC(d.cuStreamQuery(A), CUDA_ERROR_NOT_READY);

  latch_set(&g.open);
  OK(d.cuStreamSynchronize(B));
  CHECK(atomic_load(&b_flag) == 1);
  CHECK(seq_pos(&log, 1) >= 0 && seq_pos(&log, 1) < seq_pos(&log, 2));
  OK(d.cuStreamSynchronize(A));
  OK(d.cuStreamDestroy(A));
  OK(d.cuStreamDestroy(B));
  gate_destroy(&g);
  seq_destroy(&log);
}

void test_cross_stream_wait(void) {
  cross_stream_wait_case(0, 0);
  cross_stream_wait_case(0, 1); /* the event may be of another device */
  cross_stream_wait_case(1, 0);

  /* waiting on a never-recorded event does not block */
  CUstream B = mkstream();
  CUevent e;
  OK(d.cuEventCreate(&e, 0));
  atomic_int f = 0;
  OK(d.cuStreamWaitEvent(B, e, 0));
  OK(d.cuLaunchHostFunc(B, flag_fn, &f));
  OK(d.cuStreamSynchronize(B));
  CHECK(atomic_load(&f) == 1);
  CHECK_RC(d.cuStreamWaitEvent(B, e, 0x40), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(d.cuStreamWaitEvent(B, NULL, 0), CUDA_ERROR_INVALID_VALUE);
  OK(d.cuEventDestroy(e));
  OK(d.cuStreamDestroy(B));
}

void test_elapsed_time(void) {
  CUstream s = mkstream();
  CUevent start, end, nt, never;
  OK(d.cuEventCreate(&start, 0));
  OK(d.cuEventCreate(&end, CU_EVENT_BLOCKING_SYNC));
  OK(d.cuEventCreate(&nt, CU_EVENT_DISABLE_TIMING));
  OK(d.cuEventCreate(&never, 0));

  sleepy sl = {.ms = 5};
  atomic_init(&sl.flag, 0);
  OK(d.cuEventRecord(start, s));
  OK(d.cuLaunchHostFunc(s, sleepy_fn, &sl));
  OK(d.cuEventRecord(end, s));
  OK(d.cuEventRecord(nt, s));
  OK(d.cuStreamSynchronize(s));

  float ms = -1.0f;
  OK(d.cuEventElapsedTime(&ms, start, end));
  CHECK(ms >= 0.0f);
  CHECK(ms >= 4.5f); /* a 5 ms host function ran between the records */
  CHECK(ms < 10000.0f);
  ms = -1.0f;
  OK(d.cuEventElapsedTime(&ms, start, start));
  CHECK(ms == 0.0f);
  CHECK_RC(d.cuEventElapsedTime(&ms, start, nt), CUDA_ERROR_INVALID_HANDLE);
  CHECK_RC(d.cuEventElapsedTime(&ms, nt, end), CUDA_ERROR_INVALID_HANDLE);
  CHECK_RC(d.cuEventElapsedTime(&ms, start, never), CUDA_ERROR_INVALID_HANDLE);
  CHECK_RC(d.cuEventElapsedTime(&ms, never, end), CUDA_ERROR_INVALID_HANDLE);

  /* not yet complete */
  gate g;
  gate_init(&g);
  OK(d.cuLaunchHostFunc(s, gate_fn, &g));
  OK(d.cuEventRecord(end, s));
  CHECK_RC(d.cuEventElapsedTime(&ms, start, end), CUDA_ERROR_NOT_READY);
  CHECK_RC(d.cuEventElapsedTime(&ms, end, start), CUDA_ERROR_NOT_READY);
  latch_set(&g.open);
  OK(d.cuEventSynchronize(end));
  ms = -1.0f;
  OK(d.cuEventElapsedTime(&ms, start, end));
  CHECK(ms >= 4.5f);

  /* events of two contexts (devices) are refused, as CUDA refuses them */
  CUstream s1 = mkstream_on(1);
  CUevent other;
  OK(d.cuEventCreate(&other, 0));
  OK(d.cuEventRecord(other, s1));
  OK(d.cuStreamSynchronize(s1));
  CHECK_RC(d.cuEventElapsedTime(&ms, start, other), CUDA_ERROR_INVALID_HANDLE);
  CHECK_RC(d.cuEventElapsedTime(&ms, other, start), CUDA_ERROR_INVALID_HANDLE);
  OK(d.cuEventElapsedTime(&ms, other, other));
  OK(d.cuEventDestroy(other));
  OK(d.cuStreamDestroy(s1));
  use_ctx(0);

  OK(d.cuStreamSynchronize(s));
  OK(d.cuEventDestroy(start));
  OK(d.cuEventDestroy(end));
  OK(d.cuEventDestroy(nt));
  OK(d.cuEventDestroy(never));
  OK(d.cuStreamDestroy(s));
  gate_destroy(&g);
}
