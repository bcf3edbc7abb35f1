// kernels/builtins.cu -- the built-in kernel library (gpu.kernels.*), for every dtype.
//
// Compiled at run time with NVRTC, once per device and dtype (the option -DGL_DTYPE_f32
// instantiates f32's ten kernels alone, at f32's first launch; -DGL_ALL_DTYPES all of
// them) and cached on disk; no header is included (f16 and bf16 are converted with PTX's
// own instructions). One template per kernel, instantiated per dtype at the end
// (GL_BUILTINS). The C host implementations the sim backend runs are
// src/driver/sim/sim_builtins.c (elementwise) and src/driver/sim/sim_builtins_reduce.c
// (reductions, in this file's order of operations); src/core/builtins.c's table declares
// each kernel.
//
// Arithmetic: f16 and bf16 load and store their type and compute in f32 (rounded to
// nearest even at the store); integers compute in unsigned arithmetic of at least
// their width, so they wrap modulo 2^bits; axpy is one fused multiply-add (fmaf, fma),
// in f32 for the 16-bit floats.
//
// Memory: every kernel is a grid-stride loop, so any grid covers all n elements (the
// launch checks keep n within the slices). Where the arrays an elementwise kernel or a
// reduction touches start at the same address modulo 16, the body moves 16-byte
// vectors, four per thread per round, with a scalar head (the elements before the
// first 16-byte boundary) and tail; otherwise it is a scalar loop. Views at any
// offset work; co-aligned ones are the fast path.
//
// Reductions (sum, dot, min, max) are deterministic for a given grid and block: each
// thread accumulates its elements in order (its head elements, its vectors in order,
// each vector's elements in order, its tail elements), each block reduces its threads with a shuffle tree (offsets 16,
// 8, 4, 2, 1 within each warp, then the warps' results the same way in warp 0), and
// writes its partial into slot blockIdx.x of the stream's scratch; the last block to
// finish (a ticket counter behind a fence) combines the partials in block order
// (thread t takes partials t, t + blockDim.x, ..., then the same tree) and writes
// out[0], then resets the ticket for the stream's next reduction. The launch caps a
// reduction's grid at the scratch's slots (src/core/scratch.c).

typedef unsigned long long u64;
typedef unsigned int u32;

struct gl_f16 { unsigned short b; };  // storage of f16 and bf16: their 16 bits
struct gl_bf16 { unsigned short b; };

#define D static __device__ __forceinline__
#define M __device__ __forceinline__ // a member that reads its object

D float f16_in(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
D unsigned short f16_out(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
D float bf16_in(unsigned short h) { return __uint_as_float((u32)h << 16); }
D unsigned short bf16_out(float f) {
#if __CUDA_ARCH__ >= 800
  unsigned short h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#else
  u32 x = __float_as_uint(f);  // round to nearest even; a NaN becomes the canonical 0x7fff
  return (x & 0x7fffffffu) > 0x7f800000u ? (unsigned short)0x7fff : (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
#endif
}

// ---- arithmetic per dtype: Ar<S>::add, mul, axpy -----------------------------------

template <class S> struct Ar;
template <class S, class U> struct ArInt {  // wraps: unsigned arithmetic, truncated at the store
  D S add(S a, S b) { return (S)((U)a + (U)b); }
  D S mul(S a, S b) { return (S)((U)a * (U)b); }
  D S axpy(S a, S x, S y) { return (S)((U)a * (U)x + (U)y); }
};
template <> struct Ar<signed char> : ArInt<signed char, u32> {};
template <> struct Ar<unsigned char> : ArInt<unsigned char, u32> {};
template <> struct Ar<short> : ArInt<short, u32> {};
template <> struct Ar<unsigned short> : ArInt<unsigned short, u32> {};
template <> struct Ar<int> : ArInt<int, u32> {};
template <> struct Ar<u32> : ArInt<u32, u32> {};
template <> struct Ar<long long> : ArInt<long long, u64> {};
template <> struct Ar<u64> : ArInt<u64, u64> {};
template <> struct Ar<float> {
  D float add(float a, float b) { return a + b; }
  D float mul(float a, float b) { return a * b; }
  D float axpy(float a, float x, float y) { return fmaf(a, x, y); }
};
template <> struct Ar<double> {
  D double add(double a, double b) { return a + b; }
  D double mul(double a, double b) { return a * b; }
  D double axpy(double a, double x, double y) { return fma(a, x, y); }
};
#define GL_HALF_AR(S, IN, OUT)                                                                      \
  template <> struct Ar<S> {                                                                        \
    D S mk(float f) { S s; s.b = OUT(f); return s; }                                                \
    D S add(S a, S b) { return mk(IN(a.b) + IN(b.b)); }                                             \
    D S mul(S a, S b) { return mk(IN(a.b) * IN(b.b)); }                                             \
    D S axpy(S a, S x, S y) { return mk(fmaf(IN(a.b), IN(x.b), IN(y.b))); }                         \
  };
GL_HALF_AR(gl_f16, f16_in, f16_out)
GL_HALF_AR(gl_bf16, bf16_in, bf16_out)

// ---- elementwise: c[i] = op(a[i], b[i]) for i < n, reading NIN of a and b ---------------

template <class S> union Vec { uint4 u; S e[16 / sizeof(S)]; };

template <class S> struct OpAxpy { S a; M S f(S x, S y) const { return Ar<S>::axpy(a, x, y); } };
template <class S> struct OpScale { S a; M S f(S x, S) const { return Ar<S>::mul(a, x); } };
template <class S> struct OpFill { S v; M S f(S, S) const { return v; } };
template <class S> struct OpAdd { M S f(S x, S y) const { return Ar<S>::add(x, y); } };
template <class S> struct OpMul { M S f(S x, S y) const { return Ar<S>::mul(x, y); } };
template <class S> struct OpCopy { M S f(S x, S) const { return x; } };

D u32 misalign(const void *p) { return (u32)(size_t)p & 15u; }

#define EW_UNROLL 4  // vectors per thread and tile; src/core/launch.c's grid "auto" knows it

template <int NIN, class S, class Op>
D void ew(const S *a, const S *b, S *c, u64 n, Op op) {
  const u32 V = 16 / sizeof(S);
  u64 t = blockIdx.x * (u64)blockDim.x + threadIdx.x, nt = (u64)gridDim.x * blockDim.x;
  u32 m = misalign(c);
  u64 head = n, nv = 0;  // not co-aligned: all of it in the scalar loop
  if ((NIN < 1 || misalign(a) == m) && (NIN < 2 || misalign(b) == m)) {
    head = ((16u - m) & 15u) / sizeof(S);
    if (head > n) head = n;
    nv = (n - head) / V;
  }
  S z = S();
  for (u64 i = t; i < head; i += nt) c[i] = op.f(NIN > 0 ? a[i] : z, NIN > 1 ? b[i] : z);
  const uint4 *av = (const uint4 *)(a + head), *bv = (const uint4 *)(b + head);
  uint4 *cv = (uint4 *)(c + head);
  // the vectors in tiles of EW_UNROLL per thread: block g takes tiles g, g + gridDim.x,
  // ..., each a run of EW_UNROLL * blockDim.x vectors that its threads read together
  // (vector u of thread i is the tile's u * blockDim.x + i), then write
  const u64 tile = (u64)EW_UNROLL * blockDim.x;
  for (u64 base = blockIdx.x * tile; base < nv; base += (u64)gridDim.x * tile) {
    u64 j = base + threadIdx.x;
    if (base + tile <= nv) {
      Vec<S> x[EW_UNROLL], y[EW_UNROLL];
#pragma unroll
      for (int u = 0; u < EW_UNROLL; u++) {
        if (NIN > 0) x[u].u = av[j + u * blockDim.x];
        if (NIN > 1) y[u].u = bv[j + u * blockDim.x];
      }
#pragma unroll
      for (int u = 0; u < EW_UNROLL; u++) {
        Vec<S> r;
#pragma unroll
        for (u32 k = 0; k < V; k++) r.e[k] = op.f(NIN > 0 ? x[u].e[k] : z, NIN > 1 ? y[u].e[k] : z);
        cv[j + u * blockDim.x] = r.u;
      }
    } else {  // the last, partial tile
      for (; j < nv; j += blockDim.x) {
        Vec<S> x, y, r;
        if (NIN > 0) x.u = av[j];
        if (NIN > 1) y.u = bv[j];
#pragma unroll
        for (u32 k = 0; k < V; k++) r.e[k] = op.f(NIN > 0 ? x.e[k] : z, NIN > 1 ? y.e[k] : z);
        cv[j] = r.u;
      }
    }
  }
  for (u64 i = head + nv * V + t; i < n; i += nt) c[i] = op.f(NIN > 0 ? a[i] : z, NIN > 1 ? b[i] : z);
}

template <class S>
D void copy(const S *x, u64 incx, S *y, u64 incy, u64 n) {
  if (incx == 1 && incy == 1) {
    ew<1>(x, x, y, n, OpCopy<S>());
    return;
  }
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
    y[i * incy] = x[i * incx];
}

// ---- reductions: R::A the accumulator, id(), step(acc, x, y), join(a, b), out(acc) -------

D float fin(gl_f16 h) { return f16_in(h.b); }
D float fin(gl_bf16 h) { return bf16_in(h.b); }
D void fout(gl_f16 *p, float f) { p->b = f16_out(f); }
D void fout(gl_bf16 *p, float f) { p->b = bf16_out(f); }

// sum and dot: floats in their own type (f16 and bf16 in f32, rounded once at the end);
// integers in unsigned arithmetic (exact modulo 2^bits, so in any order)
template <class S, class A> struct SumInt {
  typedef A Acc;
  D A id() { return 0; }
  D A step(A acc, S x, S) { return acc + (A)x; }
  D A join(A a, A b) { return a + b; }
  D void out(S *p, A a) { *p = (S)a; }
};
template <class S, class A> struct DotInt : SumInt<S, A> {
  D A step(A acc, S x, S y) { return acc + (A)x * (A)y; }
};
template <class S> struct SumF {
  typedef S Acc;
  D S id() { return 0; }
  D S step(S acc, S x, S) { return acc + x; }
  D S join(S a, S b) { return a + b; }
  D void out(S *p, S a) { *p = a; }
};
template <class S> struct DotF : SumF<S> {
  D S step(S acc, S x, S y) { return fma(x, y, acc); }
};
template <> struct DotF<float> : SumF<float> {
  D float step(float acc, float x, float y) { return fmaf(x, y, acc); }
};
template <class S> struct SumH {
  typedef float Acc;
  D float id() { return 0.0f; }
  D float step(float acc, S x, S) { return acc + fin(x); }
  D float join(float a, float b) { return a + b; }
  D void out(S *p, float a) { fout(p, a); }
};
template <class S> struct DotH : SumH<S> {
  D float step(float acc, S x, S y) { return fmaf(fin(x), fin(y), acc); }
};

// min and max: the element itself is kept (no rounding); for floats a NaN wins over
// everything (the first NaN met in the order above), and of equal values (-0 and +0)
// the one met first stays. The identity (the result of n = 0) is +inf or -inf, or the
// integer type's largest or smallest value.
template <class S, class A, bool MAX, A ID> struct MinInt {
  typedef A Acc;
  D A id() { return ID; }
  D A step(A acc, S x, S) { return join(acc, (A)x); }
  D A join(A a, A b) { return (MAX ? b > a : b < a) ? b : a; }
  D void out(S *p, A a) { *p = (S)a; }
};
D float inf(float) { return __int_as_float(0x7f800000); }
D double inf(double) { return __longlong_as_double(0x7ff0000000000000LL); }
template <class S, bool MAX> struct MinF {
  typedef S Acc;
  D S id() { return MAX ? -inf(S()) : inf(S()); }
  D S step(S acc, S x, S) { return join(acc, x); }
  D S join(S a, S b) { return a != a ? a : (b != b || (MAX ? b > a : b < a)) ? b : a; }
  D void out(S *p, S a) { *p = a; }
};
template <class S, u32 INF, bool MAX> struct MinH {  // on the 16 bits, compared as f32
  typedef u32 Acc;
  D bool nan(u32 h) { return (h & 0x7fffu) > INF; }
  D u32 id() { return MAX ? INF | 0x8000u : INF; }
  D u32 step(u32 acc, S x, S) { return join(acc, x.b); }
  D u32 join(u32 a, u32 b) {
    S sa, sb;
    sa.b = (unsigned short)a;
    sb.b = (unsigned short)b;
    float fa = fin(sa), fb = fin(sb);
    return nan(a) ? a : (nan(b) || (MAX ? fb > fa : fb < fa)) ? b : a;
  }
  D void out(S *p, u32 a) { p->b = (unsigned short)a; }
};

// each dtype's four reductions
template <class S> struct Red;
#define GL_RED_INT(S, A, MA, LO, HI)                                                                \
  template <> struct Red<S> {                                                                       \
    typedef SumInt<S, A> Sum;                                                                       \
    typedef DotInt<S, A> Dot;                                                                       \
    typedef MinInt<S, MA, false, HI> Min;                                                           \
    typedef MinInt<S, MA, true, LO> Max;                                                            \
  };
GL_RED_INT(signed char, u32, int, -128, 127)
GL_RED_INT(unsigned char, u32, u32, 0u, 255u)
GL_RED_INT(short, u32, int, -32768, 32767)
GL_RED_INT(unsigned short, u32, u32, 0u, 65535u)
GL_RED_INT(int, u32, int, -2147483647 - 1, 2147483647)
GL_RED_INT(u32, u32, u32, 0u, 4294967295u)
GL_RED_INT(long long, u64, long long, -9223372036854775807LL - 1, 9223372036854775807LL)
GL_RED_INT(u64, u64, u64, 0ull, 18446744073709551615ull)
#define GL_RED_FLOAT(S)                                                                             \
  template <> struct Red<S> {                                                                       \
    typedef SumF<S> Sum;                                                                            \
    typedef DotF<S> Dot;                                                                            \
    typedef MinF<S, false> Min;                                                                     \
    typedef MinF<S, true> Max;                                                                      \
  };
GL_RED_FLOAT(float)
GL_RED_FLOAT(double)
#define GL_RED_HALF(S, INF)                                                                         \
  template <> struct Red<S> {                                                                       \
    typedef SumH<S> Sum;                                                                            \
    typedef DotH<S> Dot;                                                                            \
    typedef MinH<S, INF, false> Min;                                                                \
    typedef MinH<S, INF, true> Max;                                                                 \
  };
GL_RED_HALF(gl_f16, 0x7c00u)
GL_RED_HALF(gl_bf16, 0x7f80u)

template <class R, class A>
D A block_join(A v, A *w) {  // the block's result, in thread 0
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v = R::join(v, __shfl_down_sync(0xffffffffu, v, off));
  u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  __syncthreads();  // w may still be read from the last call
  if (lane == 0) w[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < nw ? w[lane] : R::id();
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v = R::join(v, __shfl_down_sync(0xffffffffu, v, off));
  }
  return v;
}

// A thread's own accumulator while it walks its elements: R's Acc itself, but for the
// 16-bit min and max, which keep the f32 value of the bits they hold beside them (one
// conversion an element instead of two; the same choice as R::join, made on floats)
template <class R> struct Local {
  typedef typename R::Acc L;
  D L in(L a) { return a; }
  template <class S> D L step(L l, S x, S y) { return R::step(l, x, y); }
  D L out(L l) { return l; }
};
template <class S, u32 INF, bool MAX> struct Local<MinH<S, INF, MAX> > {
  struct L { u32 b; float f; };
  D L in(u32 a) {
    S s;
    s.b = (unsigned short)a;
    L l = {a, fin(s)};
    return l;
  }
  D L step(L l, S x, S) {
    float fb = fin(x);  // NaN exactly when the bits are
    if (l.f == l.f && (fb != fb || (MAX ? fb > l.f : fb < l.f))) {
      l.b = x.b;
      l.f = fb;
    }
    return l;
  }
  D u32 out(L l) { return l.b; }
};

template <class R, bool TWO, class S>
D void reduce(const S *x, const S *y, S *out, u64 n, u32 *ticket, typename R::Acc *part) {
  typedef typename R::Acc A;
  __shared__ A w[32];
  __shared__ bool last;
  const u32 V = 16 / sizeof(S);
  u64 t = blockIdx.x * (u64)blockDim.x + threadIdx.x, nt = (u64)gridDim.x * blockDim.x;
  typedef Local<R> Lo;
  typename Lo::L la = Lo::in(R::id());
  u32 m = misalign(x);
  u64 head = n, nv = 0;
  if (!TWO || misalign(y) == m) {
    head = ((16u - m) & 15u) / sizeof(S);
    if (head > n) head = n;
    nv = (n - head) / V;
  }
  for (u64 i = t; i < head; i += nt) la = Lo::step(la, x[i], TWO ? y[i] : x[i]);
  const uint4 *xv = (const uint4 *)(x + head), *yv = (const uint4 *)(y + head);
  u64 j = t;
  for (; j + 3 * nt < nv; j += 4 * nt) {
    Vec<S> a[4], b[4];
#pragma unroll
    for (int u = 0; u < 4; u++) {
      a[u].u = xv[j + u * nt];
      if (TWO) b[u].u = yv[j + u * nt];
    }
#pragma unroll
    for (int u = 0; u < 4; u++)
#pragma unroll
      for (u32 k = 0; k < V; k++) la = Lo::step(la, a[u].e[k], TWO ? b[u].e[k] : a[u].e[k]);
  }
  for (; j < nv; j += nt) {
    Vec<S> a, b;
    a.u = xv[j];
    if (TWO) b.u = yv[j];
#pragma unroll
    for (u32 k = 0; k < V; k++) la = Lo::step(la, a.e[k], TWO ? b.e[k] : a.e[k]);
  }
  for (u64 i = head + nv * V + t; i < n; i += nt) la = Lo::step(la, x[i], TWO ? y[i] : x[i]);

  A acc = block_join<R>(Lo::out(la), w);
  if (threadIdx.x == 0) {
    part[blockIdx.x] = acc;
    __threadfence();  // the partial is visible before the ticket counts it
    last = atomicAdd(ticket, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  acc = R::id();
  for (u32 i = threadIdx.x; i < gridDim.x; i += blockDim.x) acc = R::join(acc, ((volatile A *)part)[i]);
  acc = block_join<R>(acc, w);
  if (threadIdx.x == 0) {
    R::out(out, acc);
    *ticket = 0;  // ready for the stream's next reduction
  }
}

// ---- the kernels, per dtype ------------------------------------------------------------

#define GL_REDUCTION(K, R, TWO, S, N)                                                               \
  extern "C" __global__ void K##_##N(const S *x, TWO##_PARAM(S) S *out, u64 n, u32 *ticket, void *part) { \
    reduce<Red<S>::R, TWO##_IS>(x, TWO##_Y, out, n, ticket, (Red<S>::R::Acc *)part);               \
  }
#define ONE_PARAM(S)
#define ONE_IS false
#define ONE_Y x
#define TWO_PARAM(S) const S *y,
#define TWO_IS true
#define TWO_Y y

#define GL_BUILTINS(S, N)                                                                           \
  extern "C" __global__ void axpy_##N(S a, const S *x, S *y, u64 n) { ew<2>(x, (const S *)y, y, n, OpAxpy<S>{a}); } \
  extern "C" __global__ void scale_##N(S a, const S *x, S *y, u64 n) { ew<1>(x, x, y, n, OpScale<S>{a}); } \
  extern "C" __global__ void fill_##N(S *y, S v, u64 n) { ew<0>((const S *)y, (const S *)y, y, n, OpFill<S>{v}); } \
  extern "C" __global__ void add_##N(const S *a, const S *b, S *c, u64 n) { ew<2>(a, b, c, n, OpAdd<S>()); } \
  extern "C" __global__ void mul_##N(const S *a, const S *b, S *c, u64 n) { ew<2>(a, b, c, n, OpMul<S>()); } \
  extern "C" __global__ void copy_##N(const S *x, u64 incx, S *y, u64 incy, u64 n) { copy(x, incx, y, incy, n); } \
  GL_REDUCTION(sum, Sum, ONE, S, N)                                                                 \
  GL_REDUCTION(dot, Dot, TWO, S, N)                                                                 \
  GL_REDUCTION(min, Min, ONE, S, N)                                                                 \
  GL_REDUCTION(max, Max, ONE, S, N)

#if defined(GL_ALL_DTYPES) || defined(GL_DTYPE_i8)
GL_BUILTINS(signed char, i8)
#endif
#if defined(GL_ALL_DTYPES) || defined(GL_DTYPE_u8)
GL_BUILTINS(unsigned char, u8)
#endif
#if defined(GL_ALL_DTYPES) || defined(GL_DTYPE_i16)
GL_BUILTINS(short, i16)
#endif
#if defined(GL_ALL_DTYPES) || defined(GL_DTYPE_u16)
GL_BUILTINS(unsigned short, u16)
#endif
#if defined(GL_ALL_DTYPES) || defined(GL_DTYPE_i32)
GL_BUILTINS(int, i32)
#endif
#if defined(GL_ALL_DTYPES) || defined(GL_DTYPE_u32)
GL_BUILTINS(u32, u32)
#endif
#if defined(GL_ALL_DTYPES) || defined(GL_DTYPE_i64)
GL_BUILTINS(long long, i64)
#endif
#if defined(GL_ALL_DTYPES) || defined(GL_DTYPE_u64)
GL_BUILTINS(u64, u64)
#endif
#if defined(GL_ALL_DTYPES) || defined(GL_DTYPE_f16)
GL_BUILTINS(gl_f16, f16)
#endif
#if defined(GL_ALL_DTYPES) || defined(GL_DTYPE_bf16)
GL_BUILTINS(gl_bf16, bf16)
#endif
#if defined(GL_ALL_DTYPES) || defined(GL_DTYPE_f32)
GL_BUILTINS(float, f32)
#endif
#if defined(GL_ALL_DTYPES) || defined(GL_DTYPE_f64)
GL_BUILTINS(double, f64)
#endif
