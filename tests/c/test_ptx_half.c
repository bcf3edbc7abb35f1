/*
 * test_ptx_half.c -- the corpus's f16/bf16 kernel (tests/ptx/half.cu) and its
 * warp kernel of dp4a, dp2a, redux and match (tests/ptx/warpops.cu) against
 * C. The C reference rounds on its own: the exact result in binary128 (with
 * the error of a sum beside it), scaled to an integer count of the format's
 * units and rounded as asked.
 */

#include "ptx_harness.h"

#include <math.h>

typedef __float128 q128;

/* A 16-bit float (bf: bfloat16) as its exact value; NaN as NaN. */
static q128 ref_val(uint16_t h, int bf) {
  int mb = bf ? 7 : 10, eb = bf ? 8 : 5, bias = (1 << (eb - 1)) - 1;
  int e = (h >> mb) & ((1 << eb) - 1), man = h & ((1 << mb) - 1);
  q128 v;
  if (e == (1 << eb) - 1) v = man ? (q128)NAN : (q128)INFINITY;
  else if (e == 0) v = (q128)ldexp(man, 1 - bias - mb);
  else v = (q128)ldexp(man + (1 << mb), e - bias - mb);
  return (h & 0x8000) ? -v : v;
}
static int ref_nan(q128 v) { return v != v; }

/* v (with `rs` the sign of the exact value's tiny remainder beyond v, for a
 * tie) rounded to the 16-bit format: mode 0 nearest even, 1 to zero, 2
 * down, 3 up. NaN is the canonical 0x7fff. */
static uint16_t ref_round(q128 v, int rs, int bf, int mode) {
  int mb = bf ? 7 : 10, emin = bf ? -126 : -14, emax = bf ? 127 : 15;
  uint16_t inf = bf ? 0x7f80 : 0x7c00;
  if (ref_nan(v)) return 0x7fff;
  int neg = v < 0 || (v == 0 && signbit((double)v));
  uint16_t sign = neg ? 0x8000 : 0;
  q128 a = neg ? -v : v;
  if (neg) rs = -rs;
  if (a == (q128)INFINITY) return sign | inf;
  if (a == 0) return sign;
  int e = ilogb((double)a);
  if ((q128)ldexp(1.0, e) > a) e--;
  if (e < emin) e = emin;
  q128 k = a / (q128)ldexp(1.0, e - mb);
  uint64_t n = (uint64_t)k;
  q128 f = k - (q128)n;
  int up;
  switch (mode) {
  case 0: up = f > 0.5Q || (f == 0.5Q && (rs > 0 || (rs == 0 && (n & 1)))); break;
  case 1: up = 0; break;
  case 2: up = neg && f > 0; break;
  default: up = !neg && f > 0; break;
  }
  n += (uint64_t)up;
  if (n >> (mb + 1)) n >>= 1, e++;
  if (e > emax || (e == emax && n >> (mb + 1))) {
    int to_inf = mode == 0 || (mode == 2 && neg) || (mode == 3 && !neg);
    return sign | (to_inf ? inf : (uint16_t)(inf - 1));
  }
  if (n < (1u << mb)) return sign | (uint16_t)n; /* subnormal */
  return sign | (uint16_t)(((uint64_t)(e - emin + 1) << mb) | (n - (1u << mb)));
}

/* x + y exactly as a sum and its remainder's sign, rounded to nearest */
static uint16_t ref_sum(q128 x, q128 y, int bf) {
  if (ref_nan(x) || ref_nan(y)) return 0x7fff;
  q128 s = x + y;
  if (ref_nan(s)) return 0x7fff;
  q128 t = s - x, e = (x - (s - t)) + (y - t);
  return ref_round(s, e > 0 ? 1 : e < 0 ? -1 : 0, bf, 0);
}
static uint16_t ref_fma(uint16_t a, uint16_t b, uint16_t c, int bf) {
  q128 p = ref_val(a, bf) * ref_val(b, bf); /* exact: 22 bits */
  return ref_sum(p, ref_val(c, bf), bf);
}
static uint16_t ref_minmax(uint16_t a, uint16_t b, int bf, int max, int nan) {
  q128 x = ref_val(a, bf), y = ref_val(b, bf);
  if ((ref_nan(x) && ref_nan(y)) || (nan && (ref_nan(x) || ref_nan(y)))) return 0x7fff;
  if (ref_nan(x)) return b;
  if (ref_nan(y)) return a;
  if (x == y) return max ? (a & 0x8000 ? b : a) : (a & 0x8000 ? a : b);
  return (x > y) == max ? a : b;
}
static uint16_t ref_sat(uint16_t h, int bf) {
  q128 v = ref_val(h, bf);
  if (ref_nan(v) || (h & 0x8000)) return 0;
  return v > 1 ? (bf ? 0x3f80 : 0x3c00) : h;
}
static uint16_t ref_relu(uint16_t h, int bf) { return (h & 0x8000) && !ref_nan(ref_val(h, bf)) ? 0 : h; }
static uint16_t ref_f32(float f, int bf, int mode) { return ref_round((q128)f, 0, bf, mode); }
static int ref_toint(uint16_t h, int bf, int mode, int lo, int hi) {
  q128 v = ref_val(h, bf);
  if (ref_nan(v)) return 0;
  double d = (double)v; /* exact */
  d = mode == 0 ? nearbyint(d) : mode == 1 ? trunc(d) : floor(d);
  return d < lo ? lo : d > hi ? hi : (int)d;
}
static int ref_cmp(uint16_t a, uint16_t b, int bf, int op) {
  q128 x = ref_val(a, bf), y = ref_val(b, bf);
  int un = ref_nan(x) || ref_nan(y);
  switch (op) {
  case 0: return !un && x < y;
  case 1: return !un && x <= y;
  case 2: return !un && x > y;
  case 3: return !un && x >= y;
  case 4: return !un && x == y;
  case 5: return !un && x != y;
  case 6: return un || x < y;
  case 7: return un || x != y;
  case 8: return un || x > y;
  default: return un || x == y;
  }
}

enum { N = 640, NO = 44 };

static uint16_t pattern(int i) {
  static const uint16_t special[] = {
    0x0000, 0x8000, 0x3c00, 0xbc00, 0x3c01, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0x0001, 0x03ff, 0x8001, 0x7bff,
    0xfbff, 0x1000, 0x3bff, 0x3f80, 0xbf80, 0x7f80, 0xff80, 0x7fc0, 0x007f, 0x0080, 0x7f7f, 0x3f81, 0x3b80,
    0x0400, 0x8400, 0x3555, 0x4000, 0xc000, 0x7800,
  };
  int ns = (int)(sizeof special / sizeof special[0]);
  return i < ns * 4 ? special[(i * 7 + i / ns) % ns] : (uint16_t)rnd();
}
static float fpattern(int i) {
  static const uint32_t special[] = {
    0x3f801000, 0x3f801001, 0x3f802000, 0x477ff000, 0x477fefff, 0x477fe000, 0x33000000, 0x33000001, 0x7fc00000,
    0x7f800000, 0xff800000, 0x80000000, 0x00000001, 0x3f808000, 0x3f818000, 0x7f7fffff, 0xbf801000, 0xc77ff000,
    0x38800000, 0x387fc000, 0x3f7fffff, 0x4b800001, 0x7f7f8000, 0x00800000,
  };
  int ns = (int)(sizeof special / sizeof special[0]);
  uint32_t u = i < ns ? special[i] : i % 3 ? (rnd() & 0x8fffffffu) | 0x30000000u : rnd();
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static void test_half(void) {
  sim_ptx_module *m = load_fixture("half");
  static uint16_t a[N], b[N], c[N], out[N * NO];
  static float f[N], fout[2 * N];
  static int v[N], iout[4 * N];
  static unsigned flags[N];
  for (int i = 0; i < N; i++) {
    a[i] = pattern(i), b[i] = pattern(i * 5 + 3), c[i] = pattern(i * 11 + 1), f[i] = fpattern(i);
    v[i] = i % 4 == 0 ? (int)rnd() : (int)(rnd() % 140000) - 70000;
  }
  /* bf16 fma whose product is halfway between two bf16 values (35/32 *
   * 11/8 = 1.5 + 2^-8), the tie broken by a tiny c either way: a sum in
   * double alone rounds it to even, twice */
  for (int k = 0; k < 4; k++) {
    a[N - 1 - k] = k & 2 ? 0x3fb0 : 0x3f8c, b[N - 1 - k] = k & 2 ? 0x3f8c : 0x3fb0;
    c[N - 1 - k] = k & 1 ? 0x8001 : 0x0001;
  }
  registry r = {0};
  add_buffer(&r, "a", a, sizeof a);
  add_buffer(&r, "b", b, sizeof b);
  add_buffer(&r, "c", c, sizeof c);
  add_buffer(&r, "f", f, sizeof f);
  add_buffer(&r, "v", v, sizeof v);
  add_buffer(&r, "out", out, sizeof out);
  add_buffer(&r, "flags", flags, sizeof flags);
  add_buffer(&r, "iout", iout, sizeof iout);
  void *pa = a, *pb = b, *pc = c, *pf = f, *pv = v, *po = out, *pfl = flags, *pio = iout, *pfo = fout;
  int n = N;
  void *params[] = {&pa, &pb, &pc, &pf, &pv, &po, &pfl, &pio, &pfo, &n};
  char err[512];
  add_buffer(&r, "fout", fout, sizeof fout);
  CHECK(launch(m, "halfops", N / 64, 1, 64, 1, 0, params, &r, err, sizeof err, NULL) == 0, "%s", err);
  int wrong = 0;
  for (int i = 0; i < N; i++) {
    uint16_t x = a[i], y = b[i], z = c[i], want[NO];
    float g = f[i], h = f[N - 1 - i];
    for (int bf = 0; bf < 2; bf++) {
      int o = bf ? 26 : 0;
      want[o + 0] = ref_sum(ref_val(x, bf), ref_val(y, bf), bf);
      want[o + 1] = ref_sum(ref_val(x, bf), -ref_val(y, bf), bf);
      want[o + 2] = ref_fma(x, y, bf ? 0x8000 : 0x8000, bf);
      want[o + 3] = ref_fma(x, y, z, bf);
      want[o + 4] = ref_nan(ref_val(x, bf)) ? 0x7fff : x ^ 0x8000;
      want[o + 5] = ref_nan(ref_val(x, bf)) ? 0x7fff : x & 0x7fff;
      want[o + 6] = ref_minmax(x, y, bf, 1, 0);
      want[o + 7] = ref_minmax(x, y, bf, 0, 0);
    }
    want[8] = ref_minmax(x, y, 0, 1, 1);
    want[9] = ref_minmax(x, y, 0, 0, 1);
    want[10] = ref_sat(want[0], 0);
    want[11] = ref_sat(want[3], 0);
    want[12] = ref_relu(want[3], 0);
    for (int k = 0; k < 4; k++) want[13 + k] = ref_f32(g, 0, k), want[34 + k] = ref_f32(g, 1, k);
    want[17] = ref_round((q128)v[i], 0, 0, 0);
    want[18] = ref_sum(ref_val(x, 0), ref_val(z, 0), 0), want[19] = ref_sum(ref_val(y, 0), ref_val(x, 0), 0);
    want[20] = ref_fma(x, z, 0x8000, 0), want[21] = ref_fma(y, x, 0x8000, 0);
    want[22] = ref_fma(x, z, want[18], 0), want[23] = ref_fma(y, x, want[19], 0);
    want[24] = ref_f32(g, 0, 0), want[25] = ref_f32(h, 0, 0);
    uint16_t m0 = ref_fma(x, z, 0x8000, 1), m1 = ref_fma(y, x, 0x8000, 1);
    want[38] = ref_fma(x, z, m0, 1), want[39] = ref_fma(y, x, m1, 1);
    want[40] = ref_minmax(x, y, 1, 1, 1);
    want[41] = ref_round((q128)v[i], 0, 1, 0);
    want[42] = ref_f32(g, 1, 0), want[43] = ref_f32(h, 1, 0);
    for (int k = 0; k < NO; k++)
      if (out[NO * i + k] != want[k] && wrong++ < 8)
        fprintf(stderr, "half %d.%d (a %04x b %04x c %04x f %a v %d): %04x, C %04x\n", i, k, x, y, z, (double)g, v[i],
                out[NO * i + k], want[k]);
    unsigned fl = 0;
    static const int ops[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    for (int k = 0; k < 8; k++) fl |= (unsigned)ref_cmp(x, y, 0, ops[k]) << k;
    fl |= (unsigned)ref_nan(ref_val(x, 0)) << 8;
    fl |= (unsigned)(ref_cmp(x, z, 0, 2) && ref_cmp(y, x, 0, 2)) << 9;
    fl |= (unsigned)(ref_cmp(x, z, 0, 9) && ref_cmp(y, x, 0, 9)) << 10;
    fl |= (unsigned)ref_cmp(x, z, 0, 0) << 11 | (unsigned)ref_cmp(y, x, 0, 0) << 12;
    fl |= (unsigned)ref_cmp(x, y, 1, 0) << 13 | (unsigned)ref_cmp(x, y, 1, 4) << 14 | (unsigned)ref_cmp(x, y, 1, 8) << 15;
    fl |= (unsigned)ref_nan(ref_val(x, 1)) << 16;
    fl |= (unsigned)(ref_cmp(x, z, 1, 1) && ref_cmp(y, x, 1, 1)) << 17;
    if (flags[i] != fl && wrong++ < 8) fprintf(stderr, "half %d flags (a %04x b %04x c %04x): %05x, C %05x\n", i, x, y, z, flags[i], fl);
    int wi[4] = {ref_toint(x, 0, 0, INT32_MIN, INT32_MAX), ref_toint(x, 0, 1, INT32_MIN, INT32_MAX),
                 ref_toint(x, 0, 2, -32768, 32767), ref_toint(x, 1, 1, INT32_MIN, INT32_MAX)};
    for (int k = 0; k < 4; k++)
      if (iout[4 * i + k] != wi[k] && wrong++ < 8) fprintf(stderr, "half %d int %d (a %04x): %d, C %d\n", i, k, x, iout[4 * i + k], wi[k]);
    for (int bf = 0; bf < 2; bf++) {
      q128 want_f = ref_val(x, bf);
      uint32_t got, w;
      memcpy(&got, &fout[2 * i + bf], 4);
      float wf = (float)want_f;
      memcpy(&w, &wf, 4);
      if (ref_nan(want_f)) w = bf ? (uint32_t)x << 16 : 0x7fffffffu;
      if (got != w && wrong++ < 8) fprintf(stderr, "half %d to f32 %d (a %04x): %08x, C %08x\n", i, bf, x, got, w);
    }
  }
  CHECK(wrong == 0, "f16/bf16 kernel: %d results differ in their bits", wrong);
  sim_ptx_free(m);
}

static uint32_t ref_dot(uint32_t a, uint32_t b, uint32_t c, int four, int hi, int sgn) {
  int64_t d = (int32_t)c;
  for (int k = 0; k < (four ? 4 : 2); k++) {
    int64_t x = four ? (sgn ? (int8_t)(a >> 8 * k) : (uint8_t)(a >> 8 * k)) : (sgn ? (int16_t)(a >> 16 * k) : (uint16_t)(a >> 16 * k));
    int j = four ? k : k + (hi ? 2 : 0);
    int64_t y = sgn ? (int8_t)(b >> 8 * j) : (uint8_t)(b >> 8 * j);
    d += x * y;
  }
  return (uint32_t)d;
}

static void test_warpops(void) {
  sim_ptx_module *m = load_fixture("warpops");
  enum { W = 64 };
  static int a[W], b[W], out[20 * W];
  static long long wv[W];
  for (int i = 0; i < W; i++) {
    a[i] = (int)rnd(), b[i] = i % 3 ? (int)rnd() : -(int)(rnd() % 300);
    wv[i] = (long long)((uint64_t)(rnd() % 3) << 40 | (i % 5 == 0 ? 7u : 9u));
  }
  for (int i = 32; i < 48; i++) a[i] = a[i] & ~3, wv[i] = wv[32]; /* some lanes all match */
  registry r = {0};
  add_buffer(&r, "a", a, sizeof a);
  add_buffer(&r, "b", b, sizeof b);
  add_buffer(&r, "w", wv, sizeof wv);
  add_buffer(&r, "out", out, sizeof out);
  void *pa = a, *pb = b, *pw = wv, *po = out;
  void *params[] = {&pa, &pb, &pw, &po};
  char err[512];
  CHECK(launch(m, "warpops", 1, 1, W, 1, 0, params, &r, err, sizeof err, NULL) == 0, "%s", err);
  int wrong = 0;
  for (int i = 0; i < W; i++) {
    uint32_t x = (uint32_t)a[i], y = (uint32_t)b[i], want[20];
    want[0] = ref_dot(x, y, (uint32_t)i, 1, 0, 1), want[1] = ref_dot(x, y, (uint32_t)i, 1, 0, 0);
    want[2] = ref_dot(x, y, (uint32_t)i, 0, 0, 1), want[3] = ref_dot(x, y, (uint32_t)-i, 0, 1, 1);
    want[4] = ref_dot(x, y, (uint32_t)i, 0, 0, 0), want[5] = ref_dot(x, y, (uint32_t)i, 0, 1, 0);
    int w0 = i / 32 * 32, h0 = i / 16 * 16;
    uint32_t add = 0, hadd = 0, and_ = ~0u, or_ = 0, xor_ = 0, umin = ~0u, umax = 0, hor = 0;
    int smin = INT32_MAX, hmax = INT32_MIN, same = 0;
    uint32_t any = 0, anyw = 0, all = ~0u;
    for (int k = w0; k < w0 + 32; k++) {
      uint32_t u = (uint32_t)a[k];
      add += u, and_ &= u, or_ |= u, xor_ ^= u, umin = u < umin ? u : umin, umax = u > umax ? u : umax;
      smin = a[k] < smin ? a[k] : smin;
      if ((a[k] & 3) == (a[i] & 3)) any |= 1u << (k - w0);
      if (wv[k] == wv[i]) anyw |= 1u << (k - w0);
      if ((a[k] & 3) != (a[w0] & 3)) all = 0;
    }
    for (int k = h0; k < h0 + 16; k++) {
      hadd += (uint32_t)a[k], hor |= (uint32_t)a[k], hmax = a[k] > hmax ? a[k] : hmax;
      if ((wv[k] >> 40) != (wv[h0] >> 40)) same = -1;
    }
    int smax = INT32_MIN;
    for (int k = h0; k < h0 + 16; k++) smax = a[k] > smax ? a[k] : smax;
    want[6] = add, want[7] = hadd, want[8] = (uint32_t)smin, want[9] = (uint32_t)smax, want[10] = umin, want[11] = umax;
    want[12] = and_, want[13] = hor, want[14] = xor_, want[15] = any, want[16] = all ? 0xffffffffu : 0;
    want[17] = all ? 1 : 0, want[18] = anyw;
    uint32_t hmask = (i & 31) < 16 ? 0x0000ffffu : 0xffff0000u;
    want[19] = same ? 0 : hmask + 1;
    (void)hmax;
    for (int k = 0; k < 20; k++)
      if ((uint32_t)out[20 * i + k] != want[k] && wrong++ < 8)
        fprintf(stderr, "warpops %d.%d: %08x, C %08x\n", i, k, (uint32_t)out[20 * i + k], want[k]);
  }
  CHECK(wrong == 0, "dp4a/dp2a/redux/match kernel: %d results differ", wrong);
  sim_ptx_free(m);
}

void test_ptx_half(int *nchecks, int *nfailures);
void test_ptx_half(int *nchecks, int *nfailures) {
  test_half();
  test_warpops();
  *nchecks += checks;
  *nfailures += failures;
}
