/*
 * sim_memmap.c -- the map of live and recently freed memory (sim_memmap.h).
 *
 * Live ranges are an array sorted by base, under a reader-writer lock: a
 * lookup is a binary search for the last range starting at or before the
 * address; adding and forgetting move the tail (allocations are rare next
 * to accesses). Freed ranges go to a ring of the last SIM_MEM_HISTORY,
 * searched newest first, only when an access hits no live range (the fault
 * path); one that a live range overlaps (its memory reused) is passed
 * over. A generation counter, raised by every forget, tells a caller's
 * cache that its range may be gone; adding never invalidates a hit.
 */
#include "sim_memmap.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct range {
  uint64_t base;
  size_t size;
  int ordinal;
  sim_mem_kind kind;
} range;

/* Writers first: workers looking up without pause must not starve the host's
 * allocations and frees (glibc's default lets readers in ahead). */
#ifdef PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP
static pthread_rwlock_t map_lock = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
#else
static pthread_rwlock_t map_lock = PTHREAD_RWLOCK_INITIALIZER;
#endif
static range *live;              /* sorted by base */
static size_t nlive, caplive;
static range freed[SIM_MEM_HISTORY]; /* a ring: the newest at (nfreed - 1) % SIM_MEM_HISTORY */
static uint64_t nfreed;          /* ranges ever freed */
static _Atomic uint64_t generation = 1;

/* The index of the last live range with base <= addr, or -1 (lock held). */
static long last_at_or_before(uint64_t addr) {
  size_t lo = 0, hi = nlive; /* the answer is lo - 1 once lo == hi */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (live[mid].base <= addr) lo = mid + 1;
    else hi = mid;
  }
  return (long)lo - 1;
}

int sim_mem_add(uint64_t base, size_t size, int ordinal, sim_mem_kind kind) {
  pthread_rwlock_wrlock(&map_lock);
  if (nlive == caplive) {
    size_t cap = caplive ? caplive * 2 : 256;
    range *v = realloc(live, cap * sizeof *v);
    if (!v) {
      pthread_rwlock_unlock(&map_lock);
      return -1;
    }
    live = v;
    caplive = cap;
  }
  size_t at = (size_t)(last_at_or_before(base) + 1);
  memmove(&live[at + 1], &live[at], (nlive - at) * sizeof *live);
  live[at] = (range){.base = base, .size = size, .ordinal = ordinal, .kind = kind};
  nlive++;
  pthread_rwlock_unlock(&map_lock);
  return 0;
}

int sim_mem_forget(uint64_t base) {
  pthread_rwlock_wrlock(&map_lock);
  long at = last_at_or_before(base);
  if (at < 0 || live[at].base != base) {
    pthread_rwlock_unlock(&map_lock);
    return -1;
  }
  freed[nfreed % SIM_MEM_HISTORY] = live[at];
  nfreed++;
  memmove(&live[at], &live[at + 1], (nlive - (size_t)at - 1) * sizeof *live);
  nlive--;
  atomic_fetch_add(&generation, 1);
  pthread_rwlock_unlock(&map_lock);
  return 0;
}

static void fill(sim_mem_hit *hit, const range *r, uint64_t addr, uint64_t last) {
  hit->base = r->base;
  hit->size = r->size;
  hit->ordinal = r->ordinal;
  hit->kind = r->kind;
  hit->offset = addr - r->base;
  uint64_t end = r->base + r->size;
  hit->over = last >= end ? last - end + 1 : 0;
}

/* Whether a live range shares a byte with r: a freed range whose memory a
 * new one reuses says nothing any more (lock held). */
static int overlaps_live(const range *r) {
  long j = last_at_or_before(r->base + r->size - 1);
  return j >= 0 && live[j].base + live[j].size > r->base;
}

/* The lookup itself (read lock held). */
static sim_mem_where lookup_locked(uint64_t addr, size_t bytes, sim_mem_hit *hit) {
  uint64_t last = bytes == 0 ? addr : addr + (bytes - 1);
  if (last < addr) last = UINT64_MAX; /* past the top of the address space */
  long at = last_at_or_before(addr);
  const range *r = at >= 0 ? &live[at] : NULL;
  if (r && addr - r->base < r->size) {
    fill(hit, r, addr, last);
    return last - r->base < r->size ? SIM_MEM_INSIDE : SIM_MEM_PAST_END;
  }
  uint64_t n = nfreed < SIM_MEM_HISTORY ? nfreed : SIM_MEM_HISTORY;
  for (uint64_t i = 0; i < n; i++) {
    const range *f = &freed[(nfreed - 1 - i) % SIM_MEM_HISTORY];
    if (addr >= f->base && addr - f->base < f->size && !overlaps_live(f)) {
      fill(hit, f, addr, last);
      return SIM_MEM_FREED;
    }
  }
  if (r && addr - (r->base + r->size) < SIM_MEM_NEAR) {
    fill(hit, r, addr, last);
    return SIM_MEM_PAST_END;
  }
  return SIM_MEM_UNKNOWN;
}

sim_mem_where sim_mem_lookup(uint64_t addr, size_t bytes, sim_mem_hit *hit) {
  pthread_rwlock_rdlock(&map_lock);
  sim_mem_where w = lookup_locked(addr, bytes, hit);
  pthread_rwlock_unlock(&map_lock);
  return w;
}

sim_mem_where sim_mem_lookup_cached(sim_mem_cache *c, uint64_t addr, size_t bytes, sim_mem_hit *hit) {
  uint64_t gen = atomic_load_explicit(&generation, memory_order_acquire);
  for (int i = 0; i < SIM_MEM_CACHE_WAYS; i++) {
    uint64_t base = c->way[i].base, span = c->way[i].end - base;
    if (c->way[i].gen == gen && addr >= base && bytes <= span && addr - base <= span - bytes) {
      *hit = (sim_mem_hit){.base = base, .size = (size_t)span, .ordinal = c->way[i].ordinal, .kind = c->way[i].kind,
                           .offset = addr - base};
      return SIM_MEM_INSIDE;
    }
  }
  pthread_rwlock_rdlock(&map_lock);
  gen = atomic_load_explicit(&generation, memory_order_relaxed); /* forgets take the write lock: stable here */
  sim_mem_where w = lookup_locked(addr, bytes, hit);
  pthread_rwlock_unlock(&map_lock);
  if (w == SIM_MEM_INSIDE) {
    unsigned i = c->next++ % SIM_MEM_CACHE_WAYS;
    c->way[i].gen = gen;
    c->way[i].base = hit->base;
    c->way[i].end = hit->base + hit->size;
    c->way[i].ordinal = hit->ordinal;
    c->way[i].kind = hit->kind;
  }
  return w;
}

int sim_mem_overlap(uint64_t base, size_t size, sim_mem_hit *hit) {
  uint64_t last = base + (size - 1);
  if (last < base) last = UINT64_MAX;
  pthread_rwlock_rdlock(&map_lock);
  /* the live ranges are disjoint and sorted: the last one starting at or
   * before `last` reaches into [base, last] if any does */
  long at = last_at_or_before(last);
  int found = at >= 0 && live[at].base + live[at].size > base;
  if (found)
    *hit = (sim_mem_hit){.base = live[at].base, .size = live[at].size, .ordinal = live[at].ordinal,
                         .kind = live[at].kind};
  pthread_rwlock_unlock(&map_lock);
  return found;
}

size_t sim_mem_live(void) {
  pthread_rwlock_rdlock(&map_lock);
  size_t n = nlive;
  pthread_rwlock_unlock(&map_lock);
  return n;
}
