/*
 * sim_stream.c -- the sim's streams: each stream's ring and worker thread
 * and the operations it runs, the requests of host kernels that must run on
 * the main thread, and the calls that wait for or query streams and the
 * context. Events are sim_event.c's.
 */

#include "sim_internal.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- main-thread requests -------------------------------------------- */

/* The queue of requests (main_req, in sim_internal.h): sim_run_kernel
 * appends one and waits; the main thread runs them whenever it waits on the
 * sim (a synchronize) or queries it (a stream or event query). Guarded by
 * sim_S.mu. */

pthread_t sim_main_thread;
int sim_main_thread_set;
static main_req *main_head;
main_req **sim_main_tail = &main_head;

static int is_main(void) { return sim_main_thread_set && pthread_equal(pthread_self(), sim_main_thread); }

static _Thread_local int quiet; /* gld_sim_quiet */

int sim_quiet_now(void) { return quiet; }

int gld_sim_quiet(int on) {
  int was = quiet;
  quiet = on;
  return was;
}

/* Run queued main-thread requests; called with sim_S.mu held, returns with it held. */
int sim_service_locked(void) {
  int ran = 0;
  while (is_main() && main_head) {
    main_req *r = main_head;
    main_head = r->next;
    if (!main_head) sim_main_tail = &main_head;
    pthread_mutex_unlock(&sim_S.mu);
    int rc = r->fn(r->user, r->launch);
    pthread_mutex_lock(&sim_S.mu);
    r->failed = rc != 0;
    r->done = 1;
    ran = 1;
    sim_progress_locked();
  }
  return ran;
}

/* Wait on the sim's condition; on the main thread, serve requests meanwhile. */
void sim_host_wait_locked(void) {
  if (sim_service_locked()) return; /* state may have changed: let the caller re-check */
  sim_wait_locked();
}

void sim_host_wait(int (*ready)(void *user), void *user, int ms) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_nsec += (long)ms * 1000000L;
  until.tv_sec += until.tv_nsec / 1000000000L;
  until.tv_nsec %= 1000000000L;
  pthread_mutex_lock(&sim_S.mu);
  int timed_out = 0;
  while (!ready(user) && !timed_out) {
    if (sim_service_locked()) continue; /* a host kernel ran: look again */
    sim_kick_all_locked();
    sim_S.waiters++;
    timed_out = pthread_cond_timedwait(&sim_S.cv, &sim_S.mu, &until) != 0;
    sim_S.waiters--;
  }
  pthread_mutex_unlock(&sim_S.mu);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- streams and the worker ------------------------------------------ */

/* Each stream's queue is a ring of operations, as a GPU's push buffer: the
 * host appends at `enq`, the worker takes from `done` (slot seq % cap), and
 * both move under sim_S.mu. The worker copies the operations it runs out of
 * the ring under the lock, so the ring may grow at any time.
 *
 * When queued work starts (CUDA promises nothing here): a stream's worker
 * sleeps while its ring is empty, and appending wakes it only once
 * SIM_WAKE_BATCH operations are pending; every wait for progress (a
 * synchronize, an event's wait on another stream, a full ring, a collective
 * whose ranks meet) and every query that finds work unfinished wakes every
 * stream that has work (sim_kick_all_locked). An awake worker runs until its
 * ring is empty. A host that fills a ring (SIM_RING_SLOTS operations pending)
 * blocks until it has drained to SIM_RING_LOW, as a full push buffer blocks
 * the driver; the ring grows instead while its worker is itself waiting (on
 * another stream, or for a collective's other ranks), so that no queue of
 * the host's can deadlock the sim. */
enum {
  SIM_RING_FIRST = 64,   /* slots a new stream's ring starts with */
  SIM_RING_SLOTS = 1024, /* pending operations a ring holds before the host blocks */
  SIM_RING_LOW = 256,    /* ... and the number it drains to before the host goes on */
  SIM_WAKE_BATCH = 64,   /* pending operations that wake a sleeping worker */
  SIM_RUN_BATCH = 32,    /* operations a worker takes out of its ring at once */
};

static _Thread_local struct CUstream_st *worker_stream; /* on a worker: its stream */

static void kick_locked(struct CUstream_st *st) {
  if (st->idle && (st->enq != st->done || st->destroying)) {
    st->idle = 0;
    pthread_cond_signal(&st->work);
  }
}

void sim_kick_all_locked(void) {
  for (int d = 0; d < sim_S.ndev; d++)
    for (struct CUstream_st *st = sim_S.dev[d].ctx.streams; st; st = st->next_in_ctx) kick_locked(st);
}

void sim_wait_locked(void) {
  sim_kick_all_locked(); /* whoever waits needs the device to progress */
  struct CUstream_st *self = worker_stream;
  if (self && self->blocked++ == 0 && self->host_blocked)
    pthread_cond_broadcast(&sim_S.cv); /* a host waiting for room grows the ring now (ring_room_locked) */
  sim_S.waiters++;
  pthread_cond_wait(&sim_S.cv, &sim_S.mu);
  sim_S.waiters--;
  if (self) self->blocked--;
}

void sim_progress_locked(void) {
  if (sim_S.waiters) pthread_cond_broadcast(&sim_S.cv);
}

static sim_op *slot(struct CUstream_st *st, uint64_t seq) { return &st->ring[seq % st->cap]; }

/* Double the ring (sim_S.mu held); -1 when out of memory. */
static int ring_grow_locked(struct CUstream_st *st) {
  size_t cap = st->cap * 2;
  sim_op *r = malloc(cap * sizeof *r);
  if (!r) return -1;
  for (uint64_t q = st->done; q != st->enq; q++) r[q % cap] = *slot(st, q);
  free(st->ring);
  st->ring = r;
  st->cap = cap;
  return 0;
}

/* Room for one more operation on st (sim_S.mu held; may wait, releasing
 * it): 0, or CUDA_ERROR_OUT_OF_MEMORY. A full ring grows below
 * SIM_RING_SLOTS, and beyond while the worker waits for others; else the
 * host waits until the worker has drained it to SIM_RING_LOW. */
static CUresult ring_room_locked(struct CUstream_st *st) {
  while (st->enq - st->done >= st->cap) {
    if (st->cap < SIM_RING_SLOTS || st->blocked) {
      if (ring_grow_locked(st) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
      return CUDA_SUCCESS;
    }
    st->host_blocked++;
    while (st->enq - st->done > SIM_RING_LOW && !st->blocked) sim_host_wait_locked();
    st->host_blocked--;
  }
  return CUDA_SUCCESS;
}

/* Append a copy of op to st's ring (sim_S.mu held; room made first). */
static CUresult ring_push_locked(struct CUstream_st *st, const sim_op *op) {
  CUresult r = ring_room_locked(st);
  if (r != CUDA_SUCCESS) return r;
  *slot(st, st->enq) = *op;
  st->enq++;
  if (st->enq - st->done >= SIM_WAKE_BATCH) kick_locked(st);
  return CUDA_SUCCESS;
}

void sim_mark_unref_locked(sim_mark *m) {
  if (m && --m->refs == 0) {
    sim_model_node_unref(m->mn);
    free(m);
  }
}

/* A failed kernel: like a fault on a GPU, it ends its whole context with
 * `r`, CUDA_ERROR_ASSERT for a failed assert, else CUDA_ERROR_LAUNCH_FAILED. */
static void fault(struct CUstream_st *st, CUresult r) {
  pthread_mutex_lock(&sim_S.mu);
  st->error = r;
  if (!st->ctx->sticky) st->ctx->sticky = r;
  pthread_mutex_unlock(&sim_S.mu);
}

/* Run one operation (without the lock); 0, or -1 when it faulted
 * (CUDA_ERROR_ASSERT when a kernel's assert failed). */
static int run_op(sim_op *op) {
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
  case OP_KERNEL: {
    int r = sim_run_kernel(op, 0);
    return r == CUDA_ERROR_ASSERT ? CUDA_ERROR_ASSERT : r != 0 ? -1 : 0;
  }
  case OP_SIMFN:
    return op->simfn(op->user) != 0 ? -1 : 0;
  case OP_FREE: {
    sim_block *b = op->dst;
    sim_mem_forget((uintptr_t)b + SIM_ALIGN); /* kernels queued before the free still reach it */
    free(b);
    break;
  }
  case OP_RECORD:
  case OP_WAIT:
    break; /* handled under the lock */
  }
  return 0;
}

CUresult sim_ctx_sticky(struct CUctx_st *ctx) {
  pthread_mutex_lock(&sim_S.mu);
  CUresult r = ctx->sticky;
  pthread_mutex_unlock(&sim_S.mu);
  return r;
}

/* Take up to SIM_RUN_BATCH operations from the head of st's ring into batch
 * (sim_S.mu held): a wait only alone, and only once its record is done;
 * none after a record, so that the record completes as soon as the work
 * before it. Returns how many. */
static int take_locked(struct CUstream_st *st, sim_op *batch) {
  int n = 0;
  for (uint64_t q = st->done; q != st->enq && n < SIM_RUN_BATCH; q++) {
    sim_op *op = slot(st, q);
    if (op->kind == OP_WAIT) {
      if (n == 0 && op->mark->done) batch[n++] = *op;
      break;
    }
    batch[n++] = *op;
    if (op->kind == OP_RECORD) break;
  }
  return n;
}

static void *worker(void *arg) {
  struct CUstream_st *st = arg;
  worker_stream = st;
  sim_op batch[SIM_RUN_BATCH];
  pthread_mutex_lock(&sim_S.mu);
  for (;;) {
    if (st->done == st->enq) {
      if (st->destroying) break;
      st->idle = 1;
      while (st->idle) pthread_cond_wait(&st->work, &sim_S.mu);
      continue;
    }
    int n = take_locked(st, batch);
    if (n == 0) { /* a wait for a record on another stream */
      sim_wait_locked();
      continue;
    }
    /* After a fault the context's later work is skipped (frees still
     * happen); records and waits still complete so nobody waits forever,
     * and every wait reports the fault. */
    int healthy = st->error == CUDA_SUCCESS && st->ctx->sticky == CUDA_SUCCESS;
    pthread_mutex_unlock(&sim_S.mu);
    for (int i = 0; i < n; i++) {
      sim_op *op = &batch[i];
      if (op->kind == OP_RECORD || op->kind == OP_WAIT) continue;
      if (sim_S.delay_us) usleep(sim_S.delay_us);
      int rc = 0;
      if ((healthy || op->kind == OP_FREE) && (rc = run_op(op)) != 0) {
        fault(st, rc == CUDA_ERROR_ASSERT ? CUDA_ERROR_ASSERT : CUDA_ERROR_LAUNCH_FAILED);
        healthy = 0;
      } else if (!healthy && op->kind == OP_KERNEL) {
        /* a collective's part (its other ranks must not wait), a host
         * kernel's record (freed on the main thread) */
        sim_run_kernel(op, 1);
      }
      free(op->launch);
    }
    pthread_mutex_lock(&sim_S.mu);
    int announce = !healthy;
    for (int i = 0; i < n; i++) {
      if (batch[i].kind == OP_HOSTFN) announce = 1; /* a host waiting for it (sim_host_wait) */
      if (batch[i].kind == OP_RECORD) {
        batch[i].mark->done = 1;
        batch[i].mark->t_ms = now_ms();
        announce = 1;
      }
      sim_mark_unref_locked(batch[i].mark);
    }
    st->done += (uint64_t)n;
    /* wake the waiters only where one may be waiting for this */
    int reached = st->want && st->done >= st->want;
    if (reached) st->want = 0;
    if (announce || reached || st->done == st->enq || (st->host_blocked && st->enq - st->done <= SIM_RING_LOW))
      sim_progress_locked();
  }
  /* destroyed and drained: end a capture it is in, unlink from the context and go */
  sim_capture_stream_gone_locked(st);
  sim_model_stream_gone(st->ms); /* the model runs its nodes on */
  struct CUstream_st **pp = &st->ctx->streams;
  while (*pp && *pp != st) pp = &(*pp)->next_in_ctx;
  if (*pp) *pp = st->next_in_ctx;
  sim_worker_ended_locked(); /* to be joined (sim_workers.c) */
  sim_progress_locked();
  pthread_mutex_unlock(&sim_S.mu);
  pthread_cond_destroy(&st->work);
  free(st->ring);
  free(st);
  return NULL;
}

CUresult sim_cuStreamCreateWithPriority(CUstream *ph, unsigned flags, int priority) {
  NEED_CTX();
  if (!ph || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
  NEED_HEALTHY(sim_cur_ctx);
  sim_install_process_handlers(); /* before the first worker */
  sim_workers_reap();
  struct CUstream_st *st = calloc(1, sizeof *st);
  if (!st) return CUDA_ERROR_OUT_OF_MEMORY;
  st->ctx = sim_cur_ctx;
  st->priority = priority < -5 ? -5 : priority > 0 ? 0 : priority; /* clamped, like CUDA */
  st->cap = SIM_RING_FIRST;
  if (!(st->ring = malloc(st->cap * sizeof *st->ring))) {
    free(st);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (pthread_cond_init(&st->work, NULL) != 0) {
    free(st->ring);
    free(st);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  pthread_mutex_lock(&sim_S.mu);
  if (sim_model && !(st->ms = sim_model_stream_new(sim_cur_ctx->ordinal))) {
    pthread_mutex_unlock(&sim_S.mu);
    pthread_cond_destroy(&st->work);
    free(st->ring);
    free(st);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  st->next_in_ctx = sim_cur_ctx->streams;
  sim_cur_ctx->streams = st;
  if (sim_worker_start(st, worker) != 0) {
    sim_cur_ctx->streams = st->next_in_ctx;
    sim_model_stream_gone(st->ms);
    pthread_mutex_unlock(&sim_S.mu);
    pthread_cond_destroy(&st->work);
    free(st->ring);
    free(st);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  pthread_mutex_unlock(&sim_S.mu);
  *ph = st;
  return CUDA_SUCCESS;
}

/* Queue `op` (a template copied into the ring) on stream `st`. For a
 * record or a wait, `ev` is the event. */
CUresult sim_enqueue_ev(struct CUstream_st *st, const sim_op *tmpl, struct CUevent_st *ev) {
  if (!st) return CUDA_ERROR_INVALID_HANDLE; /* the sim has no NULL stream */
  sim_op op = *tmpl;
  op.mark = NULL;
  sim_mark *fresh = NULL;
  if (op.kind == OP_RECORD && !(fresh = calloc(1, sizeof *fresh))) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&sim_S.mu);
  CUresult refused = st->destroying ? CUDA_ERROR_INVALID_HANDLE : op.kind != OP_FREE ? st->ctx->sticky : CUDA_SUCCESS;
  if (refused == CUDA_SUCCESS && (st->capture || (op.kind == OP_WAIT && ev->cap))) {
    refused = sim_capture_locked(st, &op, ev); /* a node of a graph, not work */
    pthread_mutex_unlock(&sim_S.mu);
    free(fresh);
    return refused;
  }
  if (refused == CUDA_SUCCESS) refused = ring_room_locked(st); /* may wait for the worker */
  if (refused == CUDA_SUCCESS && st->destroying) refused = CUDA_ERROR_INVALID_HANDLE;
  if (refused != CUDA_SUCCESS) {
    pthread_mutex_unlock(&sim_S.mu);
    free(fresh);
    return refused;
  }
  if (sim_model && st->ms) { /* its node in the timing model, first: it may fail */
    struct sim_mnode *waits = op.kind == OP_WAIT && ev->latest ? ev->latest->mn : NULL;
    struct sim_mnode *mn = sim_model_enqueue(st->ms, &op.mw, waits, op.kind == OP_RECORD);
    if (!mn) {
      pthread_mutex_unlock(&sim_S.mu);
      free(fresh);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (fresh) fresh->mn = mn; /* the mark holds the caller's reference */
  }
  if (op.kind == OP_RECORD) { /* the event now stands for this record */
    sim_mark_unref_locked(ev->latest);
    fresh->refs = 2;
    ev->latest = fresh;
    ev->ctx = st->ctx;
    ev->cap = NULL; /* recorded for real: no longer a capture's */
    op.mark = fresh;
  } else if (op.kind == OP_WAIT) { /* captures the latest record, if any */
    if (!ev->latest || ev->latest->done) {
      pthread_mutex_unlock(&sim_S.mu);
      return CUDA_SUCCESS; /* nothing to wait for: like CUDA, a no-op (the model's node still waits) */
    }
    op.mark = ev->latest;
    op.mark->refs++;
  }
  CUresult r = ring_push_locked(st, &op); /* room was made: it cannot fail */
  pthread_mutex_unlock(&sim_S.mu);
  return r;
}

CUresult sim_enqueue(struct CUstream_st *st, const sim_op *tmpl) { return sim_enqueue_ev(st, tmpl, NULL); }

CUresult sim_enqueue_locked(struct CUstream_st *st, const sim_op *op) { return ring_push_locked(st, op); }

long gld_sim_stream_pending(CUstream st) {
  if (!st) return -1;
  pthread_mutex_lock(&sim_S.mu);
  long n = (long)(st->enq - st->done);
  pthread_mutex_unlock(&sim_S.mu);
  return n;
}

CUresult sim_cuStreamDestroy(CUstream st) {
  NEED_INIT();
  if (!st) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&sim_S.mu);
  if (!st->destroying) sim_worker_draining_locked();
  st->destroying = 1; /* queued work still runs; the worker frees the stream */
  kick_locked(st);
  pthread_mutex_unlock(&sim_S.mu);
  sim_workers_reap(); /* those ended before */
  return CUDA_SUCCESS;
}

CUresult sim_cuStreamWaitEvent(CUstream st, CUevent ev, unsigned flags) {
  NEED_INIT();
  if (!ev || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  sim_op op = {.kind = OP_WAIT};
  return sim_enqueue_ev(st, &op, ev);
}

CUresult sim_cuStreamSynchronize(CUstream st) {
  NEED_INIT();
  if (!st) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&sim_S.mu);
  if (st->capture) { /* as CUDA: unsupported while capturing, and the capture is invalidated */
    sim_capture_invalidate_locked(st);
    pthread_mutex_unlock(&sim_S.mu);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  uint64_t target = st->enq;
  if (st->want < target) st->want = target; /* the worker announces reaching it */
  while (st->done < target) sim_host_wait_locked();
  sim_model_observe_stream(st->ms);
  CUresult r = st->error ? st->error : st->ctx->sticky;
  pthread_mutex_unlock(&sim_S.mu);
  return r;
}

CUresult sim_cuStreamQuery(CUstream st) {
  NEED_INIT();
  if (!st) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&sim_S.mu);
  if (st->capture) {
    sim_capture_invalidate_locked(st);
    pthread_mutex_unlock(&sim_S.mu);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  sim_service_locked();
  CUresult r = st->error         ? st->error
               : st->ctx->sticky ? st->ctx->sticky
               : st->done == st->enq ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  if (r == CUDA_SUCCESS && st->ms) { /* the host has seen it finish (a quiet query: only what the model has done) */
    if (!quiet) sim_model_observe_stream(st->ms);
    else if (!sim_model_stream_done_by_host(st->ms)) r = CUDA_ERROR_NOT_READY;
  }
  if (r == CUDA_ERROR_NOT_READY) sim_kick_all_locked(); /* unfinished: let the workers run it */
  pthread_mutex_unlock(&sim_S.mu);
  if (r == CUDA_ERROR_NOT_READY) sched_yield(); /* a loop of queries must let the workers run */
  return r;
}

CUresult sim_cuCtxSynchronize(void) {
  NEED_CTX();
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&sim_S.mu);
  for (struct CUstream_st *st = sim_cur_ctx->streams; st; st = st->next_in_ctx)
    if (st->capture) { /* a context sync while a stream captures: as CUDA, refused */
      sim_capture_invalidate_locked(st);
      r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
  if (r != CUDA_SUCCESS) {
    pthread_mutex_unlock(&sim_S.mu);
    return r;
  }
  for (;;) {
    int busy = 0;
    for (struct CUstream_st *st = sim_cur_ctx->streams; st; st = st->next_in_ctx)
      if (st->done < st->enq) busy = 1;
    if (!busy) break;
    sim_host_wait_locked();
  }
  for (struct CUstream_st *st = sim_cur_ctx->streams; st; st = st->next_in_ctx) sim_model_observe_stream(st->ms);
  for (struct CUstream_st *st = sim_cur_ctx->streams; st; st = st->next_in_ctx)
    if (st->error) r = st->error;
  if (sim_cur_ctx->sticky) r = sim_cur_ctx->sticky;
  pthread_mutex_unlock(&sim_S.mu);
  return r;
}
