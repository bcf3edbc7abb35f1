// a 2-D grid over a w x h matrix: each element gets its coordinates and a mix of both
extern "C" __global__ void grid2d(unsigned *out, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < w && y < h) {
    unsigned v = (unsigned)(x * 1000 + y);
    out[y * w + x] = v ^ (v >> 3) ^ (blockIdx.y * gridDim.x + blockIdx.x);
  }
}
