// 64-bit integer arithmetic: products, quotients, shifts and bit counts
extern "C" __global__ void int64ops(const long long *a, const long long *b, long long *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  long long x = a[i], y = b[i];
  unsigned long long ux = (unsigned long long)x, uy = (unsigned long long)y;
  long long *o = out + 10 * i;
  o[0] = x * y + (x >> 7);
  o[1] = y != 0 ? x / y : 0;
  o[2] = y != 0 ? x % y : 0;
  o[3] = (long long)(uy != 0 ? ux / uy : 0);
  o[4] = (long long)__umul64hi(ux, uy);
  o[5] = __mul64hi(x, y);
  o[6] = (long long)(ux << (uy & 63)) ^ (long long)(ux >> (y & 31));
  o[7] = __popcll(ux) + 100 * __clzll(x) + 10000 * __ffsll(y);
  o[8] = (long long)__brevll(ux);
  o[9] = x < y ? x - y : (long long)((unsigned)x * (unsigned)y);
}
