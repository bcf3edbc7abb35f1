/*
 * test_ptx_regs.c -- registers sharing rows (src/driver/sim/ptx_regs.c):
 * a chain of values each read once takes few rows; and where sharing would
 * be wrong, the values stay apart: a value a guarded write leaves in the
 * lanes it skips, the registers one vector load writes together, a value
 * live across a loop, a value read after a branch on some paths only.
 */

#include "ptx_harness.h"

/* Thread t of one warp writes out[t] by `mode`: 0 a chain of 12 adds of
 * values each read once (t + 78); 1 a = 7, then b = t and, where t < 16,
 * a = 9 (guarded): a (9 or 7); 2 a vector load of 4 words a lane, their
 * sum; 3 a = 5 before a loop of t rounds that counts in b: a * 100 + b;
 * 4 a = 3, then b = t * 2 on odd lanes' path and c = t on the others',
 * then a + (odd ? b : c) after they meet. Each mode has registers of its
 * own, so that only its own code decides which may share. */
static const char *regs_ptx =
    ".version 9.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry regs(.param .u64 po, .param .u64 pin, .param .u32 mode)\n{\n"
    "  .reg .pred %p<8>;\n  .reg .b32 %r<40>;\n  .reg .b64 %rd<8>;\n"
    "  ld.param.u64 %rd1, [po];\n  ld.param.u64 %rd5, [pin];\n  ld.param.u32 %r30, [mode];\n"
    "  mov.u32 %r31, %tid.x;\n  mul.wide.u32 %rd2, %r31, 4;\n  add.u64 %rd3, %rd1, %rd2;\n"
    "  setp.eq.u32 %p1, %r30, 1;\n  @%p1 bra GUARD;\n"
    "  setp.eq.u32 %p1, %r30, 2;\n  @%p1 bra VEC;\n"
    "  setp.eq.u32 %p1, %r30, 3;\n  @%p1 bra LOOP;\n"
    "  setp.eq.u32 %p1, %r30, 4;\n  @%p1 bra SPLIT;\n"
    "  add.u32 %r1, %r31, 1;\n  add.u32 %r2, %r1, 2;\n  add.u32 %r3, %r2, 3;\n  add.u32 %r4, %r3, 4;\n"
    "  add.u32 %r5, %r4, 5;\n  add.u32 %r6, %r5, 6;\n  add.u32 %r7, %r6, 7;\n  add.u32 %r8, %r7, 8;\n"
    "  add.u32 %r9, %r8, 9;\n  add.u32 %r10, %r9, 10;\n  add.u32 %r11, %r10, 11;\n  add.u32 %r12, %r11, 12;\n"
    "  st.global.u32 [%rd3], %r12;\n  ret;\n"
    "GUARD:\n"
    "  mov.u32 %r13, 7;\n  mov.u32 %r14, %r31;\n  setp.lt.u32 %p2, %r14, 16;\n  @%p2 mov.u32 %r13, 9;\n"
    "  st.global.u32 [%rd3], %r13;\n  ret;\n"
    "VEC:\n"
    "  mul.wide.u32 %rd6, %r31, 16;\n  add.u64 %rd7, %rd5, %rd6;\n"
    "  ld.global.v4.u32 {%r15, %r16, %r17, %r18}, [%rd7];\n"
    "  add.u32 %r19, %r15, %r16;\n  add.u32 %r20, %r17, %r18;\n  add.u32 %r21, %r19, %r20;\n"
    "  st.global.u32 [%rd3], %r21;\n  ret;\n"
    "LOOP:\n"
    "  mov.u32 %r22, 5;\n  mov.u32 %r23, 0;\n"
    "AGAIN:\n"
    "  setp.ge.u32 %p3, %r23, %r31;\n  @%p3 bra DONE;\n"
    "  add.u32 %r24, %r23, 1;\n  mov.u32 %r23, %r24;\n  bra.uni AGAIN;\n"
    "DONE:\n"
    "  mul.lo.u32 %r25, %r22, 100;\n  add.u32 %r26, %r25, %r23;\n  st.global.u32 [%rd3], %r26;\n  ret;\n"
    "SPLIT:\n"
    "  mov.u32 %r27, 3;\n  and.b32 %r28, %r31, 1;\n  setp.eq.u32 %p4, %r28, 1;\n  @%p4 bra ODD;\n"
    "  mov.u32 %r29, %r31;\n  add.u32 %r33, %r27, %r29;\n  bra.uni MEET;\n"
    "ODD:\n"
    "  shl.b32 %r32, %r31, 1;\n  add.u32 %r33, %r27, %r32;\n"
    "MEET:\n"
    "  st.global.u32 [%rd3], %r33;\n  ret;\n}\n";

void test_ptx_regs(int *nchecks, int *nfailures);
void test_ptx_regs(int *nchecks, int *nfailures) {
  char err[512];
  sim_ptx_module *m = sim_ptx_load(regs_ptx, err, sizeof err);
  CHECK(m != NULL, "regs: %s", err);
  if (!m) return;
  /* %r<40> and %rd<8> declared, 31 of them used; no more than a dozen live at once */
  CHECK(m->funcs[0].nregs <= 12, "the registers share rows: %u of them", m->funcs[0].nregs);
  uint32_t out[32], in[32 * 4];
  for (int i = 0; i < 32 * 4; i++) in[i] = (uint32_t)(i * 7 + 1);
  registry r = {0};
  add_buffer(&r, "out", out, sizeof out);
  add_buffer(&r, "in", in, sizeof in);
  uint32_t *po = out, *pin = in, mode = 0;
  void *params[] = {&po, &pin, &mode};
  for (mode = 0; mode <= 4; mode++) {
    memset(out, 0xee, sizeof out);
    CHECK(launch(m, "regs", 1, 1, 32, 1, 0, params, &r, err, sizeof err, NULL) == 0, "regs, mode %u: %s", mode, err);
    int wrong = 0, first = -1;
    for (uint32_t t = 0; t < 32; t++) {
      uint32_t want = mode == 0   ? t + 78
                      : mode == 1 ? (t < 16 ? 9u : 7u)
                      : mode == 2 ? in[4 * t] + in[4 * t + 1] + in[4 * t + 2] + in[4 * t + 3]
                      : mode == 3 ? 500 + t
                                  : 3 + (t & 1 ? 2 * t : t);
      if (out[t] != want && wrong++ == 0) first = (int)t;
    }
    CHECK(wrong == 0, "regs, mode %u: %d lanes wrong, the first lane %d (%u)", mode, wrong, first,
          first >= 0 ? out[first] : 0);
  }
  sim_ptx_free(m);
  *nchecks += checks;
  *nfailures += failures;
}
