/*
 * comm_check_internal.h -- what comm_check.c (the collectives, the thread,
 * the verdict) shares with comm_check_p2p.c (the pairing of sends and recvs):
 * the check's state and rank 0's helpers.
 */
#ifndef GPULUA_CORE_COMM_CHECK_INTERNAL_H
#define GPULUA_CORE_COMM_CHECK_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "comm_check.h"
#include "store.h"

#define GL_CHECK_TEXT 200 /* a call's "what\nfile:line" */
#define GL_CHECK_VERDICT 1000 /* a verdict's text (within a store message) */

typedef struct gl_check_call { /* a published call, as rank 0 reads it */
  uint64_t seq;                /* a collective's number; a send's or recv's number between its two ranks */
  uint64_t count;
  int kind, dtype, op, root; /* root: a send's or recv's peer */
  char text[GL_CHECK_TEXT];
} gl_check_call;

typedef struct gl_check_rank { /* rank 0: what each rank published */
  uint64_t next;               /* its collectives so far */
  gl_check_call last;          /* its last collective */
  gl_check_call last_call;     /* its last call of any kind (has_call: one came) */
  int has_call;
  int gone; /* 1 its process ended (the connection closed), 2 it closed the communicator */
} gl_check_rank;

typedef struct gl_check_entry { /* rank 0: a collective some rank reached and some not yet */
  gl_check_call r;              /* the first rank's */
  int first, arrived;
  double t0;
} gl_check_entry;

typedef struct gl_check_post { /* rank 0: a send or recv waiting for its partner */
  gl_check_call x;
  int rank; /* who made it */
  double t0;
} gl_check_post;

struct gl_comm_check {
  gl_comm *c;
  gl_store *s;
  int rank, size, efd;
  double timeout_s;
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  /* under mu */
  uint8_t *out;
  size_t nout, capout;
  int stop, in_nccl, has_verdict, wake_pending;
  char verdict[GL_CHECK_VERDICT];
  /* the main thread's */
  uint64_t seq;
  uint64_t *p2p_seq; /* per peer: [2 * peer] recvs from it so far, [2 * peer + 1] sends to it */
  int applied;
  /* the thread's */
  uint8_t *snd;
  size_t nsnd, capsnd;
  gl_check_rank *rs;
  gl_check_entry *ents;
  size_t head, nents, capents; /* ents[head .. nents): collectives base, base + 1, .. */
  uint64_t base;
  int ngone, decided;
  /* a mismatch found: decided once every rank reached it (or a second), so that the calls are grouped */
  int mismatch;
  uint64_t mseq;
  double mt0;
  gl_check_call *mrec; /* per rank: its call there */
  char *mhas;          /* per rank: reached it */
  gl_check_post *posts; /* sends and recvs waiting for their partner, oldest first */
  size_t nposts, capposts;
};

double gl_check_now(void);
/* A call as a message gives it: "comm:all_reduce (4 f32, sum) at job.lua:8". */
void gl_check_describe(const gl_check_call *x, char *out, size_t n);
/* Rank 0: the verdict sent to every rank and kept (the first decides). */
void gl_check_decide(gl_comm_check *k, const char *text);
/* The main thread: call x queued for rank 0 (seq, kind, .. as in the message; what and loc its text). */
void gl_check_enqueue(gl_comm_check *k, const gl_check_call *x, const char *what, int loc);

/* comm_check_p2p.c, rank 0: rank r's send or recv x matched with its
 * partner (a mismatch: the verdict) or kept until it comes. */
void gl_check_p2p_call(gl_comm_check *k, int r, const gl_check_call *x);
/* The oldest send or recv without its partner: past the timeout, the
 * verdict; else the milliseconds left (-1: none waits). */
int gl_check_p2p_timeout(gl_comm_check *k);
/* A send or recv whose partner's rank is gone: the verdict. */
void gl_check_p2p_gone(gl_comm_check *k);

#endif
