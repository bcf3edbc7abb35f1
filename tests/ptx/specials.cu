// NaN, infinities and out-of-range values through conversions and the
// float operations, in inline PTX so that each is the instruction named:
// row r of out holds instruction r's result for each of the n inputs.
#define ROW(v) out[(k++) * n + i] = (unsigned long long)(v)
#define BITS64(y) ROW(__double_as_longlong(y))
#define BITS32(y) ROW(__float_as_uint(y))
#define TO_INT(M, mod, ARG)                                                                        \
  { int y; asm("{.reg .s16 t; cvt." mod ".s8." M " t, %1; cvt.s32.s16 %0, t;}" : "=r"(y) : ARG); ROW((unsigned)y); } \
  { int y; asm("{.reg .u16 t; cvt." mod ".u8." M " t, %1; cvt.u32.u16 %0, t;}" : "=r"(y) : ARG); ROW((unsigned)y); } \
  { short y; asm("cvt." mod ".s16." M " %0, %1;" : "=h"(y) : ARG); ROW((unsigned short)y); }     \
  { unsigned short y; asm("cvt." mod ".u16." M " %0, %1;" : "=h"(y) : ARG); ROW(y); }           \
  { int y; asm("cvt." mod ".s32." M " %0, %1;" : "=r"(y) : ARG); ROW((unsigned)y); }             \
  { unsigned y; asm("cvt." mod ".u32." M " %0, %1;" : "=r"(y) : ARG); ROW(y); }                  \
  { long long y; asm("cvt." mod ".s64." M " %0, %1;" : "=l"(y) : ARG); ROW(y); }                 \
  { unsigned long long y; asm("cvt." mod ".u64." M " %0, %1;" : "=l"(y) : ARG); ROW(y); }
#define F64_1(op) { double y; asm(op " %0, %1;" : "=d"(y) : "d"(d)); BITS64(y); }
#define F64_2(op, p, q) { double y; asm(op " %0, %1, %2;" : "=d"(y) : "d"(p), "d"(q)); BITS64(y); }
#define F32_1(op) { float y; asm(op " %0, %1;" : "=f"(y) : "f"(f)); BITS32(y); }
#define F32_2(op, p, q) { float y; asm(op " %0, %1, %2;" : "=f"(y) : "f"(p), "f"(q)); BITS32(y); }

extern "C" __global__ void specials(const unsigned long long *din, const unsigned *fin, const unsigned short *hin,
                                    unsigned long long *out, int n) {
  int i = threadIdx.x;
  if (i >= n) return;
  double d = __longlong_as_double(din[i]); /* bits in, so that a NaN's payload and sign arrive as given */
  float f = __uint_as_float(fin[i]);
  unsigned short h = hin[i];
  int k = 0;
  TO_INT("f64", "rzi", "d"(d)) TO_INT("f64", "rni", "d"(d))
  TO_INT("f32", "rzi", "f"(f)) TO_INT("f32", "rni", "f"(f))
  { int y; asm("{.reg .f16 t; mov.b16 t, %1; cvt.rzi.s32.f16 %0, t;}" : "=r"(y) : "h"(h)); ROW((unsigned)y); }
  { unsigned y; asm("{.reg .f16 t; mov.b16 t, %1; cvt.rzi.u32.f16 %0, t;}" : "=r"(y) : "h"(h)); ROW(y); }
  { long long y; asm("{.reg .f16 t; mov.b16 t, %1; cvt.rzi.s64.f16 %0, t;}" : "=l"(y) : "h"(h)); ROW(y); }
  { short y; asm("{.reg .f16 t; mov.b16 t, %1; cvt.rzi.s16.f16 %0, t;}" : "=h"(y) : "h"(h)); ROW((unsigned short)y); }
  F64_1("sqrt.rn.f64") F64_1("rcp.rn.f64") F64_1("rsqrt.approx.f64")
  F64_2("div.rn.f64", d, 1.5) F64_2("div.rn.f64", 1.5, d) F64_2("add.rn.f64", d, 1.5) F64_2("mul.rn.f64", d, 1.5)
  { double y; asm("fma.rn.f64 %0, %1, %2, %3;" : "=d"(y) : "d"(d), "d"(1.5), "d"(2.0)); BITS64(y); }
  F64_1("abs.f64")
  { double y; asm("{.reg .f64 t; abs.f64 t, %1; sqrt.rn.f64 %0, t;}" : "=d"(y) : "d"(d)); BITS64(y); }
  F64_2("max.f64", d, d)
  { double y; asm("cvt.f64.f32 %0, %1;" : "=d"(y) : "f"(f)); BITS64(y); }
  { float y; asm("cvt.rn.f32.f64 %0, %1;" : "=f"(y) : "d"(d)); BITS32(y); }
  F32_1("sqrt.rn.f32") F32_1("sqrt.approx.f32") F32_1("rcp.rn.f32") F32_1("rcp.approx.f32") F32_1("rsqrt.approx.f32")
  F32_1("abs.f32") F32_1("neg.f32") /* ex2, lg2, sin: approximations, not the GPU's bits (docs/KERNELS.md) */
  F32_2("add.rn.f32", f, 1.5f) F32_2("div.rn.f32", f, 1.5f) F32_2("div.full.f32", f, 1.5f)
  /* past the first measured rows */
  F64_1("neg.f64") F64_2("min.f64", d, 1.5) F64_2("max.f64", 1.5, d) F64_2("sub.rn.f64", d, d)
  F32_2("min.f32", f, 1.5f) F32_2("max.f32", 1.5f, f) F32_2("mul.rn.f32", f, 0.0f) F32_2("sub.rn.f32", f, f)
  { float y; asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(y) : "f"(f), "f"(1.5f), "f"(2.0f)); BITS32(y); }
  { float y; asm("cvt.f32.f16 %0, %1;" : "=f"(y) : "h"(h)); BITS32(y); }
  { unsigned short y; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(y) : "f"(f)); ROW(y); }
}
