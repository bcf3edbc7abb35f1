/*
 * sim_memmap.h -- the sim's map of the memory a kernel may address: every
 * live device allocation (cuMemAllocAsync, the pools), pinned host memory
 * (all of it is mapped: the sim's devices address host memory directly) and
 * module variables, each with its range and device; and a bounded history of
 * the ranges freed last. sim_mem_lookup says where an access falls, for the
 * sim's memory checks.
 *
 * Thread-safe: workers look up while the host thread adds and forgets. A
 * lookup is a binary search under a read lock and allocates nothing; a
 * caller that looks up often (a kernel, per access) keeps a sim_mem_cache,
 * whose last hits (a kernel's few arrays) answer without the lock until a
 * range is forgotten.
 * Sizes are as requested (not rounded), so an access past a slice's last
 * byte is past the end even where the sim's block has room.
 */
#ifndef GPULUA_SIM_MEMMAP_H
#define GPULUA_SIM_MEMMAP_H

#include <stddef.h>
#include <stdint.h>

typedef enum { SIM_MEM_DEVICE, SIM_MEM_HOST, SIM_MEM_GLOBAL } sim_mem_kind;

/* Where an access falls. */
typedef enum {
  SIM_MEM_INSIDE,   /* wholly inside one live range */
  SIM_MEM_PAST_END, /* runs past the end of one: from inside it, or starting at most SIM_MEM_NEAR bytes after */
  SIM_MEM_FREED,    /* in a range freed recently (and in no live one) */
  SIM_MEM_UNKNOWN   /* none of these */
} sim_mem_where;

/* How far past a range's end an access may start and still be named as past
 * that range (farther, it is unknown). */
#define SIM_MEM_NEAR ((uint64_t)1 << 20)
/* How many freed ranges are remembered. */
#define SIM_MEM_HISTORY 4096

typedef struct sim_mem_hit {
  uint64_t base;  /* the range's first byte */
  size_t size;    /* its bytes */
  int ordinal;    /* its device, -1 for host memory */
  sim_mem_kind kind;
  uint64_t offset; /* the access's first byte from base (may be >= size past the end) */
  uint64_t over;   /* past the end: the access's bytes beyond the range's end */
} sim_mem_hit;

/* A caller's last hits (zero it before first use; one per thread). */
enum { SIM_MEM_CACHE_WAYS = 4 };
typedef struct sim_mem_cache {
  struct {
    uint64_t gen; /* the map's generation it was taken at (0: empty) */
    uint64_t base, end;
    int ordinal;
    sim_mem_kind kind;
  } way[SIM_MEM_CACHE_WAYS];
  unsigned next; /* the way the next miss fills */
} sim_mem_cache;

/* Record the live range [base, base + size) on device ordinal (-1: host):
 * 0, or -1 out of memory. A range must not overlap a live one. */
int sim_mem_add(uint64_t base, size_t size, int ordinal, sim_mem_kind kind);
/* The range at base is freed: from now on it is in the history. 0, or -1
 * when no live range starts at base. */
int sim_mem_forget(uint64_t base);
/* Where [addr, addr + bytes) falls (bytes >= 1); fills *hit (but for
 * unknown). */
sim_mem_where sim_mem_lookup(uint64_t addr, size_t bytes, sim_mem_hit *hit);
/* The same, answered from *c when the access lies in one of its last hits
 * and no range was forgotten since; a hit inside a range becomes one of c's
 * (in place of its oldest). */
sim_mem_where sim_mem_lookup_cached(sim_mem_cache *c, uint64_t addr, size_t bytes, sim_mem_hit *hit);
/* Whether a live range shares a byte with [base, base + size) (size >= 1):
 * 1 with such a range in *hit (offset and over 0), else 0. */
int sim_mem_overlap(uint64_t base, size_t size, sim_mem_hit *hit);
/* The number of live ranges (for tests). */
size_t sim_mem_live(void);

#endif
