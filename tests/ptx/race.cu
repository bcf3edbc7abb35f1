// racecheck: block sums in shared memory with and without their barriers, warp-synchronous
// code with and without __syncwarp, lanes storing to one word, and global memory between blocks
extern "C" __global__ void sum_racy(const float *in, float *out) {
  __shared__ float s[128];
  unsigned t = threadIdx.x;
  s[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];  // no barrier after: the next step reads too early
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

extern "C" __global__ void sum_ok(const float *in, float *out) {
  __shared__ float s[128];
  unsigned t = threadIdx.x;
  s[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

// shuffles within each warp, the warps' sums through shared memory, then shuffles again
extern "C" __global__ void sum_shfl(const float *in, float *out) {
  __shared__ float w[32];
  unsigned t = threadIdx.x, lane = t & 31, warp = t >> 5;
  float v = in[blockIdx.x * blockDim.x + t];
  for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
  if (lane == 0) w[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < blockDim.x / 32 ? w[lane] : 0.0f;
    for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
    if (lane == 0) out[blockIdx.x] = v;
  }
}

// each lane reads its neighbour's element: with sync set, after a __syncwarp
extern "C" __global__ void neighbour(const int *in, int *out, int sync) {
  __shared__ int s[64];
  unsigned t = threadIdx.x;
  s[t] = in[t];
  if (sync) __syncwarp();
  out[t] = s[t ^ 1];
}

// every lane stores to s[0]: the same value, or each its own
extern "C" __global__ void one_word(int *out, int differ) {
  __shared__ int s[1];
  s[0] = differ ? (int)threadIdx.x : 7;
  __syncthreads();
  out[threadIdx.x] = s[0];
}

// each block writes its element, then reads the next block's
extern "C" __global__ void next_block(int *data, int *out) {
  unsigned t = threadIdx.x, b = blockIdx.x;
  if (t == 0) data[b] = (int)b;
  __syncthreads();
  if (t == 0 && b + 1 < gridDim.x) out[b] = data[b + 1];
}

// counts in shared memory with atomics, read after the barrier; the last block to finish,
// known by a ticket taken after a fence, adds up the blocks' partial counts
extern "C" __global__ void last_block(const int *in, int *part, unsigned *ticket, int *total, int early) {
  __shared__ int count;
  __shared__ bool last;
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  if (in[blockIdx.x * blockDim.x + threadIdx.x] > 0) atomicAdd(&count, 1);
  if (early && threadIdx.x == 40) part[blockIdx.x] = count;  // before the barrier: races with the atomics
  __syncthreads();
  if (threadIdx.x == 0) {
    part[blockIdx.x] = count;
    __threadfence();
    last = atomicAdd(ticket, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (last && threadIdx.x == 0) {
    int s = 0;
    for (unsigned b = 0; b < gridDim.x; b++) s += ((volatile int *)part)[b];
    *total = s;
    *ticket = 0;
  }
}
