// a loop whose trip count differs between lanes, then a shuffle and the
// active mask: the lanes must have met again after the loop
extern "C" __global__ void collatz(const unsigned *in, unsigned *steps, unsigned *pair, unsigned *mask) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned v = in[i], n = 0;
  while (v != 1) {
    v = (v & 1) ? 3 * v + 1 : v / 2;
    n++;
  }
  steps[i] = n;
  pair[i] = __shfl_xor_sync(0xffffffffu, n, 1);
  mask[i] = __activemask();
}
