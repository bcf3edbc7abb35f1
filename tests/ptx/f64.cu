// double precision: IEEE operations whose results are exact on the GPU
extern "C" __global__ void f64ops(const double *a, const double *b, double *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double x = a[i], y = b[i];
  double *o = out + 8 * i;
  o[0] = x + y;
  o[1] = x * y - y;
  o[2] = x / y;
  o[3] = sqrt(fabs(x));
  o[4] = fma(x, y, 1.0);
  o[5] = fmin(x, y) + fmax(x, y);
  o[6] = (double)(long long)(x * 1000.0) + (double)(float)y;
  o[7] = (double)__double2int_rn(x * 3.5) + (double)(unsigned)(fabs(y) * 7.0);
}
