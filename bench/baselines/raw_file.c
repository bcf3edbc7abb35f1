/*
 * bench/baselines/raw_file.c -- examples/file_pipeline.lua's processing pass
 * made raw: an f32 file read in chunks with fread into pinned buffers, each
 * chunk copied in (cuMemcpyHtoDAsync), transformed by the same two kernels
 * (the compiled y = 2 x + 1, the built-in scale_f32 with 0.5), copied out,
 * and written with fwrite in order; `slots` chunks in flight, chunk c on
 * stream c % slots. Before reading into a slot, the host waits for the
 * slot's last chunk and writes it out (as pipeline.run's ring does). Prints
 * "RESULT file_raw <GB/s of the input> GB/s" and the seconds.
 *
 *   raw_file IN OUT [chunk_MiB] [slots]   (default 32, 2)
 *   raw_file --link [chunk_MiB]           the host link: pinned copies of 1 GiB in chunks, in and out at
 *                                         once on two streams; "RESULT link_in|link_out|link_both GB/s"
 */
#define RAW_NAME "raw_file"
#include "raw_common.h"

#include "builtins.h"

static const char affine_src[] =
  "extern \"C\" __global__ void affine(float *x, unsigned long long n) {\n"
  "  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;\n"
  "       i += (unsigned long long)gridDim.x * blockDim.x)\n"
  "    x[i] = 2.0f * x[i] + 1.0f;\n"
  "}\n";

enum { MAX_SLOTS = 16 };

/* GB/s of 1 GiB copied in chunks: in (dir 1), out (dir 2), or both at once (3) */
static double link_rate(int dir, size_t chunk, void *h_in, void *h_out, CUdeviceptr a, CUdeviceptr b, CUstream *st) {
  size_t total = (size_t)1 << 30;
  double t[3];
  for (int r = 0; r < 3; r++) {
    double t0 = now();
    for (size_t off = 0; off < total; off += chunk) {
      if (dir & 1) CK(cuMemcpyHtoDAsync(a, h_in, chunk, st[0]));
      if (dir & 2) CK(cuMemcpyDtoHAsync(h_out, b, chunk, st[1]));
    }
    CK(cuStreamSynchronize(st[0]));
    CK(cuStreamSynchronize(st[1]));
    t[r] = now() - t0;
  }
  return total / 1e9 / median(t, 3);
}

static int link(size_t chunk) {
  CUstream st[2];
  void *h_in, *h_out;
  CUdeviceptr a, b;
  for (int k = 0; k < 2; k++) CK(cuStreamCreateWithPriority(&st[k], CU_STREAM_NON_BLOCKING, 0));
  CK(cuMemHostAlloc(&h_in, chunk, CU_MEMHOSTALLOC_PORTABLE));
  CK(cuMemHostAlloc(&h_out, chunk, CU_MEMHOSTALLOC_PORTABLE));
  CK(cuMemAllocAsync(&a, chunk, st[0]));
  CK(cuMemAllocAsync(&b, chunk, st[0]));
  CK(cuStreamSynchronize(st[0]));
  link_rate(3, chunk, h_in, h_out, a, b, st); /* warm-up */
  printf("RESULT link_in %.4f GB/s\n", link_rate(1, chunk, h_in, h_out, a, b, st));
  printf("RESULT link_out %.4f GB/s\n", link_rate(2, chunk, h_in, h_out, a, b, st));
  printf("RESULT link_both %.4f GB/s\n", link_rate(3, chunk, h_in, h_out, a, b, st)); /* each way, at once */
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--link") == 0) {
    CUdevice dev;
    raw_open(&dev);
    return link((size_t)(argc > 2 ? atoi(argv[2]) : 32) << 20);
  }
  if (argc < 3) {
    fprintf(stderr, "usage: raw_file IN OUT [chunk_MiB] [slots] | raw_file --link [chunk_MiB]\n");
    return 2;
  }
  size_t chunk = (size_t)(argc > 3 ? atoi(argv[3]) : 32) << 20;
  int slots = argc > 4 ? atoi(argv[4]) : 2;
  if (chunk == 0 || slots < 1 || slots > MAX_SLOTS) {
    fprintf(stderr, RAW_NAME ": chunk_MiB must be positive and slots 1 to %d\n", MAX_SLOTS);
    return 2;
  }
  CUdevice dev;
  raw_open(&dev);
  int sms = 0;
  CK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  CUmodule ma = compile(affine_src, "affine.cu");
  CUmodule mb = compile_opt(gl_builtins_cuda_source(), "builtins.cu", gl_builtins_cuda_option(GL_F32));
  CUfunction affine, scale;
  CK(cuModuleGetFunction(&affine, ma, "affine"));
  CK(cuModuleGetFunction(&scale, mb, "scale_f32"));
  size_t elems = chunk / 4;
  unsigned grid = (unsigned)((elems + 255) / 256);
  if (grid > (unsigned)sms * 8) grid = (unsigned)sms * 8;

  CUstream st[MAX_SLOTS];
  CUevent done[MAX_SLOTS];
  void *hin[MAX_SLOTS], *hout[MAX_SLOTS];
  CUdeviceptr x[MAX_SLOTS];
  size_t pending[MAX_SLOTS] = {0}; /* bytes of the slot's chunk in flight, to write */
  for (int k = 0; k < slots; k++) {
    CK(cuStreamCreateWithPriority(&st[k], CU_STREAM_NON_BLOCKING, 0));
    CK(cuEventCreate(&done[k], CU_EVENT_DISABLE_TIMING));
    CK(cuMemHostAlloc(&hin[k], chunk, CU_MEMHOSTALLOC_PORTABLE));
    CK(cuMemHostAlloc(&hout[k], chunk, CU_MEMHOSTALLOC_PORTABLE));
    CK(cuMemAllocAsync(&x[k], chunk, st[k]));
    CK(cuStreamSynchronize(st[k]));
  }
  FILE *in = fopen(argv[1], "rb"), *out = fopen(argv[2], "wb");
  if (!in || !out) {
    fprintf(stderr, RAW_NAME ": cannot open %s or %s\n", argv[1], argv[2]);
    return 1;
  }
  double t0 = now();
  size_t total = 0;
  for (int c = 0;; c++) {
    int k = c % slots;
    if (pending[k]) { /* the slot's last chunk: finished, then written */
      CK(cuEventSynchronize(done[k]));
      if (fwrite(hout[k], 1, pending[k], out) != pending[k]) {
        perror(RAW_NAME ": fwrite");
        return 1;
      }
      pending[k] = 0;
    }
    size_t got = fread(hin[k], 1, chunk, in);
    if (got == 0) {
      /* the slots still in flight, in chunk order */
      for (int j = 1; j <= slots; j++) {
        int kk = (c + j) % slots;
        if (!pending[kk]) continue;
        CK(cuEventSynchronize(done[kk]));
        if (fwrite(hout[kk], 1, pending[kk], out) != pending[kk]) {
          perror(RAW_NAME ": fwrite");
          return 1;
        }
      }
      break;
    }
    unsigned long long n = got / 4;
    float two = 0.5f;
    void *pa[] = {&x[k], &n}, *ps[] = {&two, &x[k], &x[k], &n};
    CK(cuMemcpyHtoDAsync(x[k], hin[k], got, st[k]));
    CK(cuLaunchKernel(affine, grid, 1, 1, 256, 1, 1, 0, st[k], pa, NULL));
    CK(cuLaunchKernel(scale, grid, 1, 1, 256, 1, 1, 0, st[k], ps, NULL));
    CK(cuMemcpyDtoHAsync(hout[k], x[k], got, st[k]));
    CK(cuEventRecord(done[k], st[k]));
    pending[k] = got;
    total += got;
  }
  fclose(in);
  if (fclose(out) != 0) {
    perror(RAW_NAME ": fclose");
    return 1;
  }
  double secs = now() - t0;
  printf("%s: %.0f MiB in %.3f s, chunk %zu MiB, %d slots\n", RAW_NAME, total / 1048576.0, secs, chunk >> 20, slots);
  printf("RESULT file_raw %.4f GB/s\n", total / 1e9 / secs);
  return 0;
}
