// dot products of bytes and halves, warp reductions and matches
extern "C" __global__ void warpops(const int *a, const int *b, const long long *w, int *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int x = a[i], y = b[i];
  unsigned ux = (unsigned)x, uy = (unsigned)y;
  int *o = out + 20 * i;
  o[0] = __dp4a(x, y, i);
  o[1] = (int)__dp4a(ux, uy, (unsigned)i);
  o[2] = __dp2a_lo(x, y, i);
  o[3] = __dp2a_hi(x, y, -i);
  o[4] = (int)__dp2a_lo(ux, uy, (unsigned)i);
  o[5] = (int)__dp2a_hi(ux, uy, (unsigned)i);
  unsigned half = (threadIdx.x & 31) < 16 ? 0x0000ffffu : 0xffff0000u;
  o[6] = __reduce_add_sync(0xffffffffu, x);
  o[7] = (int)__reduce_add_sync(half, ux);
  o[8] = __reduce_min_sync(0xffffffffu, x);
  o[9] = __reduce_max_sync(half, x);
  o[10] = (int)__reduce_min_sync(0xffffffffu, ux);
  o[11] = (int)__reduce_max_sync(0xffffffffu, ux);
  o[12] = (int)__reduce_and_sync(0xffffffffu, ux);
  o[13] = (int)__reduce_or_sync(half, ux);
  o[14] = (int)__reduce_xor_sync(0xffffffffu, ux);
  int k = x & 3, pred = 0;
  o[15] = (int)__match_any_sync(0xffffffffu, k);
  o[16] = (int)__match_all_sync(0xffffffffu, k, &pred);
  o[17] = pred;
  o[18] = (int)__match_any_sync(0xffffffffu, w[i]);
  o[19] = (int)__match_all_sync(half, w[i] >> 40, &pred) + pred;
}
