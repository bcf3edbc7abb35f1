// the module of tests/spec/module_global_spec.lua; globals_sm90.cubin is its
// CUBIN (tests/data/make.sh), read by tests/c/test_module_consts.c
extern "C" {
__constant__ float scale;
__constant__ double bias[2] = {1.5, -2.0};
__device__ int table[4] = {1, 2, 3, 4};
__device__ unsigned short odd[3];
__global__ void apply(float *out) {
  int i = threadIdx.x;
  if (i < 4) out[i] = scale * table[i] + (float)bias[0];
}
}
