/*
 * ptx_race_internal.h -- racecheck's state and record helpers, shared by
 * ptx_race.c (the hooks, the checks of single accesses and the reports)
 * and ptx_race_run.c (the checks of a whole warp's runs).
 */
#ifndef GPULUA_PTX_RACE_INTERNAL_H
#define GPULUA_PTX_RACE_INTERNAL_H

#include "ptx_race.h"
#include "ptx_race_shadow.h"

typedef sim_ptx_race_acc race_acc;
typedef sim_ptx_race_chunk race_chunk;
enum { RACE_ATOMIC = SIM_PTX_RACE_ATOMIC, CHUNK_WORDS = SIM_PTX_CHUNK_WORDS };
enum { SEG_SHIFT = SIM_PTX_SEG_SHIFT, SEG_WORDS = SIM_PTX_SEG_WORDS };
#define race_none sim_ptx_race_none

typedef struct {
  uint32_t first, rel; /* its first epoch; the epoch of its last release (0: none) */
  unsigned ctaid[3];
} race_block;

struct sim_ptx_race {
  uint32_t epoch, block_first, launch_first; /* records of epochs below launch_first are stale */
  int acquired; /* the block ran an atomic: earlier releases order before it */
  race_chunk shared; /* parts of (shared_size + 3) / 4 words */
  sim_ptx_shadow *global;
  race_block *blocks;
  size_t nblocks, capblocks;
  uint32_t wsync[1024 / SIM_PTX_WARP];
  uint32_t fenced[1024 / SIM_PTX_WARP]; /* lanes that ran a fence */
};

/* *d = a, with the bytes of `mask`: field by field (cur is built on the
 * stack a field at a time, and copied whole it would be read back whole). */
static inline void put_acc(race_acc *d, const race_acc *a, uint8_t mask) {
  d->epoch = a->epoch;
  d->sync = a->sync;
  d->insn = a->insn;
  d->tid = a->tid;
  d->mask = mask;
  d->flags = a->flags;
}

/* Where part i's summary of the segment of word `off` of ch is (ch->sum made). */
static inline race_acc *sum_at(const race_chunk *ch, int i, size_t off) {
  return &ch->sum[(off >> SEG_SHIFT) * 3 + (size_t)i];
}

/* Part i's summary of the segment of word `off` of ch, or NULL when the
 * part's words hold their own records. */
static inline const race_acc *summary(const race_chunk *ch, int i, size_t off) {
  if (!ch->sum) return NULL;
  const race_acc *s = sum_at(ch, i, off);
  return s->mask ? s : NULL;
}

/* The epoch below which a record is stale: none of this launch (global
 * memory), or of this block (shared memory). */
static inline uint32_t stale_below(const sim_ptx_race *r, int shared) {
  return shared ? r->block_first : r->launch_first;
}

/* The record summary s stands for at word `off`. */
static inline void unfold(const race_acc *s, size_t off, race_acc *d) {
  put_acc(d, s, 0xf);
  d->tid = (uint16_t)(s->tid + ((off & (SEG_WORDS - 1)) >> ((s->mask >> 4) - 1)));
}

/* Record i (0: the write, 1 and 2: the reads) of word `off` of ch, to
 * read (a summary's made in *tmp). */
static inline const race_acc *rec(const race_chunk *ch, int i, size_t off, race_acc *tmp) {
  const race_acc *s = summary(ch, i, off);
  if (s) {
    unfold(s, off, tmp);
    return tmp;
  }
  return ch->part[i] ? &ch->part[i][off] : &race_none;
}
/* The bits of the segments of ch (global memory) that hold records of
 * this launch: none yet when its last records are another launch's. */
static inline uint32_t *launch_segs(const sim_ptx_race *r, race_chunk *ch) {
  if (ch->launch != r->launch_first) {
    ch->launch = r->launch_first;
    ch->segs = 0;
  }
  return &ch->segs;
}

/* Whether the segment of word `off` of ch, in global memory, has no
 * records of this launch yet (all stale); it has from now on. */
static inline int fresh(const sim_ptx_race *r, race_chunk *ch, size_t off) {
  uint32_t *segs = launch_segs(r, ch), bit = 1u << (off >> SEG_SHIFT);
  int f = !(*segs & bit);
  *segs |= bit;
  return f;
}

/* The same, to store: its part made first, and a summary of its segment
 * unfolded into the part's words (NULL when out of memory). */
static inline race_acc *own(sim_ptx_race *r, race_chunk *ch, int i, size_t off) {
  if (ch != &r->shared) fresh(r, ch, off);
  if (!ch->part[i] && !(ch->part[i] = sim_ptx_shadow_part(r->global))) return NULL;
  race_acc *s = ch->sum ? sum_at(ch, i, off) : NULL;
  if (s && s->mask) {
    size_t b = off & ~(size_t)(SEG_WORDS - 1);
    for (size_t j = 0; j < SEG_WORDS; j++) unfold(s, b + j, &ch->part[i][b + j]);
    s->mask = 0;
  }
  return &ch->part[i][off];
}

static inline int log2_bytes(size_t bytes) {
  if (!(bytes & (bytes - 1))) return __builtin_ctzll(bytes); /* a power of two: every access but a .v3's */
  int lg = 0;
  while ((1u << lg) < bytes) lg++;
  return lg;
}

/* The check of one word of an access, then its record (ptx_race.c): word
 * `off` of ch (host address wa), for the access of `bytes` at a by cur's
 * thread (lane `lane`), a write of `data` (the access's bytes) or a read.
 * 0, or -1 after the fault. */
int sim_ptx_race_word(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, int lane, race_chunk *ch, size_t off,
                      uintptr_t wa, race_acc *cur, int write, int shared, uintptr_t a, size_t bytes, const void *data);

#endif
