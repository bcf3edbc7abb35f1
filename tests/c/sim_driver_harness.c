/*
 * sim_driver_harness.c -- the harness of test_sim_driver (declared in
 * sim_driver_harness.h): the driver table and the current test's failure
 * count, rname and fail_at behind CHECK, latches, gates, flags, sleepy host
 * functions, sequence logs, the two primary contexts and the streams made
 * on them, and the helper thread that blocks in a synchronising call.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sim_driver_harness.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* ---- harness --------------------------------------------------------- */

gld_driver d;
const char *g_test = "?";
int g_failures; /* CHECK failures in the current test */

const char *rname(CUresult r) {
  const char *s = NULL;
  if (d.cuGetErrorName && d.cuGetErrorName(r, &s) == CUDA_SUCCESS && s) return s;
  return "?";
}

void fail_at(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "%s:%d: [%s] ", file, line, g_test);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  g_failures++;
}

/* ---- helpers: latches, gates, flags, sequence logs -------------------- */

static void latch_init(latch *l) {
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_mutex_init(&l->mu, NULL);
  pthread_cond_init(&l->cv, &a);
  pthread_condattr_destroy(&a);
  l->v = 0;
}

void latch_destroy(latch *l) {
  pthread_cond_destroy(&l->cv);
  pthread_mutex_destroy(&l->mu);
}

void latch_set(latch *l) {
  pthread_mutex_lock(&l->mu);
  l->v = 1;
  pthread_cond_broadcast(&l->cv);
  pthread_mutex_unlock(&l->mu);
}

void latch_wait(latch *l) {
  pthread_mutex_lock(&l->mu);
  while (!l->v) pthread_cond_wait(&l->cv, &l->mu);
  pthread_mutex_unlock(&l->mu);
}

int latch_wait_ms(latch *l, int ms) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&l->mu);
  while (!l->v)
    if (pthread_cond_timedwait(&l->cv, &l->mu, &ts) == ETIMEDOUT) break;
  int v = l->v;
  pthread_mutex_unlock(&l->mu);
  return v;
}

void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

void short_wait(void) { sleep_ms(SHORT_WAIT_MS); }

void gate_init(gate *g) {
  latch_init(&g->entered);
  latch_init(&g->open);
}

void gate_destroy(gate *g) {
  latch_destroy(&g->entered);
  latch_destroy(&g->open);
}

void gate_fn(void *p) {
  gate *g = p;
  latch_set(&g->entered);
  latch_wait(&g->open);
}

void flag_fn(void *p) { atomic_store((atomic_int *)p, 1); }

void sleepy_fn(void *p) {
  sleepy *s = p;
  sleep_ms(s->ms);
  atomic_store(&s->flag, 1);
}

void seq_init(seqlog *l) {
  pthread_mutex_init(&l->mu, NULL);
  l->n = 0;
}

void seq_destroy(seqlog *l) { pthread_mutex_destroy(&l->mu); }

void mark_fn(void *p) {
  mark *m = p;
  pthread_mutex_lock(&m->log->mu);
  if (m->log->n < SEQ_MAX) m->log->ids[m->log->n++] = m->id;
  pthread_mutex_unlock(&m->log->mu);
}

int seq_pos(seqlog *l, int id) {
  int r = -1;
  pthread_mutex_lock(&l->mu);
  for (int i = 0; i < l->n; i++)
    if (l->ids[i] == id) {
      r = i;
      break;
    }
  pthread_mutex_unlock(&l->mu);
  return r;
}

/* ---- helpers: devices, contexts, streams ------------------------------ */

int g_ndev_expected = 2;
CUcontext g_ctx[2];

void use_ctx(int i) { OK(d.cuCtxSetCurrent(g_ctx[i])); }

CUstream mkstream_on(int i) {
  CUstream s = NULL;
  use_ctx(i);
  OK(d.cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, 0));
  return s;
}

CUstream mkstream(void) { return mkstream_on(0); }

static void *helper_main(void *p) {
  helper *h = p;
  if (h->ctx) d.cuCtxSetCurrent(h->ctx);
  size_t f, t;
  switch (h->what) {
  case DO_STREAM_SYNC: h->r = d.cuStreamSynchronize(h->stream); break;
  case DO_CTX_SYNC: h->r = d.cuCtxSynchronize(); break;
  case DO_EVENT_SYNC: h->r = d.cuEventSynchronize(h->event); break;
  case DO_MEMGETINFO: h->r = d.cuMemGetInfo(&f, &t); break;
  }
  latch_set(&h->returned);
  return NULL;
}

void helper_start(helper *h, pthread_t *th) {
  latch_init(&h->returned);
  h->r = CUDA_ERROR_UNKNOWN;
  if (pthread_create(th, NULL, helper_main, h) != 0) {
    perror("pthread_create");
    exit(2);
  }
}
