// kernels/axpy.cu -- y = a x + y in f32: the kernel docs/API.md's examples load with
// gpu.load("kernels/axpy.cu") and declare as m:kernel("axpy", "f32, const f32*, f32*, u64").
// Not a built-in (those are kernels/builtins.cu, as gpu.kernels.*): a plain CUDA source
// file, as a script's own kernels would be. A grid-stride loop, so any grid covers n.
extern "C" __global__ void axpy(float a, const float *x, float *y, unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    y[i] = a * x[i] + y[i];
}
