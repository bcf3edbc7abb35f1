/*
 * tests/fuzz/fuzz_parsers.c -- a libFuzzer harness for the C parsers that
 * take outside input: kernel signatures, dtype names, kernel-cache entries
 * (a cache folder is outside input too) and the sim's reading of PTX (entry
 * names, parameter lists, .maxntid: what gpu.load gives it; sim_ptx.c, linked
 * alone) and the sim's PTX interpreter's parser (a whole module decoded and
 * checked: ptx_lex.c ... ptx_check.c, linked without the executor) and the
 * job store's messages (store.c: what any connection to it may send). The first
 * byte picks the parser; the rest is its input. Built and run by
 * scripts/fuzz.sh.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "kcache.h"
#include "signature.h"
#include "store.h"
#include "sim/ptx_ir.h"
#include "sim/sim_ptx.h"

/* PTX input: "name\n" then the module text. */
static void fuzz_ptx(const char *text) {
  const char *nl = strchr(text, '\n');
  if (!nl || nl - text > 200) return;
  char name[256];
  memcpy(name, text, (size_t)(nl - text));
  name[nl - text] = '\0';
  const char *entry = gld_ptx_entry(nl + 1, name);
  if (!entry) return;
  enum { MAX = 64 };
  size_t offsets[MAX], sizes[MAX];
  int n = gld_ptx_params(entry, offsets, sizes, MAX);
  if (n < -1 || n > MAX) abort();
  size_t prev_end = 0;
  for (int i = 0; i < n; i++) {
    /* parameters are laid out in order, without overlap, within the 32 KB the driver allows */
    if (sizes[i] == 0 || offsets[i] < prev_end || offsets[i] + sizes[i] > 32768) abort();
    prev_end = offsets[i] + sizes[i];
  }
  int threads = gld_ptx_max_threads(entry);
  if (threads < 1 || threads > 1024) abort();
}

/* A whole module through the interpreter's parser: decoded, or refused with
 * a reason; every branch target and reconvergence point inside its function. */
static void fuzz_ptx_module(const char *text) {
  char err[256] = "";
  sim_ptx_module *m = sim_ptx_load(text, err, sizeof err);
  if (!m) {
    if (!err[0]) abort(); /* a refusal always says why */
    return;
  }
  for (int f = 0; f < m->nfuncs; f++) {
    const sim_ptx_func *fn = &m->funcs[f];
    for (uint32_t i = 0; i < fn->ncode; i++) {
      const sim_ptx_insn *in = &fn->code[i];
      if (in->line == 0) abort();
      if (in->op == SIM_OP_BRA && (in->target >= fn->ncode || in->reconv > fn->ncode)) abort();
      if (in->op == SIM_OP_CALL && (int)in->target >= m->nfuncs) abort();
    }
  }
  sim_ptx_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  uint8_t which = data[0] % 6;
  data++;
  size--;
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  switch (which) {
  case 0: {
    gl_signature sig;
    char err[256], back[1024];
    if (gl_signature_parse(text, &sig, err, sizeof err) == 0) {
      gl_signature_format(&sig, back, sizeof back);
      gl_signature reparsed; /* the canonical text parses to the same signature */
      if (gl_signature_parse(back, &reparsed, err, sizeof err) != 0 || reparsed.n != sig.n ||
          memcmp(reparsed.p, sig.p, sizeof sig.p[0] * (size_t)sig.n) != 0)
        abort();
      for (int i = 0; i < sig.n; i++)
        if (gl_param_size(&sig.p[i]) == 0 || gl_param_size(&sig.p[i]) > 8) abort();
    } else if (!err[0]) {
      abort(); /* a refusal always says why */
    }
    break;
  }
  case 1: {
    int d = gl_dtype_parse(text);
    if (d >= GL_NDTYPES || (d >= 0 && strcmp(gl_dtypes[d].name, text) != 0)) abort();
    break;
  }
  case 3:
    fuzz_ptx(text);
    break;
  case 4:
    fuzz_ptx_module(text);
    break;
  case 5: { /* a stream of store messages, for a job of 1 to 4 ranks: each within the bytes given */
    int job = size ? 1 + data[0] % 4 : 1;
    size_t at = 0;
    for (;;) {
      gl_store_msg m;
      const char *why = NULL;
      long k = gl_store_parse(data + at, size - at, job, &m, &why);
      if (k < 0 && !why) abort(); /* a refusal always says why */
      if (k <= 0) break;
      if ((size_t)k > size - at || m.rank < 0 || m.rank >= job || m.len > GL_STORE_MAX_PAYLOAD ||
          m.payload + m.len != data + at + k)
        abort();
      at += (size_t)k;
    }
    break;
  }
  default: {
    const void *payload;
    size_t len;
    int kind;
    if (gl_kcache_parse(data, size, NULL, &payload, &len, &kind) == 0) {
      if ((const uint8_t *)payload < data || (const uint8_t *)payload + len > data + size) abort();
    }
    break;
  }
  }
  free(text);
  return 0;
}
