/*
 * ptx_race_shadow.c -- the records racecheck keeps of global memory, one
 * set a thread (see ptx_race_shadow.h): a hash of 4 KiB chunks, and their
 * parts in slabs mapped zeroed. Kept from launch to launch, so that a
 * large launch's shadow is mapped (and its pages faulted in) once, not
 * each time: a launch's records are told apart by their epochs.
 */
#include "ptx_race_shadow.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { PART_BYTES = SIM_PTX_CHUNK_WORDS * sizeof(sim_ptx_race_acc) };

/* Parts come from slabs, the first ones small and later ones larger (up to
 * SLAB_MAX parts, in huge pages where the system gives them): a large
 * launch touches its shadow with few page faults, a small one maps little. */
enum { SLAB_MIN = 8, SLAB_MAX = 384 };
typedef struct {
  unsigned char *base;
  size_t parts, used;
} slab;

struct sim_ptx_shadow {
  uint32_t next; /* the next launch's first epoch */
  sim_ptx_race_chunk *tab;
  size_t cap, used;
  sim_ptx_race_chunk *last; /* the chunk found last (in tab) */
  sim_ptx_race_acc *sums;   /* a part cut into chunks' summaries */
  size_t sums_left;         /* how many are left in it */
  slab *slabs;
  size_t nslabs, capslabs, bytes;
};

const sim_ptx_race_acc sim_ptx_race_none;

static atomic_size_t kept; /* the bytes of every thread's shadow */
static pthread_key_t key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* Every chunk and part gone: the shadow as new (its epochs go on). */
static void empty(sim_ptx_shadow *s) {
  atomic_fetch_sub(&kept, s->bytes);
  for (size_t i = 0; i < s->nslabs; i++) munmap(s->slabs[i].base, s->slabs[i].parts * PART_BYTES);
  free(s->slabs);
  free(s->tab);
  uint32_t next = s->next;
  *s = (sim_ptx_shadow){.next = next};
}

static void release(void *p) { /* the thread ended */
  empty(p);
  free(p);
}

static void make_key(void) {
  if (pthread_key_create(&key, release)) abort();
}

sim_ptx_shadow *sim_ptx_shadow_begin(uint32_t *first) {
  pthread_once(&key_once, make_key);
  sim_ptx_shadow *s = pthread_getspecific(key);
  if (!s) {
    if (!(s = calloc(1, sizeof *s))) return NULL;
    s->next = 1;
    if (pthread_setspecific(key, s)) {
      free(s);
      return NULL;
    }
  }
  if (s->next > UINT32_MAX / 2) { /* epochs running out: start over, every record forgotten */
    empty(s);
    s->next = 1;
  }
  *first = s->next;
  return s;
}

void sim_ptx_shadow_end(sim_ptx_shadow *s, uint32_t last) {
  s->next = last + 1;
  if (atomic_load(&kept) > SIM_PTX_SHADOW_MAX) empty(s);
}

sim_ptx_race_acc *sim_ptx_shadow_part(sim_ptx_shadow *s) {
  slab *b = s->nslabs ? &s->slabs[s->nslabs - 1] : NULL;
  if (!b || b->used == b->parts) {
    if (s->nslabs == s->capslabs) {
      size_t nc = s->capslabs ? s->capslabs * 2 : 16;
      slab *ns = realloc(s->slabs, nc * sizeof *ns);
      if (!ns) return NULL;
      s->slabs = ns;
      s->capslabs = nc;
    }
    size_t n = s->nslabs < 6 ? (size_t)SLAB_MIN << s->nslabs : SLAB_MAX;
    void *p = mmap(NULL, n * PART_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
    if (n * PART_BYTES >= (4u << 20)) madvise(p, n * PART_BYTES, MADV_HUGEPAGE);
#endif
    b = &s->slabs[s->nslabs++];
    *b = (slab){.base = p, .parts = n};
    s->bytes += n * PART_BYTES;
    atomic_fetch_add(&kept, n * PART_BYTES);
  }
  return (sim_ptx_race_acc *)(void *)(b->base + b->used++ * PART_BYTES);
}

sim_ptx_race_acc *sim_ptx_shadow_sums(sim_ptx_shadow *s) {
  if (!s->sums_left) {
    if (!(s->sums = sim_ptx_shadow_part(s))) return NULL;
    s->sums_left = SIM_PTX_CHUNK_WORDS / SIM_PTX_CHUNK_SUMS;
  }
  s->sums_left--;
  sim_ptx_race_acc *r = s->sums;
  s->sums += SIM_PTX_CHUNK_SUMS;
  return r;
}

sim_ptx_race_chunk *sim_ptx_shadow_chunk(sim_ptx_shadow *s, uintptr_t a) {
  uint64_t key1 = ((uint64_t)a >> SIM_PTX_CHUNK_SHIFT) + 1;
  if (s->last && s->last->key1 == key1) return s->last;
  if (2 * (s->used + 1) > s->cap) {
    size_t nc = s->cap ? s->cap * 2 : 256;
    sim_ptx_race_chunk *nt = calloc(nc, sizeof *nt);
    if (!nt) return NULL;
    for (size_t i = 0; i < s->cap; i++) {
      if (!s->tab[i].key1) continue;
      size_t j = (size_t)(s->tab[i].key1 * 0x9E3779B97F4A7C15ull) & (nc - 1);
      while (nt[j].key1) j = (j + 1) & (nc - 1);
      nt[j] = s->tab[i];
    }
    free(s->tab);
    s->bytes += (nc - s->cap) * sizeof *nt;
    atomic_fetch_add(&kept, (nc - s->cap) * sizeof *nt);
    s->tab = nt;
    s->cap = nc;
  }
  size_t j = (size_t)(key1 * 0x9E3779B97F4A7C15ull) & (s->cap - 1);
  while (s->tab[j].key1 && s->tab[j].key1 != key1) j = (j + 1) & (s->cap - 1);
  if (!s->tab[j].key1) {
    s->tab[j].key1 = key1;
    s->used++;
  }
  return s->last = &s->tab[j];
}
