// bench/probes/copy_probe.cu: how a 16-byte-vector copy kernel's grid shape and loads
// compare with the driver's device-to-device copy (cudaMemcpyAsync), 2^28 f32.
// Grid-stride variants (U vectors in flight per thread; cs: __ldcs/__stcs,
// stcs: __stcs alone, ldg: __ldg) on grids of 1 to 32 blocks per SM, and
// tiled variants (block g copies tiles g, g + grid, ...). The probe behind the
// built-ins' tiles (docs/BENCHMARKS.md, "The built-in library").
// On the GPU machine:  nvcc -O3 -arch=sm_90 -o /tmp/copy_probe bench/probes/copy_probe.cu && /tmp/copy_probe
#include <algorithm>
#include <cstdio>
#include <cuda_runtime.h>
typedef unsigned long long u64;

template <int U, int MODE>
__global__ void strided(const uint4 *a, uint4 *c, u64 nv) {
  u64 t = blockIdx.x * (u64)blockDim.x + threadIdx.x, nt = (u64)gridDim.x * blockDim.x;
  u64 j = t;
  for (; j + (U - 1) * nt < nv; j += U * nt) {
    uint4 x[U];
#pragma unroll
    for (int u = 0; u < U; u++)
      x[u] = MODE & 1 ? __ldcs(a + j + u * nt) : (MODE & 4 ? __ldg(a + j + u * nt) : a[j + u * nt]);
#pragma unroll
    for (int u = 0; u < U; u++) {
      if (MODE & 2) __stcs(c + j + u * nt, x[u]);
      else c[j + u * nt] = x[u];
    }
  }
  for (; j < nv; j += nt) c[j] = a[j];
}

template <int U>
__global__ void tiled(const uint4 *a, uint4 *c, u64 nv) {
  u64 tile = (u64)blockDim.x * U;
  for (u64 b = blockIdx.x; b * tile < nv; b += gridDim.x) {
    u64 base = b * tile + threadIdx.x;
    uint4 x[U];
#pragma unroll
    for (int u = 0; u < U; u++)
      if (base + u * blockDim.x < nv) x[u] = a[base + u * blockDim.x];
#pragma unroll
    for (int u = 0; u < U; u++)
      if (base + u * blockDim.x < nv) c[base + u * blockDim.x] = x[u];
  }
}

struct Args { uint4 *a, *c; u64 nv; int grid, block; };

static float timed(void (*f)(Args *), Args *q) {  // ms, the median of 7 after a warm-up
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  f(q);
  cudaDeviceSynchronize();
  float t[7];
  for (int r = 0; r < 7; r++) {
    cudaEventRecord(e0);
    f(q);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    cudaEventElapsedTime(&t[r], e0, e1);
  }
  std::sort(t, t + 7);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return t[3];
}

#define RUN(name, ...) \
  static void name(Args *q) { __VA_ARGS__; }
RUN(driver_copy, cudaMemcpyAsync(q->c, q->a, q->nv * 16, cudaMemcpyDeviceToDevice))
RUN(u4, strided<4, 0><<<q->grid, q->block>>>(q->a, q->c, q->nv))
RUN(u8, strided<8, 0><<<q->grid, q->block>>>(q->a, q->c, q->nv))
RUN(u4cs, strided<4, 3><<<q->grid, q->block>>>(q->a, q->c, q->nv))
RUN(u4stcs, strided<4, 2><<<q->grid, q->block>>>(q->a, q->c, q->nv))
RUN(u4ldg, strided<4, 4><<<q->grid, q->block>>>(q->a, q->c, q->nv))
RUN(u1, strided<1, 0><<<q->grid, q->block>>>(q->a, q->c, q->nv))
RUN(u2, strided<2, 0><<<q->grid, q->block>>>(q->a, q->c, q->nv))
RUN(tile4, tiled<4><<<q->grid, q->block>>>(q->a, q->c, q->nv))
RUN(tile8, tiled<8><<<q->grid, q->block>>>(q->a, q->c, q->nv))

int main() {
  u64 bytes = (1ull << 28) * 4;
  Args q;
  q.nv = bytes / 16;
  cudaMalloc(&q.a, bytes);
  cudaMalloc(&q.c, bytes);
  cudaMemset(q.a, 1, bytes);
  int sms;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  struct { const char *name; void (*f)(Args *); } ks[] = {{"u4", u4},         {"u8", u8}, {"u4cs", u4cs},
                                                           {"u4stcs", u4stcs}, {"u4ldg", u4ldg}, {"u1", u1},
                                                           {"u2", u2},         {"tile4", tile4}, {"tile8", tile8}};
  q.grid = sms;
  q.block = 256;
  float d = timed(driver_copy, &q);
  printf("memcpy %.1f GB/s\n", 2.0 * bytes / d / 1e6);
  const int grids[] = {1, 2, 4, 8, 16, 32}, blocks[] = {256, 512, 1024};
  for (auto &k : ks)
    for (int b : blocks)
      for (int g : grids) {
        q.grid = g * sms;
        q.block = b;
        float t = timed(k.f, &q);
        printf("%s block %d grid %dx %.1f GB/s %.3f of memcpy\n", k.name, b, g, 2.0 * bytes / t / 1e6, d / t);
      }
  for (int b : blocks) {  // a block per tile: each block copies one tile and leaves
    q.block = b;
    q.grid = (int)((q.nv + b * 4 - 1) / (b * 4));
    float t = timed(tile4, &q);
    printf("tile4 once block %d %.3f of memcpy\n", b, d / t);
  }
  cudaError_t e = cudaGetLastError();
  printf("%s\n", e == cudaSuccess ? "ok" : cudaGetErrorString(e));
  return e != cudaSuccess;
}
