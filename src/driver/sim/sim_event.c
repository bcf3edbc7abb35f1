/*
 * sim_event.c -- the sim's events: one mark per record (sim_internal.h),
 * records and waits queued through the streams' rings (sim_stream.c),
 * synchronizing, querying and timing them, and the timing model's times of
 * events and of the host.
 */

#include "sim_internal.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

/* ---- events ---------------------------------------------------------- */

CUresult sim_cuEventCreate(CUevent *ph, unsigned flags) {
  NEED_CTX();
  if (!ph || (flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING)))
    return CUDA_ERROR_INVALID_VALUE;
  struct CUevent_st *e = calloc(1, sizeof *e);
  if (!e) return CUDA_ERROR_OUT_OF_MEMORY;
  e->flags = flags;
  *ph = e;
  return CUDA_SUCCESS;
}

CUresult sim_cuEventDestroy(CUevent e) {
  NEED_INIT();
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&sim_S.mu);
  sim_mark_unref_locked(e->latest); /* queued records and waits keep their marks */
  pthread_mutex_unlock(&sim_S.mu);
  free(e);
  return CUDA_SUCCESS;
}

CUresult sim_cuEventRecord(CUevent e, CUstream st) {
  NEED_INIT();
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  sim_op op = {.kind = OP_RECORD};
  return sim_enqueue_ev(st, &op, e);
}

CUresult sim_cuEventSynchronize(CUevent e) {
  NEED_INIT();
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&sim_S.mu);
  sim_mark *m = e->latest;
  if (m) {
    m->refs++;
    while (!m->done) sim_host_wait_locked();
    sim_model_observe_node(m->mn);
    sim_mark_unref_locked(m);
  }
  CUresult r = e->ctx ? e->ctx->sticky : CUDA_SUCCESS;
  pthread_mutex_unlock(&sim_S.mu);
  return r;
}

CUresult sim_cuEventQuery(CUevent e) {
  NEED_INIT();
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&sim_S.mu);
  sim_service_locked();
  CUresult r = e->ctx && e->ctx->sticky            ? e->ctx->sticky
               : !e->latest || e->latest->done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  if (r == CUDA_SUCCESS && e->latest && e->latest->mn) {
    if (!sim_quiet_now()) sim_model_observe_node(e->latest->mn);
    else if (!sim_model_node_done_by_host(e->latest->mn)) r = CUDA_ERROR_NOT_READY;
  }
  if (r == CUDA_ERROR_NOT_READY) sim_kick_all_locked(); /* unfinished: let the workers run it */
  pthread_mutex_unlock(&sim_S.mu);
  if (r == CUDA_ERROR_NOT_READY) sched_yield(); /* a loop of queries must let the workers run */
  return r;
}

CUresult sim_cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
  NEED_INIT();
  if (!ms || !a || !b) return CUDA_ERROR_INVALID_HANDLE;
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&sim_S.mu);
  if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING) r = CUDA_ERROR_INVALID_HANDLE;
  else if (!a->latest || !b->latest) r = CUDA_ERROR_INVALID_HANDLE;
  else if (a->ctx != b->ctx) r = CUDA_ERROR_INVALID_HANDLE; /* as CUDA: events of two contexts */
  else if (a->ctx && a->ctx->sticky) r = a->ctx->sticky;
  else if (!a->latest->done || !b->latest->done) r = CUDA_ERROR_NOT_READY;
  else if (sim_model && a->latest->mn && b->latest->mn) /* virtual times */
    *ms = (float)((sim_model_observe_node(b->latest->mn) - sim_model_observe_node(a->latest->mn)) / 1e3);
  else *ms = (float)(b->latest->t_ms - a->latest->t_ms);
  pthread_mutex_unlock(&sim_S.mu);
  return r;
}

int gld_sim_model_event_time(CUevent e, double *seconds) {
  int rc = -1;
  pthread_mutex_lock(&sim_S.mu);
  if (sim_model && e && e->latest && e->latest->done && e->latest->mn) {
    *seconds = sim_model_observe_node(e->latest->mn) / 1e6;
    rc = 0;
  }
  pthread_mutex_unlock(&sim_S.mu);
  return rc;
}

double gld_sim_model_host_time(void) {
  pthread_mutex_lock(&sim_S.mu);
  double t = sim_model_host_clock() / 1e6;
  pthread_mutex_unlock(&sim_S.mu);
  return t;
}
