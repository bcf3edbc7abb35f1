// tests/data/twice.cu: a tiny kernel for the gpu.load specs (also built as
// twice.ptx and twice.cubin by tests/data/make.sh).
extern "C" __global__ void twice(const float *x, float *y, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
