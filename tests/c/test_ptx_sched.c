/*
 * test_ptx_sched.c -- the interpreter's schedules (tests/ptx/schedule.cu):
 * the fixed one runs blocks, warps and the lanes of an atomic in order, the
 * same every run; a random one permutes all three, the same for the same
 * seed and differently for another, running every thread once; a race-free
 * kernel gives the same result under every schedule.
 */

#include "ptx_harness.h"

enum { BLOCKS = 37, THREADS = 64, N = BLOCKS * THREADS };

/* The tickets each thread drew under a schedule (random with `seed`, or
 * fixed when random is 0). */
static void tickets(const sim_ptx_module *m, int random, uint64_t seed, unsigned *out) {
  unsigned counter = 0, *pc = &counter, *po = out;
  registry r = {0};
  add_buffer(&r, "counter", &counter, sizeof counter);
  add_buffer(&r, "out", out, N * sizeof *out);
  void *params[] = {&pc, &po};
  sim_ptx_launch l = {.grid = {BLOCKS, 1, 1}, .block = {THREADS, 1, 1}, .params = params, .check = check_access,
                      .user = &r, .schedule = random ? SIM_PTX_SCHED_RANDOM : SIM_PTX_SCHED_FIXED, .seed = seed};
  char err[512];
  memset(out, 0xff, N * sizeof *out);
  CHECK(sim_ptx_run(m, sim_ptx_find(m, "tickets"), &l, err, sizeof err) == 0, "tickets: %s", err);
  CHECK(counter == N, "every thread took a ticket: %u", counter);
}

/* Each ticket drawn once: every thread ran once. */
static int is_permutation(const unsigned *out) {
  static unsigned char seen[N];
  memset(seen, 0, sizeof seen);
  for (int i = 0; i < N; i++) {
    if (out[i] >= N || seen[out[i]]) return 0;
    seen[out[i]] = 1;
  }
  return 1;
}

static void test_tickets(void) {
  sim_ptx_module *m = load_fixture("schedule");
  static unsigned fixed[N], again[N], a[N], b[N];
  tickets(m, 0, 0, fixed);
  int identity = 1;
  for (int i = 0; i < N; i++) identity &= fixed[i] == (unsigned)i;
  CHECK(identity, "the fixed schedule: thread i of the grid draws ticket i");
  tickets(m, 0, 0, again);
  CHECK(memcmp(fixed, again, sizeof fixed) == 0, "the fixed schedule repeats");

  tickets(m, 1, 42, a);
  tickets(m, 1, 42, again);
  CHECK(is_permutation(a), "random:42 runs every thread once");
  CHECK(memcmp(a, again, sizeof a) == 0, "random:42 repeats");
  CHECK(memcmp(a, fixed, sizeof a) != 0, "random:42 differs from the fixed schedule");
  tickets(m, 1, 43, b);
  CHECK(is_permutation(b), "random:43 runs every thread once");
  CHECK(memcmp(a, b, sizeof a) != 0, "random:43 differs from random:42");

  /* what is permuted: the blocks (by the first ticket of each), the warps
   * of a block (warp 1 before warp 0 in some block), the lanes of one
   * atomic (a warp's tickets out of order) */
  int blocks_moved = 0, warps_swapped = 0, lanes_shuffled = 0;
  for (int blk = 0; blk < BLOCKS; blk++) {
    const unsigned *t = a + blk * THREADS;
    unsigned lo[2] = {UINT32_MAX, UINT32_MAX};
    for (int i = 0; i < THREADS; i++) {
      if (t[i] < lo[i / 32]) lo[i / 32] = t[i];
      if (i % 32 && t[i] < t[i - 1]) lanes_shuffled = 1;
    }
    if ((lo[0] < lo[1] ? lo[0] : lo[1]) / THREADS != (unsigned)blk) blocks_moved = 1;
    if (lo[1] < lo[0]) warps_swapped = 1;
  }
  CHECK(blocks_moved && warps_swapped && lanes_shuffled, "random:42 permutes blocks %d, warps %d, lanes %d", blocks_moved,
        warps_swapped, lanes_shuffled);
  sim_ptx_free(m);
}

/* A kernel without races: the same sums whatever the schedule. */
static void test_race_free(void) {
  sim_ptx_module *m = load_fixture("schedule");
  enum { B = 9, T = 256 };
  static int x[B * T];
  for (int i = 0; i < B * T; i++) x[i] = (int)(rnd() % 2001) - 1000;
  int part[B], total, want_part[B], want_total;
  registry r = {0};
  add_buffer(&r, "x", x, sizeof x);
  add_buffer(&r, "part", part, sizeof part);
  add_buffer(&r, "total", &total, sizeof total);
  int *px = x, *pp = part, *pt = &total;
  void *params[] = {&px, &pp, &pt};
  char err[512];
  for (int s = -1; s < 8; s++) {
    total = 0;
    memset(part, 0, sizeof part);
    sim_ptx_launch l = {.grid = {B, 1, 1}, .block = {T, 1, 1}, .params = params, .check = check_access, .user = &r,
                        .schedule = s < 0 ? SIM_PTX_SCHED_FIXED : SIM_PTX_SCHED_RANDOM, .seed = (uint64_t)s * 7919};
    CHECK(sim_ptx_run(m, sim_ptx_find(m, "blocksum"), &l, err, sizeof err) == 0, "blocksum: %s", err);
    if (s < 0) {
      memcpy(want_part, part, sizeof part);
      want_total = total;
      int sum = 0;
      for (int i = 0; i < B * T; i++) sum += x[i];
      CHECK(total == sum, "blocksum's total %d, C's %d", total, sum);
    } else {
      CHECK(total == want_total && memcmp(part, want_part, sizeof part) == 0, "blocksum under seed %d: %d, fixed %d", s * 7919,
            total, want_total);
    }
  }
  sim_ptx_free(m);
}

void test_ptx_sched(int *nchecks, int *nfailures);
void test_ptx_sched(int *nchecks, int *nfailures) {
  test_tickets();
  test_race_free();
  *nchecks += checks;
  *nfailures += failures;
}
