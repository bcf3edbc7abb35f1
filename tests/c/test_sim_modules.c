/*
 * test_sim_modules.c -- tests of what runs on the sim's streams and how it
 * fails: a faulting sim function's sticky CUDA_ERROR_LAUNCH_FAILED (and the
 * launches it skips), the error names and strings, modules and kernel
 * launches through host implementations, setting a host implementation
 * while a launch is queued, PTX parameter lists as NVRTC writes them, and
 * the built-ins' PTX running under GPULUA_SIM_BUILTINS=ptx.
 */
#include "sim_driver_harness.h"
#include "sim_driver_tests.h"
#include "driver_ext.h"

#include <stdint.h>
#include <string.h>

static int count_fn(void *p) {
  atomic_fetch_add((atomic_int *)p, 1);
  return 0;
}

static int fail_fn(void *p) {
  atomic_fetch_add((atomic_int *)p, 1);
  return 1;
}

/* A kernel's host implementation and its `skipped`, counting into the
 * atomic_int its one parameter points to. */
static int count_launch(void *user, const gld_sim_launch *l) {
  (void)user;
  unsigned long long p;
  memcpy(&p, l->params[0], sizeof p);
  atomic_fetch_add((atomic_int *)(uintptr_t)p, 1);
  return 0;
}

/* On device 1, so that its sticky per-stream error cannot leak into the
 * cuCtxSynchronize tests of device 0. */
void test_launch_failed(void) {
  CUstream s = mkstream_on(1), ok_s = mkstream_on(1);
  CUevent e;
  OK(d.cuEventCreate(&e, 0));
  CUdeviceptr p;
  static uint32_t one = 1, two = 2, host_out;
  host_out = 0xAAAAAAAA;
  atomic_int before = 0, fails = 0, after_sim = 0, after_host = 0;
  OK(d.cuMemAllocAsync(&p, 4, s));
  /* a kernel launch the fault skips: its `skipped` runs instead of it, so
   * that what its parameters hold is released (a sim host kernel's record) */
  static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry kern(\n"
                            ".param .u64 kern_param_0\n)\n{\nret;\n}\n";
  CUmodule m = NULL;
  CUfunction kf = NULL;
  OK(d.cuModuleLoadData(&m, ptx));
  OK(d.cuModuleGetFunction(&kf, m, "kern"));
  size_t sizes[] = {8};
  atomic_int ran = 0, skipped = 0;
  OK(gld_sim_func_set_host(kf, count_launch, count_launch, NULL, 0, 1, sizes, NULL));
  unsigned long long ran_p = (unsigned long long)(uintptr_t)&ran, skipped_p = (unsigned long long)(uintptr_t)&skipped;
  void *ran_params[] = {&ran_p}, *skipped_params[] = {&skipped_p};
  /* held until everything is queued: once the fault has run, later calls on
   * the context report it, so queueing after it would race the worker */
  gate hold;
  gate_init(&hold);
  OK(d.cuLaunchHostFunc(s, gate_fn, &hold));
  OK(d.cuMemcpyHtoDAsync(p, &one, 4, s));
  OK(gld_sim_enqueue(s, count_fn, &before));
  OK(d.cuLaunchKernel(kf, 1, 1, 1, 1, 1, 1, 0, s, ran_params, NULL));
  OK(gld_sim_enqueue(s, fail_fn, &fails)); /* a faulting "kernel" */
  OK(gld_sim_enqueue(s, count_fn, &after_sim));
  OK(d.cuLaunchKernel(kf, 1, 1, 1, 1, 1, 1, 0, s, skipped_params, NULL));
  OK(d.cuLaunchHostFunc(s, flag_fn, &after_host));
  OK(d.cuMemcpyHtoDAsync(p, &two, 4, s));
  OK(d.cuMemcpyDtoHAsync(&host_out, p, 4, s));
  OK(d.cuEventRecord(e, s));
  latch_set(&hold.open);
  CHECK_RC(d.cuStreamSynchronize(s), CUDA_ERROR_LAUNCH_FAILED);
  CHECK_RC(d.cuStreamQuery(s), CUDA_ERROR_LAUNCH_FAILED);
  CHECK_RC(d.cuStreamSynchronize(s), CUDA_ERROR_LAUNCH_FAILED); /* sticky */
  CHECK(atomic_load(&before) == 1);
  CHECK(atomic_load(&fails) == 1);
  CHECK(atomic_load(&after_sim) == 0);
  CHECK(atomic_load(&after_host) == 0);
  CHECK(atomic_load(&ran) == 1 && atomic_load(&skipped) == 1);
  CHECK(host_out == 0xAAAAAAAA); /* the copy back was skipped */
  /* as on a GPU, the fault ends the whole context: records still complete,
   * so nobody waits forever, but every wait and every later call on the
   * context reports the fault, on any of its streams */
  CHECK_RC(d.cuEventSynchronize(e), CUDA_ERROR_LAUNCH_FAILED);
  CHECK_RC(d.cuEventQuery(e), CUDA_ERROR_LAUNCH_FAILED);
  CHECK_RC(d.cuStreamWaitEvent(ok_s, e, 0), CUDA_ERROR_LAUNCH_FAILED);
  CHECK_RC(d.cuCtxSynchronize(), CUDA_ERROR_LAUNCH_FAILED);
  CHECK_RC(gld_sim_enqueue(s, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
  atomic_int ok_count = 0;
  CHECK_RC(gld_sim_enqueue(ok_s, count_fn, &ok_count), CUDA_ERROR_LAUNCH_FAILED);
  CHECK_RC(d.cuStreamSynchronize(ok_s), CUDA_ERROR_LAUNCH_FAILED);
  CHECK_RC(d.cuStreamQuery(ok_s), CUDA_ERROR_LAUNCH_FAILED);
  size_t f;
  CHECK_RC(d.cuMemGetInfo(&f, NULL), CUDA_ERROR_LAUNCH_FAILED);
  CHECK(atomic_load(&ok_count) == 0);

  /* frees are still accepted on the failed stream */
  OK(d.cuMemFreeAsync(p, s));
  CHECK_RC(d.cuStreamSynchronize(s), CUDA_ERROR_LAUNCH_FAILED);

  /* another context (device 0) is unaffected */
  use_ctx(0);
  CUstream other = mkstream_on(0);
  atomic_int other_count = 0;
  OK(gld_sim_enqueue(other, count_fn, &other_count));
  OK(d.cuStreamSynchronize(other));
  CHECK(atomic_load(&other_count) == 1);
  OK(d.cuStreamDestroy(other));
  use_ctx(1);

  OK(d.cuEventDestroy(e));
  OK(d.cuStreamDestroy(s));
  OK(d.cuStreamDestroy(ok_s));
  OK(d.cuModuleUnload(m));
  gate_destroy(&hold);
  use_ctx(0);
}

void test_error_strings(void) {
  struct {
    CUresult r;
    const char *name, *str;
  } known[] = {
      {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
      {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
      {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
      {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
      {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
      {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
      {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
      {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
      {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
      {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
  };
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
    const char *n = NULL, *s = NULL;
    OK(d.cuGetErrorName(known[i].r, &n));
    OK(d.cuGetErrorString(known[i].r, &s));
    if (!n || strcmp(n, known[i].name) != 0)
      fail_at(__FILE__, __LINE__, "cuGetErrorName(%d) = %s, expected %s", (int)known[i].r,
              n ? n : "NULL", known[i].name);
    if (!s || strcmp(s, known[i].str) != 0)
      fail_at(__FILE__, __LINE__, "cuGetErrorString(%d) = %s, expected %s", (int)known[i].r,
              s ? s : "NULL", known[i].str);
  }
  CUresult unknown[] = {(CUresult)12345, (CUresult)-1, (CUresult)99999};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    const char *n = "x", *s = "x";
    CHECK_RC(d.cuGetErrorName(unknown[i], &n), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(d.cuGetErrorString(unknown[i], &s), CUDA_ERROR_INVALID_VALUE);
    CHECK(n == NULL && s == NULL);
  }
}

/* Modules: PTX entries are found by name, junk is refused; a launch runs the
 * host implementation (parameters copied at launch), and without one it is
 * CUDA_ERROR_NOT_SUPPORTED: no device code runs on sim. */
static int add_host(void *user, const gld_sim_launch *l) {
  (void)user;
  int *out = (int *)(uintptr_t)*(unsigned long long *)l->params[0];
  *out = *(int *)l->params[1] + (int)l->grid[0] + (int)l->block[0];
  return 0;
}

void test_modules(void) {
  CUstream s = mkstream();
  CUmodule m = NULL;
  CUfunction f = NULL, g = NULL;
  int v = 0;
  static const char junk[] = "// not a module\n";
  static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry kern(\n"
                            ".param .u64 kern_param_0,\n.param .u32 kern_param_1\n)\n{\nret;\n}\n";
  CHECK_RC(d.cuModuleLoadData(&m, junk), CUDA_ERROR_INVALID_IMAGE);
  OK(d.cuModuleLoadData(&m, ptx));
  CHECK_RC(d.cuModuleGetFunction(&f, m, "kern_missing"), CUDA_ERROR_NOT_FOUND);
  CHECK_RC(d.cuModuleGetFunction(&f, m, "ker"), CUDA_ERROR_NOT_FOUND);
  OK(d.cuModuleGetFunction(&f, m, "kern"));
  OK(d.cuModuleGetFunction(&g, m, "kern"));
  CHECK(f == g);
  OK(d.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f));
  CHECK(v == 1024);
  size_t off = 99, size = 99;
  OK(d.cuFuncGetParamInfo(f, 0, &off, &size));
  CHECK(off == 0 && size == 8);
  OK(d.cuFuncGetParamInfo(f, 1, &off, &size));
  CHECK(off == 8 && size == 4);
  CHECK_RC(d.cuFuncGetParamInfo(f, 2, &off, &size), CUDA_ERROR_INVALID_VALUE);
  int out = 0, arg = 40;
  unsigned long long outp = (unsigned long long)(uintptr_t)&out;
  void *params[] = {&outp, &arg};
  CHECK_RC(d.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, params, NULL), CUDA_ERROR_NOT_SUPPORTED);
  size_t sizes[] = {8, 4};
  OK(gld_sim_func_set_host(f, add_host, NULL, NULL, 0, 2, sizes, NULL));
  CHECK_RC(d.cuLaunchKernel(f, 1, 1, 1, 2048, 1, 1, 0, s, params, NULL), CUDA_ERROR_INVALID_VALUE);
  OK(d.cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, s, params, NULL));
  arg = 0; /* parameters were copied at launch */
  OK(d.cuStreamSynchronize(s));
  CHECK(out == 40 + 2 + 32);
  OK(d.cuModuleUnload(m));
  OK(d.cuStreamDestroy(s));
}

/* gld_sim_func_set_host while a launch of the function is on its way (k:host
 * called again with work queued): the worker reads the host implementation
 * under the sim's lock, so this is no data race (scripts/test-tsan.sh runs
 * this test under ThreadSanitizer, which reported it before the fix). */
static int slow_add_host(void *user, const gld_sim_launch *l) {
  sleep_ms(50); /* the test sets the host again meanwhile */
  return add_host(user, l);
}

void test_set_host_while_queued(void) {
  static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry kern(\n"
                            ".param .u64 kern_param_0,\n.param .u32 kern_param_1\n)\n{\nret;\n}\n";
  CUstream s = mkstream();
  CUmodule m = NULL;
  CUfunction f = NULL;
  OK(d.cuModuleLoadData(&m, ptx));
  OK(d.cuModuleGetFunction(&f, m, "kern"));
  size_t sizes[] = {8, 4};
  OK(gld_sim_func_set_host(f, slow_add_host, NULL, NULL, 0, 2, sizes, NULL));
  gate g;
  gate_init(&g);
  OK(d.cuLaunchHostFunc(s, gate_fn, &g));
  int out = 0, arg = 1;
  unsigned long long outp = (unsigned long long)(uintptr_t)&out;
  void *params[] = {&outp, &arg};
  OK(d.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
  (void)d.cuStreamQuery(s); /* asking starts queued work (the sim's rule) */
  latch_wait(&g.entered);
  latch_set(&g.open);
  while (d.cuStreamQuery(s) == CUDA_ERROR_NOT_READY)
    OK(gld_sim_func_set_host(f, slow_add_host, NULL, NULL, 0, 2, sizes, NULL));
  OK(d.cuStreamSynchronize(s));
  CHECK(out == 1 + 1 + 1);
  gate_destroy(&g);
  OK(d.cuModuleUnload(m));
  OK(d.cuStreamDestroy(s));
}

/* PTX parameter lists as NVRTC writes them: an ".align" after the type is
 * the pointee's (".ptr .global .align 1"), one before it the parameter's;
 * .maxntid (__launch_bounds__) limits the block; a list the sim cannot read
 * leaves the parameters unknown instead of reporting a wrong layout. */
void test_ptx_params(void) {
  static const char ptx[] =
      ".version 8.0\n.target sm_90\n.address_size 64\n"
      ".visible .entry k(\n.param .u32 k_param_0,\n.param .u64 .ptr .global .align 1 k_param_1,\n"
      ".param .align 4 .b8 k_param_2[12],\n.param .f64 k_param_3\n)\n.maxntid 64, 2, 1\n{\nret;\n}\n"
      ".visible .entry bad(\n.param .b8 bad_param_0[99999999999]\n)\n{\nret;\n}\n"
      ".visible .entry odd(\n.param .align 3 .b8 odd_param_0[4]\n)\n{\nret;\n}\n";
  CUmodule m = NULL;
  CUfunction f = NULL;
  OK(d.cuModuleLoadData(&m, ptx));
  OK(d.cuModuleGetFunction(&f, m, "k"));
  static const size_t want[][2] = {{0, 4}, {8, 8}, {16, 12}, {32, 8}};
  for (size_t i = 0; i < 4; i++) {
    size_t off = 99, size = 99;
    OK(d.cuFuncGetParamInfo(f, i, &off, &size));
    CHECK(off == want[i][0] && size == want[i][1]);
  }
  int v = 0;
  OK(d.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f));
  CHECK(v == 128);
  size_t off, size;
  OK(d.cuModuleGetFunction(&f, m, "bad"));
  CHECK_RC(d.cuFuncGetParamInfo(f, 0, &off, &size), CUDA_ERROR_NOT_SUPPORTED);
  OK(d.cuModuleGetFunction(&f, m, "odd"));
  CHECK_RC(d.cuFuncGetParamInfo(f, 0, &off, &size), CUDA_ERROR_NOT_SUPPORTED);
  OK(d.cuModuleUnload(m));
}

/* GPULUA_SIM_BUILTINS=ptx (test_kernels_setting sets it, with
 * GPULUA_SIM_KERNELS=host: the settings are independent): a built-in's
 * launch runs the module's PTX, not the C implementation func_set_builtin
 * gives it. Here the module's fill_f32 writes 7 whatever v is, where the C
 * fill writes v. */
void test_builtins_run_ptx(void) {
  static const char ptx[] =
      ".version 8.0\n.target sm_90\n.address_size 64\n"
      ".visible .entry fill_f32(\n.param .u64 fill_f32_param_0,\n.param .f32 fill_f32_param_1,\n"
      ".param .u64 fill_f32_param_2\n)\n{\n"
      ".reg .pred %p<2>;\n.reg .b32 %r<2>;\n.reg .f32 %f<2>;\n.reg .b64 %rd<5>;\n"
      "ld.param.u64 %rd1, [fill_f32_param_0];\nld.param.u64 %rd2, [fill_f32_param_2];\n"
      "mov.u32 %r1, %tid.x;\ncvt.u64.u32 %rd3, %r1;\nsetp.ge.u64 %p1, %rd3, %rd2;\n@%p1 bra $L__BB0_2;\n"
      "cvta.to.global.u64 %rd1, %rd1;\nshl.b64 %rd4, %rd3, 2;\nadd.s64 %rd4, %rd1, %rd4;\n"
      "mov.f32 %f1, 0f40E00000;\nst.global.f32 [%rd4], %f1;\n$L__BB0_2:\nret;\n}\n";
  gld_driver_ext x;
  gld_driver_sim_load_ext(&x);
  CHECK(x.builtins_ptx && strcmp(x.builtins_ptx, "GPULUA_SIM_BUILTINS=ptx") == 0);
  CHECK(x.host_only); /* GPULUA_SIM_KERNELS=host */
  CUstream s = mkstream();
  CUmodule m = NULL;
  CUfunction f = NULL;
  OK(x.load_builtins(&m, ptx));
  OK(d.cuModuleGetFunction(&f, m, "fill_f32"));
  size_t sizes[] = {8, 4, 8};
  OK(x.func_set_builtin(f, "fill", "f32", 3, sizes));
  CUdeviceptr y;
  OK(d.cuMemAllocAsync(&y, 8 * sizeof(float), s));
  OK(d.cuMemsetD32Async(y, 0, 8, s));
  float v = 3.0f, out[8];
  unsigned long long yp = y, n = 5;
  void *params[] = {&yp, &v, &n};
  OK(d.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, params, NULL));
  OK(d.cuMemcpyDtoHAsync(out, y, sizeof out, s));
  OK(d.cuStreamSynchronize(s));
  for (int i = 0; i < 8; i++) CHECK(out[i] == (i < 5 ? 7.0f : 0.0f));
  OK(d.cuMemFreeAsync(y, s));
  OK(d.cuModuleUnload(m));
  OK(d.cuStreamDestroy(s));
}
