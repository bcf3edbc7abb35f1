/*
 * ptx_race_run.c -- racecheck of a whole warp's access of consecutive
 * words (ptx_race.h: sim_ptx_race_quiet, sim_ptx_race_run), as its lanes'
 * checks would make it: a segment of 128 bytes where nothing recorded can
 * race keeps one summary record (ptx_race_shadow.h), other words their own
 * records, the common case (stale records, or the thread's own) stored in
 * place and the rest checked word by word (ptx_race.c's check).
 */
#include "ptx_race_internal.h"

#include <string.h>

/* a part of a global chunk not made, for sim_ptx_race_run (shared memory
 * has all its parts, and more words than a chunk) */
static const race_acc no_records[CHUNK_WORDS];

/* Whether part i of the whole segment at word `off` of ch holds only
 * records that are stale (below `stale`) or, in this block (from bf), the
 * thread's that accesses the word now: the run's threads from tid0, a lane
 * to 1 << lane_shift words, its summary's mask `code`. */
static inline int segment_quiet(const race_chunk *ch, int i, size_t off, uint32_t stale, uint32_t bf, unsigned tid0,
                                int lane_shift, uint8_t code) {
  const race_acc *s = summary(ch, i, off);
  if (s) return s->epoch < stale || (s->epoch >= bf && s->tid == tid0 && s->mask == code);
  if (!ch->part[i]) return 1;
  const race_acc *p = &ch->part[i][off];
  for (size_t j = 0; j < SEG_WORDS; j++)
    if (p[j].epoch >= stale && (p[j].epoch < bf || p[j].tid != tid0 + (j >> lane_shift))) return 0;
  return 1;
}

/* Whether every record on word `off` of ch that a read (or write) looks
 * at is stale or thread tid's own in this block: nothing can race, and the
 * access's record simply replaces the part's (check_word, made short). */
static inline int word_quiet(const sim_ptx_race *r, const race_chunk *ch, size_t off, int shared, int write,
                             unsigned tid) {
  uint32_t stale = stale_below(r, shared), bf = r->block_first;
  for (int k = 0; k < (write ? 3 : 2); k++) {
    const race_acc *s = summary(ch, k, off);
    uint32_t e;
    unsigned t;
    if (s) {
      e = s->epoch;
      t = s->tid + (unsigned)((off & (SEG_WORDS - 1)) >> ((s->mask >> 4) - 1));
    } else if (ch->part[k]) {
      e = ch->part[k][off].epoch;
      t = ch->part[k][off].tid;
    } else {
      continue;
    }
    if (e >= stale && (e < bf || t != tid)) return 0;
  }
  return 1;
}

/* The summary of the whole segment at word `off` of ch for cur, a run's
 * read or write by the threads from tid0 (a lane to 1 << lane_shift
 * words): stored where nothing recorded there can race with it (1), else
 * nothing stored (0); -1 when out of memory. */
static inline int summarize(sim_ptx_race *r, race_chunk *ch, size_t off, int shared, int write, const race_acc *cur,
                            unsigned tid0, int lane_shift) {
  uint8_t code = (uint8_t)(SIM_PTX_SUMMARY | (lane_shift + 1) << 4);
  uint32_t stale = stale_below(r, shared), bf = r->block_first;
  int quiet = 1;
  if (shared || !fresh(r, ch, off)) /* else every record is another launch's */
    for (int k = 0; k < (write ? 3 : 2) && quiet; k++) /* a read's second read is not looked at */
      quiet = segment_quiet(ch, k, off, stale, bf, tid0, lane_shift, code);
  if (!quiet) return 0;
  if (!ch->sum && !(ch->sum = sim_ptx_shadow_sums(r->global))) return -1;
  race_acc *d = sum_at(ch, write ? 0 : 1, off);
  put_acc(d, cur, code);
  d->tid = (uint16_t)tid0;
  return 1;
}

int sim_ptx_race_quiet(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, const sim_ptx_race_insn *ri,
                       const unsigned char *run, size_t lane_bytes, size_t elem, int write) {
  sim_ptx_race *r = c->race;
  uintptr_t a = (uintptr_t)run, sh = (uintptr_t)c->shared;
  size_t nwords = SIM_PTX_WARP * lane_bytes / 4;
  int shared = a - sh < c->shared_size;
  if ((shared ? a - sh : a) % (4 * SEG_WORDS) || nwords % SEG_WORDS) return 0;
  int lane_shift = log2_bytes(lane_bytes) - 2;
  race_acc cur = {.epoch = ri->epoch, .sync = ri->sync, .insn = ri->insn, .mask = 0xf,
                  .flags = (uint8_t)(log2_bytes(write ? lane_bytes : elem) << 1)};
  size_t off0 = (a >> 2) & (CHUNK_WORDS - 1);
  if (!shared && off0 + nwords <= CHUNK_WORDS) { /* one chunk's: fresh segments all at once */
    race_chunk *ch = sim_ptx_shadow_chunk(r->global, a);
    if (!ch) return sim_ptx_fault(c, w, in, 0, "out of memory checking for races");
    uint32_t *segs = launch_segs(r, ch), nseg = (uint32_t)(nwords >> SEG_SHIFT);
    uint32_t bits = (uint32_t)((1ull << nseg) - 1) << (off0 >> SEG_SHIFT);
    if (!(*segs & bits)) { /* no record of this launch in any of them */
      if (!ch->sum && !(ch->sum = sim_ptx_shadow_sums(r->global)))
        return sim_ptx_fault(c, w, in, 0, "out of memory checking for races");
      *segs |= bits;
      uint8_t code = (uint8_t)(SIM_PTX_SUMMARY | (lane_shift + 1) << 4);
      race_acc *d = sum_at(ch, write ? 0 : 1, off0);
      for (uint32_t k = 0; k < nseg; k++, d += 3) { /* a part's summaries are 3 apart */
        put_acc(d, &cur, code);
        d->tid = (uint16_t)(ri->first + (unsigned)((k << SEG_SHIFT) >> lane_shift));
      }
      return 1;
    }
  }
  race_chunk *ch = NULL;
  for (size_t i = 0; i < nwords; i += SEG_WORDS) {
    uintptr_t wa = a + 4 * i;
    size_t off = shared ? (wa - sh) >> 2 : (wa >> 2) & (CHUNK_WORDS - 1);
    if (!ch || (!shared && off == 0)) ch = shared ? &r->shared : sim_ptx_shadow_chunk(r->global, wa);
    int q = ch ? summarize(r, ch, off, shared, write, &cur, ri->first + (unsigned)(i >> lane_shift), lane_shift) : -1;
    if (q < 0) return sim_ptx_fault(c, w, in, (int)(i >> lane_shift), "out of memory checking for races");
    if (!q) return 0;
  }
  return 1;
}

/* Word i of a run (word `off` of ch) through the full check, for cur's
 * thread (its lane's): the access is the lane's store of lane_bytes, or
 * its load of the element holding the word. 0, or -1 after the fault of a
 * race, the run's lanes before this one stored (as lane by lane). */
static int check_word_of_run(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, race_chunk *ch, size_t off,
                             size_t i, int lane_shift, int elem_lg, race_acc *cur, int shared, unsigned char *run,
                             size_t lane_bytes, size_t bytes, const unsigned char *data) {
  int lane = (int)(i >> lane_shift);
  uintptr_t a = (uintptr_t)run, wa = a + 4 * i;
  uintptr_t at = data ? a + ((size_t)lane << (lane_shift + 2)) : wa >> elem_lg << elem_lg; /* the store, or element */
  if (!sim_ptx_race_word(c, w, in, lane, ch, off, wa, cur, data != NULL, shared, at, bytes,
                         data ? data + (at - a) : NULL))
    return 0;
  if (data) memcpy(run, data, (size_t)lane * lane_bytes);
  return -1;
}

int sim_ptx_race_run(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, const sim_ptx_race_insn *ri,
                     unsigned char *run, size_t lane_bytes, size_t elem, const unsigned char *data) {
  sim_ptx_race *r = c->race;
  uintptr_t a = (uintptr_t)run, sh = (uintptr_t)c->shared;
  size_t nwords = SIM_PTX_WARP * lane_bytes / 4;
  int write = data != NULL, shared = a - sh < c->shared_size;
  size_t bytes = write ? lane_bytes : elem; /* as the lanes' checks: a store whole, a load by element */
  int lane_shift = log2_bytes(lane_bytes) - 2, elem_lg = log2_bytes(elem);
  race_acc cur = {.epoch = ri->epoch, .sync = ri->sync, .insn = ri->insn, .mask = 0xf,
                  .flags = (uint8_t)(log2_bytes(bytes) << 1)};
  for (size_t i = 0; i < nwords;) {
    uintptr_t wa = a + 4 * i;
    race_chunk *ch = shared ? &r->shared : sim_ptx_shadow_chunk(r->global, wa);
    if (!ch) return sim_ptx_fault(c, w, in, (int)(i >> lane_shift), "out of memory checking for races");
    size_t off = shared ? (wa - sh) >> 2 : (wa >> 2) & (CHUNK_WORDS - 1);
    size_t end = shared ? nwords : i + (CHUNK_WORDS - off); /* this chunk's words of the run */
    if (end > nwords) end = nwords;
    while (i < end) {
      size_t seg_end = i + SEG_WORDS - (off & (SEG_WORDS - 1));
      if (seg_end > end) seg_end = end;
      if (seg_end - i == SEG_WORDS) { /* a whole segment: where nothing can race, its summary */
        int q = summarize(r, ch, off, shared, write, &cur, ri->first + (unsigned)(i >> lane_shift), lane_shift);
        if (q < 0) return sim_ptx_fault(c, w, in, (int)(i >> lane_shift), "out of memory checking for races");
        if (q) {
          i += SEG_WORDS;
          off += SEG_WORDS;
          continue;
        }
      }
      if (!summary(ch, 0, off) && !summary(ch, 1, off) && !(write && summary(ch, 2, off))) {
        /* the words' own records: their arrays looked at directly (a part
         * not made as no records), the common case stored in place */
        int mine = write ? 0 : 1;
        if (!shared) fresh(r, ch, off);
        if (!ch->part[mine] && !(ch->part[mine] = sim_ptx_shadow_part(r->global)))
          return sim_ptx_fault(c, w, in, (int)(i >> lane_shift), "out of memory checking for races");
        uint32_t stale = stale_below(r, shared), bf = r->block_first;
        for (; i < seg_end; i++, off++) {
          const race_acc *p0 = ch->part[0] ? ch->part[0] : no_records, *p1 = ch->part[1] ? ch->part[1] : no_records;
          const race_acc *p2 = !write ? p1 : ch->part[2] ? ch->part[2] : no_records;
          int lane = (int)(i >> lane_shift);
          uint16_t tid = (uint16_t)(ri->first + (unsigned)lane);
#define QUIET(p) ((p).epoch < stale || ((p).epoch >= bf && (p).tid == tid))
          cur.tid = tid;
          if (QUIET(p0[off]) && QUIET(p1[off]) && QUIET(p2[off])) {
            ch->part[mine][off] = cur;
            continue;
          }
#undef QUIET
          if (check_word_of_run(c, w, in, ch, off, i, lane_shift, elem_lg, &cur, shared, run, lane_bytes, bytes, data))
            return -1;
        }
        continue;
      }
      for (; i < seg_end; i++, off++) { /* word by word, as the lanes' checks */
        int lane = (int)(i >> lane_shift);
        cur.tid = (uint16_t)(ri->first + (unsigned)lane);
        if (word_quiet(r, ch, off, shared, write, cur.tid)) { /* the common case: the record is cur */
          race_acc *dst = own(r, ch, write ? 0 : 1, off);
          if (!dst) return sim_ptx_fault(c, w, in, lane, "out of memory checking for races");
          put_acc(dst, &cur, 0xf);
          continue;
        }
        if (check_word_of_run(c, w, in, ch, off, i, lane_shift, elem_lg, &cur, shared, run, lane_bytes, bytes, data))
          return -1;
      }
    }
  }
  if (write) memcpy(run, data, nwords * 4);
  return 0;
}

