// dynamic shared memory: a block reverses its slice through extern __shared__
extern "C" __global__ void reverse(int *data) {
  extern __shared__ int buf[];
  int t = threadIdx.x, base = blockIdx.x * blockDim.x;
  buf[t] = data[base + t];
  __syncthreads();
  data[base + t] = buf[blockDim.x - 1 - t];
}
