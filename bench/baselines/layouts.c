/*
 * bench/baselines/layouts.c -- what the pipeline's layout allows, measured raw: the
 * pipeline of bench/workloads/pipeline_bench.lua (32 chunks of 2^22 f32: copy in,
 * scale, axpy, copy out) laid out in several ways with the same driver calls
 * from C, beside the host link's bidirectional aggregate measured two ways
 * (two 256 MiB copies at once, and the pipeline's own 16 MiB copies back to
 * back in each direction at once). Each figure the median of REPS runs.
 * Prints "RESULT name value unit".
 *
 *   layouts
 *
 * The layouts:
 *   streams_N  batch c on stream c % N: copy in, two kernels, copy out (the
 *              layout of pipeline.run and of CuPy's benchmark)
 *   graph_4    streams_4 captured once as a graph (forked from and joined into
 *              the main stream) and replayed
 *   split_4    streams_4 with each copy made as two copies of 8 MiB
 *   engines    one stream per engine: copies in on one, kernels on another,
 *              copies out on a third, ordered by events, a ring of 4 buffers
 */
#define RAW_NAME "layouts"
#include "raw_common.h"

#include "builtins.h"

#define REPS 7
enum { CHUNK = 1 << 22, CHUNKS = 32, MAXS = 8 };

static CUfunction scale, axpy;
static unsigned grid;
static float *in, *out;
static CUdeviceptr bufs[2 * MAXS], big[2]; /* big: 256 MiB each, for the aggregates */
static CUstream ss[MAXS], main_s;
static CUevent ev[3 * CHUNKS];

static void compute(CUstream st, CUdeviceptr a, CUdeviceptr b) {
  unsigned long long n = CHUNK;
  float two = 2.0f, one = 1.0f;
  void *ps[] = {&two, &a, &b, &n}, *pa[] = {&one, &a, &b, &n};
  CK(cuLaunchKernel(scale, grid, 1, 1, 256, 1, 1, 0, st, ps, NULL));
  CK(cuLaunchKernel(axpy, grid, 1, 1, 256, 1, 1, 0, st, pa, NULL));
}

/* queue the layout on main_s's forks (the work only: no timing) */
static void queue(const char *layout, int nstreams) {
  CK(cuEventRecord(ev[0], main_s));
  for (int i = 0; i < MAXS; i++) CK(cuStreamWaitEvent(ss[i], ev[0], 0));
  if (strcmp(layout, "engines") == 0) {
    /* ss[0] copies in, ss[1] computes, ss[2] copies out; buffer pair c % 4 */
    for (int c = 0; c < CHUNKS; c++) {
      int k = c % 4;
      CUdeviceptr a = bufs[2 * k], b = bufs[2 * k + 1];
      size_t off = (size_t)c * CHUNK;
      if (c >= 4) CK(cuStreamWaitEvent(ss[0], ev[2 * CHUNKS + c - 4], 0)); /* pair free: its copy out done */
      CK(cuMemcpyHtoDAsync(a, in + off, CHUNK * 4, ss[0]));
      CK(cuEventRecord(ev[c], ss[0]));
      CK(cuStreamWaitEvent(ss[1], ev[c], 0));
      compute(ss[1], a, b);
      CK(cuEventRecord(ev[CHUNKS + c], ss[1]));
      CK(cuStreamWaitEvent(ss[2], ev[CHUNKS + c], 0));
      CK(cuMemcpyDtoHAsync(out + off, b, CHUNK * 4, ss[2]));
      CK(cuEventRecord(ev[2 * CHUNKS + c], ss[2]));
    }
  } else {
    int split = strcmp(layout, "split") == 0;
    for (int c = 0; c < CHUNKS; c++) {
      int k = c % nstreams;
      CUstream st = ss[k];
      CUdeviceptr a = bufs[2 * k], b = bufs[2 * k + 1];
      size_t off = (size_t)c * CHUNK, half = CHUNK / 2;
      if (split) {
        CK(cuMemcpyHtoDAsync(a, in + off, half * 4, st));
        CK(cuMemcpyHtoDAsync(a + half * 4, in + off + half, half * 4, st));
      } else {
        CK(cuMemcpyHtoDAsync(a, in + off, CHUNK * 4, st));
      }
      compute(st, a, b);
      if (split) {
        CK(cuMemcpyDtoHAsync(out + off, b, half * 4, st));
        CK(cuMemcpyDtoHAsync(out + off + half, b + half * 4, half * 4, st));
      } else {
        CK(cuMemcpyDtoHAsync(out + off, b, CHUNK * 4, st));
      }
    }
  }
  for (int i = 0; i < MAXS; i++) {
    CK(cuEventRecord(ev[1 + i], ss[i]));
    CK(cuStreamWaitEvent(main_s, ev[1 + i], 0));
  }
}

static double timed(const char *layout, int nstreams, CUgraphExec g) {
  CUevent t0, t1;
  CK(cuEventCreate(&t0, 0));
  CK(cuEventCreate(&t1, 0));
  CK(cuEventRecord(t0, main_s));
  if (g) CK(cuGraphLaunch(g, main_s));
  else queue(layout, nstreams);
  CK(cuEventRecord(t1, main_s));
  CK(cuEventSynchronize(t1));
  float ms;
  CK(cuEventElapsedTime(&ms, t0, t1));
  CK(cuEventDestroy(t0));
  CK(cuEventDestroy(t1));
  return ms;
}

static void check_result(const char *what) {
  for (size_t i = 0; i < (size_t)CHUNK * CHUNKS; i += 4099)
    if (out[i] != 3 * in[i]) {
      fprintf(stderr, "layouts: %s: result is wrong at %zu\n", what, i);
      exit(1);
    }
  memset(out, 0, (size_t)CHUNK * CHUNKS * 4);
}

static double best = 1e30; /* the fastest layout's median (more than one stream) */

static void report(const char *name, const char *layout, int nstreams, CUgraphExec g) {
  double t[REPS];
  timed(layout, nstreams, g); /* warm-up */
  for (int r = 0; r < REPS; r++) t[r] = timed(layout, nstreams, g);
  check_result(name);
  double m = median(t, REPS);
  if (nstreams > 1 && m < best) best = m;
  printf("RESULT layout_%s %.4f ms\n", name, m);
}

/* both directions at once, bytes of both over the device time: one copy of
 * `size` each way, `count` times back to back on two streams */
static void bidir(const char *name, size_t size, int count) {
  double t[REPS];
  CUevent t0, t1, e;
  CK(cuEventCreate(&t0, 0));
  CK(cuEventCreate(&t1, 0));
  CK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  for (int r = 0; r < REPS; r++) {
    CK(cuEventRecord(t0, ss[0]));
    CK(cuStreamWaitEvent(ss[1], t0, 0));
    for (int c = 0; c < count; c++) {
      size_t off = (size_t)c * size, doff = off % (256u << 20); /* the device buffers are 256 MiB */
      CK(cuMemcpyHtoDAsync(big[0] + doff, (char *)in + off, size, ss[0]));
      CK(cuMemcpyDtoHAsync((char *)out + off, big[1] + doff, size, ss[1]));
    }
    CK(cuEventRecord(e, ss[1]));
    CK(cuStreamWaitEvent(ss[0], e, 0));
    CK(cuEventRecord(t1, ss[0]));
    CK(cuEventSynchronize(t1));
    float ms;
    CK(cuEventElapsedTime(&ms, t0, t1));
    t[r] = 2.0 * (double)size * count / (ms * 1e-3) / 1e9;
  }
  printf("RESULT %s %.2f GB/s\n", name, median(t, REPS));
}

int main(void) {
  CUdevice dev;
  raw_open(&dev);
  int sms = 0;
  CK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  CK(cuStreamCreateWithPriority(&main_s, CU_STREAM_NON_BLOCKING, 0));
  for (int i = 0; i < MAXS; i++) CK(cuStreamCreateWithPriority(&ss[i], CU_STREAM_NON_BLOCKING, 0));
  for (int i = 0; i < 3 * CHUNKS; i++) CK(cuEventCreate(&ev[i], CU_EVENT_DISABLE_TIMING));
  size_t bytes = (size_t)CHUNK * CHUNKS * 4;
  void *vin, *vout;
  CK(cuMemHostAlloc(&vin, bytes, CU_MEMHOSTALLOC_PORTABLE));
  CK(cuMemHostAlloc(&vout, bytes, CU_MEMHOSTALLOC_PORTABLE));
  in = vin;
  out = vout;
  for (size_t i = 0; i < (size_t)CHUNK * CHUNKS; i++) in[i] = (float)(i % 1000) * 0.5f;
  for (int i = 0; i < 2 * MAXS; i++) CK(cuMemAllocAsync(&bufs[i], CHUNK * 4, main_s));
  for (int i = 0; i < 2; i++) CK(cuMemAllocAsync(&big[i], 256u << 20, main_s));
  CK(cuStreamSynchronize(main_s));
  CUmodule mb = compile(gl_builtins_cuda_source(), "builtins.cu");
  CK(cuModuleGetFunction(&scale, mb, "scale_f32"));
  CK(cuModuleGetFunction(&axpy, mb, "axpy_f32"));
  grid = (CHUNK + 255) / 256;
  if (grid > (unsigned)sms * 8) grid = (unsigned)sms * 8;

  bidir("layout_bidir_256MiB", 256u << 20, 1);
  bidir("bidir_16MiB_x32", (size_t)CHUNK * 4, CHUNKS);
  bidir("bidir_8MiB_x64", (size_t)CHUNK * 2, 2 * CHUNKS);
  static const int counts[] = {1, 2, 3, 4, 6, 8};
  for (int j = 0; j < 6; j++) {
    char name[32];
    snprintf(name, sizeof name, "streams_%d", counts[j]);
    report(name, "streams", counts[j], NULL);
  }
  report("split_4", "split", 4, NULL);
  report("engines", "engines", 3, NULL);
  /* streams_4 as a graph */
  CUgraph graph;
  CUgraphExec exec;
  CK(cuStreamBeginCapture(main_s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  queue("streams", 4);
  CK(cuStreamEndCapture(main_s, &graph));
  CK(cuGraphInstantiateWithFlags(&exec, graph, 0));
  report("graph_4", "streams", 4, exec);
  report("streams_4_again", "streams", 4, NULL);
  bidir("bidir_16MiB_x32_again", (size_t)CHUNK * 4, CHUNKS);
  printf("RESULT layout_best %.4f ms\n", best);
  CK(cuGraphExecDestroy(exec));
  CK(cuGraphDestroy(graph));
  CK(cuCtxSynchronize());
  return 0;
}
