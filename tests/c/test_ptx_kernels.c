/*
 * test_ptx_kernels.c -- the corpus's 64-bit integer and f64 kernels against
 * C, run-time faults (trap, a barrier that never completes; a failed
 * assert is test_ptx_printf.c's), and PTX refused at load, naming what and
 * its line.
 */

#include "ptx_harness.h"

#include <math.h>

static long long mulhi_s(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
static unsigned long long mulhi_u(unsigned long long a, unsigned long long b) {
  return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
static unsigned long long brev64(unsigned long long v) {
  unsigned long long d = 0;
  for (int i = 0; i < 64; i++) d |= ((v >> i) & 1) << (63 - i);
  return d;
}

static void test_int64(void) {
  sim_ptx_module *m = load_fixture("int64");
  enum { N = 40 };
  long long a[N], b[N], out[10 * N];
  for (int i = 0; i < N; i++) {
    a[i] = (long long)((uint64_t)rnd() << 32 | rnd());
    b[i] = i % 5 == 0 ? 0 : i % 5 == 1 ? -(long long)(rnd() % 1000) - 1 : (long long)((uint64_t)rnd() << (i % 40) | rnd());
  }
  a[0] = 0;
  registry r = {0};
  add_buffer(&r, "a", a, sizeof a);
  add_buffer(&r, "b", b, sizeof b);
  add_buffer(&r, "out", out, sizeof out);
  int n = N;
  long long *pa = a, *pb = b, *po = out;
  void *params[] = {&pa, &pb, &po, &n};
  char err[512];
  CHECK(sim_ptx_find(m, "int64ops") >= 0, "the kernel is found by name");
  int k = sim_ptx_find(m, "int64ops");
  sim_ptx_launch l = {.grid = {2, 1, 1}, .block = {32, 1, 1}, .params = params, .check = NULL};
  CHECK(sim_ptx_run(m, k, &l, err, sizeof err) == 0, "%s", err);
  int wrong = 0;
  for (int i = 0; i < N; i++) {
    long long x = a[i], y = b[i], want[10];
    unsigned long long ux = (unsigned long long)x, uy = (unsigned long long)y;
    want[0] = (long long)(ux * uy) + (x >> 7);
    want[1] = y != 0 ? x / y : 0;
    want[2] = y != 0 ? x % y : 0;
    want[3] = (long long)(uy != 0 ? ux / uy : 0);
    want[4] = (long long)mulhi_u(ux, uy);
    want[5] = mulhi_s(x, y);
    want[6] = (long long)((ux << (uy & 63)) ^ (ux >> (y & 31)));
    want[7] = __builtin_popcountll(ux) + 100 * (x ? __builtin_clzll(ux) : 64) + 10000 * __builtin_ffsll(y);
    want[8] = (long long)brev64(ux);
    want[9] = x < y ? (long long)(ux - uy) : (long long)((unsigned)x * (unsigned)y);
    for (int j = 0; j < 10; j++)
      if (out[10 * i + j] != want[j]) {
        if (wrong++ < 3) fprintf(stderr, "int64 %d.%d: %lld, C %lld\n", i, j, out[10 * i + j], want[j]);
      }
  }
  CHECK(wrong == 0, "64-bit integer kernel: %d wrong", wrong);
  sim_ptx_free(m);
}

static void test_f64(void) {
  sim_ptx_module *m = load_fixture("f64");
  enum { N = 48 };
  double a[N], b[N], out[8 * N];
  for (int i = 0; i < N; i++) {
    a[i] = ((double)rnd() - 2147483648.0) / 1024.0 / (1 + i % 7);
    b[i] = ((double)rnd() - 2147483648.0) / 4096.0 / (1 + i % 5) + 1e-3;
  }
  a[1] = -0.0, b[1] = 0.0;
  registry r = {0};
  add_buffer(&r, "a", a, sizeof a);
  add_buffer(&r, "b", b, sizeof b);
  add_buffer(&r, "out", out, sizeof out);
  int n = N;
  double *pa = a, *pb = b, *po = out;
  void *params[] = {&pa, &pb, &po, &n};
  char err[512];
  CHECK(launch(m, "f64ops", 2, 1, 32, 1, 0, params, &r, err, sizeof err, NULL) == 0, "%s", err);
  int wrong = 0;
  for (int i = 0; i < N; i++) {
    double x = a[i], y = b[i], want[8];
    want[0] = x + y;
    want[1] = fma(x, y, -y); /* mul.f64 then sub.f64, contracted as ptxas does */
    want[2] = x / y;
    want[3] = sqrt(fabs(x));
    want[4] = fma(x, y, 1.0);
    want[5] = (x < y || (x == y && signbit(x)) ? x : y) + (x > y || (x == y && !signbit(x)) ? x : y);
    want[6] = (double)(long long)(x * 1000.0) + (double)(float)y;
    want[7] = (double)(int)nearbyint(x * 3.5) + (double)(unsigned)(fabs(y) * 7.0);
    for (int j = 0; j < 8; j++)
      if (memcmp(&out[8 * i + j], &want[j], 8)) {
        if (wrong++ < 3) fprintf(stderr, "f64 %d.%d: %.17g, C %.17g\n", i, j, out[8 * i + j], want[j]);
      }
  }
  CHECK(wrong == 0, "f64 kernel: %d results differ in their bits", wrong);
  sim_ptx_free(m);
}

static const char *head = ".version 9.0\n.target sm_90\n.address_size 64\n";

static int run_text(const char *body, unsigned threads, char *err, size_t errlen) {
  char text[4096];
  snprintf(text, sizeof text, "%s%s", head, body);
  sim_ptx_module *m = sim_ptx_load(text, err, errlen);
  if (!m) return -2;
  sim_ptx_launch l = {.grid = {1, 1, 1}, .block = {threads, 1, 1}};
  int rc = sim_ptx_run(m, sim_ptx_find(m, "k"), &l, err, errlen);
  sim_ptx_free(m);
  return rc;
}

static void test_faults(void) {
  char err[512];
  /* a function declared twice alike (NVRTC repeats __assertfail's): accepted, and the second
   * declaration's parameter names are freed (LeakSanitizer in the sanitizer build) */
  int rc2 = run_text(".extern .func f\n(\n .param .b64 f_a,\n .param .b32 f_b\n)\n;\n"
                     ".extern .func f\n(\n .param .b64 f_a,\n .param .b32 f_b\n)\n;\n"
                     ".visible .entry k()\n{\n ret;\n}\n", 32, err, sizeof err);
  CHECK(rc2 == 0, "a function declared twice alike: %s", err);
  /* an instruction after a .loc on its line is one; a branch to the end of a function is refused */
  rc2 = run_text(".visible .entry k()\n{\n .reg .pred %p<2>;\n .loc 1 5 1 setp.eq.u32 %p1, 1, 1;\n"
                 " @%p1 bra $L_end;\n ret;\n$L_end:\n}\n", 32, err, sizeof err);
  CHECK(rc2 == -2 && strcmp(err, "line 8: label '$L_end' marks no instruction (the end of the function)") == 0,
        "a label at the end: %s", err);
  int rc = run_text(".visible .entry k()\n{\n .reg .pred %p<2>;\n .reg .b32 %r<2>;\n mov.u32 %r1, %tid.x;\n"
                    " setp.eq.u32 %p1, %r1, 37;\n @%p1 trap;\n ret;\n}\n.file 1 \"t.cu\"\n",
                    64, err, sizeof err);
  CHECK(rc == -1 && strcmp(err, "trap (kernel 'k' at PTX line 10, thread (37,0,0) of block (0,0,0))") == 0, "trap: %s", err);
  /* warp 1 exits at once, warp 0 waits at a barrier with a count of 64 */
  rc = run_text(".visible .entry k()\n{\n .reg .pred %p<2>;\n .reg .b32 %r<2>;\n mov.u32 %r1, %tid.x;\n"
                " setp.ge.u32 %p1, %r1, 32;\n @%p1 exit;\n bar.sync 0, 64;\n ret;\n}\n",
                64, err, sizeof err);
  CHECK(rc == -1 && strstr(err, "barrier 0 never completes: 32 of the block's threads wait there"), "deadlock: %s", err);
  /* the same barrier without a count: the exited threads do not count */
  rc = run_text(".visible .entry k()\n{\n .reg .pred %p<2>;\n .reg .b32 %r<2>;\n mov.u32 %r1, %tid.x;\n"
                " setp.ge.u32 %p1, %r1, 32;\n @%p1 exit;\n bar.sync 0;\n ret;\n}\n",
                64, err, sizeof err);
  CHECK(rc == 0, "a barrier of the threads left: %s", err);
}

/* PTX the interpreter does not run fails at load, naming it and its line. */
static void test_load_errors(void) {
  char err[512];
  int rc = run_text(".visible .entry k(.param .u64 p)\n{\n .reg .f32 %f<5>;\n .reg .b64 %rd<3>;\n"
                    " tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f1, %f2}];\n ret;\n}\n",
                    32, err, sizeof err);
  CHECK(rc == -2 && strcmp(err, "line 8: unsupported instruction 'tex.2d.v4.f32.f32'") == 0, "tex: %s", err);
  rc = run_text(".visible .entry k()\n{\n .reg .f32 %f<3>;\n .reg .b16 %rs<3>;\n"
                " cvt.rn.satfinite.f16.f32 %rs1, %f1;\n ret;\n}\n",
                32, err, sizeof err);
  CHECK(rc == -2 && strcmp(err, "line 8: unsupported instruction 'cvt.rn.satfinite.f16.f32'") == 0, "satfinite: %s", err);
  rc = run_text(".visible .entry k()\n{\n .reg .b16 %rs<3>;\n ex2.approx.f16 %rs1, %rs2;\n}\n", 32, err, sizeof err);
  CHECK(rc == -2 && strstr(err, "line 7: unsupported ex2 of 16-bit floats"), "ex2.f16: %s", err);
  rc = run_text(".visible .entry k()\n{\n .reg .b32 %r<2>;\n .reg .b16 %rs<2>;\n atom.global.add.f16 %rs1, [%r1], %rs1;\n}\n",
                32, err, sizeof err);
  CHECK(rc == -2 && strstr(err, "line 8: unsupported form of atom (of 16-bit floats: add.noftz)"), "atom.f16: %s", err);
  rc = run_text(".visible .entry k()\n{\n .reg .f32 %f<2>;\n .reg .b16 %rs<2>;\n cvt.rn.f32.f16 %f1, %rs1;\n}\n",
                32, err, sizeof err);
  CHECK(rc == -2 && strcmp(err, "line 8: a rounding modifier on a cvt that does not round") == 0, "cvt.rn widening: %s", err);
  rc = run_text(".visible .entry k()\n{\n .reg .b32 %r<2>;\n cvt.rz.s32.u32 %r1, %r1;\n}\n", 32, err, sizeof err);
  CHECK(rc == -2 && strcmp(err, "line 7: a rounding modifier on a cvt that does not round") == 0, "cvt.rz int: %s", err);
  rc = run_text(".visible .entry k()\n{\n bra $L_nowhere;\n}\n", 32, err, sizeof err);
  CHECK(rc == -2 && strcmp(err, "line 6: unknown label '$L_nowhere'") == 0, "label: %s", err);
  rc = run_text(".visible .entry k()\n{\n mov.u32 %r9, 1;\n}\n", 32, err, sizeof err);
  CHECK(rc == -2 && strcmp(err, "line 6: unknown name '%r9'") == 0, "register: %s", err);
  rc = run_text(".visible .entry k()\n{\n .reg .f32 %f<2>;\n redux.sync.min.f32 %f1, %f1, -1;\n}\n", 32, err, sizeof err);
  CHECK(rc == -2 && strstr(err, "line 7: unsupported form of redux"), "redux.f32: %s", err);
  rc = run_text(".visible .entry k()\n{\n .reg .b32 %r<2>;\n add.u32 %r1, %r1;\n}\n", 32, err, sizeof err);
  CHECK(rc == -2 && strcmp(err, "line 7: add takes 3 operands, not 2") == 0, "operands: %s", err);
  rc = run_text(".visible .entry k()\n{\n .reg .b32 %r<2>;\n ld.global.v4.u32 {%r0, %r1}, [%r1];\n}\n", 32, err, sizeof err);
  CHECK(rc == -2 && strcmp(err, "line 7: a load of 4 values needs 4 registers") == 0, "vector: %s", err);
  /* '_' sinks what is loaded or unpacked: in what a store writes or a mov packs it is refused */
  rc = run_text(".visible .entry k()\n{\n .reg .b32 %r<3>;\n .reg .b64 %rd<2>;\n"
                " st.global.v2.u32 [%rd1], {%r1, _};\n}\n", 32, err, sizeof err);
  CHECK(rc == -2 && strcmp(err, "line 8: a store's values cannot include '_' (a sink is for what is loaded)") == 0,
        "st with a sink: %s", err);
  rc = run_text(".visible .entry k()\n{\n .reg .b32 %r<3>;\n .reg .b64 %rd<2>;\n mov.b64 %rd1, {_, %r1};\n}\n", 32, err,
                sizeof err);
  CHECK(rc == -2 &&
            strcmp(err, "line 8: the values a mov packs cannot include '_' (a sink is for what is unpacked)") == 0,
        "mov packing a sink: %s", err);
  rc = run_text(".visible .entry k()\n{\n .reg .b32 %r<3>;\n .reg .b64 %rd<2>;\n mov.b64 {_, %r1}, %rd1;\n"
                " ld.global.v2.u32 {_, %r2}, [%rd1];\n ret;\n}\n", 32, err, sizeof err);
  CHECK(rc != -2, "sinks where a mov unpacks and a load reads are fine: %s", err);
  /* a module cut short just after a directive the parser steps over by a
   * fixed number of tokens: read or refused, never read past its end (the
   * fuzzer found it; this test's ASan and valgrind runs see such a read) */
  static const char *const cut[] = {".section", ".section .debug", ".file 1 \"a.cu\",", ".file 1 \"a.cu\", 5,"};
  for (size_t i = 0; i < sizeof cut / sizeof *cut; i++) {
    char text[512];
    snprintf(text, sizeof text, "%s%s", head, cut[i]);
    err[0] = '\0';
    sim_ptx_module *m = sim_ptx_load(text, err, sizeof err);
    CHECK(m || err[0], "a module cut after '%s' is read or refused with a reason", cut[i]);
    if (m) sim_ptx_free(m);
  }
}

/* A register read before any write reads 0 in every block, though an earlier block wrote it
 * later on (the registers a thread may read first are zeroed per block, ptx_defs.c); a write
 * under a guard does not count as one. */
static void test_undefined_registers(void) {
  static const char text[] =
      ".version 9.0\n.target sm_90\n.address_size 64\n"
      ".visible .entry u(.param .u64 p)\n{\n"
      " .reg .pred %p<3>;\n .reg .b32 %r<8>;\n .reg .b64 %rd<5>;\n"
      " ld.param.u64 %rd1, [p];\n mov.u32 %r1, %ctaid.x;\n mov.u32 %r6, %tid.x;\n"
      " setp.eq.u32 %p1, %r1, 0;\n @%p1 mov.u32 %r2, 5;\n add.u32 %r3, %r4, %r2;\n"
      " mul.wide.u32 %rd2, %r1, 128;\n mul.wide.u32 %rd3, %r6, 4;\n add.s64 %rd2, %rd2, %rd3;\n"
      " add.s64 %rd4, %rd1, %rd2;\n st.global.u32 [%rd4], %r3;\n"
      " mov.u32 %r4, 100;\n mov.u32 %r2, 7;\n ret;\n}\n";
  char err[512];
  sim_ptx_module *m = sim_ptx_load(text, err, sizeof err);
  CHECK(m != NULL, "%s", err);
  if (!m) return;
  uint32_t out[3 * 32];
  memset(out, 0xee, sizeof out);
  registry r = {0};
  add_buffer(&r, "out", out, sizeof out);
  uint32_t *po = out;
  void *params[] = {&po};
  CHECK(launch(m, "u", 3, 1, 32, 1, 0, params, &r, err, sizeof err, NULL) == 0, "%s", err);
  int wrong = 0;
  for (int i = 0; i < 3 * 32; i++) wrong += out[i] != (i < 32 ? 5u : 0u);
  CHECK(wrong == 0, "registers read before written: %d of 96 wrong (block 1, thread 0: %u, not 0)", wrong, out[32]);
  sim_ptx_free(m);
}

void test_ptx_kernels(int *nchecks, int *nfailures);
void test_ptx_kernels(int *nchecks, int *nfailures) {
  test_int64();
  test_f64();
  test_faults();
  test_undefined_registers();
  test_load_errors();
  *nchecks += checks;
  *nfailures += failures;
}
