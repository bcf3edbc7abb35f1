/*
 * ptx_sched.c -- the order a launch runs in. The fixed schedule runs blocks
 * in order (x fastest), the warps of a block in order from each barrier to
 * the next, and the lanes of one atomic instruction in order. The random
 * schedule (GPULUA_SIM_SCHEDULE=random:SEED) permutes all three: blocks by
 * a keyed permutation of their indices (no table, whatever the grid), the
 * warps afresh each time the block's warps are picked to run (at the start
 * and after each barrier releases), the lanes afresh at each atomic. Every
 * draw comes from one generator seeded with the seed, the kernel's name and
 * the launch's grid and block: a seed repeats a launch exactly, and a
 * kernel whose result depends on these orders shows it under some seeds.
 */

#include "ptx_exec.h"

/* splitmix64's finaliser: a 64-bit mix of x */
static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static uint64_t draw(sim_ptx_ctx *c) {
  c->rng += 0x9e3779b97f4a7c15ull;
  return mix(c->rng);
}

/* A draw from 0 to n-1 (n small: the bias is below 2^-50). */
static unsigned below(sim_ptx_ctx *c, unsigned n) { return (unsigned)(draw(c) % n); }

void sim_ptx_sched_start(sim_ptx_ctx *c) {
  c->random = c->l->schedule == SIM_PTX_SCHED_RANDOM;
  if (!c->random) return;
  uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a of the kernel's name */
  for (const char *s = c->kernel->name; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  for (int d = 0; d < 3; d++) h = mix(h ^ ((uint64_t)c->l->grid[d] << 32 | c->l->block[d]));
  c->rng = mix(c->l->seed) ^ h;
  c->block_key = draw(c);
}

/* A permutation of the 2^bits numbers below 2^bits (bits even): a
 * four-round Feistel network keyed by c->block_key. */
static uint64_t feistel(const sim_ptx_ctx *c, uint64_t x, int bits) {
  int half = bits / 2;
  uint64_t mask = (1ull << half) - 1, lo = x & mask, hi = x >> half;
  for (uint64_t r = 0; r < 4; r++) {
    uint64_t t = lo;
    lo = hi ^ (mix(lo ^ c->block_key ^ (r << 60)) & mask);
    hi = t;
  }
  return hi << half | lo;
}

uint64_t sim_ptx_sched_block(const sim_ptx_ctx *c, uint64_t i, uint64_t n) {
  if (!c->random || n < 2) return i;
  int bits = 2;
  while (bits < 64 && (n - 1) >> bits) bits += 2;
  /* cycle-walking: a permutation of 0..2^bits-1 restricted to 0..n-1 is
   * one of 0..n-1; n > 2^bits / 4, so a walk takes four steps on average */
  uint64_t x = i;
  do x = feistel(c, x, bits);
  while (x >= n);
  return x;
}

void sim_ptx_sched_warps(sim_ptx_ctx *c, unsigned *order, unsigned n) {
  for (unsigned i = 0; i < n; i++) order[i] = i;
  if (!c->random) return;
  for (unsigned i = n; i > 1; i--) { /* Fisher-Yates */
    unsigned j = below(c, i), t = order[i - 1];
    order[i - 1] = order[j];
    order[j] = t;
  }
}

int sim_ptx_sched_lanes(sim_ptx_ctx *c, uint32_t m, int *lanes) {
  int n = 0;
  SIM_LANES(m) lanes[n++] = l;
  if (!c->random) return n;
  for (int i = n; i > 1; i--) {
    int j = (int)below(c, (unsigned)i), t = lanes[i - 1];
    lanes[i - 1] = lanes[j];
    lanes[j] = t;
  }
  return n;
}
