/*
 * test_ptx_printf.c -- printf and assert in the interpreter (tests/ptx/printf.cu):
 * every conversion formatted as the host's printf formats the same values,
 * the lines in the schedule's order, printf's result, its faults (an
 * unsupported conversion, a string past its memory), CUDA's assert message,
 * and calls of the device runtime declared otherwise refused at load.
 */

#include "ptx_harness.h"

static int last_asserted; /* the last run's sim_ptx_launch.asserted */

/* Runs kernel `name` of m over grid x block threads with the memory of r:
 * the return of sim_ptx_run; what printf wrote in *printed (free it). */
static int run(const sim_ptx_module *m, const char *name, unsigned grid, unsigned block, void **params, registry *r,
               char **printed, char *err, size_t errlen) {
  sim_ptx_launch l = {.grid = {grid, 1, 1}, .block = {block, 1, 1}, .params = params, .check = check_access, .user = r};
  int rc = sim_ptx_run(m, sim_ptx_find(m, name), &l, err, errlen);
  last_asserted = l.asserted;
  /* the output is not a C string: a copy that is one */
  *printed = calloc(l.printed_len + 1, 1);
  if (l.printed) memcpy(*printed, l.printed, l.printed_len);
  free(l.printed);
  return rc;
}

static void test_conversions(void) {
  sim_ptx_module *m = load_fixture("printf");
  static char name[] = "gpulua";
  registry r = {0};
  add_buffer(&r, "name", name, sizeof name);
  char *pn = name, c = 'Q';
  int n = 3;
  double d = -3.14159;
  float f = 1234.5f;
  long long ll = -9000000000123LL;
  unsigned long long u = 18000000000000000000ULL;
  short h = -1234;
  long lg = 1L << 40;
  void *params[] = {&pn, &n, &d, &f, &ll, &u, &c, &h, &lg};
  char err[512], *out;
  int rc = run(m, "show", 1, 32, params, &r, &out, err, sizeof err);
  CHECK(rc == 0, "show: %s", err);
  char want[4096] = "";
  for (int t = 0; t < n; t++) {
    size_t k = strlen(want);
    snprintf(want + k, sizeof want - k,
             "[%d] %s %5.2f|%-10.3e|%g|%lld|%llu|%x|%X|%#o|%c|%+05d|%hd|%hhu|%%|%8s|%-6s|%.2s|%ld|%lu|%i|%u|%E|%G|%F|%a|%lf\n",
             t, name, d, (double)f, d, ll, u, t * 4099, t * 4099, t, c, t - 3, h, (unsigned char)(t + 250), name, name, name,
             lg, (unsigned long)lg, -t, (unsigned)-t, d, d * 1e10, d, d, (double)f);
  }
  CHECK(strcmp(out, want) == 0, "show printed:\n%s\nthe host's printf:\n%s", out, want);
  CHECK(strstr(out, "[1] gpulua -3.14|1.234e+03 |-3.14159|-9000000000123|18000000000000000000|1003|1003|01|Q|-0002|-1234|"
                    "251|%|  gpulua|gpulua|gp|1099511627776|1099511627776|-1|4294967295|"),
        "show's second line: %s", out);
  free(out);

  /* every thread of every block, block after block, thread after thread */
  rc = run(m, "hello", 2, 40, NULL, &r, &out, err, sizeof err);
  CHECK(rc == 0, "hello: %s", err);
  char *p = out;
  int in_order = 1;
  for (int b = 0; b < 2; b++)
    for (int t = 0; t < 40; t++) {
      char line[64];
      int k = snprintf(line, sizeof line, "hello from thread %d of block %d\n", t, b);
      if (strncmp(p, line, (size_t)k) != 0) in_order = 0;
      else p += k;
    }
  CHECK(in_order && *p == '\0', "hello's 80 lines in the schedule's order: %s", out);
  free(out);

  int w = 9, prec = 3;
  double x = 2.71828;
  void *sp[] = {&w, &prec, &x};
  rc = run(m, "star", 1, 1, sp, &r, &out, err, sizeof err);
  CHECK(rc == 0 && strcmp(out, "<    2.718|7        >\n") == 0, "width and precision from arguments: %s %s", out, err);
  free(out);

  char *nul = NULL;
  void *pp = (void *)(uintptr_t)0xabc0;
  void *op[] = {&nul, &pp};
  rc = run(m, "odd", 1, 1, op, &r, &out, err, sizeof err);
  CHECK(rc == 0 && strcmp(out, "(null)|0xabc0\nplain\n") == 0, "a null string, a pointer, no arguments: %s %s", out, err);
  free(out);

  int counts[4] = {0};
  int *pc = counts;
  add_buffer(&r, "counts", counts, sizeof counts);
  void *cp[] = {&pc};
  rc = run(m, "count", 1, 4, cp, &r, &out, err, sizeof err);
  CHECK(rc == 0 && counts[0] == 3 && counts[3] == 3, "printf returns the arguments it read: %d (%s)", counts[0], err);
  free(out);

  /* %s of a string without its NUL: the read past the buffer is a fault */
  static char unterminated[4] = {'a', 'b', 'c', 'd'};
  registry r2 = {0};
  add_buffer(&r2, "unterminated", unterminated, sizeof unterminated);
  char *pu = unterminated;
  void *up[] = {&pu, &pp};
  rc = run(m, "odd", 1, 1, up, &r2, &out, err, sizeof err);
  CHECK(rc == -1 && strcmp(err, "read 1 bytes 0 bytes past the end of buffer 'unterminated' of 4 bytes "
                                "(kernel 'odd' at printf.cu:22, thread (0,0,0) of block (0,0,0))") == 0,
        "a string past its memory: %s", err);
  CHECK(!last_asserted, "a fault other than an assert is not one");
  CHECK(strcmp(out, "") == 0, "nothing printed of the faulting call: %s", out);
  free(out);
  sim_ptx_free(m);
}

static void test_assert(void) {
  sim_ptx_module *m = load_fixture("printf");
  int x[64];
  for (int i = 0; i < 64; i++) x[i] = i % 40;
  registry r = {0};
  add_buffer(&r, "x", x, sizeof x);
  int *px = x, n = 40;
  void *params[] = {&px, &n};
  char err[512], *out;
  int rc = run(m, "checked", 1, 64, params, &r, &out, err, sizeof err);
  free(out);
  CHECK(rc == 0, "an assert that holds: %s", err);
  x[37] = 99;
  x[50] = 99;
  rc = run(m, "checked", 1, 64, params, &r, &out, err, sizeof err);
  free(out);
  CHECK(rc == -1 && strcmp(err, "printf.cu:29: void checked(const int *, int): Assertion `x[threadIdx.x] < n` failed "
                                "(kernel 'checked' at printf.cu:29, thread (37,0,0) of block (0,0,0))") == 0,
        "a failed assert: %s", err);
  CHECK(last_asserted, "the launch says its fault is a failed assert");
  sim_ptx_free(m);
}

/* An unsupported conversion is a fault naming it and the format. */
static void test_printf_faults(void) {
  static const char *const ptx =
      ".version 9.0\n.target sm_90\n.address_size 64\n"
      ".extern .func (.param .b32 func_retval0) vprintf(.param .b64 a, .param .b64 b);\n"
      ".global .align 1 .b8 fmt[%d] = {%s};\n"
      ".visible .entry k()\n{\n .local .align 8 .b8 buf[8];\n .reg .b64 %%rd<4>;\n .reg .b32 %%r<2>;\n"
      " mov.u64 %%rd1, fmt;\n cvta.global.u64 %%rd1, %%rd1;\n mov.u64 %%rd2, buf;\n cvta.local.u64 %%rd2, %%rd2;\n"
      " st.local.u64 [buf], 7;\n"
      " { .param .b64 p0; st.param.b64 [p0], %%rd1; .param .b64 p1; st.param.b64 [p1], %s; .param .b32 r0;\n"
      " call.uni (r0), vprintf, (p0, p1); ld.param.b32 %%r1, [r0]; }\n ret;\n}\n";
  static const struct {
    const char *fmt, *args, *want;
  } cases[] = {
    {"n=%n\n", "%rd2", "printf format \"n=%n\\n\": unsupported conversion '%n'"},
    {"%zu\n", "%rd2", "printf format \"%zu\\n\": unsupported conversion '%z'"},
    {"%lc\n", "%rd2", "printf format \"%lc\\n\": unsupported conversion '%lc'"},
    {"%Lf\n", "%rd2", "printf format \"%Lf\\n\": unsupported conversion '%L'"},
    {"%5", "%rd2", "printf format \"%5\": unsupported conversion '%5'"},
    {"%d\n", "0", "printf format \"%d\\n\": the call passed no arguments, but the format reads one at '%d'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char bytes[256] = "", text[2048], err[512] = "";
    size_t len = strlen(cases[i].fmt);
    for (size_t k = 0; k <= len; k++)
      snprintf(bytes + strlen(bytes), sizeof bytes - strlen(bytes), "%s%d", k ? ", " : "", (unsigned char)cases[i].fmt[k]);
    snprintf(text, sizeof text, ptx, (int)len + 1, bytes, cases[i].args);
    sim_ptx_module *m = sim_ptx_load(text, err, sizeof err);
    CHECK(m != NULL, "%s: %s", cases[i].fmt, err);
    if (!m) continue;
    sim_ptx_launch l = {.grid = {1, 1, 1}, .block = {1, 1, 1}};
    int rc = sim_ptx_run(m, sim_ptx_find(m, "k"), &l, err, sizeof err);
    CHECK(rc == -1 && strncmp(err, cases[i].want, strlen(cases[i].want)) == 0 &&
              strstr(err, "(kernel 'k' at PTX line 17, thread (0,0,0) of block (0,0,0))"),
          "%s: %s", cases[i].fmt, err);
    free(l.printed);
    sim_ptx_free(m);
  }
}

/* vprintf and __assertfail declared otherwise than CUDA's, and other
 * functions declared without a body, are refused at load. */
static void test_refused(void) {
  static const struct {
    const char *decl, *call, *want;
  } cases[] = {
    {".extern .func (.param .b32 func_retval0) vprintf(.param .b64 a);\n",
     "{ .param .b64 p0; st.param.b64 [p0], 0; .param .b32 r0; call.uni (r0), vprintf, (p0); }",
     "line 7: unsupported call to 'vprintf': not declared or called as CUDA's int vprintf(const char *, void *)"},
    {".extern .func __assertfail(.param .b64 a, .param .b64 b);\n",
     "{ .param .b64 p0; st.param.b64 [p0], 0; .param .b64 p1; st.param.b64 [p1], 0; call.uni __assertfail, (p0, p1); }",
     "line 7: unsupported call to '__assertfail': not declared or called as CUDA's void __assertfail("},
    {".extern .func (.param .b32 func_retval0) malloc(.param .b64 a);\n",
     "{ .param .b64 p0; st.param.b64 [p0], 0; .param .b32 r0; call.uni (r0), malloc, (p0); }",
     "line 7: unsupported call to 'malloc' (declared, not defined)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char text[1024], err[512];
    snprintf(text, sizeof text, ".version 9.0\n.target sm_90\n.address_size 64\n%s.visible .entry k()\n{\n %s\n ret;\n}\n",
             cases[i].decl, cases[i].call);
    sim_ptx_module *m = sim_ptx_load(text, err, sizeof err);
    CHECK(!m && strncmp(err, cases[i].want, strlen(cases[i].want)) == 0, "refused: %s", m ? "(loaded)" : err);
    sim_ptx_free(m);
  }
}

void test_ptx_printf(int *nchecks, int *nfailures);
void test_ptx_printf(int *nchecks, int *nfailures) {
  test_conversions();
  test_assert();
  test_printf_faults();
  test_refused();
  *nchecks += checks;
  *nfailures += failures;
}
