/*
 * test_ptx.c -- the sim's PTX interpreter on a corpus of kernels
 * (tests/ptx/NAME.cu, their PTX as NVRTC emits it for compute_90): each result
 * against the same computation in C, faults with the messages they give,
 * and PTX the interpreter refuses at load naming what and where.
 *   test_ptx FIXTURE_DIR            the tests
 *   test_ptx FIXTURE_DIR --bench [KERNEL|all [THREADS [on|off]]]
 *                                   thread-instructions per second of saxpy
 *                                   and reduce (or KERNEL alone) over THREADS
 *                                   threads (2^20), with racecheck on, then
 *                                   off (or as the last word says)
 */

#include "ptx_harness.h"

#include <math.h>
#include <time.h>

const char *fixture_dir = "tests/ptx";
int no_racecheck;

void test_ptx_ops(int *nchecks, int *nfailures);
void test_ptx_kernels(int *nchecks, int *nfailures);
void test_ptx_half(int *nchecks, int *nfailures);
void test_ptx_printf(int *nchecks, int *nfailures);
void test_ptx_sched(int *nchecks, int *nfailures);
void test_ptx_race(int *nchecks, int *nfailures);
void test_ptx_regs(int *nchecks, int *nfailures);

static void test_saxpy(void) {
  sim_ptx_module *m = load_fixture("saxpy");
  enum { N = 100 };
  float x[N], y[N], y0[N], a = 1.5f;
  for (int i = 0; i < N; i++) x[i] = (float)(rnd() % 1000) / 7.0f, y0[i] = y[i] = (float)(rnd() % 1000) / 3.0f;
  registry r = {0};
  add_buffer(&r, "x", x, sizeof x);
  add_buffer(&r, "y", y, sizeof y);
  int n = N;
  float *px = x, *py = y;
  void *params[] = {&n, &a, &px, &py};
  char err[512];
  /* one block of 32 for 100 elements: only the first 32 are written */
  CHECK(launch(m, "saxpy", 1, 1, 32, 1, 0, params, &r, err, sizeof err, NULL) == 0, "%s", err);
  int written = 0, wrong = 0;
  for (int i = 0; i < N; i++) {
    float want = i < 32 ? fmaf(x[i], a, y0[i]) : y0[i];
    if (memcmp(&y[i], &want, 4)) wrong++;
    if (y[i] != y0[i]) written++;
  }
  CHECK(wrong == 0 && written == 32, "a grid too small: %d wrong, %d written (32 should be)", wrong, written);
  /* each of the warp's three global accesses (x, y, y) lies in one buffer:
   * the check is asked once, about the span of its 32 lanes */
  CHECK(r.checks == 3, "a warp's accesses within one buffer are checked as one span: %ld checks", r.checks);
  /* enough blocks: all of them, the last block partly idle */
  memcpy(y, y0, sizeof y);
  CHECK(launch(m, "saxpy", 4, 1, 32, 1, 0, params, &r, err, sizeof err, NULL) == 0, "%s", err);
  wrong = 0;
  for (int i = 0; i < N; i++) {
    float want = fmaf(x[i], a, y0[i]);
    wrong += memcmp(&y[i], &want, 4) != 0;
  }
  CHECK(wrong == 0, "saxpy over 4 blocks: %d wrong", wrong);
  /* y as two buffers, 48 floats then 52: the second warp's 32 lanes read and
   * write across both, a span no one buffer holds; each lane is then
   * checked alone, and every access is allowed */
  registry split = {0};
  add_buffer(&split, "x", x, sizeof x);
  add_buffer(&split, "y_lo", y, 48 * sizeof *y);
  add_buffer(&split, "y_hi", y + 48, (N - 48) * sizeof *y);
  memcpy(y, y0, sizeof y);
  CHECK(launch(m, "saxpy", 1, 1, 64, 1, 0, params, &split, err, sizeof err, NULL) == 0, "%s", err);
  wrong = 0;
  for (int i = 0; i < N; i++) {
    float want = i < 64 ? fmaf(x[i], a, y0[i]) : y0[i];
    wrong += memcmp(&y[i], &want, 4) != 0;
  }
  CHECK(wrong == 0, "saxpy across two buffers: %d wrong", wrong);
  /* warp 0: three spans; warp 1: x as a span, then y's two accesses refused
   * as spans and checked lane by lane */
  CHECK(split.checks == 3 + 1 + 2 * (1 + 32), "a span across buffers is checked lane by lane: %ld checks", split.checks);
  sim_ptx_free(m);
}

static void test_grid2d(void) {
  sim_ptx_module *m = load_fixture("grid2d");
  enum { W = 37, H = 21 };
  static unsigned out[W * H];
  memset(out, 0xee, sizeof out);
  registry r = {0};
  add_buffer(&r, "out", out, sizeof out);
  int w = W, h = H;
  unsigned *po = out;
  void *params[] = {&po, &w, &h};
  char err[512];
  CHECK(launch(m, "grid2d", 5, 6, 8, 4, 0, params, &r, err, sizeof err, NULL) == 0, "%s", err);
  int wrong = 0;
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      unsigned v = (unsigned)(x * 1000 + y), bx = (unsigned)x / 8, by = (unsigned)y / 4;
      unsigned want = v ^ (v >> 3) ^ (by * 5 + bx);
      wrong += out[y * W + x] != want;
    }
  CHECK(wrong == 0, "2-D grid: %d wrong", wrong);
  sim_ptx_free(m);
}

/* The tree the kernel sums in, in C. */
static float tree_sum(const float *in, int n, unsigned block, unsigned b) {
  float s[1024];
  for (unsigned t = 0; t < block; t++) {
    unsigned i = b * block + t;
    s[t] = i < (unsigned)n ? in[i] : 0.0f;
  }
  for (unsigned stride = block / 2; stride > 0; stride >>= 1)
    for (unsigned t = 0; t < stride; t++) s[t] += s[t + stride];
  return s[0];
}

static void test_reduce(void) {
  sim_ptx_module *m = load_fixture("reduce");
  enum { N = 1000, B = 4 };
  static float in[N];
  float out[B];
  for (int i = 0; i < N; i++) in[i] = (float)(rnd() % 10000) / 17.0f;
  registry r = {0};
  add_buffer(&r, "in", in, sizeof in);
  add_buffer(&r, "out", out, sizeof out);
  int n = N;
  float *pi = in, *po = out;
  void *params[] = {&pi, &po, &n};
  char err[512];
  CHECK(launch(m, "reduce", B, 1, 256, 1, 0, params, &r, err, sizeof err, NULL) == 0, "%s", err);
  for (unsigned b = 0; b < B; b++) {
    float want = tree_sum(in, N, 256, b);
    CHECK(memcmp(&out[b], &want, 4) == 0, "block %u sums %.9g, the tree in C %.9g", b, out[b], want);
  }
  sim_ptx_free(m);
}

static void test_warpsum(void) {
  sim_ptx_module *m = load_fixture("warpsum");
  enum { N = 96 };
  int in[N], sum[N / 32], up[N], bfly[N], idx[N];
  for (int i = 0; i < N; i++) in[i] = (int)(rnd() % 1000) - 500;
  registry r = {0};
  add_buffer(&r, "in", in, sizeof in);
  add_buffer(&r, "sum", sum, sizeof sum);
  add_buffer(&r, "up", up, sizeof up);
  add_buffer(&r, "bfly", bfly, sizeof bfly);
  add_buffer(&r, "idx", idx, sizeof idx);
  int *p[] = {in, sum, up, bfly, idx};
  void *params[] = {&p[0], &p[1], &p[2], &p[3], &p[4]};
  char err[512];
  CHECK(launch(m, "warpsum", 1, 1, N, 1, 0, params, &r, err, sizeof err, NULL) == 0, "%s", err);
  int wrong = 0;
  for (int wp = 0; wp < N / 32; wp++) {
    int s = 0;
    for (int l = 0; l < 32; l++) s += in[wp * 32 + l];
    wrong += sum[wp] != s;
  }
  for (int i = 0; i < N; i++) {
    int lane = i & 31, base = i - lane;
    wrong += up[i] != (lane >= 3 ? in[i - 3] : in[i]);
    wrong += bfly[i] != in[base + (lane ^ 5)];
    int src = (lane * 7) & 31;
    wrong += idx[i] != in[base + (lane & ~15) + (src & 15)];
  }
  CHECK(wrong == 0, "warp shuffles: %d wrong", wrong);
  sim_ptx_free(m);
}

static void test_histo(void) {
  sim_ptx_module *m = load_fixture("histo");
  enum { N = 5000 };
  static unsigned char data[N];
  unsigned bins[64] = {0}, want[64] = {0};
  for (int i = 0; i < N; i++) data[i] = (unsigned char)rnd(), want[data[i] & 63]++;
  registry r = {0};
  add_buffer(&r, "data", data, sizeof data);
  add_buffer(&r, "bins", bins, sizeof bins);
  int n = N;
  unsigned char *pd = data;
  unsigned *pb = bins;
  void *params[] = {&pd, &n, &pb};
  char err[512];
  CHECK(launch(m, "histo", 3, 1, 128, 1, 0, params, &r, err, sizeof err, NULL) == 0, "%s", err);
  CHECK(memcmp(bins, want, sizeof bins) == 0, "histogram differs: bin 0 %u (want %u)", bins[0], want[0]);
  sim_ptx_free(m);
}

static void test_vote(void) {
  sim_ptx_module *m = load_fixture("vote");
  enum { N = 96 };
  int in[N], all[3], any[3];
  unsigned ballot[3], active[N];
  for (int i = 0; i < N; i++) in[i] = i < 32 ? 1 : i < 64 ? (int)(rnd() % 3) - 1 : 0;
  registry r = {0};
  add_buffer(&r, "in", in, sizeof in);
  add_buffer(&r, "ballot", ballot, sizeof ballot);
  add_buffer(&r, "all", all, sizeof all);
  add_buffer(&r, "any", any, sizeof any);
  add_buffer(&r, "active", active, sizeof active);
  void *p[] = {in, ballot, all, any, active};
  void *params[] = {&p[0], &p[1], &p[2], &p[3], &p[4]};
  char err[512];
  CHECK(launch(m, "vote", 1, 1, N, 1, 0, params, &r, err, sizeof err, NULL) == 0, "%s", err);
  int wrong = 0;
  for (int wp = 0; wp < 3; wp++) {
    unsigned b = 0;
    for (int l = 0; l < 32; l++) b |= (unsigned)(in[wp * 32 + l] > 0) << l;
    wrong += ballot[wp] != b;
    wrong += all[wp] != (b == 0xffffffffu);
    wrong += any[wp] != (b != 0);
    for (int l = 0; l < 32; l++) wrong += active[wp * 32 + l] != (in[wp * 32 + l] > 0 ? b : 0u);
  }
  CHECK(wrong == 0, "votes: %d wrong (ballot of warp 1: 0x%08x)", wrong, ballot[1]);
  sim_ptx_free(m);
}

static void test_collatz(void) {
  sim_ptx_module *m = load_fixture("collatz");
  enum { N = 64 };
  unsigned in[N], steps[N], pair[N], mask[N];
  for (int i = 0; i < N; i++) in[i] = 1 + rnd() % 5000;
  registry r = {0};
  add_buffer(&r, "in", in, sizeof in);
  add_buffer(&r, "steps", steps, sizeof steps);
  add_buffer(&r, "pair", pair, sizeof pair);
  add_buffer(&r, "mask", mask, sizeof mask);
  void *p[] = {in, steps, pair, mask};
  void *params[] = {&p[0], &p[1], &p[2], &p[3]};
  char err[512];
  CHECK(launch(m, "collatz", 1, 1, N, 1, 0, params, &r, err, sizeof err, NULL) == 0, "%s", err);
  unsigned want[N];
  int wrong = 0;
  for (int i = 0; i < N; i++) {
    unsigned v = in[i], n = 0;
    while (v != 1) v = (v & 1) ? 3 * v + 1 : v / 2, n++;
    want[i] = n;
  }
  for (int i = 0; i < N; i++) wrong += steps[i] != want[i] || pair[i] != want[i ^ 1] || mask[i] != 0xffffffffu;
  CHECK(wrong == 0, "divergent loops meet again: %d wrong (lane 0 sees mask 0x%08x, pair %u for %u)", wrong, mask[0],
        pair[0], want[1]);
  sim_ptx_free(m);
}

static void test_fact(void) {
  sim_ptx_module *m = load_fixture("fact");
  enum { N = 50 };
  unsigned long long out[N];
  int fibs[N];
  registry r = {0};
  add_buffer(&r, "out", out, sizeof out);
  add_buffer(&r, "fibs", fibs, sizeof fibs);
  int n = N;
  unsigned long long *po = out;
  int *pf = fibs;
  void *params[] = {&po, &pf, &n};
  char err[512];
  CHECK(launch(m, "factorials", 2, 1, 32, 1, 0, params, &r, err, sizeof err, NULL) == 0, "%s", err);
  int wrong = 0;
  for (int i = 0; i < N; i++) {
    unsigned long long f = 1;
    for (int k = 2; k <= i % 13; k++) f *= (unsigned long long)k;
    wrong += out[i] != f;
    int a = 0, b = 1;
    for (int k = 0; k < i % 16; k++) b = a + b, a = b - a;
    wrong += fibs[i] != a;
  }
  CHECK(wrong == 0, "recursive factorials and Fibonacci numbers: %d wrong (out[12] = %llu, fibs[15] = %d)", wrong, out[12], fibs[15]);
  sim_ptx_free(m);
}

static void test_dynshared(void) {
  sim_ptx_module *m = load_fixture("dynshared");
  enum { B = 64, G = 2 };
  int data[B * G], want[B * G];
  for (int i = 0; i < B * G; i++) data[i] = (int)rnd();
  for (int b = 0; b < G; b++)
    for (int t = 0; t < B; t++) want[b * B + t] = data[b * B + B - 1 - t];
  registry r = {0};
  add_buffer(&r, "data", data, sizeof data);
  int *pd = data;
  void *params[] = {&pd};
  char err[512];
  CHECK(launch(m, "reverse", G, 1, B, 1, B * sizeof(int), params, &r, err, sizeof err, NULL) == 0, "%s", err);
  CHECK(memcmp(data, want, sizeof data) == 0, "reversed through dynamic shared memory");
  /* too little dynamic shared memory: thread 32 writes past its end */
  int rc = launch(m, "reverse", G, 1, B, 1, 32 * sizeof(int), params, &r, err, sizeof err, NULL);
  CHECK(rc == -1 && strstr(err, "wrote 4 bytes at shared offset 128, past the block's 128 bytes of shared memory") &&
            strstr(err, "kernel 'reverse' at dynshared.cu:5, thread (32,0,0) of block (0,0,0)"),
        "shared memory out of bounds: %s", err);
  sim_ptx_free(m);
}

static void test_oob(void) {
  sim_ptx_module *m = load_fixture("oob");
  float out[100];
  registry r = {0};
  add_buffer(&r, "out", out, sizeof out);
  int n = 100;
  float *po = out;
  void *params[] = {&po, &n};
  char err[512];
  int rc = launch(m, "past", 1, 1, 128, 1, 0, params, &r, err, sizeof err, NULL);
  CHECK(rc == -1, "a write past the end is a fault");
  CHECK(strcmp(err, "wrote 4 bytes 0 bytes past the end of buffer 'out' of 400 bytes (kernel 'past' at oob.cu:4, "
                    "thread (100,0,0) of block (0,0,0))") == 0,
        "the message names the access, kernel, line, thread, block: %s", err);
  sim_ptx_free(m);
}

/* Runs saxpy and reduce (or `only`) over n threads, racecheck on and off
 * (or as `rc` says): their speed in thread-instructions a second. */
static void bench(const char *only, int n, const char *rc) {
  float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y), *out = malloc((size_t)n / 256 * sizeof *out);
  if (!x || !y || !out) exit(2);
  for (int i = 0; i < n; i++) x[i] = (float)i, y[i] = 1.0f;
  registry r = {0};
  add_buffer(&r, "x", x, (size_t)n * sizeof *x);
  add_buffer(&r, "y", y, (size_t)n * sizeof *y);
  add_buffer(&r, "out", out, (size_t)n / 256 * sizeof *out);
  const char *names[] = {"saxpy", "reduce"};
  for (int run = 0; run < 4; run++) {
    int k = run & 1;
    no_racecheck = run >= 2;
    if (only && strcmp(only, names[k]) != 0) continue;
    if (rc && strcmp(rc, no_racecheck ? "off" : "on") != 0) continue;
    sim_ptx_module *m = load_fixture(names[k]);
    float a = 2.0f, *px = x, *py = y, *po = out;
    void *ps[] = {&n, &a, &px, &py}, *pr[] = {&px, &po, &n};
    char err[512];
    uint64_t insns = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc_ = launch(m, names[k], (unsigned)n / 256, 1, 256, 1, 0, k ? pr : ps, &r, err, sizeof err, &insns);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    if (rc_) {
      printf("%s: %s\n", names[k], err);
      exit(1);
    }
    printf("%-7s racecheck %-3s %8.1f M thread-instructions/s (%llu in %.3f s, %d threads)\n", names[k],
           no_racecheck ? "off" : "on", (double)insns / s / 1e6, (unsigned long long)insns, s, n);
    sim_ptx_free(m);
  }
  free(x);
  free(y);
  free(out);
}

int main(int argc, char **argv) {
  if (argc > 1) fixture_dir = argv[1];
  if (argc > 2 && strcmp(argv[2], "--bench") == 0) {
    int n = argc > 4 ? atoi(argv[4]) : 1 << 20;
    if (n < 256 || n % 256) {
      fprintf(stderr, "--bench: the threads must be a multiple of 256, not %s\n", argv[4]);
      return 2;
    }
    bench(argc > 3 && strcmp(argv[3], "all") != 0 ? argv[3] : NULL, n, argc > 5 ? argv[5] : NULL);
    return 0;
  }
  test_saxpy();
  test_grid2d();
  test_reduce();
  test_warpsum();
  test_histo();
  test_vote();
  test_collatz();
  test_fact();
  test_dynshared();
  test_oob();
  test_ptx_ops(&checks, &failures);
  test_ptx_kernels(&checks, &failures);
  test_ptx_half(&checks, &failures);
  test_ptx_printf(&checks, &failures);
  test_ptx_sched(&checks, &failures);
  test_ptx_race(&checks, &failures);
  test_ptx_regs(&checks, &failures);
  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures ? 1 : 0;
}
