/*
 * ptx_insn.c -- an opcode word ("ld.global.nc.v4.f32") into the opcode and
 * modifiers of a sim_ptx_insn. Every modifier is known here, and each
 * opcode takes only the kinds of modifiers it understands: anything else is
 * refused, so an instruction the interpreter would run wrongly never loads.
 */

#include "ptx_ir.h"

#include <string.h>

static const struct { const char *name; int op; } opcodes[] = {
  {"mov", SIM_OP_MOV}, {"add", SIM_OP_ADD}, {"sub", SIM_OP_SUB}, {"mul", SIM_OP_MUL}, {"mad", SIM_OP_MAD},
  {"mul24", SIM_OP_MUL24}, {"mad24", SIM_OP_MAD24}, {"div", SIM_OP_DIV}, {"rem", SIM_OP_REM},
  {"abs", SIM_OP_ABS}, {"neg", SIM_OP_NEG}, {"min", SIM_OP_MIN}, {"max", SIM_OP_MAX}, {"and", SIM_OP_AND},
  {"or", SIM_OP_OR}, {"xor", SIM_OP_XOR}, {"not", SIM_OP_NOT}, {"cnot", SIM_OP_CNOT}, {"shl", SIM_OP_SHL},
  {"shr", SIM_OP_SHR}, {"bfe", SIM_OP_BFE}, {"bfi", SIM_OP_BFI}, {"popc", SIM_OP_POPC}, {"clz", SIM_OP_CLZ},
  {"brev", SIM_OP_BREV}, {"bfind", SIM_OP_BFIND}, {"prmt", SIM_OP_PRMT}, {"lop3", SIM_OP_LOP3},
  {"shf", SIM_OP_SHF}, {"fma", SIM_OP_FMA}, {"rcp", SIM_OP_RCP}, {"sqrt", SIM_OP_SQRT},
  {"rsqrt", SIM_OP_RSQRT}, {"ex2", SIM_OP_EX2}, {"lg2", SIM_OP_LG2}, {"sin", SIM_OP_SIN}, {"cos", SIM_OP_COS},
  {"tanh", SIM_OP_TANH}, {"copysign", SIM_OP_COPYSIGN}, {"cvt", SIM_OP_CVT}, {"cvta", SIM_OP_CVTA},
  {"isspacep", SIM_OP_ISSPACEP}, {"setp", SIM_OP_SETP}, {"set", SIM_OP_SET}, {"selp", SIM_OP_SELP},
  {"slct", SIM_OP_SLCT}, {"ld", SIM_OP_LD}, {"ldu", SIM_OP_LD}, {"st", SIM_OP_ST}, {"atom", SIM_OP_ATOM},
  {"red", SIM_OP_RED}, {"shfl", SIM_OP_SHFL}, {"vote", SIM_OP_VOTE}, {"activemask", SIM_OP_ACTIVEMASK},
  {"bra", SIM_OP_BRA}, {"call", SIM_OP_CALL}, {"ret", SIM_OP_RET}, {"exit", SIM_OP_EXIT},
  {"trap", SIM_OP_TRAP}, {"bar", SIM_OP_BAR}, {"barrier", SIM_OP_BAR}, {"membar", SIM_OP_FENCE},
  {"fence", SIM_OP_FENCE}, {"dp4a", SIM_OP_DP4A}, {"dp2a", SIM_OP_DP2A}, {"redux", SIM_OP_REDUX},
  {"match", SIM_OP_MATCH},
};

/* Kinds of modifiers; an opcode lists those it takes (allowed[]). */
enum { M_TYPE = 1, M_SPACE = 2, M_RND = 4, M_CMP = 8, M_AOP = 16, M_MODE = 32, M_FLAG = 64, M_VEC = 128,
       M_CACHE = 256, M_SYNC = 512, M_SCOPE = 1024, M_WARP = 2048 };

static const struct { const char *name; int kind, value; } mods[] = {
  {"pred", M_TYPE, SIM_T_PRED}, {"b8", M_TYPE, SIM_T_B8}, {"b16", M_TYPE, SIM_T_B16}, {"b32", M_TYPE, SIM_T_B32},
  {"b64", M_TYPE, SIM_T_B64}, {"u8", M_TYPE, SIM_T_U8}, {"u16", M_TYPE, SIM_T_U16}, {"u32", M_TYPE, SIM_T_U32},
  {"u64", M_TYPE, SIM_T_U64}, {"s8", M_TYPE, SIM_T_S8}, {"s16", M_TYPE, SIM_T_S16}, {"s32", M_TYPE, SIM_T_S32},
  {"s64", M_TYPE, SIM_T_S64}, {"f32", M_TYPE, SIM_T_F32}, {"f64", M_TYPE, SIM_T_F64},
  {"f16", M_TYPE, SIM_T_F16}, {"f16x2", M_TYPE, SIM_T_F16X2}, {"bf16", M_TYPE, SIM_T_BF16},
  {"bf16x2", M_TYPE, SIM_T_BF16X2},
  {"global", M_SPACE, SIM_S_GLOBAL}, {"shared", M_SPACE, SIM_S_SHARED}, {"local", M_SPACE, SIM_S_LOCAL},
  {"param", M_SPACE, SIM_S_PARAM}, {"const", M_SPACE, SIM_S_CONST}, {"shared::cta", M_SPACE, SIM_S_SHARED},
  {"rn", M_RND, SIM_RND_RN}, {"rz", M_RND, SIM_RND_RZ}, {"rm", M_RND, SIM_RND_RM}, {"rp", M_RND, SIM_RND_RP},
  {"rni", M_RND, SIM_RND_RNI}, {"rzi", M_RND, SIM_RND_RZI}, {"rmi", M_RND, SIM_RND_RMI}, {"rpi", M_RND, SIM_RND_RPI},
  {"eq", M_CMP, SIM_CMP_EQ}, {"ne", M_CMP, SIM_CMP_NE}, {"lt", M_CMP, SIM_CMP_LT}, {"le", M_CMP, SIM_CMP_LE},
  {"gt", M_CMP, SIM_CMP_GT}, {"ge", M_CMP, SIM_CMP_GE}, {"lo", M_CMP | M_MODE, SIM_CMP_LO},
  {"ls", M_CMP, SIM_CMP_LS}, {"hi", M_CMP | M_MODE, SIM_CMP_HI}, {"hs", M_CMP, SIM_CMP_HS},
  {"equ", M_CMP, SIM_CMP_EQU}, {"neu", M_CMP, SIM_CMP_NEU}, {"ltu", M_CMP, SIM_CMP_LTU},
  {"leu", M_CMP, SIM_CMP_LEU}, {"gtu", M_CMP, SIM_CMP_GTU}, {"geu", M_CMP, SIM_CMP_GEU},
  {"num", M_CMP, SIM_CMP_NUM}, {"nan", M_CMP, SIM_CMP_NAN},
  {"and", M_AOP, SIM_AOP_AND}, {"or", M_AOP, SIM_AOP_OR}, {"xor", M_AOP, SIM_AOP_XOR}, {"add", M_AOP, SIM_AOP_ADD},
  {"min", M_AOP, SIM_AOP_MIN}, {"max", M_AOP, SIM_AOP_MAX}, {"inc", M_AOP, SIM_AOP_INC}, {"dec", M_AOP, SIM_AOP_DEC},
  {"exch", M_AOP, SIM_AOP_EXCH}, {"cas", M_AOP, SIM_AOP_CAS},
  {"wide", M_MODE, SIM_MODE_WIDE}, {"up", M_MODE, SIM_MODE_UP}, {"down", M_MODE, SIM_MODE_DOWN},
  {"bfly", M_MODE, SIM_MODE_BFLY}, {"idx", M_MODE, SIM_MODE_IDX}, {"all", M_MODE, SIM_MODE_ALL},
  {"any", M_MODE, SIM_MODE_ANY}, {"uni", M_MODE | M_FLAG, SIM_MODE_UNI}, {"ballot", M_MODE, SIM_MODE_BALLOT},
  {"l", M_MODE, SIM_MODE_L}, {"r", M_MODE, SIM_MODE_R},
  {"ftz", M_FLAG, SIM_F_FTZ}, {"sat", M_FLAG, SIM_F_SAT}, {"approx", M_FLAG, SIM_F_APPROX}, {"to", M_FLAG, SIM_F_TO},
  {"clamp", M_FLAG, SIM_F_CLAMP}, {"wrap", M_FLAG, 0}, {"shiftamt", M_FLAG, SIM_F_SHIFTAMT}, {"full", M_FLAG, SIM_F_FULL},
  {"relu", M_FLAG, SIM_F_RELU}, {"NaN", M_FLAG, SIM_F_NAN},
  {"noftz", M_FLAG, SIM_F_NOFTZ},
  {"v2", M_VEC, 2}, {"v4", M_VEC, 4},
  {"ca", M_CACHE, 0}, {"cg", M_CACHE, 0}, {"cs", M_CACHE, 0}, {"lu", M_CACHE, 0}, {"cv", M_CACHE, 0},
  {"wb", M_CACHE, 0}, {"wt", M_CACHE, 0}, {"nc", M_CACHE, 0}, {"volatile", M_CACHE, 0},
  {"relaxed", M_SCOPE, 0}, {"acquire", M_SCOPE, 0}, {"release", M_SCOPE, 0}, {"acq_rel", M_SCOPE, 0},
  {"sc", M_SCOPE, 0}, {"cta", M_SCOPE, 0}, {"gpu", M_SCOPE, 0}, {"sys", M_SCOPE, 0}, {"gl", M_SCOPE, 0},
  {"sync", M_SYNC, 0}, {"aligned", M_SYNC, 0}, {"warp", M_WARP, 0},
};

/* What each opcode takes beyond its types. */
static int allowed(int op) {
  switch (op) {
  case SIM_OP_MOV: case SIM_OP_ABS: case SIM_OP_NEG: case SIM_OP_MIN: case SIM_OP_MAX:
  case SIM_OP_AND: case SIM_OP_OR: case SIM_OP_XOR: case SIM_OP_NOT: case SIM_OP_CNOT: case SIM_OP_SHL:
  case SIM_OP_SHR: case SIM_OP_BFE: case SIM_OP_BFI: case SIM_OP_POPC: case SIM_OP_CLZ: case SIM_OP_BREV:
  case SIM_OP_BFIND: case SIM_OP_PRMT: case SIM_OP_LOP3: case SIM_OP_SELP: case SIM_OP_SLCT:
  case SIM_OP_COPYSIGN: case SIM_OP_REM:
    return M_FLAG | M_MODE;
  case SIM_OP_ADD: case SIM_OP_SUB: case SIM_OP_MUL: case SIM_OP_MAD: case SIM_OP_FMA: case SIM_OP_DIV:
  case SIM_OP_RCP: case SIM_OP_SQRT: case SIM_OP_RSQRT: case SIM_OP_EX2: case SIM_OP_LG2: case SIM_OP_SIN:
  case SIM_OP_COS: case SIM_OP_TANH: case SIM_OP_MUL24: case SIM_OP_MAD24: case SIM_OP_SHF:
    return M_RND | M_FLAG | M_MODE;
  case SIM_OP_CVT: return M_RND | M_FLAG;
  case SIM_OP_CVTA: case SIM_OP_ISSPACEP: return M_SPACE | M_FLAG;
  case SIM_OP_SETP: case SIM_OP_SET: return M_CMP | M_AOP | M_FLAG;
  case SIM_OP_LD: case SIM_OP_ST: return M_SPACE | M_VEC | M_CACHE | M_SCOPE;
  case SIM_OP_ATOM: case SIM_OP_RED: return M_SPACE | M_AOP | M_SCOPE | M_FLAG; /* .noftz */
  case SIM_OP_SHFL: case SIM_OP_VOTE: return M_SYNC | M_MODE;
  case SIM_OP_ACTIVEMASK: return 0;
  case SIM_OP_BRA: case SIM_OP_CALL: case SIM_OP_RET: return M_FLAG;
  case SIM_OP_BAR: return M_SYNC | M_WARP;
  case SIM_OP_FENCE: return M_SCOPE;
  case SIM_OP_DP4A: case SIM_OP_DP2A: return M_MODE;
  case SIM_OP_REDUX: return M_SYNC | M_AOP;
  case SIM_OP_MATCH: return M_SYNC | M_MODE;
  default: return 0;
  }
}

int sim_ptx_decode_opcode(const char *word, int len, sim_ptx_insn *in) {
  const char *dot = memchr(word, '.', (size_t)len);
  int blen = dot ? (int)(dot - word) : len;
  in->op = SIM_OP_NOP;
  for (size_t i = 0; i < sizeof opcodes / sizeof opcodes[0]; i++)
    if ((int)strlen(opcodes[i].name) == blen && memcmp(opcodes[i].name, word, (size_t)blen) == 0) {
      in->op = (uint8_t)opcodes[i].op;
      break;
    }
  if (in->op == SIM_OP_NOP) return -1;
  int ok = allowed(in->op), ntypes = 0, sync = 0, warp = 0;
  in->vec = 1;
  const char *p = dot, *end = word + len;
  while (p && p < end) {
    const char *m = p + 1, *q = memchr(m, '.', (size_t)(end - m));
    int mlen = q ? (int)(q - m) : (int)(end - m);
    p = q;
    if (mlen > 4 && (memcmp(m, "L1::", 4) == 0 || memcmp(m, "L2::", 4) == 0)) {
      if (!(ok & M_CACHE)) return -1;
      continue;
    }
    int found = -1;
    for (size_t i = 0; i < sizeof mods / sizeof mods[0]; i++)
      if ((int)strlen(mods[i].name) == mlen && memcmp(mods[i].name, m, (size_t)mlen) == 0) {
        found = (int)i;
        break;
      }
    if (found < 0) return -1;
    int kind = mods[found].kind, v = mods[found].value;
    if (kind & M_TYPE) {
      if (ntypes == 0) in->type = (uint8_t)v;
      else if (ntypes == 1) in->type2 = (uint8_t)v;
      else return -1;
      ntypes++;
    } else if ((kind & M_CMP) && (ok & M_CMP)) in->cmp = (uint8_t)v;
    else if (v == SIM_MODE_UNI && (kind & M_FLAG)) {
      /* .uni: a vote's mode, or a branch, call or return all lanes take */
      if (in->op == SIM_OP_VOTE) in->mode = SIM_MODE_UNI;
      else if (ok & M_FLAG) in->flags |= SIM_F_UNI;
      else return -1;
    } else if ((kind & M_MODE) && (ok & M_MODE) && in->op != SIM_OP_MOV) {
      /* .lo and .hi: the parts of mul and mad (comparisons elsewhere) */
      if (kind & M_CMP) v = v == SIM_CMP_LO ? SIM_MODE_LO : SIM_MODE_HI;
      in->mode = (uint8_t)v;
    } else if ((kind & M_FLAG) && (ok & M_FLAG)) in->flags |= (uint16_t)v;
    else if (!(kind & ok)) return -1;
    else if (kind == M_SPACE) in->space = (uint8_t)v;
    else if (kind == M_RND) in->rnd = (uint8_t)v;
    else if (kind == M_AOP) in->aop = (uint8_t)v;
    else if (kind == M_VEC) in->vec = (uint8_t)v;
    else if (kind == M_SYNC) sync = 1;
    else if (kind == M_WARP) warp = 1;
  }
  switch (in->op) {
  case SIM_OP_SHFL: case SIM_OP_VOTE:
    if (!sync || !in->mode) return -1; /* the pre-Volta forms without .sync are not supported */
    break;
  case SIM_OP_BAR:
    if (!sync) return -1; /* bar.arrive, bar.red */
    if (warp) in->op = SIM_OP_BARWARP;
    break;
  case SIM_OP_CVTA: case SIM_OP_ISSPACEP:
    if (!in->space) return -1;
    break;
  case SIM_OP_ATOM: case SIM_OP_RED:
    if (!in->aop) return -1;
    break;
  case SIM_OP_MAD:
    if (sim_ptx_type_is_float(in->type)) in->op = SIM_OP_FMA; /* mad.rn.f32 is fma */
    break;
  case SIM_OP_REDUX: /* add, min, max of u32/s32; and, or, xor of b32 */
    if (!sync || in->aop < SIM_AOP_AND || in->aop > SIM_AOP_MAX) return -1;
    break;
  case SIM_OP_MATCH:
    if (!sync || (in->mode != SIM_MODE_ANY && in->mode != SIM_MODE_ALL)) return -1;
    break;
  case SIM_OP_DP2A:
    if (in->mode != SIM_MODE_LO && in->mode != SIM_MODE_HI) return -1;
    break;
  case SIM_OP_DP4A:
    if (in->mode) return -1;
    break;
  default:
    break;
  }
  if (in->op != SIM_OP_BAR && in->op != SIM_OP_BARWARP && in->op != SIM_OP_SHFL && in->op != SIM_OP_VOTE &&
      in->op != SIM_OP_REDUX && in->op != SIM_OP_MATCH && sync)
    return -1;
  return 0;
}

