// a recursive device function: each thread computes (i mod 13)!
__device__ __noinline__ unsigned long long fact(unsigned n) {
  if (n <= 1) return 1;
  return n * fact(n - 1);
}
extern "C" __global__ void factorials(unsigned long long *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fact(i % 13);
}
