/*
 * ptx_ir.h -- the sim's PTX interpreter: a module decoded once into compact
 * instructions (ptx_lex.c, ptx_parse.c, ptx_insn.c, ptx_check.c,
 * ptx_fuse.c), and run
 * warp by warp, 32 lanes together (ptx_exec.c, ptx_ops_*.c).
 *
 * Plain C on strings and host memory, with nothing of the sim's state: the
 * sim's device memory is host memory, so a global address is a host address.
 * Shared and local memory live in windows of the generic address space that
 * no host pointer reaches (SIM_PTX_SHARED_WINDOW, SIM_PTX_LOCAL_WINDOW).
 */
#ifndef GPULUA_PTX_IR_H
#define GPULUA_PTX_IR_H

#include <stddef.h>
#include <stdint.h>

#define SIM_PTX_WARP 32
#define SIM_PTX_SHARED_WINDOW 0x1000000000000000ull /* generic address of shared offset 0 */
#define SIM_PTX_LOCAL_WINDOW 0x2000000000000000ull  /* generic address of local offset 0 */
#define SIM_PTX_LOCAL_BYTES 16384u                  /* local memory (stack) of a thread */
#define SIM_PTX_MAX_DEPTH 512                       /* nested calls of a warp */
#define SIM_PTX_PRINTF_BYTES (1u << 20)             /* printf output kept of a launch (CUDA's default FIFO) */

/* Types of an instruction (ptx_insn.c names them). */
typedef enum {
  SIM_T_NONE, SIM_T_PRED,
  SIM_T_B8, SIM_T_B16, SIM_T_B32, SIM_T_B64,
  SIM_T_U8, SIM_T_U16, SIM_T_U32, SIM_T_U64,
  SIM_T_S8, SIM_T_S16, SIM_T_S32, SIM_T_S64,
  SIM_T_F32, SIM_T_F64,
  SIM_T_F16, SIM_T_F16X2, SIM_T_BF16, SIM_T_BF16X2, /* 16-bit floats, alone or two in 32 bits (ptx_ops_half.c) */
} sim_ptx_type;

/* State spaces; SIM_S_GENERIC where an instruction names none. */
typedef enum { SIM_S_GENERIC, SIM_S_GLOBAL, SIM_S_SHARED, SIM_S_LOCAL, SIM_S_PARAM, SIM_S_CONST } sim_ptx_space;

typedef enum {
  SIM_OP_NOP, SIM_OP_MOV, SIM_OP_ADD, SIM_OP_SUB, SIM_OP_MUL, SIM_OP_MAD, SIM_OP_MUL24, SIM_OP_MAD24,
  SIM_OP_DIV, SIM_OP_REM, SIM_OP_ABS, SIM_OP_NEG, SIM_OP_MIN, SIM_OP_MAX, SIM_OP_AND, SIM_OP_OR,
  SIM_OP_XOR, SIM_OP_NOT, SIM_OP_CNOT, SIM_OP_SHL, SIM_OP_SHR, SIM_OP_BFE, SIM_OP_BFI, SIM_OP_POPC,
  SIM_OP_CLZ, SIM_OP_BREV, SIM_OP_BFIND, SIM_OP_PRMT, SIM_OP_LOP3, SIM_OP_SHF, SIM_OP_FMA, SIM_OP_RCP,
  SIM_OP_SQRT, SIM_OP_RSQRT, SIM_OP_EX2, SIM_OP_LG2, SIM_OP_SIN, SIM_OP_COS, SIM_OP_TANH,
  SIM_OP_COPYSIGN, SIM_OP_CVT, SIM_OP_CVTA, SIM_OP_ISSPACEP, SIM_OP_SETP, SIM_OP_SET, SIM_OP_SELP,
  SIM_OP_SLCT, SIM_OP_LD, SIM_OP_ST, SIM_OP_ATOM, SIM_OP_RED, SIM_OP_SHFL, SIM_OP_VOTE,
  SIM_OP_ACTIVEMASK, SIM_OP_BRA, SIM_OP_CALL, SIM_OP_RET, SIM_OP_EXIT, SIM_OP_TRAP, SIM_OP_BAR,
  SIM_OP_BARWARP, SIM_OP_FENCE, SIM_OP_DP4A, SIM_OP_DP2A, SIM_OP_REDUX, SIM_OP_MATCH, SIM_OP_COUNT
} sim_ptx_opcode;

/* Modifiers: rounding, comparison, operation of atom/red and of setp's
 * combine (and/or/xor), shfl and vote modes, mul's part. */
enum { SIM_RND_NONE, SIM_RND_RN, SIM_RND_RZ, SIM_RND_RM, SIM_RND_RP, SIM_RND_RNI, SIM_RND_RZI, SIM_RND_RMI, SIM_RND_RPI };
enum {
  SIM_CMP_NONE, SIM_CMP_EQ, SIM_CMP_NE, SIM_CMP_LT, SIM_CMP_LE, SIM_CMP_GT, SIM_CMP_GE, SIM_CMP_LO,
  SIM_CMP_LS, SIM_CMP_HI, SIM_CMP_HS, SIM_CMP_EQU, SIM_CMP_NEU, SIM_CMP_LTU, SIM_CMP_LEU, SIM_CMP_GTU,
  SIM_CMP_GEU, SIM_CMP_NUM, SIM_CMP_NAN
};
enum {
  SIM_AOP_NONE, SIM_AOP_AND, SIM_AOP_OR, SIM_AOP_XOR, SIM_AOP_ADD, SIM_AOP_MIN, SIM_AOP_MAX, SIM_AOP_INC,
  SIM_AOP_DEC, SIM_AOP_EXCH, SIM_AOP_CAS
};
enum { SIM_MODE_NONE, SIM_MODE_LO, SIM_MODE_HI, SIM_MODE_WIDE, SIM_MODE_UP, SIM_MODE_DOWN, SIM_MODE_BFLY,
       SIM_MODE_IDX, SIM_MODE_ALL, SIM_MODE_ANY, SIM_MODE_UNI, SIM_MODE_BALLOT, SIM_MODE_L, SIM_MODE_R };
/* sim_ptx_insn.flags */
enum { SIM_F_FTZ = 1, SIM_F_SAT = 2, SIM_F_APPROX = 4, SIM_F_UNI = 8, SIM_F_TO = 16, SIM_F_CLAMP = 32,
       SIM_F_SHIFTAMT = 64, SIM_F_FULL = 128, SIM_F_RELU = 256, SIM_F_NAN = 512,
       SIM_F_NOFTZ = 1024,
       SIM_F_NEGA = 2048, SIM_F_NEGC = 4096 }; /* an fma contracted from a sub (ptx_fuse.c): -a*b + c, a*b - c */

/* What a call reaches (the `mode` of a SIM_OP_CALL, set at load): a
 * function of the module, or one of the device runtime's that NVRTC
 * declares .extern (ptx_printf.c runs them). */
enum { SIM_CALL_FUNC, SIM_CALL_VPRINTF, SIM_CALL_ASSERT };

/* Special registers (an operand's imm for SIM_K_SREG): the low two bits of
 * the first ones are the dimension x, y, z. */
enum {
  SIM_SR_TID = 0, SIM_SR_NTID = 4, SIM_SR_CTAID = 8, SIM_SR_NCTAID = 12, SIM_SR_LANEID = 16, SIM_SR_WARPID,
  SIM_SR_NWARPID, SIM_SR_SMID, SIM_SR_NSMID, SIM_SR_GRIDID, SIM_SR_CLOCK, SIM_SR_CLOCK_HI, SIM_SR_CLOCK64,
  SIM_SR_GLOBALTIMER, SIM_SR_GLOBALTIMER_LO, SIM_SR_GLOBALTIMER_HI, SIM_SR_LANEMASK_EQ, SIM_SR_LANEMASK_LE,
  SIM_SR_LANEMASK_LT, SIM_SR_LANEMASK_GE, SIM_SR_LANEMASK_GT, SIM_SR_DYN_SMEM, SIM_SR_TOTAL_SMEM
};

/* Operand kinds. An address (SIM_K_ADDR) is a base (flags: SIM_A_*) plus
 * the offset in imm. SIM_K_VEC is a brace list {a, b, ...}: reg indexes the
 * function's `vec` array, imm counts its entries (register indices). */
enum { SIM_K_NONE, SIM_K_REG, SIM_K_PRED, SIM_K_IMM, SIM_K_SREG, SIM_K_VEC, SIM_K_ADDR, SIM_K_SYMADDR };
/* Address bases: a register; the kernel's parameter buffer; the function's
 * own frame (local depot and the .param of its call sites); its own
 * parameter or return value number `sym` (bound by the caller); module
 * variable `sym`; an absolute address. */
enum { SIM_A_REG, SIM_A_KPARAM, SIM_A_FRAME, SIM_A_ARG, SIM_A_VAR, SIM_A_ABS };

typedef struct {
  uint8_t kind;
  uint8_t flags; /* SIM_K_PRED: 1 = negated; SIM_K_ADDR/SYMADDR: SIM_A_* */
  uint16_t sym;  /* SIM_A_ARG / SIM_A_VAR: its index */
  uint32_t reg;  /* register (or predicate) index in the function */
  int64_t imm;   /* immediate bits, special register, or address offset */
} sim_ptx_operand;

typedef struct {
  uint8_t op, type, type2, space;
  uint8_t rnd, cmp, aop, mode;
  uint16_t flags;
  uint8_t vec, nops, guard_neg;
  uint8_t fast;     /* its whole-warp handler (ptx_fast.c), or 0 */
  int32_t guard;    /* predicate index, or -1 */
  uint32_t target;  /* bra: instruction index; call: function index */
  uint32_t reconv;  /* bra: where divergent lanes meet again (code length = the end) */
  uint32_t line;    /* PTX line */
  uint32_t src_line; /* .loc line, 0 without one */
  uint16_t src_file; /* .loc file number */
  sim_ptx_operand o[6]; /* in the order written; a second destination (a|b) in o[5] */
} sim_ptx_insn;

typedef struct {
  char *name;
  size_t offset, size, align;
} sim_ptx_param;

typedef struct {
  char *name;
  int is_entry, is_extern, max_threads; /* max_threads: .maxntid/.reqntid product, or 0 */
  sim_ptx_param *params;  /* for a .func: the return values first, then the parameters */
  int nparams, nrets;     /* nparams counts both */
  size_t param_bytes;     /* an entry's parameter buffer */
  uint32_t nregs, npreds; /* 64-bit registers and predicates of a warp's frame */
  uint32_t frame_bytes;   /* local memory of one call: local depot and call-site .param */
  sim_ptx_insn *code;
  uint32_t ncode;
  uint32_t *vec; /* register lists of SIM_K_VEC operands, call arguments */
  uint32_t nvec;
  int uses_local;
  uint32_t *undef_regs; /* registers a thread may read before writing them (ptx_defs.c) */
  uint32_t nundef;
  uint64_t *imm_rows; /* each immediate operand's value 32 times, its row in the operand's reg (ptx_imm.c) */
} sim_ptx_func;

typedef struct {
  char *name;
  int space; /* SIM_S_GLOBAL, SIM_S_CONST or SIM_S_SHARED */
  int is_dynamic; /* .extern .shared name[]: the launch's dynamic shared memory */
  size_t size, align;
  size_t offset; /* in the module's data (global, const) or the block's shared memory */
  unsigned char *init; /* initializer bytes (size), or NULL for zeros */
} sim_ptx_var;

typedef struct {
  sim_ptx_func *funcs;
  int nfuncs;
  sim_ptx_var *vars;
  int nvars;
  char **files; /* .file names by number (NULL where none) */
  int nfiles;
  unsigned char *data;  /* the module's .global and .const variables */
  size_t data_bytes;
  size_t shared_bytes;  /* static .shared of a block; dynamic shared follows, 16-aligned */
  int uses_local;
} sim_ptx_module;

/* The order a launch runs in (ptx_sched.c). Fixed: blocks in order (x
 * fastest), each block's warps in order, the lanes of an atomic in order.
 * Random: those three orders permuted, drawn from the seed, the kernel's
 * name and the launch's grid and block, so a seed repeats a run exactly. */
enum { SIM_PTX_SCHED_FIXED, SIM_PTX_SCHED_RANDOM };

/* A launch: grid and block, dynamic shared bytes, the arguments as
 * cuLaunchKernel gets them, and the check of every global or generic
 * access outside the module's own variables. The check returns non-zero to
 * refuse the access (a fault), and may say why in `why`. It may be asked
 * about the span of a whole warp's accesses of one instruction (from the
 * lowest address to the end of the highest), and must accept a span only
 * where it would accept every access within it (a span inside one
 * allocation); a span refused is asked again lane by lane, and only a
 * lane's refusal is a fault. Unless
 * no_racecheck is set, a data race on shared or global memory is a fault
 * too (ptx_race.c). */
typedef struct {
  unsigned grid[3], block[3];
  size_t shared_bytes;
  void **params;
  int (*check)(void *user, uint64_t addr, size_t bytes, int write, char *why, size_t whylen);
  void *user;
  int schedule;  /* SIM_PTX_SCHED_* */
  uint64_t seed; /* of the random schedule */
  int no_racecheck;      /* 1: no racecheck (ptx_race.c), as GPULUA_SIM_RACECHECK=off */
  uint64_t thread_insns; /* out: thread-instructions executed */
  int asserted;          /* out: the fault is a failed assert */
  /* out: the text the launch's printf calls wrote, in the order they ran
   * (malloc'd, the caller frees it; NULL when none), also after a fault */
  char *printed;
  size_t printed_len;
} sim_ptx_launch;

/* Parses and checks a whole module: NULL with a message in err ("line 42:
 * unsupported instruction 'tex.2d.v4.f32.f32'") when anything in it is not
 * supported. */
sim_ptx_module *sim_ptx_load(const char *text, char *err, size_t errlen);
void sim_ptx_free(sim_ptx_module *m);
/* The index of function `name`, or -1. */
int sim_ptx_find(const sim_ptx_module *m, const char *name);
/* Runs entry `func` over the launch's grid: 0, or -1 with a message naming
 * the kernel, its source line, the thread and the block. */
int sim_ptx_run(const sim_ptx_module *m, int func, sim_ptx_launch *l, char *err, size_t errlen);

/* Internal to the parser: one token of PTX text. */
typedef struct {
  int kind; /* a character, or SIM_TOK_* */
  const char *s;
  int len;
  int line;
} sim_ptx_token;
enum { SIM_TOK_END = 256, SIM_TOK_WORD, SIM_TOK_NUM, SIM_TOK_STR };
enum { SIM_TOK_PAD = 8 }; /* end tokens after the last (ptx_lex.c) */

/* ptx_lex.c: the tokens of `text`, ended by SIM_TOK_END; NULL with err. */
sim_ptx_token *sim_ptx_lex(const char *text, int *count, char *err, size_t errlen);
/* ptx_lex.c: a number token's bits (0fXXXXXXXX and 0dXXXX... are float
 * bits, decimals with a point or exponent are doubles): 0, or -1. */
int sim_ptx_number(const sim_ptx_token *t, uint64_t *bits, int *is_float, int *is_f32);
/* ptx_insn.c: decodes an opcode word into `in` (op and modifiers): 0, or -1
 * when it names something not supported. */
int sim_ptx_decode_opcode(const char *word, int len, sim_ptx_insn *in);
/* Bytes of a type; whether it is f32/f64, signed, or a 16-bit float (f16, bf16
 * and their x2 forms). Inline: the interpreter asks at every instruction. */
static inline int sim_ptx_type_size(int type) {
  switch (type) {
  case SIM_T_B8: case SIM_T_U8: case SIM_T_S8: return 1;
  case SIM_T_B16: case SIM_T_U16: case SIM_T_S16: case SIM_T_F16: case SIM_T_BF16: return 2;
  case SIM_T_B32: case SIM_T_U32: case SIM_T_S32: case SIM_T_F32: case SIM_T_F16X2: case SIM_T_BF16X2: return 4;
  case SIM_T_B64: case SIM_T_U64: case SIM_T_S64: case SIM_T_F64: return 8;
  case SIM_T_PRED: return 1;
  default: return 0;
  }
}
static inline int sim_ptx_type_is_float(int type) { return type == SIM_T_F32 || type == SIM_T_F64; }
static inline int sim_ptx_type_is_signed(int type) { return type >= SIM_T_S8 && type <= SIM_T_S64; }
static inline int sim_ptx_type_is_half(int type) { return type >= SIM_T_F16 && type <= SIM_T_BF16X2; }
/* ptx_check.c: checks operands and computes every branch's reconvergence
 * point: 0, or -1 with err. */
int sim_ptx_check_func(const sim_ptx_module *m, sim_ptx_func *f, char *err, size_t errlen);
/* ptx_defs.c: fills f->undef_regs; 0, or -1 out of memory. */
int sim_ptx_find_undefined(sim_ptx_func *f);
/* ptx_defs.c: the instructions that may run after instruction i of f, in
 * succ (a branch's target, the next one unless i ends the path): their
 * count. */
int sim_ptx_successors(const sim_ptx_func *f, uint32_t i, uint32_t succ[2]);
/* ptx_defs.c: whether the instruction writes its first operand's
 * register(s) (a register, or a vector load's or unpacking mov's list):
 * may, guarded or not; surely, unguarded. */
int sim_ptx_may_write_o0(const sim_ptx_insn *in);
int sim_ptx_writes_o0(const sim_ptx_insn *in);
/* ptx_defs.c: calls fn(r, arg) for each register operand of `in` read
 * (write: 0; a guarded destination counts as read) or surely written
 * (write: 1). A call's lists name .param offsets, not registers. */
void sim_ptx_each_reg(const sim_ptx_func *f, const sim_ptx_insn *in, int write, void (*fn)(uint32_t, void *),
                      void *arg);
/* ptx_regs.c: gives registers whose values are never live at once one row
 * (liveness over the function's instructions), so a warp's registers take
 * less memory: 0, or -1 out of memory (nothing changed). */
int sim_ptx_pack_regs(sim_ptx_func *f);
/* ptx_fast.c: picks each instruction's whole-warp handler (after ptx_imm.c). */
void sim_ptx_choose_fast(sim_ptx_func *f);
/* ptx_imm.c: fills f->imm_rows; 0, or -1 out of memory. */
int sim_ptx_broadcast_imms(sim_ptx_func *f);
/* ptx_fuse.c: contracts an unrounded f32/f64 mul and the add or sub that
 * alone reads its product into one fma, as ptxas does: 0, or -1 when out of
 * memory. */
int sim_ptx_fuse_func(sim_ptx_func *f);

#endif
