// warp shuffles: a down-reduction of each warp, and up, xor and indexed reads
extern "C" __global__ void warpsum(const int *in, int *sum, int *up, int *bfly, int *idx) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
  int s = v;
  for (int d = 16; d > 0; d /= 2) s += __shfl_down_sync(0xffffffffu, s, d);
  if ((threadIdx.x & 31) == 0) sum[i / 32] = s;
  up[i] = __shfl_up_sync(0xffffffffu, v, 3);
  bfly[i] = __shfl_xor_sync(0xffffffffu, v, 5);
  idx[i] = __shfl_sync(0xffffffffu, v, (threadIdx.x * 7) & 31, 16);
}
