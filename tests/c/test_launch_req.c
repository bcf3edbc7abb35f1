/*
 * test_launch_req.c -- launch checking through the core alone (this test
 * links gpulua_core and the driver, no Lua): a launch request filled as a
 * binding fills it, and gl_launch_submit's answer for each check in turn
 * (a released kernel, the argument count, a kernel of another device, no
 * host implementation, the limits, an argument the caller could not take,
 * a slice freed, of another dtype or device, a built-in's bounds and
 * overlap, a conflict the checker refuses, reads that do not conflict), the
 * messages composed from the request's call, nothing queued when a check
 * fails, and a launch that runs with the parameters written. Copies and
 * fills compose their messages from their requests' calls too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtins.h"
#include "compile.h"
#include "driver_ext.h"
#include "device.h"
#include "hostmem.h"
#include "memory.h"
#include "module.h"
#include "ops.h"
#include "options.h"
#include "runtime.h"
#include "signature.h"
#include "stream.h"

#include "check.h"

/* A call site as a binding would give it: here, a fixed text. */
static int site_here(gl_runtime *rt, void *ctx) { return gl_intern(rt, ctx); }

static gl_runtime *rt;
static gl_device *dev0, *dev1;
static gl_stream *a, *b, *on1;
static gl_kernel *scale;   /* y[i] = a * x[i] for i < n: T, const T*, T*, u64 */
static gl_launch_cfg cfg = {{0, 1, 1}, {128, 1, 1}, 0, 0};

static void die(const char *what) {
  fprintf(stderr, "%s: %s\n", what, gl_error_message(rt));
  exit(1);
}

static gl_stream *new_stream(gl_device *d, const char *name) {
  gl_stream *s;
  if (gl_stream_new(d, name, 0, 0, &s, NULL) != 0) die("gl_stream_new");
  return s;
}

static void alloc(gl_stream *s, gl_dtype dt, size_t n, gl_slice *x) {
  memset(x, 0, sizeof *x);
  if (gl_slice_alloc(s, dt, n, 1, NULL, x) != 0) die("gl_slice_alloc");
}

/* A request for scale(2, x, y, n) on s, as a binding fills it. */
static gl_site site = {site_here, (void *)"test_launch_req.c", GL_LOC_UNRESOLVED};
static void scale_req(gl_launch_req *r, gl_stream *s, gl_slice *x, gl_slice *y, unsigned long long n) {
  float two = 2.0f;
  r->call = "t:launch";
  r->s = s;
  r->k = scale;
  r->cfg = &cfg;
  r->has_host = 0;
  r->cost_us = 0;
  r->site = &site;
  r->captured = NULL;
  r->nargs = 4;
  r->bad = -1;
  r->slices[0] = NULL;
  memcpy(r->values[0], &two, sizeof two);
  r->slices[1] = x;
  r->slices[2] = y;
  r->slices[3] = NULL;
  memcpy(r->values[3], &n, sizeof n);
}

/* gl_launch_submit(r) fails with `rc`, a message that holds `want`, and
 * nothing queued on r's stream. */
static void refused(gl_launch_req *r, int rc, const char *want) {
  uint64_t seq = r->s->seq;
  int got = gl_launch_submit(r);
  const char *msg = gl_error_message(rt);
  CHECK(got == rc, "want %d, got %d (%s)", rc, got, msg);
  CHECK(strncmp(msg, "t:launch", 8) == 0, "the message starts with the request's call: %s", msg);
  CHECK(strstr(msg, want) != NULL, "want \"%s\" in: %s", want, msg);
  CHECK(r->s->seq == seq, "nothing is queued when a check fails");
}

static void test_checks(void) {
  gl_slice x, y, x64, far, freed;
  alloc(a, GL_F32, 100, &x);
  alloc(a, GL_F32, 100, &y);
  alloc(a, GL_F64, 100, &x64);
  alloc(on1, GL_F32, 100, &far);
  alloc(a, GL_F32, 100, &freed);
  CHECK(gl_device_sync(dev0, NULL) == 0 && gl_device_sync(dev1, NULL) == 0, "%s", gl_error_message(rt));
  gl_launch_req r;

  scale_req(&r, a, &x, &y, 100);
  r.k = NULL;
  refused(&r, GL_REFUSED, "the kernel has been released");

  scale_req(&r, a, &x, &y, 100);
  r.nargs = 3;
  refused(&r, GL_REFUSED, "kernel 'scale_f32' (f32, const f32*, f32*, u64) takes 4 arguments, got 3");

  scale_req(&r, on1, &far, &far, 100);
  refused(&r, -1, "kernel 'scale_f32' was loaded on device 0, but stream 'on1' is on device 1");

  gl_launch_cfg wide = {{0, 1, 1}, {64, 2, 1}, 0, 0};
  scale_req(&r, a, &x, &y, 100);
  r.cfg = &wide;
  refused(&r, -1, "built-in kernel 'scale_f32' needs a one-dimensional grid and block");
  gl_launch_cfg big = {{1, 1, 1}, {(unsigned)dev0->max_block[0] + 1, 1, 1}, 0, 0};
  r.cfg = &big;
  refused(&r, -1, "block.x = ");
  gl_launch_cfg shared = {{1, 1, 1}, {128, 1, 1}, (unsigned)dev0->max_shared + 1, 0};
  r.cfg = &shared;
  refused(&r, -1, "cfg.shared = ");

  scale_req(&r, a, &x, &y, 100); /* the caller could not take argument 3: named after 1 and 2 are checked */
  r.bad = 2;
  r.given = "string";
  r.why = NULL;
  refused(&r, GL_REFUSED, "kernel 'scale_f32' (f32, const f32*, f32*, u64): argument 3 expected a slice (f32*), "
                          "got string");
  scale_req(&r, a, &x64, &y, 100);
  r.bad = 2;
  r.given = "string";
  refused(&r, -1, "argument 2 expected an f32 slice, got an f64 slice"); /* argument 2 first */
  scale_req(&r, a, &x, &y, 100);
  r.bad = 0;
  r.given = "boolean";
  r.why = "expected a number";
  refused(&r, GL_REFUSED, "kernel 'scale_f32': argument 1 (f32): expected a number, got boolean");

  scale_req(&r, a, &x, &far, 100);
  refused(&r, -1, "argument 3 is a slice of device 1, but stream 'a' is on device 0");
  gl_slice blank;
  memset(&blank, 0, sizeof blank);
  scale_req(&r, a, &blank, &y, 100);
  refused(&r, -1, "kernel 'scale_f32': argument 2: slice is not initialised");
  CHECK(gl_slice_free(&freed, 0, "t:free", &site) == 0, "%s", gl_error_message(rt));
  scale_req(&r, a, &freed, &y, 100);
  refused(&r, -1, "kernel 'scale_f32': argument 2: use of a freed slice");

  scale_req(&r, a, &x, &y, 101);
  refused(&r, -1, "built-in kernel 'scale_f32': argument 2 has 100 elements, but n = 101 needs 101");
  gl_slice lo, hi;
  gl_slice_view(&x, 0, 50, &lo);
  gl_slice_view(&x, 1, 50, &hi);
  scale_req(&r, a, &lo, &hi, 50);
  refused(&r, -1, "argument 3, which it writes, overlaps argument 2");

  gl_slice_collect(&lo);
  gl_slice_collect(&hi);
  gl_slice_collect(&x);
  gl_slice_collect(&y);
  gl_slice_collect(&x64);
  gl_slice_collect(&far);
  gl_slice_collect(&freed);
}

/* A kernel of a module of the script's own: where the backend runs no device
 * code (sim), a launch needs its host implementation. */
static void test_no_host_implementation(void) {
  static const char src[] = "extern \"C\" __global__ void touch(float *x) { x[0] = 1; }\n";
  void *img;
  size_t n;
  gl_module *m;
  gl_kernel *k;
  gl_signature sig;
  char err[128];
  if (gl_compile(dev0, "t:compile", "touch.cu", src, sizeof src - 1, NULL, 0, &img, &n) != 0) die("gl_compile");
  int rc = gl_module_load(dev0, img, n, "t:compile", "touch.cu", &m);
  free(img);
  if (rc != 0) die("gl_module_load");
  CHECK(gl_signature_parse("float*", &sig, err, sizeof err) == 0, "%s", err);
  if (gl_kernel_new(m, "touch", &sig, &k, "t:kernel", NULL) != 0) die("gl_kernel_new");
  gl_slice x;
  alloc(a, GL_F32, 4, &x);
  gl_launch_cfg one = {{1, 1, 1}, {1, 1, 1}, 0, 0};
  gl_launch_req r = {.call = "t:launch", .s = a, .k = k, .cfg = &one, .site = &site, .nargs = 1, .bad = -1};
  r.slices[0] = &x;
  if (gld_drv_ext.host_only) refused(&r, -1, "kernel 'touch' has no host implementation");
  gl_launch_cfg auto_grid = {{0, 1, 1}, {1, 1, 1}, 0, 0};
  r.cfg = &auto_grid;
  r.has_host = 1;
  refused(&r, -1, "kernel 'touch': cfg.grid is required");
  gl_slice_collect(&x);
  gl_kernel_unref(k);
  gl_module_unref(m);
}

/* The checker: a launch that writes what another stream wrote, unordered,
 * is refused (strict); const arguments are reads, which may overlap reads. */
static void test_conflicts(void) {
  gl_slice x, y1, y2;
  alloc(a, GL_F32, 64, &x);
  alloc(a, GL_F32, 64, &y1);
  alloc(b, GL_F32, 64, &y2);
  CHECK(gl_stream_sync(a, "t:sync", NULL) == 0 && gl_stream_sync(b, "t:sync", NULL) == 0, "%s", gl_error_message(rt));
  gl_launch_req r;
  scale_req(&r, a, &x, &y1, 64);
  CHECK(gl_launch_submit(&r) == 0, "%s", gl_error_message(rt));
  scale_req(&r, b, &x, &y2, 64); /* x read on a and on b: reads do not conflict */
  CHECK(gl_launch_submit(&r) == 0, "%s", gl_error_message(rt));
  scale_req(&r, b, &x, &y1, 64); /* y1 written on a, unordered with b */
  refused(&r, -1, "t:launch of 'scale_f32' argument 3");
  scale_req(&r, b, &y1, &y2, 64); /* y1 read on b while a may still be writing it */
  refused(&r, -1, "t:launch of 'scale_f32' argument 2");
  CHECK(gl_stream_sync(a, "t:sync", NULL) == 0 && gl_stream_sync(b, "t:sync", NULL) == 0, "%s", gl_error_message(rt));
  gl_slice_collect(&x);
  gl_slice_collect(&y1);
  gl_slice_collect(&y2);
}

/* A launch that passes runs with its arguments written: y = 2 * x. */
static void test_runs(void) {
  gl_slice x, y;
  alloc(a, GL_F32, 1000, &x);
  alloc(a, GL_F32, 1000, &y);
  gl_fill_req f = {.call = "t:fill", .s = a, .x = &x, .site = &site};
  float three = 3.0f;
  memcpy(f.value, &three, sizeof three);
  CHECK(gl_fill_submit(&f) == 0, "%s", gl_error_message(rt));
  gl_launch_req r;
  scale_req(&r, a, &x, &y, 1000);
  CHECK(gl_launch_submit(&r) == 0, "%s", gl_error_message(rt));
  gl_hostbuf h;
  memset(&h, 0, sizeof h);
  CHECK(gl_hostbuf_new(rt, GL_F32, 1000, 0, 0, "t:host", &h) == 0, "%s", gl_error_message(rt));
  gl_read_req rd = {.call = "t:read", .x = &y, .s = a, .h = &h, .site = &site};
  CHECK(gl_read_submit(&rd) == 0, "%s", gl_error_message(rt));
  const float *v = gl_hostbuf_ptr(&h);
  CHECK(v[0] == 6.0f && v[999] == 6.0f, "y = 2 * 3: got %g and %g", v[0], v[999]);

  /* copies and fills: their messages start with their requests' calls */
  gl_slice small;
  alloc(a, GL_F32, 10, &small);
  gl_copy_req c = {.call = "t:copy", .s = a, .dst = {&small, NULL}, .src = {&x, NULL}, .site = &site};
  CHECK(gl_copy_submit(&c) == -1 && strncmp(gl_error_message(rt), "t:copy: sizes differ", 20) == 0, "%s",
        gl_error_message(rt));
  f.why = "expected a number";
  f.given = "nil";
  CHECK(gl_fill_submit(&f) == GL_REFUSED &&
            strcmp(gl_error_message(rt), "t:fill: value: expected a number for f32, got nil") == 0,
        "%s", gl_error_message(rt));
  gl_hostbuf_collect(&h);
  gl_slice_collect(&small);
  gl_slice_collect(&x);
  gl_slice_collect(&y);
}

int main(void) {
  setenv("GPULUA_BACKEND", "sim", 1);
  setenv("GPULUA_SIM_DEVICES", "2", 1);
  gl_buf why = GL_BUF_INIT;
  if (gl_backend_choose(&why) != 0) {
    fprintf(stderr, "%s\n", gl_buf_str(&why));
    return 1;
  }
  if (!(rt = gl_runtime_new(&why))) {
    fprintf(stderr, "gl_runtime_new: %s\n", gl_buf_str(&why));
    return 1;
  }
  if (gl_device_open(rt, 0, "t:device", &dev0) != 0 || gl_device_open(rt, 1, "t:device", &dev1) != 0) die("gl_device_open");
  a = new_stream(dev0, "a");
  b = new_stream(dev0, "b");
  on1 = new_stream(dev1, "on1");
  const gl_builtin *sb = NULL;
  for (int i = 0; i < gl_nbuiltins; i++)
    if (strcmp(gl_builtins[i].name, "scale") == 0) sb = &gl_builtins[i];
  if (!sb || gl_builtin_kernel(dev0, sb, GL_F32, &scale) != 0) die("gl_builtin_kernel");
  test_checks();
  test_no_host_implementation();
  test_conflicts();
  test_runs();
  gl_stream *all[] = {a, b, on1};
  for (int i = 0; i < 3; i++) {
    gl_stream_close(all[i], GL_LOC_NONE, 1);
    gl_stream_unref(all[i]);
  }
  gl_runtime_free(rt);
  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures != 0;
}
