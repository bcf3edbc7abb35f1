/*
 * ptx_race.c -- racecheck: two threads of a launch touching the same bytes
 * of shared or global memory, at least one writing and not both atomically,
 * with nothing ordering the two accesses, is a fault naming both threads,
 * both accesses and both source lines.
 *
 * What orders two accesses of different threads:
 * - a barrier (bar.sync, barrier) released between them, in one block: the
 *   launch's accesses are grouped in epochs, a new one at each block's start
 *   and at each barrier release (any barrier: named ones with a thread count
 *   order all of the block, which may hide races, never report one);
 * - for two lanes of one warp in one epoch, a bar.warp.sync (__syncwarp)
 *   between them. Lanes of a warp are not otherwise ordered (independent
 *   thread scheduling): lanes writing the same bytes in one store race, and
 *   warp-synchronous code that passes values through shared memory needs
 *   __syncwarp, as on the GPU; shfl, vote and the like carry values in
 *   registers and order no memory;
 * - for global memory, blocks are never ordered, except by the pattern
 *   "write, __threadfence(), atomic" (a release: the block's accesses up to
 *   it) in one block and any atomic in a later one (an acquire of every
 *   release before it), as the last-block reduction uses.
 * Two writes of the same value race harmlessly and are not reported.
 * volatile and .relaxed accesses count as plain ones; only atom and red are
 * atomic.
 *
 * Shadow: for each 4-byte word, the last write and two reads, each with the
 * bytes of the word it touched, its epoch (which names its block), thread,
 * the warp's __syncwarp count then, and instruction. Shared memory has its
 * records for the launch (a record from an earlier block is stale); global
 * memory a hash of 4 KiB chunks, each with its writes, first reads and
 * second reads in parts made on first use, kept from launch to launch
 * (ptx_race_shadow.c: a record of an earlier launch is stale). A whole
 * warp's access of consecutive words is checked a word at a time
 * (sim_ptx_race_run), as its lanes' checks would. The
 * lanes of a warp's load or store share what the instruction gives
 * (sim_ptx_race_prepare) and are checked in lane order. Remembering
 * one write and two reads of a word is enough to find a race when there
 * is one between two threads; among three or more threads touching the
 * same word in one epoch, or different bytes of one word, some may go
 * unreported. A report is always a real race of this model.
 */

#include "ptx_race_internal.h"

#include <stdlib.h>
#include <string.h>

int sim_ptx_race_start(sim_ptx_ctx *c) {
  if (c->l->no_racecheck) return 0;
  sim_ptx_race *r = calloc(1, sizeof *r);
  if (!r) return -1;
  if (!(r->global = sim_ptx_shadow_begin(&r->launch_first))) {
    free(r);
    return -1;
  }
  r->epoch = r->launch_first - 1; /* the first block's is launch_first */
  size_t segs = ((c->shared_size + 3) / 4 + SEG_WORDS - 1) / SEG_WORDS; /* whole segments, for summaries */
  for (int i = 0; c->shared_size && i < 4; i++) {
    race_acc **p = i < 3 ? &r->shared.part[i] : &r->shared.sum;
    if (!(*p = calloc(segs * (i < 3 ? SEG_WORDS : 3), sizeof(race_acc)))) {
      for (int k = 0; k < i; k++) free(r->shared.part[k]);
      free(r);
      return -1;
    }
  }
  c->race = r;
  return 0;
}

void sim_ptx_race_end(sim_ptx_ctx *c) {
  sim_ptx_race *r = c->race;
  if (!r) return;
  sim_ptx_shadow_end(r->global, r->epoch);
  for (int i = 0; i < 3; i++) free(r->shared.part[i]);
  free(r->shared.sum);
  free(r->blocks);
  free(r);
  c->race = NULL;
}

int sim_ptx_race_block(sim_ptx_ctx *c) {
  sim_ptx_race *r = c->race;
  if (!r) return 0;
  if (r->nblocks == r->capblocks) {
    size_t nc = r->capblocks ? r->capblocks * 2 : 64;
    race_block *nb = realloc(r->blocks, nc * sizeof *nb);
    if (!nb) return -1;
    r->blocks = nb;
    r->capblocks = nc;
  }
  r->block_first = ++r->epoch;
  r->blocks[r->nblocks++] = (race_block){.first = r->epoch, .ctaid = {c->ctaid[0], c->ctaid[1], c->ctaid[2]}};
  r->acquired = 0;
  memset(r->wsync, 0, sizeof r->wsync);
  memset(r->fenced, 0, sizeof r->fenced);
  return 0;
}

void sim_ptx_race_barrier(sim_ptx_ctx *c) {
  if (c->race) c->race->epoch++;
}

void sim_ptx_race_sync(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m) {
  sim_ptx_race *r = c->race;
  if (!r || !m) return;
  if (in->op == SIM_OP_BARWARP) r->wsync[w->index]++;
  else r->fenced[w->index] |= m;
}

/* The block an epoch belongs to. */
static const race_block *block_of(const sim_ptx_race *r, uint32_t epoch) {
  size_t lo = 0, hi = r->nblocks;
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (r->blocks[mid].first <= epoch) lo = mid;
    else hi = mid;
  }
  return &r->blocks[lo];
}

/* Whether nothing orders p (earlier) and cur (the access being made). */
static inline int concurrent(const sim_ptx_race *r, const race_acc *p, const race_acc *cur, int shared) {
  if (p->epoch < r->launch_first) return 0; /* none, or an earlier launch's */
  if (p->epoch < r->block_first) { /* an earlier block */
    if (shared) return 0;            /* its shared memory is gone */
    return !(r->acquired && p->epoch <= block_of(r, p->epoch)->rel);
  }
  if (p->tid == cur->tid || p->epoch != cur->epoch) return 0;
  return p->tid / SIM_PTX_WARP != cur->tid / SIM_PTX_WARP || p->sync == cur->sync;
}

/* "file.cu:LINE" of instruction `code` (function << 20 | index), or its PTX line. */
static void where(const sim_ptx_ctx *c, uint32_t code, char *buf, size_t len) {
  if (code == UINT32_MAX) {
    snprintf(buf, len, "an instruction past the millionth of its function");
    return;
  }
  const sim_ptx_insn *in = &c->m->funcs[code >> 20].code[code & 0xfffff];
  const char *file = in->src_file < c->m->nfiles ? c->m->files[in->src_file] : NULL;
  if (file && strrchr(file, '/')) file = strrchr(file, '/') + 1;
  if (file && in->src_line) snprintf(buf, len, "%s:%u", file, in->src_line);
  else snprintf(buf, len, "PTX line %u", in->line);
}

/* A variable's name as the source gives it: NVRTC names a kernel's own
 * `__shared__ float s[]` _ZZ8sum_racyE1s (its function's length and name,
 * then its own). */
static void source_name(const char *n, char *buf, size_t len) {
  const char *p = n + 3;
  char *end;
  if (strncmp(n, "_ZZ", 3) == 0) {
    unsigned long k = strtoul(p, &end, 10);
    if (end != p && strlen(end) > k && end[k] == 'E') {
      p = end + k + 1;
      k = strtoul(p, &end, 10);
      if (end != p && strlen(end) >= k) {
        snprintf(buf, len, "%.*s", (int)k, end);
        return;
      }
    }
  }
  snprintf(buf, len, "%s", n);
}

/* The memory at host address a: a module variable and the byte in it, or
 * the shared offset or global address. */
static void describe(const sim_ptx_ctx *c, uintptr_t a, int shared, char *buf, size_t len) {
  uintptr_t base = shared ? (uintptr_t)c->shared : (uintptr_t)c->m->data;
  for (int i = 0; i < c->m->nvars; i++) {
    const sim_ptx_var *v = &c->m->vars[i];
    if ((v->space == SIM_S_SHARED) != shared) continue;
    size_t size = v->is_dynamic ? c->shared_size - v->offset : v->size;
    if (a - base - v->offset < size) {
      char name[128];
      source_name(v->name, name, sizeof name);
      snprintf(buf, len, "%s '%s' at byte %zu", shared ? "__shared__" : "__device__", name, (size_t)(a - base - v->offset));
      return;
    }
  }
  if (shared) snprintf(buf, len, "shared memory at offset %zu", (size_t)(a - base));
  else snprintf(buf, len, "global memory at 0x%llx", (unsigned long long)a);
}

static const char *verb(const race_acc *a, int write) {
  return !write ? "read" : a->flags & RACE_ATOMIC ? "atomically wrote" : "wrote";
}

/* The fault of cur racing with p on the word at shadow d. */
static int report(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, int lane, const race_acc *cur, int write,
                  const race_acc *p, int pwrite, int shared, uintptr_t a, size_t bytes) {
  const sim_ptx_race *r = c->race;
  unsigned bx = c->l->block[0], by = c->l->block[1], t = p->tid;
  const unsigned *b = shared || p->epoch >= r->block_first ? c->ctaid : block_of(r, p->epoch)->ctaid;
  char at[200], line[300];
  describe(c, a, shared, at, sizeof at);
  where(c, p->insn, line, sizeof line);
  const char *between = p->epoch < r->block_first ? "; blocks of a launch are not ordered"
                        : p->tid / SIM_PTX_WARP == cur->tid / SIM_PTX_WARP
                            ? " with no barrier or __syncwarp between them"
                            : " with no barrier between them";
  return sim_ptx_fault(c, w, in, lane, "data race on %s: %s %zu bytes, which thread (%u,%u,%u) of block (%u,%u,%u) %s (%u "
                       "bytes at %s)%s",
                       at, verb(cur, write), bytes, t % bx, t / bx % by, t / bx / by, b[0], b[1], b[2], verb(p, pwrite),
                       1u << (p->flags >> 1), line, between);
}

/* Whether write cur of `data` (the access starting at a) stores over the
 * bytes write p left in the word at wa exactly what is there already. */
static int same_value(const race_acc *p, const race_acc *cur, uintptr_t wa, uintptr_t a, const unsigned char *data) {
  if (!data || (p->flags & RACE_ATOMIC)) return 0;
  unsigned both = p->mask & cur->mask;
  for (unsigned i = 0; i < 4; i++)
    if (both >> i & 1 && ((const unsigned char *)wa)[i] != data[wa + i - a]) return 0;
  return 1;
}

void sim_ptx_race_prepare(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, sim_ptx_race_insn *ri) {
  const sim_ptx_race *r = c->race;
  size_t fn = (size_t)(w->f - c->m->funcs), pc = (size_t)(in - w->f->code);
  *ri = (sim_ptx_race_insn){.epoch = r->epoch, .sync = r->wsync[w->index],
                            .insn = fn < 4096 && pc < 0xfffff ? (uint32_t)(fn << 20 | pc) : UINT32_MAX,
                            .first = w->first, .atomic = in->op == SIM_OP_ATOM || in->op == SIM_OP_RED,
                            .skip = in->space == SIM_S_CONST || in->space == SIM_S_PARAM || in->space == SIM_S_LOCAL};
}

/* The check of one word of an access, at word `off` of chunk ch (host
 * address wa), for the access `bytes` at a by cur's thread (lane `lane`),
 * a write of `data` (the access's bytes) or a read; then its record. */
static inline __attribute__((always_inline)) int check_word(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in,
                                                            int lane, race_chunk *ch, size_t off, uintptr_t wa,
                                                            race_acc *cur, int write, int atomic, int shared,
                                                            uintptr_t a, size_t bytes, const void *data) {
  sim_ptx_race *r = c->race;
  race_acc t0, t1, t2;
  const race_acc *pw = rec(ch, 0, off, &t0);
  if (pw->mask & cur->mask && concurrent(r, pw, cur, shared) &&
      !(write && (atomic ? pw->flags & RACE_ATOMIC : same_value(pw, cur, wa, a, data))))
    return report(c, w, in, lane, cur, write, pw, 1, shared, a, bytes);
  if (write) {
    for (int i = 1; i <= 2; i++) {
      const race_acc *pr = rec(ch, i, off, i == 1 ? &t1 : &t2);
      if (pr->mask & cur->mask && concurrent(r, pr, cur, shared))
        return report(c, w, in, lane, cur, write, pr, 0, shared, a, bytes);
    }
    uint8_t mask = cur->mask;
    if (pw->epoch == cur->epoch && pw->tid == cur->tid && pw->insn == cur->insn && pw->sync == cur->sync) mask |= pw->mask;
    race_acc *dst = own(r, ch, 0, off);
    if (!dst) return sim_ptx_fault(c, w, in, lane, "out of memory checking for races");
    put_acc(dst, cur, mask);
    return 0;
  }
  /* a read: in a slot whose read is ordered before it (or the same
   * thread's), else over the second, keeping an earlier reader */
  int i = 2;
  for (int k = 1; k <= 2; k++)
    if (!concurrent(r, rec(ch, k, off, &t1), cur, shared)) {
      i = k;
      break;
    }
  const race_acc *slot = rec(ch, i, off, &t2);
  uint8_t mask = cur->mask;
  if (slot->epoch == cur->epoch && slot->tid == cur->tid && slot->insn == cur->insn && slot->sync == cur->sync)
    mask |= slot->mask;
  race_acc *dst = own(r, ch, i, off);
  if (!dst) return sim_ptx_fault(c, w, in, lane, "out of memory checking for races");
  put_acc(dst, cur, mask);
  return 0;
}

/* The check of one lane's access (sim_ptx_race_lane), inlined in the loop
 * over a warp's lanes too. */
static inline __attribute__((always_inline)) int check_lane(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in,
                                                            const sim_ptx_race_insn *ri, int lane, const void *p,
                                                            size_t bytes, int write, const void *data) {
  sim_ptx_race *r = c->race;
  uintptr_t a = (uintptr_t)p, sh = (uintptr_t)c->shared, loc = (uintptr_t)c->local, par = (uintptr_t)c->params;
  if (ri->skip) return 0;
  if (a - par < c->kernel->param_bytes) return 0;
  if (c->local && a - loc < (uintptr_t)c->nthreads * SIM_PTX_LOCAL_BYTES) return 0;
  int shared = a - sh < c->shared_size, atomic = ri->atomic, lg = bytes == 4 ? 2 : log2_bytes(bytes);
  race_acc cur = {.epoch = ri->epoch, .sync = ri->sync, .insn = ri->insn, .tid = (uint16_t)(ri->first + (unsigned)lane),
                  .flags = (uint8_t)(atomic | lg << 1)};
  if (atomic) { /* an acquire of every earlier release; after a fence of the lane, a release */
    r->acquired = 1;
    if (r->fenced[w->index] >> lane & 1) r->blocks[r->nblocks - 1].rel = r->epoch;
  }
  for (uintptr_t wa = a & ~(uintptr_t)3; wa < a + bytes; wa += 4) {
    race_chunk *ch = shared ? &r->shared : sim_ptx_shadow_chunk(r->global, wa);
    if (!ch) return sim_ptx_fault(c, w, in, lane, "out of memory checking for races");
    size_t off = shared ? (wa - sh) >> 2 : (wa >> 2) & (CHUNK_WORDS - 1);
    cur.mask = bytes >= 4 ? 0xf : (uint8_t)(((1u << bytes) - 1) << (a & 3));
    if (check_word(c, w, in, lane, ch, off, wa, &cur, write, atomic, shared, a, bytes, data)) return -1;
  }
  return 0;
}

int sim_ptx_race_word(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, int lane, race_chunk *ch, size_t off,
                      uintptr_t wa, race_acc *cur, int write, int shared, uintptr_t a, size_t bytes, const void *data) {
  return check_word(c, w, in, lane, ch, off, wa, cur, write, 0, shared, a, bytes, data);
}

int sim_ptx_race_lane(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, const sim_ptx_race_insn *ri, int lane,
                      const void *p, size_t bytes, int write, const void *data) {
  return check_lane(c, w, in, ri, lane, p, bytes, write, data);
}

int sim_ptx_race_lanes(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, const sim_ptx_race_insn *ri, uint32_t m,
                       unsigned char *const *p, int size, const uint64_t *vals) {
  unsigned char data[8];
  SIM_LANES(m) {
    if (vals) {
      uint8_t b = (uint8_t)vals[l];
      uint16_t h = (uint16_t)vals[l];
      uint32_t u = (uint32_t)vals[l];
      switch (size) {
      case 1: memcpy(data, &b, 1); break;
      case 2: memcpy(data, &h, 2); break;
      case 4: memcpy(data, &u, 4); break;
      default: memcpy(data, &vals[l], 8); break;
      }
    }
    if (check_lane(c, w, in, ri, l, p[l], (size_t)size, vals != NULL, vals ? data : NULL)) return -1;
    if (vals) memcpy(p[l], data, (size_t)size);
  }
  return 0;
}

int sim_ptx_race_access(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, int lane, const void *p, size_t bytes,
                        int write, const void *data) {
  sim_ptx_race_insn ri;
  sim_ptx_race_prepare(c, w, in, &ri);
  return sim_ptx_race_lane(c, w, in, &ri, lane, p, bytes, write, data);
}
