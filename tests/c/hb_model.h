/*
 * hb_model.h -- an independent happens-before model of streams, for the
 * checker's differential fuzz (test_capture_fuzz.c). It shares nothing with
 * the checker: no vector clocks, no positions, no merged spans. Every piece
 * of queued work is a node; each stream keeps the set of nodes its next work
 * is ordered after (its own included), the host the set of nodes it has seen
 * finish; waits take unions of those sets. Work queued on a stream is
 * ordered after its set and after what the host has seen finish. An access conflicts when it
 * overlaps an access of a node outside the set, and one of the two writes.
 * Nothing is ever forgotten.
 */
#ifndef GPULUA_TEST_HB_MODEL_H
#define GPULUA_TEST_HB_MODEL_H

#include <stdint.h>

#define HB_MAXNODE 4096
#define HB_MAXACC 16384
#define HB_STREAMS 16

typedef struct hb_set {
  uint64_t w[HB_MAXNODE / 64];
} hb_set;

typedef struct hb_access {
  int mem;
  uint64_t lo, hi;
  int write;
} hb_access;

typedef struct hb_model {
  int nnode;
  int node_stream[HB_MAXNODE];
  int tail[HB_STREAMS];      /* each stream's latest node (-1: none) */
  hb_access acc[HB_MAXACC];  /* every access of every node, */
  int acc_node[HB_MAXACC];   /* ... and its node */
  int nacc;
  hb_set after[HB_STREAMS];  /* what each stream's next work is ordered after */
  hb_set host;               /* what the host has seen finish */
} hb_model;

void hb_reset(hb_model *m);
/* A new node on stream s with accesses a[0 .. n) (none: a wait); its id, or
 * -1 when the model is full. */
int hb_node(hb_model *m, int s, const hb_access *a, int n);
static inline int hb_has(const hb_set *x, int node) { return node >= 0 && (x->w[node / 64] >> (node % 64)) & 1; }
static inline void hb_union(hb_set *x, const hb_set *y) {
  for (int i = 0; i < HB_MAXNODE / 64; i++) x->w[i] |= y->w[i];
}
/* Does an access (mem, [lo, hi), write) after the nodes in `before` overlap an
 * access of a node outside it, one of the two writing? */
int hb_conflict(const hb_model *m, const hb_set *before, int mem, uint64_t lo, uint64_t hi, int write);
/* ... the node of the first such access (-1: none), for messages. */
int hb_conflict_node(const hb_model *m, const hb_set *before, int mem, uint64_t lo, uint64_t hi, int write);
/* What stream s's next work is ordered after: its set and the host's. */
static inline hb_set hb_known(const hb_model *m, int s) {
  hb_set k = m->after[s];
  hb_union(&k, &m->host);
  return k;
}

#endif
