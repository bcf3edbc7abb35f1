/*
 * sim_driver_harness.h -- the harness shared by the test files of
 * test_sim_driver: the sim's driver table `d`, CHECK/CHECK_RC/OK and
 * fail_at, and the helpers the tests hold work back and watch it with
 * (latches, gates, flags, sleepy host functions, sequence logs, a helper
 * thread that blocks in a synchronising call), plus the two primary
 * contexts test_primary_ctx sets up for the rest of the run.
 *
 * CHECK() records a failure with file:line and the current test's name and
 * carries on; main (test_sim_driver.c) counts a test as passed when it
 * recorded none. Defined in sim_driver_harness.c.
 */
#ifndef GPULUA_TEST_SIM_DRIVER_HARNESS_H
#define GPULUA_TEST_SIM_DRIVER_HARNESS_H

#include "driver.h"
#include "sim/sim.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#define SHORT_WAIT_MS 20
#define SIM_MEMORY_BYTES ((size_t)64 << 20)

/* ---- harness --------------------------------------------------------- */

extern gld_driver d;
extern const char *g_test;
extern int g_failures; /* CHECK failures in the current test */

const char *rname(CUresult r);

__attribute__((format(printf, 3, 4))) void fail_at(const char *file, int line, const char *fmt,
                                                   ...);

#define CHECK(cond)                                                   \
  do {                                                                \
    if (!(cond)) fail_at(__FILE__, __LINE__, "CHECK failed: %s", #cond); \
  } while (0)

#define CHECK_RC(call, want)                                                          \
  do {                                                                                \
    CUresult got_ = (call), want_ = (want);                                           \
    if (got_ != want_)                                                                \
      fail_at(__FILE__, __LINE__, "%s returned %s (%d), expected %s (%d)", #call,     \
              rname(got_), (int)got_, rname(want_), (int)want_);                      \
  } while (0)

#define OK(call) CHECK_RC(call, CUDA_SUCCESS)

/* ---- helpers: latches, gates, flags, sequence logs -------------------- */

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int v;
} latch;

void latch_destroy(latch *l);
void latch_set(latch *l);
void latch_wait(latch *l);
/* Wait at most `ms` for the latch; returns whether it is set. */
int latch_wait_ms(latch *l, int ms);

void sleep_ms(int ms);
/* Only to assert that something has NOT happened (yet). */
void short_wait(void);

/* A gate: a host function that blocks its stream until the test opens it. */
typedef struct {
  latch entered, open;
} gate;

void gate_init(gate *g);
void gate_destroy(gate *g);
void gate_fn(void *p);

void flag_fn(void *p);

typedef struct {
  int ms;
  atomic_int flag;
} sleepy;

void sleepy_fn(void *p);

/* A sequence log: host functions append their id, so the test can check
 * what ran and in which order. */
#define SEQ_MAX 512
typedef struct {
  pthread_mutex_t mu;
  int n;
  int ids[SEQ_MAX];
} seqlog;

void seq_init(seqlog *l);
void seq_destroy(seqlog *l);

typedef struct {
  seqlog *log;
  int id;
} mark;

void mark_fn(void *p);
/* index of `id` in the log, or -1 when it has not run */
int seq_pos(seqlog *l, int id);

/* ---- helpers: devices, contexts, streams ------------------------------ */

extern int g_ndev_expected;
extern CUcontext g_ctx[2];

void use_ctx(int i);
/* A stream of device i (makes i's context current and leaves it so). */
CUstream mkstream_on(int i);
CUstream mkstream(void);

typedef struct {
  CUcontext ctx;   /* made current in the helper thread when non-NULL */
  CUstream stream; /* for STREAM_SYNC / EVENT_SYNC the object to wait on */
  CUevent event;
  enum { DO_STREAM_SYNC, DO_CTX_SYNC, DO_EVENT_SYNC, DO_MEMGETINFO } what;
  CUresult r;
  latch returned;
} helper;

void helper_start(helper *h, pthread_t *th);

#endif
