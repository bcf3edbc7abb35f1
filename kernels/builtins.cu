// kernels/builtins.cu -- the built-in kernel library (gpu.kernels.*).
//
// Compiled at run time with NVRTC, once per device and cached on disk. Every
// kernel is a grid-stride loop, so any grid covers all n elements; the
// launch checks keep n within the slices. T is float (_f32) or double (_f64).
// The C host implementations that the sim backend runs are in src/builtins.c.

#define GL_BUILTINS(T, S)                                                                  \
  extern "C" __global__ void axpy_##S(T a, const T *__restrict__ x, T *__restrict__ y,     \
                                      unsigned long long n) {                              \
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; \
         i < n; i += (unsigned long long)gridDim.x * blockDim.x)                           \
      y[i] = a * x[i] + y[i];                                                              \
  }                                                                                        \
  extern "C" __global__ void scale_##S(T a, const T *x, T *y, unsigned long long n) {      \
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; \
         i < n; i += (unsigned long long)gridDim.x * blockDim.x)                           \
      y[i] = a * x[i];                                                                     \
  }                                                                                        \
  extern "C" __global__ void fill_##S(T *y, T v, unsigned long long n) {                   \
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; \
         i < n; i += (unsigned long long)gridDim.x * blockDim.x)                           \
      y[i] = v;                                                                            \
  }                                                                                        \
  extern "C" __global__ void add_##S(const T *a, const T *b, T *c, unsigned long long n) { \
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; \
         i < n; i += (unsigned long long)gridDim.x * blockDim.x)                           \
      c[i] = a[i] + b[i];                                                                  \
  }                                                                                        \
  extern "C" __global__ void mul_##S(const T *a, const T *b, T *c, unsigned long long n) { \
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; \
         i < n; i += (unsigned long long)gridDim.x * blockDim.x)                           \
      c[i] = a[i] * b[i];                                                                  \
  }                                                                                        \
  extern "C" __global__ void copy_##S(const T *x, unsigned long long incx, T *y,           \
                                      unsigned long long incy, unsigned long long n) {     \
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; \
         i < n; i += (unsigned long long)gridDim.x * blockDim.x)                           \
      y[i * incy] = x[i * incx];                                                           \
  }                                                                                        \
  /* out[0] += sum of x: each block reduces in shared memory, then one atomic add */       \
  extern "C" __global__ void sum_##S(const T *x, T *out, unsigned long long n) {           \
    __shared__ T part[32];                                                                 \
    T acc = 0;                                                                             \
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; \
         i < n; i += (unsigned long long)gridDim.x * blockDim.x)                           \
      acc += x[i];                                                                         \
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off); \
    unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;                            \
    if (lane == 0) part[warp] = acc;                                                       \
    __syncthreads();                                                                       \
    if (warp == 0) {                                                                       \
      unsigned nwarps = (blockDim.x + 31u) >> 5;                                           \
      acc = lane < nwarps ? part[lane] : (T)0;                                             \
      for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off); \
      if (lane == 0) atomicAdd(out, acc);                                                  \
    }                                                                                      \
  }

GL_BUILTINS(float, f32)
GL_BUILTINS(double, f64)
