/*
 * test_sim_compare.c -- tests of GPULUA_SIM_KERNELS=compare (sim_compare.c):
 * how elements compare (the bits, two NaNs equal) and how their values are
 * written in a fault's message; and a launch that runs both the PTX and a
 * host implementation on the worker, the host one on copies taken before
 * the launch, the memory keeping the PTX's result.
 */
#include "sim_driver_harness.h"
#include "sim_driver_tests.h"
#include "sim/sim_internal.h"

#include <stdint.h>
#include <string.h>

static const char *fmt(char kind, size_t size, uint64_t bits) {
  static char buf[64];
  unsigned char b[8];
  memcpy(b, &bits, 8); /* little-endian: the element's bytes first */
  sim_compare_format(kind, size, b, buf, sizeof buf);
  return buf;
}

void test_compare_values(void) {
  CHECK(strcmp(fmt('f', 4, 0x42080000), "34.0") == 0);
  CHECK(strcmp(fmt('f', 4, 0x3dcccccd), "0.1") == 0);        /* 0.1f: its shortest text */
  CHECK(strcmp(fmt('f', 8, 0x3fb999999999999aull), "0.1") == 0);
  CHECK(strcmp(fmt('f', 8, 0x3fb999999999999bull), "0.10000000000000002") == 0);
  CHECK(strcmp(fmt('f', 2, 0x3c00), "1.0") == 0);             /* f16 */
  CHECK(strcmp(fmt('f', 2, 0x3555), "0.3333") == 0);
  CHECK(strcmp(fmt('b', 2, 0x3f80), "1.0") == 0);             /* bf16 */
  CHECK(strcmp(fmt('b', 2, 0x3eab), "0.334") == 0);
  CHECK(strcmp(fmt('f', 4, 0x7fc00001), "nan") == 0);
  CHECK(strcmp(fmt('f', 4, 0xff800000), "-inf") == 0);
  CHECK(strcmp(fmt('f', 4, 0x80000000), "-0.0") == 0);
  CHECK(strcmp(fmt('f', 4, 0x60ad78ec), "1e+20") == 0);
  CHECK(strcmp(fmt('i', 1, 0xff), "-1") == 0);
  CHECK(strcmp(fmt('u', 1, 0xff), "255") == 0);
  CHECK(strcmp(fmt('i', 8, 0x8000000000000000ull), "-9223372036854775808") == 0);
  CHECK(strcmp(fmt('u', 8, UINT64_MAX), "18446744073709551615") == 0);

  gld_host_arg f32 = {.ptr = 1, .writes = 1, .type = "f32", .kind = 'f', .size = 4, .count = 4};
  uint32_t a[4] = {1, 0x7fc00000, 0x00000000, 5}, b[4] = {1, 0xffc00123, 0x80000000, 5};
  size_t at = 99;
  CHECK(sim_compare_first(&f32, a, a, &at) == 0);
  CHECK(sim_compare_first(&f32, a, b, &at) == 1 && at == 2); /* two NaNs agree; 0 and -0 differ */
  gld_host_arg u32 = f32;
  u32.kind = 'u';
  CHECK(sim_compare_first(&u32, a, b, &at) == 1 && at == 1); /* integers: the bits alone */
  gld_host_arg bf16 = {.ptr = 1, .writes = 1, .type = "bf16", .kind = 'b', .size = 2, .count = 3};
  uint16_t c[3] = {0x7fc1, 0x3f80, 0x3f80}, e[3] = {0xffff, 0x3f80, 0x3f81};
  CHECK(sim_compare_first(&bf16, c, e, &at) == 1 && at == 2);
  gld_host_arg f64 = {.ptr = 1, .writes = 1, .type = "f64", .kind = 'f', .size = 8, .count = 2};
  uint64_t g[2] = {0x7ff8000000000123ull, 0x7ff0000000000000ull}, h[2] = {0xfff8000000000000ull, 0x7ff0000000000000ull};
  CHECK(sim_compare_first(&f64, g, h, &at) == 0); /* a NaN, and infinity: equal */
}

/* saxpy, y = a x + y in place, as NVRTC writes it (tests/ptx/saxpy.cu) */
static const char saxpy_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry saxpy(\n.param .u32 saxpy_param_0,\n.param .f32 saxpy_param_1,\n"
    ".param .u64 saxpy_param_2,\n.param .u64 saxpy_param_3\n)\n{\n"
    ".reg .pred %p<2>;\n.reg .f32 %f<5>;\n.reg .b32 %r<6>;\n.reg .b64 %rd<8>;\n"
    "ld.param.u32 %r2, [saxpy_param_0];\nld.param.f32 %f1, [saxpy_param_1];\n"
    "ld.param.u64 %rd1, [saxpy_param_2];\nld.param.u64 %rd2, [saxpy_param_3];\n"
    "mov.u32 %r3, %ctaid.x;\nmov.u32 %r4, %ntid.x;\nmov.u32 %r5, %tid.x;\nmad.lo.s32 %r1, %r3, %r4, %r5;\n"
    "setp.ge.s32 %p1, %r1, %r2;\n@%p1 bra $L__BB0_2;\n"
    "cvta.to.global.u64 %rd3, %rd2;\ncvta.to.global.u64 %rd4, %rd1;\nmul.wide.s32 %rd5, %r1, 4;\n"
    "add.s64 %rd6, %rd4, %rd5;\nld.global.f32 %f2, [%rd6];\nadd.s64 %rd7, %rd3, %rd5;\n"
    "ld.global.f32 %f3, [%rd7];\nfma.rn.f32 %f4, %f2, %f1, %f3;\nst.global.f32 [%rd7], %f4;\n"
    "$L__BB0_2:\nret;\n}\n";

#define SAXPY_N 40

static struct {
  int runs, described;
  float seen; /* y[7] as the host implementation found it */
  const void *y; /* the memory it was given for y */
} saxpy_log;

static int saxpy_host(void *user, const gld_sim_launch *l) {
  (void)user;
  int n;
  float a;
  unsigned long long xp, yp;
  memcpy(&n, l->params[0], 4);
  memcpy(&a, l->params[1], 4);
  memcpy(&xp, l->params[2], 8);
  memcpy(&yp, l->params[3], 8);
  const float *x = (const float *)(uintptr_t)xp;
  float *y = (float *)(uintptr_t)yp;
  saxpy_log.runs++;
  saxpy_log.seen = y[7];
  saxpy_log.y = y;
  for (int i = 0; i < n; i++) y[i] = a * x[i] + y[i];
  return 0;
}

static void saxpy_args(void *user, const gld_sim_launch *l, gld_host_arg *args) {
  (void)user;
  (void)l;
  saxpy_log.described++;
  args[2] = (gld_host_arg){.ptr = 1, .writes = 0, .type = "f32", .kind = 'f', .size = 4, .count = SAXPY_N};
  args[3] = (gld_host_arg){.ptr = 1, .writes = 1, .type = "f32", .kind = 'f', .size = 4, .count = SAXPY_N};
}

/* The sim reads the mode at a module's load (which decodes the PTX) and at
 * each launch; this process runs in host mode (test_kernels_setting), this
 * test in compare mode. */
static sim_kernel_mode set_mode(sim_kernel_mode mode) {
  pthread_mutex_lock(&sim_S.mu);
  sim_kernel_mode was = sim_S.kernels;
  sim_S.kernels = mode;
  pthread_mutex_unlock(&sim_S.mu);
  return was;
}

void test_compare_launch(void) {
  sim_kernel_mode was = set_mode(SIM_KERNELS_COMPARE);
  CUstream s = mkstream();
  CUmodule m = NULL;
  CUfunction f = NULL;
  OK(d.cuModuleLoadData(&m, saxpy_ptx));
  OK(d.cuModuleGetFunction(&f, m, "saxpy"));
  size_t sizes[] = {4, 4, 8, 8};
  OK(gld_sim_func_set_host(f, saxpy_host, NULL, NULL, 0, 4, sizes, saxpy_args));
  CUdeviceptr x, y;
  OK(d.cuMemAllocAsync(&x, SAXPY_N * 4, s));
  OK(d.cuMemAllocAsync(&y, SAXPY_N * 4, s));
  static float hx[SAXPY_N], hy[SAXPY_N], out[SAXPY_N];
  for (int i = 0; i < SAXPY_N; i++) hx[i] = (float)i, hy[i] = 1.0f;
  OK(d.cuMemcpyHtoDAsync(x, hx, sizeof hx, s));
  OK(d.cuMemcpyHtoDAsync(y, hy, sizeof hy, s));
  OK(d.cuStreamSynchronize(s));
  int n = SAXPY_N;
  float a = 2.0f;
  void *params[] = {&n, &a, &x, &y};
  memset(&saxpy_log, 0, sizeof saxpy_log);
  OK(d.cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, s, params, NULL));
  OK(d.cuStreamSynchronize(s));
  OK(d.cuMemcpyDtoHAsync(out, y, sizeof out, s));
  OK(d.cuStreamSynchronize(s));
  CHECK(saxpy_log.described == 1);
  CHECK(saxpy_log.runs == 1);
  CHECK(saxpy_log.seen == 1.0f);                           /* the memory as it was before the launch */
  CHECK(saxpy_log.y != (const void *)(uintptr_t)y);        /* a copy */
  for (int i = 0; i < SAXPY_N; i++) CHECK(out[i] == 2.0f * i + 1.0f); /* once: the PTX's result */
  OK(d.cuMemFreeAsync(x, s));
  OK(d.cuMemFreeAsync(y, s));
  OK(d.cuStreamSynchronize(s));
  OK(d.cuModuleUnload(m));
  OK(d.cuStreamDestroy(s));
  set_mode(was);
}
