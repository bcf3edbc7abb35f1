/*
 * ptx_ops_mem.c -- loads, stores, atomics and address conversions. Every
 * access is checked before it happens: its alignment; global and generic
 * ones against the module's own variables, else by the launch's check;
 * shared ones against the block's shared memory, local ones against the
 * thread's local memory; parameters against the parameter buffer. A
 * refused access is a fault naming the access and where it happened.
 * Shared and global accesses then go to racecheck (ptx_race.c), a store
 * with the bytes it is about to write.
 */

#include "ptx_exec.h"
#include "ptx_race.h"

#include <math.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

static const char *verb(int write) { return write ? "wrote" : "read"; }

void *sim_ptx_access(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, int lane, int space, uint64_t addr,
                     size_t bytes, int write) {
  unsigned long long a = (unsigned long long)addr;
  if (addr & (bytes - 1))
    return sim_ptx_fault(c, w, in, lane, "%s %zu bytes at misaligned address 0x%llx", verb(write), bytes, a), NULL;
  if (space == SIM_S_GENERIC) {
    if (addr >= SIM_PTX_SHARED_WINDOW && addr < SIM_PTX_SHARED_WINDOW + 0x100000000ull) {
      space = SIM_S_SHARED;
      addr -= SIM_PTX_SHARED_WINDOW;
    } else if (addr >= SIM_PTX_LOCAL_WINDOW && addr < SIM_PTX_LOCAL_WINDOW + 0x100000000ull) {
      space = SIM_S_LOCAL;
      addr -= SIM_PTX_LOCAL_WINDOW;
    } else {
      space = SIM_S_GLOBAL;
    }
    a = (unsigned long long)addr;
  }
  switch (space) {
  case SIM_S_SHARED:
    if (addr > c->shared_size || bytes > c->shared_size - addr)
      return sim_ptx_fault(c, w, in, lane, "%s %zu bytes at shared offset %llu, past the block's %zu bytes of shared memory",
                           verb(write), bytes, a, c->shared_size), NULL;
    return c->shared + addr;
  case SIM_S_LOCAL:
    if (!c->local || addr > SIM_PTX_LOCAL_BYTES || bytes > SIM_PTX_LOCAL_BYTES - addr)
      return sim_ptx_fault(c, w, in, lane, "%s %zu bytes at local offset %llu, past the %u bytes of local memory of a thread",
                           verb(write), bytes, a, c->local ? SIM_PTX_LOCAL_BYTES : 0), NULL;
    return c->local + (size_t)(w->first + (unsigned)lane) * SIM_PTX_LOCAL_BYTES + addr;
  default: {
    uint64_t lo = (uint64_t)(uintptr_t)c->m->data;
    if (addr >= lo && addr - lo <= c->m->data_bytes && bytes <= c->m->data_bytes - (addr - lo)) {
      if (write && space == SIM_S_CONST) break;
      return (void *)(uintptr_t)addr;
    }
    if (space == SIM_S_CONST) break;
    char why[400];
    why[0] = 0;
    if (c->l->check && c->l->check(c->l->user, addr, bytes, write, why, sizeof why)) {
      if (why[0]) return sim_ptx_fault(c, w, in, lane, "%s %zu bytes %s", verb(write), bytes, why), NULL;
      return sim_ptx_fault(c, w, in, lane, "%s %zu bytes at 0x%llx, outside device memory", verb(write), bytes, a), NULL;
    }
    return (void *)(uintptr_t)addr;
  }
  }
  return sim_ptx_fault(c, w, in, lane, "%s %zu bytes at 0x%llx, outside the module's constants", verb(write), bytes, a), NULL;
}

/* Where operand o addresses for `lane`: a host pointer, checked. */
static void *address(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, const sim_ptx_operand *o, int lane,
                     size_t bytes, int write) {
  int space = in->space;
  uint64_t addr;
  switch (o->flags) {
  case SIM_A_REG: addr = w->R[(size_t)o->reg * SIM_PTX_WARP + lane] + (uint64_t)o->imm; break;
  case SIM_A_ABS: addr = (uint64_t)o->imm; break;
  case SIM_A_VAR: {
    const sim_ptx_var *v = &c->m->vars[o->sym];
    if (v->space == SIM_S_SHARED) {
      space = SIM_S_SHARED;
      addr = v->offset + (uint64_t)o->imm;
    } else {
      space = v->space;
      addr = (uint64_t)(uintptr_t)(c->m->data + v->offset) + (uint64_t)o->imm;
    }
    break;
  }
  case SIM_A_KPARAM:
    if (o->imm < 0 || (size_t)o->imm + bytes > c->kernel->param_bytes)
      return sim_ptx_fault(c, w, in, lane, "read %zu bytes at offset %lld of the kernel's %zu bytes of parameters", bytes,
                           (long long)o->imm, c->kernel->param_bytes), NULL;
    return c->params + o->imm;
  case SIM_A_FRAME:
    space = SIM_S_LOCAL;
    addr = w->local + (uint64_t)o->imm;
    break;
  default: { /* SIM_A_ARG: the caller's .param bound to this one */
    const sim_ptx_frame *fr = &w->frames[w->nframes - 1];
    uint32_t off = o->sym < fr->f->nrets ? fr->rets[o->sym] : fr->args[o->sym - fr->f->nrets];
    space = SIM_S_LOCAL;
    addr = fr->caller_local + off + (uint64_t)o->imm;
    break;
  }
  }
  if (space == SIM_S_PARAM) space = SIM_S_LOCAL; /* a call's .param lives in the caller's frame */
  return sim_ptx_access(c, w, in, lane, space, addr, bytes, write);
}

/* A value of `size` bytes at p, and stored at p. */
static inline uint64_t get(const unsigned char *p, int size) {
  uint8_t b;
  uint16_t h;
  uint32_t u;
  uint64_t d;
  switch (size) {
  case 1: memcpy(&b, p, 1); return b;
  case 2: memcpy(&h, p, 2); return h;
  case 4: memcpy(&u, p, 4); return u;
  default: memcpy(&d, p, 8); return d;
  }
}
static inline void put(unsigned char *p, uint64_t v, int size) {
  uint8_t b = (uint8_t)v;
  uint16_t h = (uint16_t)v;
  uint32_t u = (uint32_t)v;
  switch (size) {
  case 1: memcpy(p, &b, 1); break;
  case 2: memcpy(p, &h, 2); break;
  case 4: memcpy(p, &u, 4); break;
  default: memcpy(p, &v, 8); break;
  }
}

/* Every lane's host address for a register operand o, when all of m's can
 * be seen to be allowed at once: aligned, and together within shared memory
 * (shared, or generic in its window) or, for global and generic addresses
 * outside both windows, within one span that the module's variables hold
 * or the launch's check accepts whole (a check accepts a span only where it
 * would accept each access in it). 1 with *run set where the lanes'
 * addresses are consecutive (lane l's at *run + l * bytes; p not filled),
 * else with p filled; 0 when it cannot tell, and address() then checks the
 * lanes one by one (the first refused faults). */
static int fast_addresses(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, const sim_ptx_operand *o,
                          uint32_t m, size_t bytes, int write, unsigned char **p, unsigned char **run) {
  int space = in->space;
  *run = NULL;
  if (o->flags != SIM_A_REG || (space != SIM_S_GLOBAL && space != SIM_S_GENERIC && space != SIM_S_SHARED)) return 0;
  const uint64_t *r = &w->R[(size_t)o->reg * SIM_PTX_WARP];
  uint64_t imm = (uint64_t)o->imm, lo = UINT64_MAX, hi = 0, any = 0, a[SIM_PTX_WARP];
  static const uint64_t lane_index[SIM_PTX_WARP] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15,
                                                     16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31};
  int contiguous = 0;
  if (m == 0xffffffffu) { /* a whole warp: commonly lane l at a0 + l * bytes (a[] not needed then) */
    uint64_t off = 0, r0 = r[0], a0 = r0 + imm;
    unsigned sh = (unsigned)__builtin_ctzll(bytes); /* bytes is a power of 2 */
    for (int l = 0; l < SIM_PTX_WARP; l++) off |= (r[l] - r0) ^ (lane_index[l] << sh);
    if (!off && a0 <= UINT64_MAX - SIM_PTX_WARP * bytes) {
      contiguous = 1;
      lo = any = a0; /* every lane as aligned as the first */
      hi = a0 + (SIM_PTX_WARP - 1) * bytes;
    }
  }
  if (!contiguous) {
    for (int l = 0; l < SIM_PTX_WARP; l++) a[l] = r[l] + imm;
    SIM_LANES(m) {
      any |= a[l];
      lo = a[l] < lo ? a[l] : lo;
      hi = a[l] > hi ? a[l] : hi;
    }
  }
  if (any & (bytes - 1) || hi > UINT64_MAX - bytes) return 0;
  if (space == SIM_S_GENERIC) {
    if (lo >= SIM_PTX_SHARED_WINDOW && hi < SIM_PTX_SHARED_WINDOW + 0x100000000ull) {
      space = SIM_S_SHARED;
      lo -= SIM_PTX_SHARED_WINDOW;
      hi -= SIM_PTX_SHARED_WINDOW;
      if (!contiguous)
        for (int l = 0; l < SIM_PTX_WARP; l++) a[l] -= SIM_PTX_SHARED_WINDOW;
    } else if (!(hi >= SIM_PTX_SHARED_WINDOW && lo < SIM_PTX_LOCAL_WINDOW + 0x100000000ull)) {
      space = SIM_S_GLOBAL; /* below the shared window or above the local one */
    } else {
      return 0;
    }
  }
  if (space == SIM_S_SHARED) {
    if (bytes > c->shared_size || hi > c->shared_size - bytes) return 0;
    if (contiguous) *run = c->shared + lo;
    else SIM_LANES(m) p[l] = c->shared + a[l];
    return 1;
  }
  uint64_t d = (uint64_t)(uintptr_t)c->m->data;
  if (!(lo >= d && hi - d <= c->m->data_bytes && bytes <= c->m->data_bytes - (hi - d))) {
    char why[400];
    if (c->l->check && c->l->check(c->l->user, lo, (size_t)(hi - lo) + bytes, write, why, sizeof why)) return 0;
  }
  if (contiguous) *run = (unsigned char *)(uintptr_t)lo;
  else SIM_LANES(m) p[l] = (unsigned char *)(uintptr_t)a[l];
  return 1;
}

/* A whole warp's load or store of n elements of `size` bytes a lane, lane
 * l's at run + l * n * size (a contiguous run of the warp's lanes, checked):
 * rows[k] (NULL: '_') lane l is element k of lane l. */
static void run_load(const unsigned char *run, int size, int n, int sgn, uint64_t *const *rows) {
  if (n == 1 && size == 8) {
    if (rows[0]) memcpy(rows[0], run, 8 * SIM_PTX_WARP);
    return;
  }
  if (n == 2 && size == 8 && rows[0] && rows[1]) { /* ld.v2.u64: 16 bytes a lane */
    uint64_t *r0 = rows[0], *r1 = rows[1];
#ifdef __SSE2__ /* two lanes at a time: their first halves, then their second */
    for (int l = 0; l < SIM_PTX_WARP; l += 2) {
      __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(run + 16 * l));
      __m128i y = _mm_loadu_si128((const __m128i *)(const void *)(run + 16 * l + 16));
      _mm_storeu_si128((__m128i *)(void *)&r0[l], _mm_unpacklo_epi64(x, y));
      _mm_storeu_si128((__m128i *)(void *)&r1[l], _mm_unpackhi_epi64(x, y));
    }
#else
    for (int l = 0; l < SIM_PTX_WARP; l++) {
      memcpy(&r0[l], run + 16 * l, 8);
      memcpy(&r1[l], run + 16 * l + 8, 8);
    }
#endif
    return;
  }
  if (n == 4 && size == 4 && !sgn && rows[0] && rows[1] && rows[2] && rows[3]) { /* ld.v4.u32: 16 bytes a lane */
    uint64_t *r0 = rows[0], *r1 = rows[1], *r2 = rows[2], *r3 = rows[3];
#ifdef __SSE2__ /* two lanes at a time: each element's words interleaved, then widened */
    const __m128i z = _mm_setzero_si128();
    for (int l = 0; l < SIM_PTX_WARP; l += 2) {
      __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(run + 16 * l));
      __m128i y = _mm_loadu_si128((const __m128i *)(const void *)(run + 16 * l + 16));
      __m128i ab = _mm_unpacklo_epi32(x, y), cd = _mm_unpackhi_epi32(x, y);
      _mm_storeu_si128((__m128i *)(void *)&r0[l], _mm_unpacklo_epi32(ab, z));
      _mm_storeu_si128((__m128i *)(void *)&r1[l], _mm_unpackhi_epi32(ab, z));
      _mm_storeu_si128((__m128i *)(void *)&r2[l], _mm_unpacklo_epi32(cd, z));
      _mm_storeu_si128((__m128i *)(void *)&r3[l], _mm_unpackhi_epi32(cd, z));
    }
#else
    for (int l = 0; l < SIM_PTX_WARP; l++) {
      uint64_t lo, hi;
      memcpy(&lo, run + 16 * l, 8);
      memcpy(&hi, run + 16 * l + 8, 8);
      r0[l] = lo & 0xffffffffu;
      r1[l] = lo >> 32;
      r2[l] = hi & 0xffffffffu;
      r3[l] = hi >> 32;
    }
#endif
    return;
  }
  for (int k = 0; k < n; k++) {
    uint64_t *d = rows[k];
    if (!d) continue;
    const unsigned char *q = run + (size_t)k * (size_t)size;
    size_t step = (size_t)n * (size_t)size;
    switch (size * (sgn ? -1 : 1)) {
    case 1: for (int l = 0; l < SIM_PTX_WARP; l++) d[l] = q[l * step]; break;
    case -1: for (int l = 0; l < SIM_PTX_WARP; l++) d[l] = (uint64_t)(int64_t)(int8_t)q[l * step]; break;
    case 2: for (int l = 0; l < SIM_PTX_WARP; l++) { uint16_t h; memcpy(&h, q + l * step, 2); d[l] = h; } break;
    case -2: for (int l = 0; l < SIM_PTX_WARP; l++) { int16_t h; memcpy(&h, q + l * step, 2); d[l] = (uint64_t)(int64_t)h; } break;
    case 4: for (int l = 0; l < SIM_PTX_WARP; l++) { uint32_t u; memcpy(&u, q + l * step, 4); d[l] = u; } break;
    case -4: for (int l = 0; l < SIM_PTX_WARP; l++) { int32_t u; memcpy(&u, q + l * step, 4); d[l] = (uint64_t)(int64_t)u; } break;
    default: for (int l = 0; l < SIM_PTX_WARP; l++) memcpy(&d[l], q + l * step, 8); break;
    }
  }
}
static void run_store(unsigned char *run, int size, int n, const uint64_t *const *rows) {
  if (n == 1 && size == 8) {
    memcpy(run, rows[0], 8 * SIM_PTX_WARP);
    return;
  }
  if (n == 2 && size == 8) { /* st.v2.b64: 16 bytes a lane */
    const uint64_t *r0 = rows[0], *r1 = rows[1];
#ifdef __SSE2__
    for (int l = 0; l < SIM_PTX_WARP; l += 2) {
      __m128i x = _mm_loadu_si128((const __m128i *)(const void *)&r0[l]);
      __m128i y = _mm_loadu_si128((const __m128i *)(const void *)&r1[l]);
      _mm_storeu_si128((__m128i *)(void *)(run + 16 * l), _mm_unpacklo_epi64(x, y));
      _mm_storeu_si128((__m128i *)(void *)(run + 16 * l + 16), _mm_unpackhi_epi64(x, y));
    }
#else
    for (int l = 0; l < SIM_PTX_WARP; l++) {
      memcpy(run + 16 * l, &r0[l], 8);
      memcpy(run + 16 * l + 8, &r1[l], 8);
    }
#endif
    return;
  }
  if (n == 4 && size == 4) { /* st.v4.b32: 16 bytes a lane */
    const uint64_t *r0 = rows[0], *r1 = rows[1], *r2 = rows[2], *r3 = rows[3];
#ifdef __SSE2__ /* two lanes at a time: the low words of each pair of elements, then the pairs */
    for (int l = 0; l < SIM_PTX_WARP; l += 2) {
      __m128i a = _mm_loadu_si128((const __m128i *)(const void *)&r0[l]);
      __m128i b = _mm_loadu_si128((const __m128i *)(const void *)&r1[l]);
      __m128i c2 = _mm_loadu_si128((const __m128i *)(const void *)&r2[l]);
      __m128i d = _mm_loadu_si128((const __m128i *)(const void *)&r3[l]);
      __m128i ab = _mm_unpacklo_epi32(a, b), ab1 = _mm_unpackhi_epi32(a, b); /* lane l's words, lane l + 1's */
      __m128i cd = _mm_unpacklo_epi32(c2, d), cd1 = _mm_unpackhi_epi32(c2, d);
      _mm_storeu_si128((__m128i *)(void *)(run + 16 * l), _mm_unpacklo_epi64(ab, cd));
      _mm_storeu_si128((__m128i *)(void *)(run + 16 * l + 16), _mm_unpacklo_epi64(ab1, cd1));
    }
#else
    for (int l = 0; l < SIM_PTX_WARP; l++) {
      uint64_t lo = (r0[l] & 0xffffffffu) | r1[l] << 32, hi = (r2[l] & 0xffffffffu) | r3[l] << 32;
      memcpy(run + 16 * l, &lo, 8);
      memcpy(run + 16 * l + 8, &hi, 8);
    }
#endif
    return;
  }
  size_t step = (size_t)n * (size_t)size;
  for (int k = 0; k < n; k++) {
    const uint64_t *v = rows[k];
    unsigned char *q = run + (size_t)k * (size_t)size;
    switch (size) {
    case 1: for (int l = 0; l < SIM_PTX_WARP; l++) q[l * step] = (uint8_t)v[l]; break;
    case 2: for (int l = 0; l < SIM_PTX_WARP; l++) { uint16_t h = (uint16_t)v[l]; memcpy(q + l * step, &h, 2); } break;
    case 4: for (int l = 0; l < SIM_PTX_WARP; l++) { uint32_t u = (uint32_t)v[l]; memcpy(q + l * step, &u, 4); } break;
    default: for (int l = 0; l < SIM_PTX_WARP; l++) memcpy(q + l * step, &v[l], 8); break;
    }
  }
}

static int load_store(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m) {
  int st = in->op == SIM_OP_ST, size = sim_ptx_type_size(in->type), n = in->vec;
  int sgn = sim_ptx_type_is_signed(in->type);
  const sim_ptx_operand *ao = &in->o[st ? 0 : 1], *vo = &in->o[st ? 1 : 0];
  const uint32_t *regs = n > 1 ? &w->f->vec[vo->reg] : &vo->reg;
  size_t total = (size_t)size * (size_t)n;
  if (!st && ao->flags == SIM_A_KPARAM) { /* a kernel parameter: one value for every lane, never shared */
    unsigned char *p = address(c, w, in, ao, __builtin_ctz(m), total, 0);
    if (!p) return -1;
    for (int k = 0; k < n; k++) {
      if (regs[k] == UINT32_MAX) continue;
      uint64_t v = get(p + k * size, size), *d = &w->R[(size_t)regs[k] * SIM_PTX_WARP];
      if (sgn) v = (uint64_t)sim_ptx_sext(v, size);
      if (m == 0xffffffffu) for (int l = 0; l < SIM_PTX_WARP; l++) d[l] = v;
      else SIM_LANES(m) d[l] = v;
    }
    return 0;
  }
  uint64_t buf[SIM_PTX_WARP];
  const uint64_t *src = st && n == 1 ? sim_ptx_src(c, w, vo, buf) : NULL;
  unsigned char *ptr[SIM_PTX_WARP], *run;
  int fast = fast_addresses(c, w, in, ao, m, total, st, ptr, &run);
  sim_ptx_race_insn ri;
  if (c->race) sim_ptx_race_prepare(c, w, in, &ri);
  if (run && n <= 8) { /* a whole warp's contiguous run */
    uint64_t *rows[8];
    int all = 1;
    if (n == 1 && st) rows[0] = (uint64_t *)src;
    else
      for (int k = 0; k < n; k++) all &= (rows[k] = regs[k] == UINT32_MAX ? NULL : &w->R[(size_t)regs[k] * SIM_PTX_WARP]) != NULL;
    if (!c->race) {
      if (st) run_store(run, size, n, (const uint64_t *const *)rows);
      else run_load(run, size, n, sgn, rows);
      return 0;
    }
    int q = total % 4 == 0 && (st || all) ? sim_ptx_race_quiet(c, w, in, &ri, run, total, (size_t)size, st) : 0;
    if (q < 0) return -1;
    if (q) { /* nothing to race with: the run as without racecheck */
      if (st) run_store(run, size, n, (const uint64_t *const *)rows);
      else run_load(run, size, n, sgn, rows);
      return 0;
    }
    if (total % 4 == 0 && st) { /* racecheck a word at a time, then the stores */
      unsigned char data[SIM_PTX_WARP * 8 * 8];
      run_store(data, size, n, (const uint64_t *const *)rows);
      return sim_ptx_race_run(c, w, in, &ri, run, total, (size_t)size, data);
    }
    if (total % 4 == 0 && all) {
      if (sim_ptx_race_run(c, w, in, &ri, run, total, (size_t)size, NULL)) return -1;
      run_load(run, size, n, sgn, rows);
      return 0;
    }
  }
  if (run) /* a run the cases above did not take: lane by lane */
    for (int l = 0; l < SIM_PTX_WARP; l++) ptr[l] = run + (size_t)l * total;
  if (fast && n == 1 && (!st || src)) { /* a scalar access at checked addresses: racecheck's loop over the lanes */
    if (st) {
      if (c->race) return sim_ptx_race_lanes(c, w, in, &ri, m, ptr, size, src);
      SIM_LANES(m) put(ptr[l], src[l], size);
      return 0;
    }
    if (c->race && regs[0] != UINT32_MAX && sim_ptx_race_lanes(c, w, in, &ri, m, ptr, size, NULL)) return -1;
    if (regs[0] == UINT32_MAX) return 0;
    uint64_t *d = &w->R[(size_t)regs[0] * SIM_PTX_WARP];
    SIM_LANES(m) {
      uint64_t v = get(ptr[l], size);
      d[l] = sgn ? (uint64_t)sim_ptx_sext(v, size) : v;
    }
    return 0;
  }
  if (fast && n > 1 && !c->race) { /* a vector access at checked addresses, a lane's elements in order */
    uint64_t *rows[8];
    for (int k = 0; k < n && k < 8; k++) rows[k] = regs[k] == UINT32_MAX ? NULL : &w->R[(size_t)regs[k] * SIM_PTX_WARP];
    if (st && size == 4) {
      SIM_LANES(m) for (int k = 0; k < n; k++) {
        uint32_t u = (uint32_t)rows[k][l];
        memcpy(ptr[l] + 4 * k, &u, 4);
      }
    } else if (st) {
      SIM_LANES(m) for (int k = 0; k < n; k++) put(ptr[l] + k * size, rows[k][l], size);
    } else if (size == 4 && !sgn) {
      SIM_LANES(m) for (int k = 0; k < n; k++) {
        uint32_t u;
        memcpy(&u, ptr[l] + 4 * k, 4);
        if (rows[k]) rows[k][l] = u;
      }
    } else {
      SIM_LANES(m) for (int k = 0; k < n; k++) {
        uint64_t v = get(ptr[l] + k * size, size);
        if (rows[k]) rows[k][l] = sgn ? (uint64_t)sim_ptx_sext(v, size) : v;
      }
    }
    return 0;
  }
  SIM_LANES(m) {
    unsigned char *p = fast ? ptr[l] : address(c, w, in, ao, l, total, st);
    if (!p) return -1;
    if (st) {
      if (!c->race && src) {
        put(p, src[l], size);
        continue;
      }
      unsigned char data[4 * 8]; /* v4 of 64-bit values at most */
      for (int k = 0; k < n; k++) put(data + k * size, src ? src[l] : w->R[(size_t)regs[k] * SIM_PTX_WARP + l], size);
      if (c->race && sim_ptx_race_lane(c, w, in, &ri, l, p, total, 1, data)) return -1;
      memcpy(p, data, total);
      continue;
    }
    if (c->race) /* the elements a vector load reads into a register (not '_') */
      for (int k = 0; k < n; k++)
        if (regs[k] != UINT32_MAX && sim_ptx_race_lane(c, w, in, &ri, l, p + k * size, n > 1 ? (size_t)size : total, 0, NULL))
          return -1;
    for (int k = 0; k < n; k++) {
      if (regs[k] == UINT32_MAX) continue;
      uint64_t v = get(p + k * size, size);
      if (sgn) v = (uint64_t)sim_ptx_sext(v, size);
      w->R[(size_t)regs[k] * SIM_PTX_WARP + l] = v;
    }
  }
  return 0;
}

int sim_ptx_op_mem(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m) {
  if (in->op == SIM_OP_LD || in->op == SIM_OP_ST) return load_store(c, w, in, m);
  uint64_t buf[SIM_PTX_WARP];
  const uint64_t *a = sim_ptx_src(c, w, &in->o[1], buf);
  int size = sim_ptx_type_size(in->type);
  if (in->op == SIM_OP_ISSPACEP) {
    uint32_t *p = &w->P[in->o[0].reg], t = 0;
    SIM_LANES(m) {
      uint64_t x = a[l];
      int sh = x >= SIM_PTX_SHARED_WINDOW && x < SIM_PTX_SHARED_WINDOW + 0x100000000ull;
      int lo = x >= SIM_PTX_LOCAL_WINDOW && x < SIM_PTX_LOCAL_WINDOW + 0x100000000ull;
      int r = in->space == SIM_S_SHARED ? sh : in->space == SIM_S_LOCAL ? lo : !sh && !lo;
      t |= (uint32_t)r << l;
    }
    *p = (*p & ~m) | (t & m);
    return 0;
  }
  /* cvta: shared and local offsets to generic addresses and back; global
   * and const addresses are host addresses either way */
  uint64_t base = in->space == SIM_S_SHARED ? SIM_PTX_SHARED_WINDOW : in->space == SIM_S_LOCAL ? SIM_PTX_LOCAL_WINDOW : 0;
  uint64_t *d = &w->R[(size_t)in->o[0].reg * SIM_PTX_WARP];
  if (in->flags & SIM_F_TO) {
    SIM_LANES(m) d[l] = sim_ptx_trunc(a[l] - base, size ? size : 8);
  } else {
    SIM_LANES(m) d[l] = sim_ptx_trunc(base ? sim_ptx_trunc(a[l], 4) + base : a[l], size ? size : 8);
  }
  return 0;
}

static float ftz32(float f) { return fpclassify(f) == FP_SUBNORMAL ? copysignf(0.0f, f) : f; }

int sim_ptx_op_atom(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m) {
  int d = in->op == SIM_OP_ATOM, size = sim_ptx_type_size(in->type), t = in->type;
  uint64_t bb[SIM_PTX_WARP], bc[SIM_PTX_WARP];
  const uint64_t *b = sim_ptx_src(c, w, &in->o[d + 1], bb);
  const uint64_t *x = in->aop == SIM_AOP_CAS ? sim_ptx_src(c, w, &in->o[d + 2], bc) : b;
  uint64_t *dst = d ? &w->R[(size_t)in->o[0].reg * SIM_PTX_WARP] : NULL;
  int lanes[SIM_PTX_WARP], n = sim_ptx_sched_lanes(c, m, lanes); /* the order the atomics happen in */
  for (int i = 0; i < n; i++) {
    int l = lanes[i];
    unsigned char *p = address(c, w, in, &in->o[d], l, (size_t)size, 1);
    if (!p) return -1;
    if (c->race && sim_ptx_race_access(c, w, in, l, p, (size_t)size, 1, NULL)) return -1;
    uint64_t old = 0, v = b[l], nv;
    memcpy(&old, p, (size_t)size);
    switch (in->aop) {
    case SIM_AOP_ADD:
      if (t == SIM_T_F32) {
        float f, g;
        uint32_t u = (uint32_t)old, k = (uint32_t)v;
        memcpy(&f, &u, 4);
        memcpy(&g, &k, 4);
        f = ftz32(ftz32(f) + ftz32(g)); /* atom.add.f32 flushes subnormals */
        memcpy(&u, &f, 4);
        nv = u;
      } else if (sim_ptx_type_is_half(t)) {
        nv = sim_ptx_half_add(t, old, v); /* .noftz: subnormals kept */
      } else if (t == SIM_T_F64) {
        double f, g;
        memcpy(&f, &old, 8);
        memcpy(&g, &v, 8);
        f += g;
        memcpy(&nv, &f, 8);
      } else {
        nv = old + v;
      }
      break;
    case SIM_AOP_MIN: case SIM_AOP_MAX: {
      int lt = sim_ptx_type_is_signed(t) ? sim_ptx_sext(v, size) < sim_ptx_sext(old, size)
                                         : sim_ptx_trunc(v, size) < sim_ptx_trunc(old, size);
      nv = (lt == (in->aop == SIM_AOP_MIN)) ? v : old;
      break;
    }
    case SIM_AOP_AND: nv = old & v; break;
    case SIM_AOP_OR: nv = old | v; break;
    case SIM_AOP_XOR: nv = old ^ v; break;
    case SIM_AOP_EXCH: nv = v; break;
    case SIM_AOP_CAS: nv = sim_ptx_trunc(old, size) == sim_ptx_trunc(v, size) ? x[l] : old; break;
    case SIM_AOP_INC: nv = (uint32_t)old >= (uint32_t)v ? 0 : old + 1; break;
    default: nv = ((uint32_t)old == 0 || (uint32_t)old > (uint32_t)v) ? v : old - 1; break; /* dec */
    }
    memcpy(p, &nv, (size_t)size);
    if (dst) dst[l] = sim_ptx_trunc(old, size);
  }
  return 0;
}
