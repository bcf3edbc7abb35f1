// recursive device functions: each thread computes (i mod 13)! and fib(i mod 16)
__device__ __noinline__ unsigned long long fact(unsigned n) {
  if (n <= 1) return 1;
  return n * fact(n - 1);
}
__device__ __noinline__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
extern "C" __global__ void factorials(unsigned long long *out, int *fibs, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = fact(i % 13);
    fibs[i] = fib(i % 16);
  }
}
