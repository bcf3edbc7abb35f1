// shared-memory tiles: C = A B (f32, 16 x 16 tiles, any sizes), a block scan (inclusive
// prefix sums of i32, Hillis-Steele with double buffering, then the blocks' totals added
// by a second kernel), a bitonic sort of 512 keys per block in shared memory, and a 3-D grid
#define T 16
extern "C" __global__ void matmul(const float *a, const float *b, float *c, int m, int n, int k) {
  __shared__ float sa[T][T], sb[T][T];
  int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < (k + T - 1) / T; t++) {
    int ka = t * T + threadIdx.x, kb = t * T + threadIdx.y;
    sa[threadIdx.y][threadIdx.x] = row < m && ka < k ? a[row * k + ka] : 0.0f;
    sb[threadIdx.y][threadIdx.x] = kb < k && col < n ? b[kb * n + col] : 0.0f;
    __syncthreads();
    for (int j = 0; j < T; j++) acc = fmaf(sa[threadIdx.y][j], sb[j][threadIdx.x], acc);
    __syncthreads();
  }
  if (row < m && col < n) c[row * n + col] = acc;
}

extern "C" __global__ void scan_blocks(const int *x, int *y, int *totals, int n) {
  __shared__ int buf[2][256];
  int i = blockIdx.x * blockDim.x + threadIdx.x, cur = 0;
  buf[0][threadIdx.x] = i < n ? x[i] : 0;
  __syncthreads();
  for (int off = 1; off < blockDim.x; off <<= 1) {
    int v = buf[cur][threadIdx.x];
    if (threadIdx.x >= off) v += buf[cur][threadIdx.x - off];
    buf[1 - cur][threadIdx.x] = v;
    cur = 1 - cur;
    __syncthreads();
  }
  if (i < n) y[i] = buf[cur][threadIdx.x];
  if (threadIdx.x == blockDim.x - 1) totals[blockIdx.x] = buf[cur][threadIdx.x];
}

extern "C" __global__ void scan_add(int *y, const int *totals, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x, add = 0;
  for (int b = 0; b < blockIdx.x; b++) add += totals[b];
  if (i < n) y[i] += add;
}

extern "C" __global__ void bitonic(unsigned *keys) {
  __shared__ unsigned s[512];
  unsigned *base = keys + blockIdx.x * 512;
  for (int i = threadIdx.x; i < 512; i += blockDim.x) s[i] = base[i];
  __syncthreads();
  for (int size = 2; size <= 512; size <<= 1)
    for (int stride = size / 2; stride > 0; stride >>= 1) {
      for (int i = threadIdx.x; i < 512; i += blockDim.x) {
        int j = i ^ stride;
        if (j > i) {
          bool up = (i & size) == 0;
          unsigned a = s[i], b = s[j];
          if ((a > b) == up) s[i] = b, s[j] = a;
        }
      }
      __syncthreads();
    }
  for (int i = threadIdx.x; i < 512; i += blockDim.x) base[i] = s[i];
}

extern "C" __global__ void grid3d(unsigned *out, int nx, int ny, int nz) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  int z = blockIdx.z * blockDim.z + threadIdx.z;
  if (x < nx && y < ny && z < nz)
    out[(z * ny + y) * nx + x] = (unsigned)(x * 7 + y * 131 + z * 8191) ^ (blockIdx.z << 20 | blockIdx.y << 10 | blockIdx.x);
}
