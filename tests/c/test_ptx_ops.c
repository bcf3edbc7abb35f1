/*
 * test_ptx_ops.c -- the interpreter's instruction semantics one at a time
 * (a kernel of a single instruction on values from memory, against the
 * value PTX defines), the 64-bit integer and f64 kernels of the corpus
 * against C, run-time faults (trap, barriers that never complete), and PTX
 * refused at load with the construct and its line named.
 */

#include "ptx_harness.h"

#include <math.h>

static const char *one_insn =
    ".version 9.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry t(.param .u64 p)\n{\n"
    "  .reg .pred %%p<4>;\n  .reg .b64 %%rd<4>;\n  .reg .b64 %%x<8>;\n"
    "  ld.param.u64 %%rd1, [p];\n"
    "  ld.u64 %%x1, [%%rd1];\n  ld.u64 %%x2, [%%rd1+8];\n  ld.u64 %%x3, [%%rd1+16];\n"
    "  %s\n"
    "  st.u64 [%%rd1+24], %%x0;\n  ret;\n}\n";

/* Runs `insn` (d = %x0, sources %x1..%x3) on a, b, c: the bits of %x0. */
static uint64_t run1(const char *insn, uint64_t a, uint64_t b, uint64_t c) {
  char text[2048], err[512];
  snprintf(text, sizeof text, one_insn, insn);
  sim_ptx_module *m = sim_ptx_load(text, err, sizeof err);
  if (!m) {
    CHECK(0, "%s: %s", insn, err);
    return 0xdeadbeef;
  }
  uint64_t v[4] = {a, b, c, 0};
  registry r = {0};
  add_buffer(&r, "v", v, sizeof v);
  uint64_t *pv = v;
  void *params[] = {&pv};
  if (launch(m, "t", 1, 1, 1, 1, 0, params, &r, err, sizeof err, NULL)) CHECK(0, "%s: %s", insn, err);
  sim_ptx_free(m);
  return v[3];
}

static uint64_t f32b(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static uint64_t f64b(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  return u;
}

#define EXPECT(insn, a, b, c, want)                                                                                \
  do {                                                                                                             \
    uint64_t got_ = run1(insn, (uint64_t)(a), (uint64_t)(b), (uint64_t)(c)), want_ = (uint64_t)(want);             \
    CHECK(got_ == want_, "%s on 0x%llx 0x%llx 0x%llx: 0x%llx, PTX defines 0x%llx", insn, (unsigned long long)(a),  \
          (unsigned long long)(b), (unsigned long long)(c), (unsigned long long)got_, (unsigned long long)want_);  \
  } while (0)

static void test_semantics(void) {
  /* setp with a boolean op: d = (a cmp b) op c, the second d = !(a cmp b) op c */
#define SETP_BOOL(OP) "setp.ne.u64 %p2, %x3, 0; setp.gt." OP ".u32 %p1|%p3, %x1, %x2, %p2; selp.u64 %x0, 1, 2, %p1; " \
                      "selp.u64 %x4, 10, 20, %p3; add.u64 %x0, %x0, %x4;"
  EXPECT(SETP_BOOL("and"), 5, 3, 1, 21);
  EXPECT(SETP_BOOL("and"), 5, 3, 0, 22);
  EXPECT(SETP_BOOL("and"), 3, 5, 1, 12);
  EXPECT(SETP_BOOL("or"), 5, 3, 0, 21);
  EXPECT(SETP_BOOL("or"), 3, 5, 0, 12);
  EXPECT(SETP_BOOL("or"), 3, 5, 1, 11);
  EXPECT(SETP_BOOL("xor"), 5, 3, 1, 12);
  EXPECT(SETP_BOOL("xor"), 3, 5, 1, 21);
#undef SETP_BOOL
  /* an f64 add, sub or mul of a NaN first operand: it, quieted, whatever the second */
  EXPECT("add.f64 %x0, %x1, %x2;", 0x7ff0000000000001ull, 0x7ff8000000000002ull, 0, 0x7ff8000000000001ull);
  EXPECT("mul.f64 %x0, %x1, %x2;", 0xfff4000000000003ull, 0x7ff8000000000002ull, 0, 0xfffc000000000003ull);
  EXPECT("sub.f64 %x0, %x1, %x2;", 0x3ff0000000000000ull, 0x7ff4000000000005ull, 0, 0x7ffc000000000005ull);
  EXPECT("add.sat.s32 %x0, %x1, %x2;", 0x7fffffff, 1, 0, 0x7fffffff);
  /* the most negative immediate, as NVRTC writes it (its negation is computed modulo 2^64) */
  EXPECT("add.s64 %x0, %x1, -9223372036854775808;", 1, 0, 0, 0x8000000000000001ull);
  EXPECT("sub.s32 %x0, %x1, %x2;", 0, 1, 0, 0xffffffffu);
  EXPECT("mul.hi.s64 %x0, %x1, %x2;", (uint64_t)-3, 1ull << 62, 0, (uint64_t)-1);
  EXPECT("mul.hi.u32 %x0, %x1, %x2;", 0xffffffffu, 0xffffffffu, 0, 0xfffffffeu);
  EXPECT("mul.wide.s32 %x0, %x1, %x2;", 0xfffffffeu, 3, 0, (uint64_t)-6);
  EXPECT("mad.wide.u32 %x0, %x1, %x2, %x3;", 0xffffffffu, 2, 5, 0x1fffffffeull + 5);
  EXPECT("mul24.lo.s32 %x0, %x1, %x2;", 0x00ffffffu, 2, 0, 0xfffffffeu);
  EXPECT("div.s32 %x0, %x1, %x2;", (uint32_t)-7, 2, 0, (uint32_t)-3);
  EXPECT("rem.s32 %x0, %x1, %x2;", (uint32_t)-7, 2, 0, (uint32_t)-1);
  EXPECT("div.u32 %x0, %x1, %x2;", 7, 0, 0, 0xffffffffu);
  EXPECT("shr.s32 %x0, %x1, %x2;", 0x80000000u, 40, 0, 0xffffffffu);
  EXPECT("shr.u32 %x0, %x1, %x2;", 0x80000000u, 40, 0, 0);
  EXPECT("shl.b64 %x0, %x1, %x2;", 1, 63, 0, 1ull << 63);
  EXPECT("bfe.u32 %x0, %x1, %x2, %x3;", 0xf0f01234u, 4, 8, 0x23);
  EXPECT("bfe.s32 %x0, %x1, %x2, %x3;", 0x00000f00u, 8, 4, 0xffffffffu);
  EXPECT("bfi.b32 %x0, %x1, %x2, %x3, 8;", 0xab, 0x11223344u, 16, 0x11ab3344u);
  EXPECT("prmt.b32 %x0, %x1, %x2, %x3;", 0x33221100u, 0xf7665544u, 0xf041u, 0xff004411u);
  EXPECT("popc.b64 %x0, %x1;", 0xf0f0f0f0f0f0f0f0ull, 0, 0, 32);
  EXPECT("clz.b32 %x0, %x1;", 0, 0, 0, 32);
  EXPECT("clz.b64 %x0, %x1;", 1, 0, 0, 63);
  EXPECT("brev.b32 %x0, %x1;", 1, 0, 0, 0x80000000u);
  EXPECT("bfind.u32 %x0, %x1;", 0x00010000u, 0, 0, 16);
  EXPECT("bfind.s32 %x0, %x1;", 0xffffffffu, 0, 0, 0xffffffffu);
  EXPECT("bfind.shiftamt.u32 %x0, %x1;", 0x00010000u, 0, 0, 15);
  EXPECT("lop3.b32 %x0, %x1, %x2, %x3, 0x96;", 0xff00ff00u, 0xf0f0f0f0u, 0xccccccccu, 0xff00ff00u ^ 0xf0f0f0f0u ^ 0xccccccccu);
  EXPECT("shf.l.wrap.b32 %x0, %x1, %x2, %x3;", 0x80000000u, 0x1, 33, 0x3);
  EXPECT("shf.r.clamp.b32 %x0, %x1, %x2, %x3;", 0x0, 0x12345678u, 40, 0x12345678u);
  EXPECT("cnot.b32 %x0, %x1;", 0, 0, 0, 1);
  EXPECT("min.s64 %x0, %x1, %x2;", (uint64_t)-5, 3, 0, (uint64_t)-5);
  EXPECT("max.u16 %x0, %x1, %x2;", 0xfffb, 3, 0, 0xfffb);
  EXPECT("abs.s32 %x0, %x1;", 0x80000000u, 0, 0, 0x80000000u);
  /* floating point: IEEE results, rounding modes, NaN and signed zeros */
  EXPECT("add.rz.f32 %x0, %x1, %x2;", f32b(1.0f), f32b(0x1p-24f * 1.5f), 0, f32b(1.0f));
  EXPECT("add.rp.f32 %x0, %x1, %x2;", f32b(1.0f), f32b(0x1p-30f), 0, f32b(1.0f + 0x1p-23f));
  EXPECT("mul.rm.f32 %x0, %x1, %x2;", f32b(1.0f + 0x1p-23f), f32b(1.0f + 0x1p-23f), 0, 0x3f800002u);
  EXPECT("mul.rp.f32 %x0, %x1, %x2;", f32b(1.0f + 0x1p-23f), f32b(1.0f + 0x1p-23f), 0, 0x3f800003u);
  EXPECT("div.rp.f64 %x0, %x1, %x2;", f64b(1.0), f64b(3.0), 0, 0x3fd5555555555556ull);
  EXPECT("div.rz.f64 %x0, %x1, %x2;", f64b(1.0), f64b(3.0), 0, 0x3fd5555555555555ull);
  EXPECT("sqrt.rp.f32 %x0, %x1;", f32b(2.0f), 0, 0, 0x3fb504f4u);
  EXPECT("sqrt.rz.f32 %x0, %x1;", f32b(2.0f), 0, 0, 0x3fb504f3u);
  EXPECT("fma.rz.f32 %x0, %x1, %x2, %x3;", f32b(1.0f + 0x1p-23f), f32b(1.0f - 0x1p-23f), 0, 0x3f7fffffu);
  EXPECT("add.rz.f32 %x0, %x1, %x2;", f32b(3e38f), f32b(3e38f), 0, 0x7f7fffffu);
  EXPECT("min.f32 %x0, %x1, %x2;", f32b(0.0f), f32b(-0.0f), 0, f32b(-0.0f));
  EXPECT("max.f32 %x0, %x1, %x2;", f32b(NAN), f32b(2.0f), 0, f32b(2.0f));
  EXPECT("mul.ftz.f32 %x0, %x1, %x2;", f32b(0x1p-140f), f32b(1.0f), 0, 0);
  EXPECT("add.sat.f32 %x0, %x1, %x2;", f32b(0.75f), f32b(0.5f), 0, f32b(1.0f));
  EXPECT("div.rn.f64 %x0, %x1, %x2;", f64b(1.0), f64b(3.0), 0, f64b(1.0 / 3.0));
  EXPECT("sqrt.rn.f32 %x0, %x1;", f32b(2.0f), 0, 0, f32b(sqrtf(2.0f)));
  EXPECT("rcp.rn.f64 %x0, %x1;", f64b(3.0), 0, 0, f64b(1.0 / 3.0));
  EXPECT("fma.rn.f32 %x0, %x1, %x2, %x3;", f32b(1.0f + 0x1p-23f), f32b(1.0f - 0x1p-23f), f32b(-1.0f), f32b(-0x1p-46f));
  EXPECT("neg.f64 %x0, %x1;", f64b(0.0), 0, 0, f64b(-0.0));
  EXPECT("cvt.rzi.s32.f32 %x0, %x1;", f32b(3e9f), 0, 0, 0x7fffffffu);
  EXPECT("cvt.rzi.s32.f32 %x0, %x1;", f32b(NAN), 0, 0, 0);
  EXPECT("cvt.rni.s32.f64 %x0, %x1;", f64b(2.5), 0, 0, 2);
  EXPECT("cvt.rmi.s64.f64 %x0, %x1;", f64b(-2.5), 0, 0, (uint64_t)-3);
  EXPECT("cvt.rpi.u32.f32 %x0, %x1;", f32b(-2.5f), 0, 0, 0);
  EXPECT("cvt.rn.f32.u64 %x0, %x1;", ~0ull, 0, 0, 0x5f800000u);
  EXPECT("cvt.rz.f32.s32 %x0, %x1;", 16777217, 0, 0, f32b(16777216.0f));
  EXPECT("cvt.rp.f32.s32 %x0, %x1;", 16777217, 0, 0, f32b(16777218.0f));
  EXPECT("cvt.rz.f32.f64 %x0, %x1;", f64b(1.0 / 3.0), 0, 0, 0x3eaaaaaau);
  EXPECT("cvt.rn.f32.f64 %x0, %x1;", f64b(1.0 / 3.0), 0, 0, 0x3eaaaaabu);
  EXPECT("cvt.sat.u8.s32 %x0, %x1;", (uint32_t)-5, 0, 0, 0);
  EXPECT("cvt.sat.s8.s32 %x0, %x1;", 300, 0, 0, 0x7f);
  EXPECT("cvt.s64.s16 %x0, %x1;", 0x8000, 0, 0, 0xffffffffffff8000ull);
  EXPECT("cvt.u32.u64 %x0, %x1;", 0x123456789ull, 0, 0, 0x23456789u);
  EXPECT("cvt.ftz.f64.f32 %x0, %x1;", f32b(0x1p-140f), 0, 0, 0);
  EXPECT("cvt.rni.f32.f32 %x0, %x1;", f32b(3.5f), 0, 0, f32b(4.0f));
  /* NaNs and sub-word results as an H200 gives them (tests/ptx/specials.cu) */
  EXPECT("cvt.rzi.s32.f64 %x0, %x1;", 0xfff8000000000000ull, 0, 0, 0x80000000u);
  EXPECT("cvt.rni.u16.f64 %x0, %x1;", 0x7ff8000000000000ull, 0, 0, 0x8000u);
  EXPECT("cvt.rzi.s64.f32 %x0, %x1;", f32b(NAN), 0, 0, 1ull << 63);
  EXPECT("cvt.rzi.u64.f32 %x0, %x1;", f32b(NAN), 0, 0, 1ull << 63);
  EXPECT("cvt.rzi.u32.f32 %x0, %x1;", f32b(NAN), 0, 0, 0);
  EXPECT("cvt.rzi.s8.f64 %x0, %x1;", f64b(-1e30), 0, 0, 0xffffffffffffff80ull);
  EXPECT("cvt.rzi.u8.f64 %x0, %x1;", f64b(1e30), 0, 0, 0xff);
  EXPECT("cvt.s8.s32 %x0, %x1;", 0x1f0, 0, 0, 0xfffffffffffffff0ull);
  EXPECT("add.f32 %x0, %x1, %x2;", 0x7fc12345u, f32b(1.0f), 0, 0x7fffffffu);
  EXPECT("abs.f32 %x0, %x1;", 0xffc00000u, 0, 0, 0x7fffffffu);
  EXPECT("sqrt.rn.f32 %x0, %x1;", f32b(-1.0f), 0, 0, 0x7fffffffu);
  EXPECT("abs.f64 %x0, %x1;", 0xfff8000000000000ull, 0, 0, 0xfff8000000000000ull);
  EXPECT("abs.f64 %x0, %x1;", 0x7ff0000000000001ull, 0, 0, 0x7ff8000000000001ull);
  EXPECT("sqrt.rn.f64 %x0, %x1;", f64b(-1.0), 0, 0, 0xfff8000000000000ull);
  EXPECT("cvt.rn.f32.f64 %x0, %x1;", 0xfff8000000012345ull, 0, 0, 0xffc00000u);
  EXPECT("setp.ltu.f32 %p1, %x1, %x2; selp.u64 %x0, 1, 2, %p1;", f32b(NAN), f32b(1.0f), 0, 1);
  EXPECT("setp.lt.f32 %p1, %x1, %x2; selp.u64 %x0, 1, 2, %p1;", f32b(NAN), f32b(1.0f), 0, 2);
  EXPECT("setp.nan.f64 %p1, %x1, %x2; selp.u64 %x0, 1, 2, %p1;", f64b(1.0), f64b(NAN), 0, 1);
  EXPECT("setp.lo.u32 %p1, %x1, %x2; selp.u64 %x0, 1, 2, %p1;", 0xffffffffu, 1, 0, 2);
  EXPECT("setp.lt.s32 %p1, %x1, %x2; selp.u64 %x0, 1, 2, %p1;", 0xffffffffu, 1, 0, 1);
  EXPECT("setp.gt.and.s32 %p1|%p2, %x1, %x2, %p3; selp.u64 %x0, 1, 2, %p2;", 5, 1, 0, 2);
  EXPECT("setp.eq.s32 %p3, %x3, 1; setp.gt.or.s32 %p1|%p2, %x1, %x2, %p3; selp.u64 %x0, 1, 2, %p2;", 5, 1, 1, 1);
  EXPECT("set.gt.u32.s32 %x0, %x1, %x2;", 5, 1, 0, 0xffffffffu);
  EXPECT("set.lt.f32.f32 %x0, %x1, %x2;", f32b(1.0f), f32b(2.0f), 0, f32b(1.0f));
  EXPECT("slct.u32.s32 %x0, %x1, %x2, %x3;", 10, 20, (uint32_t)-1, 20);
  EXPECT("mov.b64 {%rd2, %rd3}, %x1; add.u64 %x0, %rd3, %rd2;", 0x0000000500000007ull, 0, 0, 12);
  EXPECT("mov.b64 %x0, {%x1, %x2};", 0x11, 0x22, 0, 0x0000002200000011ull);
  EXPECT("mov.u32 %x0, %laneid;", 0, 0, 0, 0);
  EXPECT("mov.u32 %x0, %lanemask_lt;", 0, 0, 0, 0);
  EXPECT("mov.u32 %x0, %lanemask_ge;", 0, 0, 0, 0xffffffffu);
  /* atomics through a generic address (the buffer's own words) */
  EXPECT("add.u64 %x2, %rd1, 8; atom.add.u32 %x0, [%x2], 5;", 0, 7, 0, 7);
  EXPECT("add.u64 %x2, %rd1, 16; atom.cas.b32 %x0, [%x2], 3, 9; ld.u32 %x0, [%x2];", 0, 0, 3, 9);
  EXPECT("add.u64 %x2, %rd1, 16; atom.inc.u32 %x0, [%x2], 3; ld.u32 %x0, [%x2];", 0, 0, 3, 0);
  EXPECT("add.u64 %x2, %rd1, 16; atom.dec.u32 %x0, [%x2], 7; ld.u32 %x0, [%x2];", 0, 0, 0, 7);
  EXPECT("add.u64 %x2, %rd1, 8; atom.global.max.s32 %x0, [%x2], -4; ld.u32 %x0, [%x2];", 0, (uint32_t)-9, 0, (uint32_t)-4);
  EXPECT("add.u64 %x2, %rd1, 8; atom.add.f64 %x0, [%x2], 0d3FF0000000000000; ld.f64 %x0, [%x2];", 0, f64b(1.5), 0, f64b(2.5));
  /* approximations: within the ISA's bounds */
  uint64_t e = run1("ex2.approx.f32 %x0, %x1;", f32b(0.3f), 0, 0);
  float ef;
  uint32_t eu = (uint32_t)e;
  memcpy(&ef, &eu, 4);
  CHECK(fabs(ef - exp2(0.3)) <= exp2(0.3) * 0x1p-22, "ex2.approx.f32 of 0.3: %.9g", ef);
  e = run1("sin.approx.f32 %x0, %x1;", f32b(2.0f), 0, 0);
  eu = (uint32_t)e;
  memcpy(&ef, &eu, 4);
  CHECK(fabs(ef - sin(2.0)) <= exp2(-20.9), "sin.approx.f32 of 2: %.9g", ef);
}

/* An unrounded mul and the one add or sub that reads its product, in the
 * same basic block, run as one fma rounded once (as ptxas contracts them);
 * anything else rounds twice. x*y is 1 - 2^-60 (f64) or 1 - 2^-26 (f32):
 * 1 once rounded, so the contracted x*y - 1 is -2^-60, the other 0. */
static void test_contraction(void) {
  const double x = 1 + 0x1p-30, y = 1 - 0x1p-30, fused = fma(x, y, -1.0);
  const float xf = 1 + 0x1p-13f, yf = 1 - 0x1p-13f;
  CHECK(fused == -0x1p-60 && x * y - 1.0 == 0, "inputs where fused and unfused differ");
  EXPECT("mul.f64 %x4, %x1, %x2; sub.f64 %x0, %x4, %x3;", f64b(x), f64b(y), f64b(1.0), f64b(fused));
  EXPECT("mul.f64 %x4, %x1, %x2; sub.f64 %x0, %x3, %x4;", f64b(x), f64b(y), f64b(1.0), f64b(-fused)); /* c - a*b */
  EXPECT("mul.f64 %x4, %x1, %x2; add.f64 %x0, %x4, %x3;", f64b(x), f64b(y), f64b(-1.0), f64b(fused));
  EXPECT("mul.f64 %x4, %x1, %x2; add.f64 %x0, %x3, %x4;", f64b(x), f64b(y), f64b(-1.0), f64b(fused));
  EXPECT("mul.f64 %x4, %x1, 0d3FEFFFFFFF800000; sub.f64 %x0, %x4, 0d3FF0000000000000;", f64b(x), 0, 0, f64b(fused));
  EXPECT("mul.f64 %x4, %x1, %x2; add.u64 %x5, %x5, 1; sub.f64 %x0, %x4, %x3;", f64b(x), f64b(y), f64b(1.0),
         f64b(fused));
  EXPECT("setp.ne.u64 %p1, %x3, 0; @%p1 mul.f64 %x4, %x1, %x2; @%p1 sub.f64 %x0, %x4, %x3;", f64b(x), f64b(y),
         f64b(1.0), f64b(fused));
  /* f32, with .ftz and .sat carried over */
  EXPECT("mul.f32 %x4, %x1, %x2; sub.f32 %x0, %x4, %x3;", f32b(xf), f32b(yf), f32b(1.0f), f32b(-0x1p-26f));
  EXPECT("mul.ftz.f32 %x4, %x1, %x2; sub.ftz.f32 %x0, %x4, %x3;", f32b(xf), f32b(yf), f32b(1.0f), f32b(-0x1p-26f));
  EXPECT("mul.f32 %x4, %x1, %x2; sub.sat.f32 %x0, %x3, %x4;", f32b(xf), f32b(yf), f32b(1.0f), f32b(0x1p-26f));
  EXPECT("mul.f32 %x4, %x1, 0f3F7FF800; sub.f32 %x0, %x4, 0f3F800000;", f32b(xf), 0, 0, f32b(-0x1p-26f));
  /* not contracted: an explicit .rn, the product read twice, a branch
   * target or a source written in between, a guard the add has not, .ftz
   * on one of them */
  EXPECT("mul.rn.f64 %x4, %x1, %x2; sub.f64 %x0, %x4, %x3;", f64b(x), f64b(y), f64b(1.0), 0);
  EXPECT("mul.f64 %x4, %x1, %x2; sub.rn.f64 %x0, %x4, %x3;", f64b(x), f64b(y), f64b(1.0), 0);
  EXPECT("mul.rn.f32 %x4, %x1, %x2; sub.f32 %x0, %x4, %x3;", f32b(xf), f32b(yf), f32b(1.0f), 0);
  EXPECT("mul.f64 %x4, %x1, %x2; mov.b64 %x5, %x4; sub.f64 %x0, %x4, %x3;", f64b(x), f64b(y), f64b(1.0), 0);
  EXPECT("mul.f64 %x4, %x1, %x2; bra.uni $L1;\n$L1:\n sub.f64 %x0, %x4, %x3;", f64b(x), f64b(y), f64b(1.0), 0);
  EXPECT("mul.f64 %x4, %x1, %x2; mov.f64 %x1, 0d0000000000000000; sub.f64 %x0, %x4, %x3;", f64b(x), f64b(y),
         f64b(1.0), 0);
  EXPECT("setp.ne.u64 %p1, %x3, 0; @%p1 mul.f64 %x4, %x1, %x2; sub.f64 %x0, %x4, %x3;", f64b(x), f64b(y), f64b(1.0), 0);
  EXPECT("mul.ftz.f32 %x4, %x1, %x2; sub.f32 %x0, %x4, %x3;", f32b(xf), f32b(yf), f32b(1.0f), 0);
  /* the loop's product read once, by an add of another block */
  EXPECT("mov.u64 %x5, 2;\n$L1:\n mul.f64 %x4, %x1, %x2; sub.u64 %x5, %x5, 1; setp.ne.u64 %p1, %x5, 0;"
         " @%p1 bra $L1;\n sub.f64 %x0, %x4, %x3;", f64b(x), f64b(y), f64b(1.0), 0);
}

/* setp of every comparison of integers and floats, against PTX's
 * definition: the ordered ones false and the unordered ones true with a
 * NaN; lo/ls/hi/hs and eq/ne compare the bits; the others signed for .s */
static int cmp_want(const char *cmp, char kind, int bits, uint64_t a, uint64_t b) {
  if (kind == 'f') {
    double x, y;
    if (bits == 32) {
      float fx, fy;
      uint32_t ua = (uint32_t)a, ub = (uint32_t)b;
      memcpy(&fx, &ua, 4);
      memcpy(&fy, &ub, 4);
      x = fx, y = fy;
    } else {
      memcpy(&x, &a, 8);
      memcpy(&y, &b, 8);
    }
    int un = isnan(x) || isnan(y), u = cmp[2] == 'u';
    if (!strcmp(cmp, "num")) return !un;
    if (!strcmp(cmp, "nan")) return un;
    if (un) return u;
    int r = !strncmp(cmp, "eq", 2) ? x == y : !strncmp(cmp, "ne", 2) ? x != y : !strncmp(cmp, "lt", 2) ? x < y
          : !strncmp(cmp, "le", 2) ? x <= y : !strncmp(cmp, "gt", 2) ? x > y : x >= y;
    return r;
  }
  uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1, ux = a & mask, uy = b & mask;
  int64_t sx = bits == 64 ? (int64_t)a : (int32_t)a, sy = bits == 64 ? (int64_t)b : (int32_t)b;
  int s = kind == 's';
  if (!strcmp(cmp, "eq")) return ux == uy;
  if (!strcmp(cmp, "ne")) return ux != uy;
  if (!strcmp(cmp, "lt")) return s ? sx < sy : ux < uy;
  if (!strcmp(cmp, "le")) return s ? sx <= sy : ux <= uy;
  if (!strcmp(cmp, "gt")) return s ? sx > sy : ux > uy;
  if (!strcmp(cmp, "ge")) return s ? sx >= sy : ux >= uy;
  if (!strcmp(cmp, "lo")) return ux < uy;
  if (!strcmp(cmp, "ls")) return ux <= uy;
  if (!strcmp(cmp, "hi")) return ux > uy;
  return ux >= uy; /* hs */
}

static void test_compares(void) {
  static const char *icmp[] = {"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"};
  static const char *fcmp[] = {"eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};
  static const char *itypes[] = {"s32", "u32", "b32", "s64", "u64", "b64"};
  static const uint64_t ivals[][2] = {{0xffffffffu, 1}, {1, 0xffffffffu}, {5, 5}, {0x80000000u, 0x7fffffffu},
                                      {0x100000001ull, 1}, {0x8000000000000000ull, 3}, {7, 0xfffffffffffffff9ull}};
  char insn[160];
  for (size_t t = 0; t < sizeof itypes / sizeof *itypes; t++)
    for (size_t k = 0; k < sizeof icmp / sizeof *icmp; k++) {
      if (itypes[t][0] == 'b' && k >= 2 && k < 6) continue; /* .b types: eq, ne and the unsigned ones */
      for (size_t v = 0; v < sizeof ivals / sizeof *ivals; v++) {
        snprintf(insn, sizeof insn, "setp.%s.%s %%p1, %%x1, %%x2; selp.u64 %%x0, 1, 2, %%p1;", icmp[k], itypes[t]);
        int bits = itypes[t][1] == '6' ? 64 : 32;
        EXPECT(insn, ivals[v][0], ivals[v][1], 0, cmp_want(icmp[k], itypes[t][0], bits, ivals[v][0], ivals[v][1]) ? 1 : 2);
      }
    }
  uint64_t fvals[][2] = {{f32b(NAN), f32b(1)}, {f32b(1), f32b(NAN)}, {f32b(1), f32b(1)}, {f32b(-0.0f), f32b(0)},
                         {f32b(1), f32b(2)}, {f32b(2), f32b(-INFINITY)}, {f64b(NAN), f64b(1)}, {f64b(1), f64b(1)},
                         {f64b(1), f64b(2)}, {f64b(-0.0), f64b(0)}, {f64b(3), f64b(2)}};
  for (int bits = 32; bits <= 64; bits += 32)
    for (size_t k = 0; k < sizeof fcmp / sizeof *fcmp; k++)
      for (size_t v = bits == 32 ? 0 : 6; v < (bits == 32 ? 6u : sizeof fvals / sizeof *fvals); v++) {
        snprintf(insn, sizeof insn, "setp.%s.f%d %%p1, %%x1, %%x2; selp.u64 %%x0, 1, 2, %%p1;", fcmp[k], bits);
        EXPECT(insn, fvals[v][0], fvals[v][1], 0, cmp_want(fcmp[k], 'f', bits, fvals[v][0], fvals[v][1]) ? 1 : 2);
      }
}

/* A warp's 32 lanes run `insn` together (the interpreter's whole-warp
 * paths), each on its own values: every lane's result must be what one
 * thread alone gets (the lane-by-lane path, run1). */
static const char *one_warp =
    ".version 9.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry t(.param .u64 p)\n{\n"
    "  .reg .pred %%p<4>;\n  .reg .b64 %%rd<4>;\n  .reg .b64 %%x<8>;\n  .reg .b32 %%t;\n"
    "  ld.param.u64 %%rd1, [p];\n  mov.u32 %%t, %%tid.x;\n  mul.wide.u32 %%rd2, %%t, 32;\n  add.u64 %%rd1, %%rd1, %%rd2;\n"
    "  ld.u64 %%x1, [%%rd1];\n  ld.u64 %%x2, [%%rd1+8];\n  ld.u64 %%x3, [%%rd1+16];\n"
    "  %s\n"
    "  st.u64 [%%rd1+24], %%x0;\n  ret;\n}\n";

static void whole_warp(const char *insn, uint64_t (*v)[4]) {
  char text[2048], err[512];
  snprintf(text, sizeof text, one_warp, insn);
  sim_ptx_module *m = sim_ptx_load(text, err, sizeof err);
  if (!m) {
    CHECK(0, "%s: %s", insn, err);
    return;
  }
  uint64_t w[SIM_PTX_WARP][4];
  memcpy(w, v, sizeof w);
  if (strstr(insn, "%x2;")) w[3][1] = 64, w[4][1] = 17; /* shift counts past and within the width */
  registry r = {0};
  add_buffer(&r, "v", w, sizeof w);
  void *pw = w, *params[] = {&pw};
  if (launch(m, "t", 1, 1, SIM_PTX_WARP, 1, 0, params, &r, err, sizeof err, NULL)) CHECK(0, "%s: %s", insn, err);
  sim_ptx_free(m);
  for (int l = 0; l < SIM_PTX_WARP; l++) {
    uint64_t want = run1(insn, w[l][0], w[l][1], w[l][2]);
    CHECK(w[l][3] == want, "%s in a whole warp, lane %d on 0x%llx 0x%llx 0x%llx: 0x%llx, one thread alone 0x%llx", insn,
          l, (unsigned long long)w[l][0], (unsigned long long)w[l][1], (unsigned long long)w[l][2],
          (unsigned long long)w[l][3], (unsigned long long)want);
  }
}

static void test_whole_warp(void) {
  static const char *insns[] = {
      "add.u16 %x0, %x1, %x2;", "sub.s16 %x0, %x1, %x2;", "and.b16 %x0, %x1, %x2;", "xor.b32 %x0, %x1, %x2;",
      "or.b64 %x0, %x1, %x2;", "add.u64 %x1, %x1, %x2; mov.u64 %x0, %x1;", "shl.b16 %x0, %x1, 5;",
      "shl.b32 %x0, %x1, %x2;", "shr.u16 %x0, %x1, 3;", "shr.s16 %x0, %x1, 3;", "shr.s32 %x0, %x1, 31;",
      "shr.s64 %x0, %x1, 7;", "shr.u64 %x0, %x1, %x2;", "mul.lo.u16 %x0, %x1, %x2;", "mul.lo.s32 %x0, %x1, %x2;",
      "mul.wide.s32 %x0, %x1, %x2;", "mul.wide.u32 %x0, %x1, %x2;", "mad.lo.s32 %x0, %x1, %x2, %x3;",
      "mov.u64 %x0, %x3; mad.lo.u64 %x0, %x1, %x2, %x0;", "mov.u64 %x0, %x3; mad.wide.s32 %x0, %x1, %x2, %x0;",
      "mad.wide.u32 %x0, %x1, %x2, %x3;", "prmt.b32 %x0, %x1, %x2, 0x3210;", "prmt.b32 %x0, %x1, %x2, 0x7654;",
      "prmt.b32 %x0, %x1, %x2, 0x5410;", "prmt.b32 %x0, %x1, %x2, 0x8880;", "prmt.b32 %x0, %x1, %x2, 0xba98;",
      "prmt.b32 %x0, %x1, %x2, 0xf9e1;", "prmt.b32 %x0, %x1, %x2, 0x0c4d;", "cvt.u32.u8 %x0, %x1;",
      "cvt.s32.s8 %x0, %x1;", "cvt.s8.s32 %x0, %x1;", "cvt.u16.u32 %x0, %x1;", "cvt.s64.s16 %x0, %x1;",
      "cvt.u64.u16 %x0, %x1;", "cvt.s16.u8 %x0, %x1;", "cvt.u8.u64 %x0, %x1;",
      "setp.gt.u32 %p1, %x3, 9; selp.b32 %x0, %x1, %x2, %p1;", "setp.lt.s64 %p1, %x3, 0; selp.b16 %x0, %x1, %x2, %p1;",
      "setp.lt.u64 %p2, %x3, 99; setp.gt.and.u32 %p1|%p3, %x1, %x2, %p2; selp.u64 %x0, 1, 2, %p1; "
      "selp.u64 %x4, 10, 20, %p3; add.u64 %x0, %x0, %x4;",
      "setp.lt.u64 %p2, %x3, 99; setp.gt.or.s64 %p3|%p1, %x1, %x2, %p2; selp.u64 %x0, 1, 2, %p1; "
      "selp.u64 %x4, 10, 20, %p3; add.u64 %x0, %x0, %x4;",
      "setp.lt.u64 %p2, %x3, 99; setp.ne.xor.u16 %p1, %x1, %x2, %p2; selp.u64 %x0, 1, 2, %p1;",
      "setp.nan.f32 %p1, %x1, %x2; selp.u64 %x0, 1, 2, %p1;", "setp.num.or.f64 %p1, %x1, %x2, %p1; selp.u64 %x0, 1, 2, %p1;",
      "setp.equ.f64 %p1, %x1, %x3; selp.u64 %x0, 1, 2, %p1;",
      /* the forms with handlers of their own (ptx_fast.c) */
      "add.s64 %x0, %x1, %x2;", "add.u32 %x0, %x1, 7;", "sub.u64 %x0, 5, %x2;", "sub.s32 %x0, %x1, %x2;",
      "and.b64 %x0, %x1, 255;", "or.b32 %x0, %x1, %x2;", "xor.b64 %x0, %x1, %x2;", "mul.lo.u64 %x0, %x1, %x2;",
      "mul.lo.u32 %x0, %x1, 3;", "mad.lo.s64 %x0, %x1, %x2, %x3;", "mad.lo.u32 %x0, %x1, %x2, %x3;",
      "mov.u64 %x0, %x2;", "mov.b32 %x0, %x1;", "mov.u64 %x0, 77;", "cvt.s64.s32 %x0, %x1;", "cvt.u64.u32 %x0, %x1;",
      "cvt.u32.u64 %x0, %x1;", "cvt.s32.s64 %x0, %x1;", "cvt.u32.s32 %x0, %x1;", "cvt.s64.u64 %x0, %x1;",
      "add.f64 %x0, %x1, %x2;", "sub.rn.f64 %x0, %x1, %x3;", "mul.f64 %x0, %x1, %x2;", "add.f32 %x0, %x1, %x2;",
      "sub.f32 %x0, %x1, %x3;", "mul.rn.f32 %x0, %x1, %x2;", "shl.b64 %x0, %x1, 13;", "shl.b32 %x0, %x1, 31;",
      "shr.u64 %x0, %x1, 40;", "shr.u32 %x0, %x1, 1;", "shr.b32 %x0, %x1, 9;",
      "setp.lt.s32 %p1, %x1, %x2; selp.b64 %x0, %x1, %x2, %p1;", "setp.ge.s64 %p1, %x1, %x2; selp.b32 %x0, %x1, %x2, !%p1;",
      "min.u64 %x0, %x1, %x2;", "max.u64 %x0, %x1, 1000;", "min.s64 %x0, %x1, %x2;", "max.s64 %x0, %x1, %x2;",
      "min.u32 %x0, %x1, %x2;", "max.u32 %x0, %x1, %x2;", "min.s32 %x0, %x1, -3;", "max.s32 %x0, %x1, %x2;",
      "neg.s64 %x0, %x1;", "neg.s32 %x0, %x1;", "cvta.to.global.u64 %x0, %x1;", "cvta.global.u64 %x0, %x2;"};
  static const char *cmps[] = {"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"};
  static const char *ctypes[] = {"u64", "s64", "b64", "u32", "s32", "b32"};
  uint64_t v[SIM_PTX_WARP][4];
  for (int l = 0; l < SIM_PTX_WARP; l++)
    for (int k = 0; k < 3; k++) {
      uint64_t x = (uint64_t)rnd() << 32 | rnd();
      v[l][k] = l % 4 == 0 ? x >> (rnd() % 64) : l % 4 == 1 ? -(x & 0xff) : x; /* small, small negative, any */
    }
  for (int l = 0; l < 8; l++) v[l][1] = v[l][0]; /* equal operands too */
  for (size_t i = 0; i < sizeof insns / sizeof *insns; i++) whole_warp(insns[i], v);
  for (size_t t = 0; t < sizeof ctypes / sizeof *ctypes; t++)
    for (size_t k = 0; k < sizeof cmps / sizeof *cmps; k++) {
      if (ctypes[t][0] == 'b' && k >= 2 && k < 6) continue; /* .b types: eq, ne and the unsigned ones */
      char insn[160];
      snprintf(insn, sizeof insn, "setp.%s.%s %%p1, %%x1, %%x2; selp.u64 %%x0, 1, 2, %%p1;", cmps[k], ctypes[t]);
      whole_warp(insn, v);
      snprintf(insn, sizeof insn, "setp.%s.%s %%p1, %%x1, 200; selp.u64 %%x0, 1, 2, %%p1;", cmps[k], ctypes[t]);
      whole_warp(insn, v);
    }
}

void test_ptx_ops(int *nchecks, int *nfailures);
void test_ptx_ops(int *nchecks, int *nfailures) {
  test_semantics();
  test_compares();
  test_contraction();
  test_whole_warp();
  *nchecks += checks;
  *nfailures += failures;
}
