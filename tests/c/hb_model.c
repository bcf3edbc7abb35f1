/*
 * hb_model.c -- the happens-before model of the differential fuzz (see
 * hb_model.h).
 */
#include "hb_model.h"

#include <string.h>

void hb_reset(hb_model *m) {
  memset(m, 0, sizeof *m);
  for (int i = 0; i < HB_STREAMS; i++) m->tail[i] = -1;
}

int hb_node(hb_model *m, int s, const hb_access *a, int n) {
  if (m->nnode == HB_MAXNODE || m->nacc + n > HB_MAXACC) return -1;
  int id = m->nnode++;
  m->node_stream[id] = s;
  for (int i = 0; i < n; i++) {
    m->acc[m->nacc] = a[i];
    m->acc_node[m->nacc++] = id;
  }
  m->after[s].w[id / 64] |= (uint64_t)1 << (id % 64);
  m->tail[s] = id;
  return id;
}

int hb_conflict(const hb_model *m, const hb_set *before, int mem, uint64_t lo, uint64_t hi, int write) {
  return hb_conflict_node(m, before, mem, lo, hi, write) >= 0;
}

int hb_conflict_node(const hb_model *m, const hb_set *before, int mem, uint64_t lo, uint64_t hi, int write) {
  if (lo >= hi) return -1;
  for (int i = 0; i < m->nacc; i++) {
    const hb_access *a = &m->acc[i];
    if (a->mem != mem || a->hi <= lo || hi <= a->lo || !(a->write || write)) continue;
    if (!hb_has(before, m->acc_node[i])) return m->acc_node[i];
  }
  return -1;
}
