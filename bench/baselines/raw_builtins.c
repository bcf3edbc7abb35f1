/*
 * bench/baselines/raw_builtins.c -- the built-in library launched raw: the programs
 * gpulua compiles from kernels/builtins.cu (one per dtype: f32, f16, i32),
 * each of the ten kernels launched straight through the driver table on the
 * grid gpulua's grid "auto" picks (the same formula as src/core/launch.c),
 * block 256, n = 2^28 elements; the reductions with a scratch laid out as
 * gpulua's (scratch.h). Prints "RESULT builtin_<kernel>_<dtype> GB/s" (bytes
 * moved, as the sim's timing model counts them, over the median of 5 timed
 * launches after a warm-up) and the device-to-device copy of the same
 * elements (bytes read and written) as "builtin_d2d_<dtype>"; bench/run.sh
 * puts them beside bench/workloads/builtins_bench.lua's and bench/baselines/cupy_builtins.py's.
 *
 *   raw_builtins [log2 n]   (default 28)
 */
#define RAW_NAME "raw_builtins"
#include "raw_common.h"

#include "builtins.h"
#include "scratch.h"

#define REPS 5
#define BLOCK 256

static int attr(CUdevice dev, CUdevice_attribute a) {
  int v = 0;
  CK(cuDeviceGetAttribute(&v, a, dev));
  return v;
}

/* gpulua's grid "auto" (launch.c's builtin_grid) for f on this device */
static unsigned auto_grid(CUfunction f, CUdevice dev, unsigned long long n, size_t size, int reduces) {
  int regs = 0;
  CK(cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f));
  /* an elementwise kernel: a block per tile of 4 vectors a thread; a reduction: a grid that fills the SMs */
  unsigned long long per_block = BLOCK * (16 / size) * (reduces ? 1 : 4), need = (n + per_block - 1) / per_block;
  unsigned long long per_sm = (unsigned long long)attr(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR) / BLOCK;
  unsigned long long warp = ((unsigned long long)regs * 32 + 255) / 256 * 256;
  unsigned long long by_regs = regs ? (unsigned long long)attr(dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK) /
                                          (warp * (BLOCK / 32))
                                    : per_sm;
  if (by_regs < per_sm) per_sm = by_regs;
  if (per_sm > 32) per_sm = 32;
  if (per_sm < 1) per_sm = 1;
  unsigned long long fill = (unsigned long long)attr(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT) * per_sm;
  unsigned long long g = need < fill || !reduces ? need : fill;
  if (reduces && g > GL_REDUCE_BLOCKS) g = GL_REDUCE_BLOCKS;
  return g ? (unsigned)g : 1;
}

int main(int argc, char **argv) {
  int lg = argc > 1 ? atoi(argv[1]) : 28;
  unsigned long long n = 1ull << lg, one = 1;
  CUdevice dev;
  raw_open(&dev);
  CUstream s;
  CK(cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, 0));
  CUevent e0, e1;
  CK(cuEventCreate(&e0, 0));
  CK(cuEventCreate(&e1, 0));
  static const struct {
    gl_dtype dt;
    const char *name;
    size_t size;
  } types[] = {{GL_F32, "f32", 4}, {GL_F16, "f16", 2}, {GL_I32, "i32", 4}};
  /* the kernels in bench/workloads/builtins_bench.lua's order, with their passes over n (builtins.c) */
  static const char *const kernels[] = {"fill", "copy", "scale", "axpy", "add", "mul", "sum", "dot", "min", "max"};
  static const int passes[] = {1, 2, 2, 3, 3, 3, 1, 2, 1, 1};
  CUdeviceptr scratch, parts;
  CK(cuMemAllocAsync(&scratch, GL_SCRATCH_BYTES, s));
  CK(cuMemsetD8Async(scratch, 0, GL_SCRATCH_PARTS, s));
  parts = scratch + GL_SCRATCH_PARTS;
  double t[REPS];
  for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
    size_t size = types[ti].size;
    CUmodule m = compile_opt(gl_builtins_cuda_source(), "builtins.cu", gl_builtins_cuda_option(types[ti].dt));
    CUdeviceptr x, y, z, out;
    CK(cuMemAllocAsync(&x, n * size, s));
    CK(cuMemAllocAsync(&y, n * size, s));
    CK(cuMemAllocAsync(&z, n * size, s));
    CK(cuMemAllocAsync(&out, 16, s));
    /* ones and twos: f32 1.0f and 2.0f, f16 0x3c00 and 0x4000, i32 1 and 2 */
    if (size == 2) {
      CK(cuMemsetD16Async(x, 0x3c00, n, s));
      CK(cuMemsetD16Async(y, 0x4000, n, s));
    } else {
      CK(cuMemsetD32Async(x, types[ti].dt == GL_F32 ? 0x3f800000u : 1u, n, s));
      CK(cuMemsetD32Async(y, types[ti].dt == GL_F32 ? 0x40000000u : 2u, n, s));
    }
    /* the scalars: 1 of the dtype (an f32 a little above it) */
    float af = 1.0001f;
    unsigned short ah = 0x3c00;
    int ai = 3;
    void *a = types[ti].dt == GL_F32 ? (void *)&af : size == 2 ? (void *)&ah : (void *)&ai;
    for (int k = 0; k < 10; k++) {
      char name[32];
      snprintf(name, sizeof name, "%s_%s", kernels[k], types[ti].name);
      CUfunction f;
      CK(cuModuleGetFunction(&f, m, name));
      void *p_axpy[] = {a, &x, &y, &n}, *p_scale[] = {a, &x, &z, &n}, *p_fill[] = {&z, a, &n};
      void *p_add[] = {&x, &y, &z, &n}, *p_copy[] = {&x, &one, &z, &one, &n};
      void *p_red[] = {&x, &out, &n, &scratch, &parts}, *p_dot[] = {&x, &y, &out, &n, &scratch, &parts};
      void **params = k == 0 ? p_fill : k == 1 ? p_copy : k == 2 ? p_scale : k == 3 ? p_axpy : k <= 5 ? p_add
                    : k == 7 ? p_dot : p_red;
      unsigned grid = auto_grid(f, dev, n, size, k >= 6);
      CK(cuLaunchKernel(f, grid, 1, 1, BLOCK, 1, 1, 0, s, params, NULL)); /* warm-up */
      for (int r = 0; r < REPS; r++) {
        CK(cuEventRecord(e0, s));
        CK(cuLaunchKernel(f, grid, 1, 1, BLOCK, 1, 1, 0, s, params, NULL));
        CK(cuEventRecord(e1, s));
        CK(cuEventSynchronize(e1));
        float ms;
        CK(cuEventElapsedTime(&ms, e0, e1));
        t[r] = (double)passes[k] * n * size / (ms * 1e-3) / 1e9;
      }
      printf("RESULT builtin_%s %.1f GB/s (grid %u)\n", name, median(t, REPS), grid);
    }
    for (int r = 0; r < REPS; r++) { /* the ceiling: a copy of the same elements, bytes read and written */
      CK(cuEventRecord(e0, s));
      CK(cuMemcpyDtoDAsync(z, x, n * size, s));
      CK(cuEventRecord(e1, s));
      CK(cuEventSynchronize(e1));
      float ms;
      CK(cuEventElapsedTime(&ms, e0, e1));
      t[r] = 2.0 * n * size / (ms * 1e-3) / 1e9;
    }
    printf("RESULT builtin_d2d_%s %.1f GB/s\n", types[ti].name, median(t, REPS));
    CK(cuMemFreeAsync(x, s));
    CK(cuMemFreeAsync(y, s));
    CK(cuMemFreeAsync(z, s));
    CK(cuMemFreeAsync(out, s));
    CK(cuStreamSynchronize(s));
    CK(cuModuleUnload(m));
  }
  CK(cuMemFreeAsync(scratch, s));
  CK(cuStreamSynchronize(s));
  return 0;
}
