// f16 and bf16 arithmetic, comparisons and conversions, scalar and in pairs:
// a, b, c are 16-bit patterns read as f16 and as bf16; f an f32, v an int
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define NO 44
extern "C" __global__ void halfops(const unsigned short *a, const unsigned short *b, const unsigned short *c,
                                   const float *f, const int *v, unsigned short *out, unsigned *flags, int *iout,
                                   float *fout, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half x = __ushort_as_half(a[i]), y = __ushort_as_half(b[i]), z = __ushort_as_half(c[i]);
  unsigned short *o = out + NO * i;
  o[0] = __half_as_ushort(__hadd(x, y));
  o[1] = __half_as_ushort(__hsub(x, y));
  o[2] = __half_as_ushort(__hmul(x, y));
  o[3] = __half_as_ushort(__hfma(x, y, z));
  o[4] = __half_as_ushort(__hneg(x));
  o[5] = __half_as_ushort(__habs(x));
  o[6] = __half_as_ushort(__hmax(x, y));
  o[7] = __half_as_ushort(__hmin(x, y));
  o[8] = __half_as_ushort(__hmax_nan(x, y));
  o[9] = __half_as_ushort(__hmin_nan(x, y));
  o[10] = __half_as_ushort(__hadd_sat(x, y));
  o[11] = __half_as_ushort(__hfma_sat(x, y, z));
  o[12] = __half_as_ushort(__hfma_relu(x, y, z));
  o[13] = __half_as_ushort(__float2half_rn(f[i]));
  o[14] = __half_as_ushort(__float2half_rz(f[i]));
  o[15] = __half_as_ushort(__float2half_rd(f[i]));
  o[16] = __half_as_ushort(__float2half_ru(f[i]));
  o[17] = __half_as_ushort(__int2half_rn(v[i]));
  __half2 p = __halves2half2(x, y), q = __halves2half2(z, x);
  __half2 s = __hadd2(p, q), m = __hmul2(p, q), fm = __hfma2(p, q, s);
  o[18] = __half_as_ushort(__low2half(s));
  o[19] = __half_as_ushort(__high2half(s));
  o[20] = __half_as_ushort(__low2half(m));
  o[21] = __half_as_ushort(__high2half(m));
  o[22] = __half_as_ushort(__low2half(fm));
  o[23] = __half_as_ushort(__high2half(fm));
  __half2 cv = __floats2half2_rn(f[i], f[n - 1 - i]);
  o[24] = __half_as_ushort(__low2half(cv));
  o[25] = __half_as_ushort(__high2half(cv));
  __nv_bfloat16 bx = __ushort_as_bfloat16(a[i]), by = __ushort_as_bfloat16(b[i]), bz = __ushort_as_bfloat16(c[i]);
  o[26] = __bfloat16_as_ushort(__hadd(bx, by));
  o[27] = __bfloat16_as_ushort(__hsub(bx, by));
  o[28] = __bfloat16_as_ushort(__hmul(bx, by));
  o[29] = __bfloat16_as_ushort(__hfma(bx, by, bz));
  o[30] = __bfloat16_as_ushort(__hneg(bx));
  o[31] = __bfloat16_as_ushort(__habs(bx));
  o[32] = __bfloat16_as_ushort(__hmax(bx, by));
  o[33] = __bfloat16_as_ushort(__hmin(bx, by));
  o[34] = __bfloat16_as_ushort(__float2bfloat16_rn(f[i]));
  o[35] = __bfloat16_as_ushort(__float2bfloat16_rz(f[i]));
  o[36] = __bfloat16_as_ushort(__float2bfloat16_rd(f[i]));
  o[37] = __bfloat16_as_ushort(__float2bfloat16_ru(f[i]));
  __nv_bfloat162 bp = __halves2bfloat162(bx, by), bq = __halves2bfloat162(bz, bx);
  __nv_bfloat162 bf = __hfma2(bp, bq, __hmul2(bp, bq));
  o[38] = __bfloat16_as_ushort(__low2bfloat16(bf));
  o[39] = __bfloat16_as_ushort(__high2bfloat16(bf));
  o[40] = __bfloat16_as_ushort(__hmax_nan(bx, by));
  o[41] = __bfloat16_as_ushort(__int2bfloat16_rn(v[i]));
  __nv_bfloat162 bc = __floats2bfloat162_rn(f[i], f[n - 1 - i]);
  o[42] = __bfloat16_as_ushort(__low2bfloat16(bc));
  o[43] = __bfloat16_as_ushort(__high2bfloat16(bc));
  unsigned fl = 0;
  fl |= __hlt(x, y) << 0 | __hle(x, y) << 1 | __hgt(x, y) << 2 | __hge(x, y) << 3;
  fl |= __heq(x, y) << 4 | __hne(x, y) << 5 | __hltu(x, y) << 6 | __hneu(x, y) << 7;
  fl |= __hisnan(x) << 8 | __hbgt2(p, q) << 9 | __hbequ2(p, q) << 10;
  __half2 lt = __hlt2(p, q);
  fl |= (__half_as_ushort(__low2half(lt)) == 0x3c00) << 11 | (__half_as_ushort(__high2half(lt)) == 0x3c00) << 12;
  fl |= __hlt(bx, by) << 13 | __heq(bx, by) << 14 | __hgtu(bx, by) << 15 | __hisnan(bx) << 16;
  fl |= __hble2(bp, bq) << 17;
  flags[i] = fl;
  iout[4 * i] = __half2int_rn(x);
  iout[4 * i + 1] = __half2int_rz(x);
  iout[4 * i + 2] = __half2short_rd(x);
  iout[4 * i + 3] = __bfloat162int_rz(bx);
  fout[2 * i] = __half2float(x);
  fout[2 * i + 1] = __bfloat162float(bx);
}
