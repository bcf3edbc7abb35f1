/*
 * test_ptx_race.c -- racecheck (src/driver/sim/ptx_race.c) on the kernels of
 * tests/ptx/race.cu: a block sum missing its barrier, lanes of a warp reading
 * each other's element without __syncwarp, lanes storing different values
 * to one word, blocks reading each other's elements, and a plain read of an
 * atomic counter before the barrier are faults naming both threads, both
 * accesses and both lines; their correct twins (the barrier, __syncwarp,
 * shuffles, one value stored, fence-then-atomic between blocks) run clean,
 * and the racy ones run with racecheck off.
 */

#include "ptx_harness.h"
#include "sim/ptx_race_shadow.h"

/* Launches kernel k of m with one block of `block` threads per `grid`;
 * 0 or -1 with err. */
static int run(const sim_ptx_module *m, const char *k, unsigned grid, unsigned block, void **params, registry *r,
               char *err, size_t errlen) {
  return launch(m, k, grid, 1, block, 1, 0, params, r, err, errlen, NULL);
}

static void test_block_sums(const sim_ptx_module *m) {
  enum { B = 128, G = 3 };
  float in[B * G], out[G];
  for (int i = 0; i < B * G; i++) in[i] = (float)(i % 7);
  registry r = {0};
  add_buffer(&r, "in", in, sizeof in);
  add_buffer(&r, "out", out, sizeof out);
  float *pi = in, *po = out;
  void *params[] = {&pi, &po};
  char err[512];
  const char *clean[] = {"sum_ok", "sum_shfl"};
  for (int k = 0; k < 2; k++) {
    memset(out, 0, sizeof out);
    CHECK(run(m, clean[k], G, B, params, &r, err, sizeof err) == 0, "%s: %s", clean[k], err);
    for (int b = 0; b < G; b++) {
      float want = 0;
      for (int t = 0; t < B; t++) want += in[b * B + t];
      CHECK(out[b] == want, "%s: block %d sums %g, not %g", clean[k], b, out[b], want);
    }
  }
  /* lanes 0-15 read what lanes 16-31 wrote in the loop's step before */
  int rc = run(m, "sum_racy", G, B, params, &r, err, sizeof err);
  CHECK(rc == -1 && strcmp(err, "data race on __shared__ 's' at byte 64: read 4 bytes, which thread (16,0,0) of block "
                                "(0,0,0) wrote (4 bytes at race.cu:9) with no barrier or __syncwarp between them "
                                "(kernel 'sum_racy' at race.cu:9, thread (0,0,0) of block (0,0,0))") == 0,
        "a block sum missing its barrier: %s", err);
  no_racecheck = 1;
  CHECK(run(m, "sum_racy", G, B, params, &r, err, sizeof err) == 0, "racecheck off: %s", err);
  no_racecheck = 0;
}

static void test_warp(const sim_ptx_module *m) {
  enum { B = 64 };
  int in[B], out[B];
  for (int i = 0; i < B; i++) in[i] = i * 3 + 1;
  registry r = {0};
  add_buffer(&r, "in", in, sizeof in);
  add_buffer(&r, "out", out, sizeof out);
  int *pi = in, *po = out, sync = 1;
  void *params[] = {&pi, &po, &sync};
  char err[512];
  CHECK(run(m, "neighbour", 1, B, params, &r, err, sizeof err) == 0, "after __syncwarp: %s", err);
  int wrong = 0;
  for (int i = 0; i < B; i++) wrong += out[i] != in[i ^ 1];
  CHECK(wrong == 0, "neighbours: %d wrong", wrong);
  sync = 0;
  int rc = run(m, "neighbour", 1, B, params, &r, err, sizeof err);
  CHECK(rc == -1 && strcmp(err, "data race on __shared__ 's' at byte 4: read 4 bytes, which thread (1,0,0) of block "
                                "(0,0,0) wrote (4 bytes at race.cu:45) with no barrier or __syncwarp between them "
                                "(kernel 'neighbour' at race.cu:47, thread (0,0,0) of block (0,0,0))") == 0,
        "lanes without __syncwarp: %s", err);

  /* lanes of one store to one word: the same value is no race, values that differ are */
  int differ = 0;
  void *p2[] = {&po, &differ};
  CHECK(run(m, "one_word", 1, B, p2, &r, err, sizeof err) == 0 && out[0] == 7 && out[B - 1] == 7, "one value: %s", err);
  differ = 1;
  rc = run(m, "one_word", 1, B, p2, &r, err, sizeof err);
  CHECK(rc == -1 && strcmp(err, "data race on __shared__ 's' at byte 0: wrote 4 bytes, which thread (0,0,0) of block "
                                "(0,0,0) wrote (4 bytes at race.cu:53) with no barrier or __syncwarp between them "
                                "(kernel 'one_word' at race.cu:53, thread (1,0,0) of block (0,0,0))") == 0,
        "lanes storing different values to one word: %s", err);
}

static void test_global(const sim_ptx_module *m) {
  enum { G = 4, B = 64 };
  int data[G] = {0}, out[G] = {0};
  registry r = {0};
  add_buffer(&r, "data", data, sizeof data);
  add_buffer(&r, "out", out, sizeof out);
  int *pd = data, *po = out;
  void *params[] = {&pd, &po};
  char err[512], want[512];
  int rc = run(m, "next_block", G, 32, params, &r, err, sizeof err);
  snprintf(want, sizeof want, "data race on global memory at 0x%llx: wrote 4 bytes, which thread (0,0,0) of block (0,0,0) "
           "read (4 bytes at race.cu:63); blocks of a launch are not ordered (kernel 'next_block' at race.cu:61, thread "
           "(0,0,0) of block (1,0,0))", (unsigned long long)(uintptr_t)&data[1]);
  CHECK(rc == -1 && strcmp(err, want) == 0, "blocks reading each other's elements: %s", err);
  /* one block: its threads are ordered by the barrier */
  CHECK(run(m, "next_block", 1, 32, params, &r, err, sizeof err) == 0, "one block: %s", err);

  int in[G * B], part[G], total = -1, early = 0, count = 0;
  unsigned ticket = 0;
  for (int i = 0; i < G * B; i++) count += (in[i] = (int)(rnd() % 3) - 1) > 0;
  registry r2 = {0};
  add_buffer(&r2, "in", in, sizeof in);
  add_buffer(&r2, "part", part, sizeof part);
  add_buffer(&r2, "ticket", &ticket, sizeof ticket);
  add_buffer(&r2, "total", &total, sizeof total);
  int *pi = in, *pp = part, *pt = &total;
  unsigned *pk = &ticket;
  void *p2[] = {&pi, &pp, &pk, &pt, &early};
  CHECK(run(m, "last_block", G, B, p2, &r2, err, sizeof err) == 0, "the last block adds up after a fence: %s", err);
  CHECK(total == count && ticket == 0, "last block: total %d, not %d (ticket %u)", total, count, ticket);
  early = 1;
  rc = run(m, "last_block", G, B, p2, &r2, err, sizeof err);
  CHECK(rc == -1 && strstr(err, "data race on __shared__ 'count' at byte 0: ") &&
            strstr(err, ": read 4 bytes, which thread (") && strstr(err, " atomically wrote (4 bytes at race.cu:73)") &&
            strstr(err, "(kernel 'last_block' at race.cu:74, thread (40,0,0) of block (0,0,0))"),
        "a plain read of an atomic counter before the barrier: %s", err);
}

/* A whole warp's vector accesses of consecutive memory, which racecheck
 * takes a word at a time (sim_ptx_race_run): warps 0 and 1 of a block each
 * on the 512 bytes at p (lane l's 16 at p + 16 * l), in global memory or
 * 16 KiB into shared memory (more words than a chunk of global memory's
 * shadow), by `mode`: 0 both store; 1 warp 0 stores, warp 1 loads; 2 the
 * same with a barrier between; 3 and 4 those two in shared memory; 5 each
 * thread loads and stores its own 16 bytes (at p + 16 * tid); 6 and 7 only
 * warp 0, or only warp 1, stores; 8 both load from shared memory. */
static const char *runs_ptx =
    ".version 9.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry runs(.param .u64 po, .param .u32 mode)\n{\n"
    "  .reg .pred %p<8>;\n  .reg .b32 %r<16>;\n  .reg .b64 %rd<8>;\n"
    "  .shared .align 16 .b8 sh[16896];\n"
    "  ld.param.u64 %rd1, [po];\n  ld.param.u32 %r1, [mode];\n"
    "  mov.u32 %r2, %tid.x;\n  and.b32 %r3, %r2, 31;\n  shr.u32 %r4, %r2, 5;\n"
    "  mul.wide.u32 %rd2, %r3, 16;\n  add.u64 %rd3, %rd1, %rd2;\n"
    "  mov.u64 %rd4, sh;\n  add.u64 %rd4, %rd4, 16384;\n  add.u64 %rd5, %rd4, %rd2;\n"
    "  setp.eq.u32 %p1, %r4, 0;\n"
    "  setp.eq.u32 %p2, %r1, 5;\n  @%p2 bra OWN;\n"
    "  setp.eq.u32 %p2, %r1, 8;\n  @%p2 bra READ;\n"
    "  setp.ge.u32 %p2, %r1, 6;\n  @%p2 bra ONE;\n"
    "  setp.ge.u32 %p2, %r1, 3;\n  @%p2 bra SHARED;\n"
    "  setp.eq.u32 %p3, %r1, 0;\n  @%p3 st.global.v4.u32 [%rd3], {%r2, %r2, %r2, %r2};\n  @%p3 ret;\n"
    "  @%p1 st.global.v4.u32 [%rd3], {%r2, %r2, %r2, %r2};\n"
    "  setp.eq.u32 %p3, %r1, 2;\n  @%p3 bar.sync 0;\n"
    "  @!%p1 ld.global.v4.u32 {%r6, %r7, %r8, %r9}, [%rd3];\n  ret;\n"
    "SHARED:\n"
    "  @%p1 st.shared.v4.u32 [%rd5], {%r2, %r2, %r2, %r2};\n"
    "  setp.eq.u32 %p3, %r1, 4;\n  @%p3 bar.sync 0;\n"
    "  @!%p1 ld.shared.v4.u32 {%r6, %r7, %r8, %r9}, [%rd5];\n  ret;\n"
    "OWN:\n"
    "  mul.wide.u32 %rd6, %r2, 16;\n  add.u64 %rd7, %rd1, %rd6;\n"
    "  ld.global.v4.u32 {%r6, %r7, %r8, %r9}, [%rd7];\n  add.u32 %r6, %r6, 1;\n"
    "  st.global.v4.u32 [%rd7], {%r6, %r7, %r8, %r9};\n  ret;\n"
    "READ:\n"
    "  ld.shared.v4.u32 {%r6, %r7, %r8, %r9}, [%rd5];\n  ret;\n"
    "ONE:\n"
    "  setp.eq.u32 %p3, %r1, 6;\n  xor.pred %p4, %p3, %p1;\n"
    "  @!%p4 st.global.v4.u32 [%rd3], {%r2, %r2, %r2, %r2};\n  ret;\n}\n";

static void test_runs(void) {
  char err[512];
  sim_ptx_module *m = sim_ptx_load(runs_ptx, err, sizeof err);
  CHECK(m != NULL, "runs: %s", err);
  if (!m) return;
  uint32_t buf[64 * 4];
  registry r = {0};
  add_buffer(&r, "buf", buf, sizeof buf);
  uint32_t *pb = buf, mode = 0;
  void *params[] = {&pb, &mode};
  const char *want[] = {"wrote 16 bytes, which thread (0,0,0) of block (0,0,0) wrote (16 bytes at PTX line",
                        "read 4 bytes, which thread (0,0,0) of block (0,0,0) wrote (16 bytes at PTX line", NULL,
                        "data race on __shared__ 'sh' at byte 16384: read 4 bytes, which thread (0,0,0) of block (0,0,0) "
                        "wrote (16 bytes at PTX line", NULL, NULL};
  for (mode = 0; mode <= 5; mode++) {
    memset(buf, 0, sizeof buf);
    int rc = run(m, "runs", 1, 64, params, &r, err, sizeof err);
    if (want[mode])
      CHECK(rc == -1 && strstr(err, want[mode]) && strstr(err, "with no barrier between them") &&
                strstr(err, "thread (32,0,0) of block (0,0,0))"),
            "runs, mode %u: %s", mode, rc ? err : "no race");
    else
      CHECK(rc == 0, "runs, mode %u: %s", mode, err);
  }
  CHECK(buf[0] == 1 && buf[4 * 63] == 1 && buf[1] == 0, "each thread's own 16 bytes: %u %u %u", buf[0], buf[4 * 63], buf[1]);
  /* launches are ordered: one's records never race with the next's */
  mode = 6;
  CHECK(run(m, "runs", 1, 64, params, &r, err, sizeof err) == 0, "runs, warp 0 stores: %s", err);
  mode = 7;
  CHECK(run(m, "runs", 1, 64, params, &r, err, sizeof err) == 0, "runs, then warp 1 stores: %s", err);
  CHECK(buf[0] == 32 && buf[4 * 31 + 3] == 63, "the second launch's stores: %u %u", buf[0], buf[4 * 31 + 3]);
  mode = 8;
  CHECK(run(m, "runs", 1, 64, params, &r, err, sizeof err) == 0, "runs, loads only: %s", err);
  sim_ptx_free(m);
}

/* Summaries: a whole warp's run over 128 aligned bytes (a segment) keeps
 * one record for the segment, which stands for each word's (its thread by
 * the word's lane). By mode: 0 warp 0 stores a word a lane, then thread 39
 * (lane 7 of warp 1) reads word 7; 1 warp 0 stores 16 bytes a lane (four
 * segments), then thread 33 reads word 38 (lane 9's); 2 warp 0 stores a
 * word a lane, lane 5 stores its word again (the segment's records
 * unfolded), then warp 1 loads the words; 3 the same with a barrier before
 * the loads; 4 warp 0 stores a word a lane, then warp 1 loads the words;
 * 5 thread 20 stores word 80 (in the third segment), then warp 1 stores 16
 * bytes a lane over it (its first two segments noted before the third
 * races). */
static const char *sums_ptx =
    ".version 9.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry sums(.param .u64 po, .param .u32 mode)\n{\n"
    "  .reg .pred %p<8>;\n  .reg .b32 %r<16>;\n  .reg .b64 %rd<8>;\n"
    "  ld.param.u64 %rd1, [po];\n  ld.param.u32 %r1, [mode];\n"
    "  mov.u32 %r2, %tid.x;\n  and.b32 %r3, %r2, 31;\n  shr.u32 %r4, %r2, 5;\n"
    "  setp.eq.u32 %p1, %r4, 0;\n"
    "  setp.eq.u32 %p2, %r1, 1;\n  @%p2 bra VEC;\n"
    "  setp.eq.u32 %p2, %r1, 5;\n  @%p2 bra PART;\n"
    "  mul.wide.u32 %rd2, %r3, 4;\n  add.u64 %rd3, %rd1, %rd2;\n"
    "  @%p1 st.global.u32 [%rd3], %r2;\n"
    "  setp.eq.u32 %p2, %r1, 0;\n  @%p2 bra WORDS;\n"
    "  setp.eq.u32 %p3, %r2, 5;\n  setp.lt.u32 %p5, %r1, 4;\n  and.pred %p3, %p3, %p5;\n"
    "  @%p3 st.global.u32 [%rd3], %r2;\n"
    "  setp.eq.u32 %p4, %r1, 3;\n  @%p4 bar.sync 0;\n"
    "  @!%p1 ld.global.u32 %r5, [%rd3];\n  ret;\n"
    "WORDS:\n"
    "  setp.eq.u32 %p3, %r2, 39;\n  @%p3 ld.global.u32 %r5, [%rd3];\n  ret;\n"
    "VEC:\n"
    "  mul.wide.u32 %rd2, %r3, 16;\n  add.u64 %rd3, %rd1, %rd2;\n"
    "  @%p1 st.global.v4.u32 [%rd3], {%r2, %r2, %r2, %r2};\n"
    "  setp.eq.u32 %p3, %r2, 33;\n  @%p3 ld.global.u32 %r5, [%rd1+152];\n  ret;\n"
    "PART:\n"
    "  mul.wide.u32 %rd2, %r3, 16;\n  add.u64 %rd3, %rd1, %rd2;\n"
    "  setp.eq.u32 %p3, %r2, 20;\n  @%p3 st.global.u32 [%rd1+320], %r2;\n"
    "  @!%p1 st.global.v4.u32 [%rd3], {%r2, %r2, %r2, %r2};\n  ret;\n}\n";

static void test_summaries(void) {
  char err[512];
  sim_ptx_module *m = sim_ptx_load(sums_ptx, err, sizeof err);
  CHECK(m != NULL, "sums: %s", err);
  if (!m) return;
  static _Alignas(128) uint32_t buf[4 * 64];
  registry r = {0};
  add_buffer(&r, "buf", buf, sizeof buf);
  uint32_t *pb = buf, mode = 0;
  void *params[] = {&pb, &mode};
  /* each twice: aligned (summaries) and 16 bytes on (no whole segment) */
  const char *want[] = {"read 4 bytes, which thread (7,0,0) of block (0,0,0) wrote (4 bytes",
                        "read 4 bytes, which thread (9,0,0) of block (0,0,0) wrote (16 bytes",
                        "read 4 bytes, which thread (0,0,0) of block (0,0,0) wrote (4 bytes", NULL,
                        "read 4 bytes, which thread (0,0,0) of block (0,0,0) wrote (4 bytes",
                        "wrote 16 bytes, which thread (20,0,0) of block (0,0,0) wrote (4 bytes"};
  for (int shift = 0; shift < 2; shift++)
    for (mode = 0; mode <= 5; mode++) {
      memset(buf, 0, sizeof buf);
      pb = buf + 4 * shift;
      int rc = run(m, "sums", 1, 64, params, &r, err, sizeof err);
      if (want[mode])
        CHECK(rc == -1 && strstr(err, want[mode]), "sums, mode %u, %d bytes on: %s", mode, 16 * shift,
              rc ? err : "no race");
      else
        CHECK(rc == 0, "sums, mode %u, %d bytes on: %s", mode, 16 * shift, err);
      if (mode == 5) /* the lanes before the racing one stored, as lane by lane */
        CHECK(pb[0] == 32 && pb[4 * 19 + 3] == 51 && pb[4 * 20] == 20 && pb[4 * 21] == 0,
              "sums, mode 5: %u %u %u %u", pb[0], pb[4 * 19 + 3], pb[4 * 20], pb[4 * 21]);
    }
  sim_ptx_free(m);
}

/* The thread's shadow of global memory: launches number their epochs on,
 * and the records stay for the next launch until they pass the cap. */
static void test_shadow(void) {
  uint32_t first = 0, again = 0;
  sim_ptx_shadow *s = sim_ptx_shadow_begin(&first);
  CHECK(s && first >= 1, "a shadow, first epoch %u", first);
  if (!s) return;
  sim_ptx_race_chunk *ch = sim_ptx_shadow_chunk(s, 0x10000);
  CHECK(ch && (ch->part[0] = sim_ptx_shadow_part(s)) != NULL, "a chunk and its first part");
  if (!ch || !ch->part[0]) return;
  ch->part[0][5].epoch = first + 2;
  sim_ptx_shadow_end(s, first + 9);
  CHECK(sim_ptx_shadow_begin(&again) == s && again == first + 10, "the next launch's first epoch: %u, not %u", again,
        first + 10);
  ch = sim_ptx_shadow_chunk(s, 0x10004);
  CHECK(ch && ch->part[0] && ch->part[0][5].epoch == first + 2, "the last launch's records kept");
  /* past the cap: everything gone at the launch's end, the epochs going on */
  size_t parts = SIM_PTX_SHADOW_MAX / (SIM_PTX_CHUNK_WORDS * sizeof(sim_ptx_race_acc)) + 1;
  for (size_t i = 0; i < parts; i++) {
    sim_ptx_race_chunk *c2 = sim_ptx_shadow_chunk(s, 0x100000000ull + (i << SIM_PTX_CHUNK_SHIFT));
    if (!c2 || !(c2->part[1] = sim_ptx_shadow_part(s))) {
      CHECK(0, "part %zu of %zu", i, parts);
      return;
    }
  }
  sim_ptx_shadow_end(s, again + 3);
  CHECK(sim_ptx_shadow_begin(&first) == s && first == again + 4, "after the cap, the first epoch %u", first);
  ch = sim_ptx_shadow_chunk(s, 0x10000);
  CHECK(ch && !ch->part[0], "past the cap the records are gone");
  sim_ptx_shadow_end(s, first);
}

void test_ptx_race(int *nchecks, int *nfailures);
void test_ptx_race(int *nchecks, int *nfailures) {
  sim_ptx_module *m = load_fixture("race");
  test_block_sums(m);
  test_warp(m);
  test_global(m);
  sim_ptx_free(m);
  test_runs();
  test_summaries();
  test_shadow();
  *nchecks += checks;
  *nfailures += failures;
}
