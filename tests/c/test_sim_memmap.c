/*
 * test_sim_memmap.c -- tests of the sim's memory map (sim/sim_memmap.h):
 * what the sim's allocations register, and where an access falls: inside a
 * live range, past its end (from inside, or starting after it), in freed
 * memory, nowhere; the per-caller cache and its invalidation; lookups from
 * threads while the host adds and forgets; a PTX module's variables
 * (cuModuleGetGlobal), in the map from load to unload.
 *
 * Made-up ranges live at 2^52 and above, where no Linux x86-64 or arm64
 * process maps memory, so they never meet the sim's real allocations.
 */
#include "sim_driver_harness.h"
#include "sim_driver_tests.h"
#include "sim/sim_memmap.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define FAKE ((uint64_t)1 << 52)

void test_memmap_device_memory(void) {
  CUstream s = mkstream_on(0);
  size_t before = sim_mem_live();
  CUdeviceptr p = 0, q = 0;
  OK(d.cuMemAllocAsync(&p, 400, s)); /* f32[100] */
  OK(d.cuMemAllocAsync(&q, 1000, s));
  CHECK(sim_mem_live() == before + 2);
  sim_mem_hit h;

  CHECK(sim_mem_lookup(p, 4, &h) == SIM_MEM_INSIDE);
  CHECK(h.base == p && h.size == 400 && h.ordinal == 0 && h.kind == SIM_MEM_DEVICE && h.offset == 0);
  CHECK(sim_mem_lookup(p + 396, 4, &h) == SIM_MEM_INSIDE); /* the last element */
  CHECK(h.offset == 396 && h.over == 0);
  CHECK(sim_mem_lookup(p, 400, &h) == SIM_MEM_INSIDE);     /* all of it */

  /* the requested size counts, not the sim's rounded block */
  CHECK(sim_mem_lookup(p + 400, 4, &h) == SIM_MEM_PAST_END); /* x[100]: 0 bytes past the end */
  CHECK(h.base == p && h.size == 400 && h.offset == 400 && h.over == 4);
  CHECK(sim_mem_lookup(p + 398, 4, &h) == SIM_MEM_PAST_END); /* straddles the end by 2 */
  CHECK(h.base == p && h.offset == 398 && h.over == 2);
  CHECK(sim_mem_lookup(p, 401, &h) == SIM_MEM_PAST_END);
  CHECK(h.over == 1);

  CHECK(sim_mem_lookup(q + 10, 8, &h) == SIM_MEM_INSIDE);
  CHECK(h.base == q && h.size == 1000 && h.offset == 10);

  /* freed: once the stream reaches the free (work queued before it may still use the memory) */
  OK(d.cuMemFreeAsync(p, s));
  OK(d.cuStreamSynchronize(s));
  CHECK(sim_mem_live() == before + 1);
  CHECK(sim_mem_lookup(p + 8, 4, &h) == SIM_MEM_FREED);
  CHECK(h.base == p && h.size == 400 && h.offset == 8 && h.ordinal == 0);
  CHECK(sim_mem_lookup(q, 4, &h) == SIM_MEM_INSIDE); /* the other stays */

  OK(d.cuMemFreeAsync(q, s));
  OK(d.cuStreamSynchronize(s));
  CHECK(sim_mem_lookup(q + 999, 1, &h) == SIM_MEM_FREED);
  CHECK(sim_mem_live() == before);

  /* device 1's memory says so */
  CUstream s1 = mkstream_on(1);
  OK(d.cuMemAllocAsync(&p, 64, s1));
  CHECK(sim_mem_lookup(p, 64, &h) == SIM_MEM_INSIDE && h.ordinal == 1);
  OK(d.cuMemFreeAsync(p, s1));
  OK(d.cuStreamSynchronize(s1));
  OK(d.cuStreamDestroy(s1));
  use_ctx(0);
  OK(d.cuStreamDestroy(s));
}

void test_memmap_host_memory(void) {
  use_ctx(0);
  void *h0 = NULL;
  OK(d.cuMemHostAlloc(&h0, 100, 0));
  sim_mem_hit h;
  CHECK(sim_mem_lookup((uintptr_t)h0 + 96, 4, &h) == SIM_MEM_INSIDE);
  CHECK(h.kind == SIM_MEM_HOST && h.ordinal == -1 && h.size == 100);
  CHECK(sim_mem_lookup((uintptr_t)h0 + 100, 1, &h) == SIM_MEM_PAST_END);
  OK(d.cuMemFreeHost(h0));
  CHECK(sim_mem_lookup((uintptr_t)h0, 1, &h) == SIM_MEM_FREED && h.kind == SIM_MEM_HOST);
}

void test_memmap_ranges(void) {
  sim_mem_hit h;
  /* three ranges added out of order, with gaps */
  CHECK(sim_mem_add(FAKE + 0x20000, 0x100, 0, SIM_MEM_GLOBAL) == 0);
  CHECK(sim_mem_add(FAKE, 0x1000, 1, SIM_MEM_DEVICE) == 0);
  CHECK(sim_mem_add(FAKE + 0x1000, 0x10, 0, SIM_MEM_DEVICE) == 0); /* adjacent to the first */
  CHECK(sim_mem_lookup(FAKE + 0xfff, 1, &h) == SIM_MEM_INSIDE && h.base == FAKE && h.ordinal == 1);
  CHECK(sim_mem_lookup(FAKE + 0x1000, 1, &h) == SIM_MEM_INSIDE && h.base == FAKE + 0x1000);
  /* an access that starts in one range and runs into the next is past the first's end */
  CHECK(sim_mem_lookup(FAKE + 0xffe, 4, &h) == SIM_MEM_PAST_END && h.base == FAKE && h.over == 2);
  CHECK(sim_mem_lookup(FAKE + 0x20080, 4, &h) == SIM_MEM_INSIDE && h.kind == SIM_MEM_GLOBAL);
  /* past the end, starting after it: near is named, far is unknown */
  CHECK(sim_mem_lookup(FAKE + 0x1010 + 64, 4, &h) == SIM_MEM_PAST_END);
  CHECK(h.base == FAKE + 0x1000 && h.offset == 0x10 + 64 && h.over == 68);
  CHECK(sim_mem_lookup(FAKE + 0x20100 + SIM_MEM_NEAR, 4, &h) == SIM_MEM_UNKNOWN);
  /* before every range, and at the very top of the address space */
  CHECK(sim_mem_lookup(FAKE - 4, 4, &h) == SIM_MEM_UNKNOWN);
  CHECK(sim_mem_lookup(8, 4, &h) == SIM_MEM_UNKNOWN);
  CHECK(sim_mem_lookup(UINT64_MAX - 1, 8, &h) == SIM_MEM_UNKNOWN);
  CHECK(sim_mem_lookup(FAKE + 0xf00, (size_t)-1, &h) == SIM_MEM_PAST_END); /* the end wraps: still past it */

  /* forgetting: unknown bases are refused; a freed range is named as freed,
   * a live neighbour stays, and freed memory reused by a new range is the
   * new range's */
  CHECK(sim_mem_forget(FAKE + 8) == -1);
  CHECK(sim_mem_forget(FAKE + 0x1000) == 0);
  CHECK(sim_mem_forget(FAKE + 0x1000) == -1);
  CHECK(sim_mem_lookup(FAKE + 0x1004, 4, &h) == SIM_MEM_FREED && h.base == FAKE + 0x1000 && h.size == 0x10);
  CHECK(sim_mem_lookup(FAKE + 0x10, 4, &h) == SIM_MEM_INSIDE && h.base == FAKE);
  CHECK(sim_mem_add(FAKE + 0x1000, 0x8, 0, SIM_MEM_DEVICE) == 0);
  CHECK(sim_mem_lookup(FAKE + 0x1004, 4, &h) == SIM_MEM_INSIDE && h.size == 0x8);
  /* beyond the new one, inside the old: the new one's memory, reused, speaks */
  CHECK(sim_mem_lookup(FAKE + 0x100c, 4, &h) == SIM_MEM_PAST_END && h.base == FAKE + 0x1000 && h.offset == 0xc);
  CHECK(sim_mem_forget(FAKE + 0x1000) == 0);
  CHECK(sim_mem_forget(FAKE) == 0);
  CHECK(sim_mem_forget(FAKE + 0x20000) == 0);

  /* the history is bounded: the oldest freed ranges are let go */
  for (uint64_t i = 0; i <= SIM_MEM_HISTORY; i++) {
    CHECK(sim_mem_add(FAKE + 0x100000 + i * 0x100, 0x10, 0, SIM_MEM_DEVICE) == 0);
    CHECK(sim_mem_forget(FAKE + 0x100000 + i * 0x100) == 0);
  }
  CHECK(sim_mem_lookup(FAKE + 0x100000, 4, &h) == SIM_MEM_UNKNOWN);             /* the first: gone */
  CHECK(sim_mem_lookup(FAKE + 0x100000 + 0x1000, 4, &h) == SIM_MEM_FREED);      /* the 17th: kept */
  CHECK(sim_mem_lookup(FAKE + 0x100000 + SIM_MEM_HISTORY * 0x100, 4, &h) == SIM_MEM_FREED);
}

void test_memmap_cache(void) {
  sim_mem_cache c = {0};
  sim_mem_hit h;
  CHECK(sim_mem_add(FAKE + 0x200000, 0x100, 0, SIM_MEM_DEVICE) == 0);
  CHECK(sim_mem_add(FAKE + 0x300000, 0x100, 1, SIM_MEM_DEVICE) == 0);
  CHECK(sim_mem_lookup_cached(&c, FAKE + 0x200010, 4, &h) == SIM_MEM_INSIDE);
  CHECK(c.way[0].base == FAKE + 0x200000 && c.way[0].end == FAKE + 0x200100);
  CHECK(sim_mem_lookup_cached(&c, FAKE + 0x2000fc, 4, &h) == SIM_MEM_INSIDE && h.offset == 0xfc && h.size == 0x100);
  /* the cache does not answer for what lies outside its range */
  CHECK(sim_mem_lookup_cached(&c, FAKE + 0x2000fe, 4, &h) == SIM_MEM_PAST_END && h.over == 2);
  CHECK(sim_mem_lookup_cached(&c, FAKE + 0x300000, 4, &h) == SIM_MEM_INSIDE && h.ordinal == 1);
  CHECK(c.way[1].base == FAKE + 0x300000 && c.next == 2); /* the newest hit, beside the first */
  /* the ranges a kernel alternates between stay cached: no lookup under the lock */
  uint64_t gen = c.way[0].gen;
  CHECK(sim_mem_lookup_cached(&c, FAKE + 0x200020, 4, &h) == SIM_MEM_INSIDE && h.ordinal == 0 && c.next == 2);
  /* adding keeps a cached hit valid; forgetting its range invalidates it */
  CHECK(sim_mem_add(FAKE + 0x400000, 0x100, 0, SIM_MEM_DEVICE) == 0);
  CHECK(sim_mem_lookup_cached(&c, FAKE + 0x300004, 4, &h) == SIM_MEM_INSIDE && c.way[1].gen == gen && c.next == 2);
  CHECK(sim_mem_forget(FAKE + 0x300000) == 0);
  CHECK(sim_mem_lookup_cached(&c, FAKE + 0x300004, 4, &h) == SIM_MEM_FREED);
  CHECK(sim_mem_lookup_cached(&c, FAKE + 0x200004, 4, &h) == SIM_MEM_INSIDE && c.next == 3); /* looked up again */
  /* a fifth range takes the oldest way */
  for (int i = 0; i < SIM_MEM_CACHE_WAYS; i++) {
    uint64_t b = FAKE + 0x500000 + (uint64_t)i * 0x1000;
    CHECK(sim_mem_add(b, 0x100, 0, SIM_MEM_DEVICE) == 0);
    CHECK(sim_mem_lookup_cached(&c, b, 4, &h) == SIM_MEM_INSIDE);
  }
  CHECK(c.way[3].base == FAKE + 0x500000 && c.way[2].base == FAKE + 0x503000);
  for (int i = 0; i < SIM_MEM_CACHE_WAYS; i++) CHECK(sim_mem_forget(FAKE + 0x500000 + (uint64_t)i * 0x1000) == 0);
  CHECK(sim_mem_forget(FAKE + 0x200000) == 0);
  CHECK(sim_mem_forget(FAKE + 0x400000) == 0);
}

/* Readers look up a range that stays, with and without a cache, and one the
 * host forgets meanwhile, while the host adds and forgets thousands of
 * others around them. */
typedef struct {
  atomic_int stop;
  atomic_int bad;
  atomic_long lookups;
} race;

#define STAY (FAKE + 0x8000000)
#define GOES (FAKE + 0x9000000)

static void *reader(void *p) {
  race *r = p;
  sim_mem_cache c = {0};
  sim_mem_hit h;
  long n = 0;
  while (!atomic_load(&r->stop) || n < 1000) {
    uint64_t off = (uint64_t)(n * 8) % 0x1000;
    if (sim_mem_lookup_cached(&c, STAY + off, 8, &h) != SIM_MEM_INSIDE || h.base != STAY || h.offset != off)
      atomic_fetch_add(&r->bad, 1);
    if (sim_mem_lookup(STAY + off, 8, &h) != SIM_MEM_INSIDE || h.size != 0x1000) atomic_fetch_add(&r->bad, 1);
    sim_mem_where w = sim_mem_lookup(GOES + 4, 4, &h);
    if (!((w == SIM_MEM_INSIDE || w == SIM_MEM_FREED) && h.base == GOES && h.size == 64)) atomic_fetch_add(&r->bad, 1);
    n++;
  }
  atomic_fetch_add(&r->lookups, n);
  return NULL;
}

void test_memmap_concurrent(void) {
  race r = {0};
  CHECK(sim_mem_add(STAY, 0x1000, 0, SIM_MEM_DEVICE) == 0);
  CHECK(sim_mem_add(GOES, 64, 0, SIM_MEM_DEVICE) == 0);
  pthread_t th[4];
  for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, reader, &r);
  for (uint64_t round = 0; round < 20; round++) {
    for (uint64_t i = 0; i < 150; i++) /* below and above the watched ranges */
      CHECK(sim_mem_add(FAKE + 0x4000000 + (round * 150 + i) * 0x100, 0x80, 0, SIM_MEM_DEVICE) == 0 &&
            sim_mem_add(FAKE + 0xa000000 + (round * 150 + i) * 0x100, 0x80, 1, SIM_MEM_DEVICE) == 0);
    for (uint64_t i = 0; i < 150; i++)
      CHECK(sim_mem_forget(FAKE + 0x4000000 + (round * 150 + i) * 0x100) == 0 &&
            sim_mem_forget(FAKE + 0xa000000 + (round * 150 + i) * 0x100) == 0);
    if (round == 10) CHECK(sim_mem_forget(GOES) == 0);
  }
  atomic_store(&r.stop, 1);
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  CHECK(atomic_load(&r.bad) == 0);
  CHECK(atomic_load(&r.lookups) >= 4000);
  CHECK(sim_mem_forget(STAY) == 0);
}

/* A PTX module's variables, as NVRTC declares them: laid out and
 * initialised at load, found by cuModuleGetGlobal, in the map until unload. */
void test_memmap_module_globals(void) {
  static const char ptx[] =
      ".version 9.0\n.target sm_90\n.address_size 64\n"
      "// .global .u32 in_a_comment;\n"
      ".const .align 4 .f32 scale;\n"
      ".const .align 8 .b8 dd[16] = {0, 0, 0, 0, 0, 0, 248, 63, 0, 0, 0, 0, 0, 0, 0, 192};\n"
      ".global .align 4 .b8 table[16] = {1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4};\n"
      ".global .align 8 .u64 big = 4886718345;\n"
      ".global .align 8 .u64 ptr = generic(table)+4;\n"
      ".visible .global .align 4 .f32 v[3] = {0f3F800000, 0fC0000000};\n"
      ".global .align 2 .s16 neg[2] = {-2, 7};\n"
      ".extern .global .align 4 .u32 elsewhere;\n"
      ".global .texref tex;\n"
      ".visible .entry k(\n.param .u64 k_param_0\n)\n{\n.reg .b32 %r<2>;\n"
      ".global .u32 not_top_level;\nret;\n}\n";
  use_ctx(0);
  CUmodule m = NULL;
  OK(d.cuModuleLoadData(&m, ptx));
  CUdeviceptr p = 0, t = 0;
  size_t n = 0;
  OK(d.cuModuleGetGlobal(&p, &n, m, "scale"));
  CHECK(n == 4 && p % 4 == 0 && *(const float *)(uintptr_t)p == 0.0f); /* no initializer: zero */
  OK(d.cuModuleGetGlobal(&p, &n, m, "dd"));
  CHECK(n == 16 && p % 8 == 0 && ((const double *)(uintptr_t)p)[0] == 1.5 && ((const double *)(uintptr_t)p)[1] == -2.0);
  OK(d.cuModuleGetGlobal(&t, &n, m, "table"));
  const int32_t *ti = (const int32_t *)(uintptr_t)t;
  CHECK(n == 16 && ti[0] == 1 && ti[1] == 2 && ti[2] == 3 && ti[3] == 4);
  OK(d.cuModuleGetGlobal(&p, &n, m, "big"));
  CHECK(n == 8 && *(const uint64_t *)(uintptr_t)p == 4886718345ull);
  OK(d.cuModuleGetGlobal(&p, &n, m, "ptr"));
  CHECK(n == 8 && *(const uint64_t *)(uintptr_t)p == t + 4);
  OK(d.cuModuleGetGlobal(&p, &n, m, "v"));
  const float *vf = (const float *)(uintptr_t)p;
  CHECK(n == 12 && vf[0] == 1.0f && vf[1] == -2.0f && vf[2] == 0.0f);
  OK(d.cuModuleGetGlobal(&p, NULL, m, "neg"));
  CHECK(((const int16_t *)(uintptr_t)p)[0] == -2 && ((const int16_t *)(uintptr_t)p)[1] == 7);
  CHECK_RC(d.cuModuleGetGlobal(&p, &n, m, "missing"), CUDA_ERROR_NOT_FOUND);
  CHECK_RC(d.cuModuleGetGlobal(&p, &n, m, "in_a_comment"), CUDA_ERROR_NOT_FOUND);
  CHECK_RC(d.cuModuleGetGlobal(&p, &n, m, "elsewhere"), CUDA_ERROR_NOT_FOUND);    /* no storage here */
  CHECK_RC(d.cuModuleGetGlobal(&p, &n, m, "not_top_level"), CUDA_ERROR_NOT_FOUND);
  CHECK_RC(d.cuModuleGetGlobal(&p, &n, m, "tex"), CUDA_ERROR_NOT_SUPPORTED);     /* named, not readable */
  CHECK_RC(d.cuModuleGetGlobal(&p, &n, NULL, "big"), CUDA_ERROR_INVALID_VALUE);

  sim_mem_hit h;
  CHECK(sim_mem_lookup(t + 12, 4, &h) == SIM_MEM_INSIDE && h.kind == SIM_MEM_GLOBAL && h.size == 16 && h.ordinal == 0);
  CHECK(sim_mem_lookup(t + 14, 4, &h) == SIM_MEM_PAST_END && h.base == t && h.over == 2);
  OK(d.cuModuleUnload(m));
  CHECK(sim_mem_lookup(t, 4, &h) == SIM_MEM_FREED && h.kind == SIM_MEM_GLOBAL);
}
