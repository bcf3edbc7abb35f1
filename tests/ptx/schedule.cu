// each thread takes a ticket from one counter: which thread gets which
// ticket depends on the order the atomics happen in
extern "C" __global__ void tickets(unsigned *counter, unsigned *out) {
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  out[t] = atomicAdd(counter, 1u);
}

// race-free: a block sums its elements in shared memory between barriers,
// then adds its sum to the total; integer sums do not depend on the order
extern "C" __global__ void blocksum(const int *x, int *part, int *total) {
  __shared__ int s[256];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  s[t] = x[i];
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k /= 2) {
    if (t < k) s[t] += s[t + k];
    __syncthreads();
  }
  if (t == 0) {
    part[blockIdx.x] = s[0];
    atomicAdd(total, s[0]);
  }
}
