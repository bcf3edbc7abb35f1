/*
 * sim_workers.c -- the lives of the streams' worker threads: started
 * joinable, joined once ended, and the process's handlers around them (fork,
 * exit).
 *
 * A destroyed stream's worker drains its ring, frees the stream and ends
 * (sim_stream.c). Ended workers are joined at the next stream create or
 * destroy and at exit. At exit the sim first waits, at most SIM_EXIT_WAIT_MS,
 * for the workers of destroyed streams to end: a thread still ending while
 * the process exits races whatever runs at exit after it (LeakSanitizer,
 * which finds the thread's data unreachable once the thread is half gone:
 * its thread-specific values, say; ThreadSanitizer, which reports a thread
 * ended and never joined). The handler is registered at cuInit, before any
 * runtime's (core/runtime.c tears the runtimes down at exit, destroying
 * their streams): handlers run in the reverse order, so it runs after those
 * destroys. The workers of streams never destroyed stay parked; exit takes
 * them as they are.
 */

#include "sim_internal.h"

#include <pthread.h>
#include <stdlib.h>

enum { SIM_EXIT_WAIT_MS = 2000 };

/* Ended workers not joined yet, the destroyed streams whose workers have not
 * ended, and the workers started and not joined: guarded by sim_S.mu. */
static pthread_t *ended;
static int nended, ended_cap;
static int draining;
static int live;

void sim_worker_draining_locked(void) { draining++; }

void sim_worker_ended_locked(void) {
  draining--;
  if (nended == ended_cap) {
    int cap = ended_cap ? 2 * ended_cap : 16;
    pthread_t *p = realloc(ended, (size_t)cap * sizeof *p);
    if (!p) { /* nobody will join it: let it go by itself */
      pthread_detach(pthread_self());
      live--;
      return;
    }
    ended = p;
    ended_cap = cap;
  }
  ended[nended++] = pthread_self();
}

void sim_workers_reap(void) {
  pthread_mutex_lock(&sim_S.mu);
  pthread_t *list = ended;
  int n = nended;
  ended = NULL;
  nended = ended_cap = 0;
  pthread_mutex_unlock(&sim_S.mu);
  for (int i = 0; i < n; i++)
    if (!pthread_equal(list[i], pthread_self())) pthread_join(list[i], NULL);
    else pthread_detach(list[i]);
  free(list);
  pthread_mutex_lock(&sim_S.mu);
  live -= n;
  pthread_mutex_unlock(&sim_S.mu);
}

int sim_worker_start(struct CUstream_st *st, void *(*run)(void *)) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 1 << 20);
  pthread_t th;
  int rc = pthread_create(&th, &attr, run, st);
  pthread_attr_destroy(&attr);
  if (rc == 0) live++;
  return rc;
}

int gld_sim_workers_live(void) {
  pthread_mutex_lock(&sim_S.mu);
  int n = live;
  pthread_mutex_unlock(&sim_S.mu);
  return n;
}

/* ---- the process's handlers ------------------------------------------ */

static int none_draining(void *user) {
  (void)user;
  return draining <= 0;
}

int gld_sim_workers_settle(int ms) {
  sim_host_wait(none_draining, NULL, ms); /* runs host kernels meanwhile */
  sim_workers_reap();
  pthread_mutex_lock(&sim_S.mu);
  int n = draining;
  pthread_mutex_unlock(&sim_S.mu);
  return n;
}

static void at_exit(void) { gld_sim_workers_settle(SIM_EXIT_WAIT_MS); }

/* A fork() while a worker holds sim_S.mu (workers take it whenever anything is
 * broadcast) would leave the child's copy locked for ever: fork holds it. The
 * child has none of the parent's threads: none to wait for or join. */
static void fork_prepare(void) { pthread_mutex_lock(&sim_S.mu); }
static void fork_parent(void) { pthread_mutex_unlock(&sim_S.mu); }
static void fork_child(void) {
  free(ended);
  ended = NULL;
  nended = ended_cap = draining = live = 0;
  pthread_mutex_unlock(&sim_S.mu);
}

static void handlers_register(void) {
  pthread_atfork(fork_prepare, fork_parent, fork_child);
  atexit(at_exit);
}

static pthread_once_t handlers_once = PTHREAD_ONCE_INIT;
void sim_install_process_handlers(void) { pthread_once(&handlers_once, handlers_register); }
