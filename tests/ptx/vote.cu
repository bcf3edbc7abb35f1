// warp votes on a per-thread predicate, and the mask of the active lanes in a branch
extern "C" __global__ void vote(const int *in, unsigned *ballot, int *all, int *any, unsigned *active) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int p = in[i] > 0;
  unsigned b = __ballot_sync(0xffffffffu, p);
  int a = __all_sync(0xffffffffu, p);
  int y = __any_sync(0xffffffffu, p);
  if ((threadIdx.x & 31) == 0) {
    ballot[i / 32] = b;
    all[i / 32] = a;
    any[i / 32] = y;
  }
  if (p) active[i] = __activemask();
  else active[i] = 0;
}
