/*
 * bench/baselines/raw.c -- the raw-driver baseline: the same driver calls gpulua makes,
 * straight from C through the same dlopen'ed driver table, with no Lua and no
 * checks. Prints one "RESULT name value unit" line per figure; bench/run.sh
 * puts them beside gpulua's and CuPy's. Medians of repeated runs.
 *
 *   raw [launches]   (default 200000)
 */
#define RAW_NAME "raw"
#include "raw_common.h"

#include "builtins.h"
#include "scratch.h"

#define REPS 5

/* bench/workloads/pipeline_bench.lua's pipeline made raw: 32 chunks of 2^22 f32, each
 * copied in, scaled (b = 2a), axpy'd (b += a) and copied out on stream
 * (c % nstreams), two device buffers per stream; the time from an event
 * before all of it to one after every stream's last work. */
enum { PIPE_CHUNK = 1 << 22, PIPE_CHUNKS = 32 };

static double pipeline_ms(CUfunction scale, CUfunction axpy, unsigned grid, float *in, float *out,
                          CUdeviceptr *bufs, CUstream *ss, int nstreams, CUstream main_s) {
  CUevent start, stop, done[8];
  CK(cuEventCreate(&start, 0));
  CK(cuEventCreate(&stop, 0));
  for (int i = 0; i < nstreams; i++) CK(cuEventCreate(&done[i], CU_EVENT_DISABLE_TIMING));
  CK(cuEventRecord(start, main_s));
  for (int i = 0; i < nstreams; i++) CK(cuStreamWaitEvent(ss[i], start, 0));
  unsigned long long n = PIPE_CHUNK;
  for (int c = 0; c < PIPE_CHUNKS; c++) {
    int k = c % nstreams;
    CUstream st = ss[k];
    CUdeviceptr a = bufs[2 * k], b = bufs[2 * k + 1];
    size_t off = (size_t)c * PIPE_CHUNK;
    float two = 2.0f, one = 1.0f;
    void *ps[] = {&two, &a, &b, &n}, *pa[] = {&one, &a, &b, &n};
    CK(cuMemcpyHtoDAsync(a, in + off, PIPE_CHUNK * 4, st));
    CK(cuLaunchKernel(scale, grid, 1, 1, 256, 1, 1, 0, st, ps, NULL));
    CK(cuLaunchKernel(axpy, grid, 1, 1, 256, 1, 1, 0, st, pa, NULL));
    CK(cuMemcpyDtoHAsync(out + off, b, PIPE_CHUNK * 4, st));
  }
  for (int i = 0; i < nstreams; i++) {
    CK(cuEventRecord(done[i], ss[i]));
    CK(cuStreamWaitEvent(main_s, done[i], 0));
  }
  CK(cuEventRecord(stop, main_s));
  CK(cuEventSynchronize(stop));
  float ms;
  CK(cuEventElapsedTime(&ms, start, stop));
  CK(cuEventDestroy(start));
  CK(cuEventDestroy(stop));
  for (int i = 0; i < nstreams; i++) CK(cuEventDestroy(done[i]));
  return ms;
}

static void pipeline(CUmodule mb, int sms, CUstream main_s) {
  size_t bytes = (size_t)PIPE_CHUNK * PIPE_CHUNKS * 4;
  void *in, *out;
  CK(cuMemHostAlloc(&in, bytes, CU_MEMHOSTALLOC_PORTABLE));
  CK(cuMemHostAlloc(&out, bytes, CU_MEMHOSTALLOC_PORTABLE));
  float *fin = in, *fout = out;
  for (size_t i = 0; i < (size_t)PIPE_CHUNK * PIPE_CHUNKS; i++) fin[i] = (float)(i % 1000) * 0.5f;
  CUfunction scale, axpy;
  CK(cuModuleGetFunction(&scale, mb, "scale_f32"));
  CK(cuModuleGetFunction(&axpy, mb, "axpy_f32"));
  unsigned grid = (PIPE_CHUNK + 255) / 256;
  if (grid > (unsigned)sms * 8) grid = (unsigned)sms * 8;
  CUstream ss[4];
  CUdeviceptr bufs[8];
  for (int i = 0; i < 4; i++) CK(cuStreamCreateWithPriority(&ss[i], CU_STREAM_NON_BLOCKING, 0));
  for (int i = 0; i < 8; i++) CK(cuMemAllocAsync(&bufs[i], PIPE_CHUNK * 4, main_s));
  CK(cuStreamSynchronize(main_s));
  static const int counts[] = {1, 4};
  for (int j = 0; j < 2; j++) {
    double t[REPS];
    pipeline_ms(scale, axpy, grid, fin, fout, bufs, ss, counts[j], main_s); /* warm-up */
    for (int r = 0; r < REPS; r++) t[r] = pipeline_ms(scale, axpy, grid, fin, fout, bufs, ss, counts[j], main_s);
    printf("RESULT pipeline_%dstream %.4f ms\n", counts[j], median(t, REPS));
  }
  for (size_t i = 0; i < (size_t)PIPE_CHUNK * PIPE_CHUNKS; i += 4099)
    if (fout[i] != 3 * fin[i]) {
      fprintf(stderr, "raw: pipeline result is wrong at %zu\n", i);
      exit(1);
    }
  for (int i = 0; i < 8; i++) CK(cuMemFreeAsync(bufs[i], main_s));
  CK(cuStreamSynchronize(main_s));
  for (int i = 0; i < 4; i++) CK(cuStreamDestroy(ss[i]));
  CK(cuMemFreeHost(in));
  CK(cuMemFreeHost(out));
}

int main(int argc, char **argv) {
  int launches = argc > 1 ? atoi(argv[1]) : 200000;
  CUdevice dev;
  raw_open(&dev);
  int sms = 0;
  CK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  CUmemoryPool pool;
  CK(cuDeviceGetDefaultMemPool(&pool, dev));
  cuuint64_t thr = UINT64_MAX;
  CK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &thr));
  CUstream s, s2;
  CK(cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, 0));
  CK(cuStreamCreateWithPriority(&s2, CU_STREAM_NON_BLOCKING, 0));
  CUevent e0, e1, ev;
  CK(cuEventCreate(&e0, 0));
  CK(cuEventCreate(&e1, 0));
  CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
  double t[REPS];

  /* launch overhead: empty kernels, 1 and 8 pointer arguments */
  CUmodule me = compile(empty_src, "empty.cu");
  CUfunction f1, f8;
  CK(cuModuleGetFunction(&f1, me, "empty1"));
  CK(cuModuleGetFunction(&f8, me, "empty8"));
  CUdeviceptr buf;
  CK(cuMemAllocAsync(&buf, 1 << 20, s));
  CK(cuStreamSynchronize(s));
  for (int args = 1; args <= 8; args += 7) {
    CUdeviceptr ptrs[8];
    void *params[8];
    for (int i = 0; i < 8; i++) {
      ptrs[i] = buf + (CUdeviceptr)(i * 256);
      params[i] = &ptrs[i];
    }
    for (int r = 0; r < REPS; r++) {
      double t0 = now();
      for (int i = 0; i < launches; i++)
        CK(cuLaunchKernel(args == 1 ? f1 : f8, 1, 1, 1, 32, 1, 1, 0, s, params, NULL));
      CK(cuStreamSynchronize(s));
      t[r] = (now() - t0) / launches * 1e6;
    }
    printf("RESULT launch_%darg %.4f us\n", args, median(t, REPS));
  }

  /* event record + cross-stream wait */
  for (int r = 0; r < REPS; r++) {
    int n = launches / 2;
    double t0 = now();
    for (int i = 0; i < n; i++) {
      CK(cuEventRecord(ev, s));
      CK(cuStreamWaitEvent(s2, ev, 0));
    }
    CK(cuStreamSynchronize(s2));
    t[r] = (now() - t0) / n * 1e6;
  }
  printf("RESULT event_wait %.4f us\n", median(t, REPS));

  /* pinned copies, 256 MiB */
  size_t bytes = 256u << 20;
  void *host;
  CK(cuMemHostAlloc(&host, bytes, CU_MEMHOSTALLOC_PORTABLE));
  memset(host, 1, bytes);
  CUdeviceptr dbuf;
  CK(cuMemAllocAsync(&dbuf, bytes, s));
  for (int dir = 0; dir < 2; dir++) {
    for (int r = 0; r < REPS; r++) {
      CK(cuEventRecord(e0, s));
      if (dir == 0) CK(cuMemcpyHtoDAsync(dbuf, host, bytes, s));
      else CK(cuMemcpyDtoHAsync(host, dbuf, bytes, s));
      CK(cuEventRecord(e1, s));
      CK(cuEventSynchronize(e1));
      float ms;
      CK(cuEventElapsedTime(&ms, e0, e1));
      t[r] = bytes / (ms * 1e-3) / 1e9;
    }
    printf("RESULT %s_256MiB %.2f GB/s\n", dir == 0 ? "h2d" : "d2h", median(t, REPS));
  }

  /* the host link's bidirectional aggregate: 256 MiB H2D on s and 256 MiB
   * D2H on s2 at once (separate buffers), bytes of both over the wall time */
  {
    void *host2;
    CK(cuMemHostAlloc(&host2, bytes, CU_MEMHOSTALLOC_PORTABLE));
    memset(host2, 2, bytes);
    CUdeviceptr dbuf2;
    CK(cuMemAllocAsync(&dbuf2, bytes, s));
    CK(cuStreamSynchronize(s));
    for (int r = 0; r < REPS; r++) {
      double t0 = now();
      CK(cuMemcpyHtoDAsync(dbuf, host, bytes, s));
      CK(cuMemcpyDtoHAsync(host2, dbuf2, bytes, s2));
      CK(cuStreamSynchronize(s));
      CK(cuStreamSynchronize(s2));
      t[r] = 2.0 * bytes / (now() - t0) / 1e9;
    }
    printf("RESULT bidir_256MiB %.2f GB/s\n", median(t, REPS));
    CK(cuMemFreeAsync(dbuf2, s));
    CK(cuStreamSynchronize(s));
    CK(cuMemFreeHost(host2));
  }

  /* built-ins: the same source gpulua compiles (its f32 program), launched raw; n = 2^28 f32; sum's scratch
   * as gpulua lays it out (scratch.h: the ticket zeroed, the partials after it); raw_builtins.c has them all */
  CUmodule mb = compile_opt(gl_builtins_cuda_source(), "builtins.cu", gl_builtins_cuda_option(GL_F32));
  unsigned long long n = 1ull << 28;
  CUdeviceptr x, y, out, scratch, parts;
  CK(cuMemAllocAsync(&x, n * 4, s));
  CK(cuMemAllocAsync(&y, n * 4, s));
  CK(cuMemAllocAsync(&out, 4, s));
  CK(cuMemAllocAsync(&scratch, GL_SCRATCH_BYTES, s));
  CK(cuMemsetD8Async(scratch, 0, GL_SCRATCH_PARTS, s));
  parts = scratch + GL_SCRATCH_PARTS;
  CK(cuMemsetD32Async(x, 0x3f800000u, n, s));
  CK(cuMemsetD32Async(y, 0x40000000u, n, s));
  unsigned grid = (unsigned)sms * 16, block = 256;
  const char *names[] = {"axpy_f32", "scale_f32", "sum_f32"};
  double traffic[] = {3.0 * n * 4, 2.0 * n * 4, 1.0 * n * 4};
  for (int k = 0; k < 3; k++) {
    CUfunction f;
    CK(cuModuleGetFunction(&f, mb, names[k]));
    float a = 1.0001f;
    void *p3[] = {&a, &x, &y, &n};
    void *psum[] = {&x, &out, &n, &scratch, &parts};
    void **params = k == 2 ? psum : p3;
    CK(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, params, NULL)); /* warm-up */
    for (int r = 0; r < REPS; r++) {
      CK(cuEventRecord(e0, s));
      CK(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, params, NULL));
      CK(cuEventRecord(e1, s));
      CK(cuEventSynchronize(e1));
      float ms;
      CK(cuEventElapsedTime(&ms, e0, e1));
      t[r] = traffic[k] / (ms * 1e-3) / 1e9;
    }
    printf("RESULT %s_bw %.1f GB/s\n", names[k], median(t, REPS));
  }
  /* the device-to-device copy ceiling (bytes read + written) */
  for (int r = 0; r < REPS; r++) {
    CK(cuEventRecord(e0, s));
    CK(cuMemcpyDtoDAsync(y, x, n * 4, s));
    CK(cuEventRecord(e1, s));
    CK(cuEventSynchronize(e1));
    float ms;
    CK(cuEventElapsedTime(&ms, e0, e1));
    t[r] = 2.0 * n * 4 / (ms * 1e-3) / 1e9;
  }
  printf("RESULT d2d_copy_bw %.1f GB/s\n", median(t, REPS));
  CK(cuMemFreeAsync(x, s));
  CK(cuMemFreeAsync(y, s));
  CK(cuMemFreeAsync(scratch, s));
  CK(cuStreamSynchronize(s));
  pipeline(mb, sms, s);
  CK(cuCtxSynchronize());
  return 0;
}
