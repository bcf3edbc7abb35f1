/*
 * ptx_parse.h -- the parser's state, shared by ptx_parse.c (the module,
 * its directives and functions) and ptx_body.c (a function's body: its
 * declarations, labels, instructions and operands).
 */
#ifndef GPULUA_PTX_PARSE_H
#define GPULUA_PTX_PARSE_H

#include "ptx_ir.h"

#include <stdio.h>

/* Names of a function's scope. */
enum { SIM_NAME_REG, SIM_NAME_PRED, SIM_NAME_FRAME, SIM_NAME_KPARAM, SIM_NAME_ARG };

typedef struct {
  const char *s;
  int len;
  int kind;
  int range;       /* %r<N>: N names, the prefix followed by 0..N-1 */
  uint32_t index;  /* first register, or ARG's number */
  int64_t offset;  /* FRAME and KPARAM */
  int depth;
} sim_ptx_name;

typedef struct {
  const char *s;
  int len, line;
  uint32_t insn;
} sim_ptx_fixup;

typedef struct {
  sim_ptx_token *t;
  int n, i;
  char *err;
  size_t errlen;
  sim_ptx_module *m;
  int func; /* index of the function being read */
  sim_ptx_name *names;
  int nnames, capnames, depth;
  sim_ptx_name *labels; /* index: instruction */
  int nlabels, caplabels;
  sim_ptx_fixup *fixups;
  int nfixups, capfixups;
  uint32_t capcode, capvec;
  uint32_t loc_file, loc_line;
} sim_ptx_parser;

/* The current token, and whether it is the word `w`. */
#define SIM_TOK(p) (&(p)->t[(p)->i])
int sim_ptx_is(const sim_ptx_token *t, const char *w);
/* Sets the error "line N: ..." and returns -1. */
int sim_ptx_fail(sim_ptx_parser *p, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Skips token `kind` or fails naming what was expected. */
int sim_ptx_expect(sim_ptx_parser *p, int kind, const char *what);
/* Grows *arr (of *cap elements of `size`) to hold n + 1: 0, or -1. */
int sim_ptx_grow(void **arr, int *cap, int n, size_t size);
/* A type word (".u32") as a type, or SIM_T_NONE. */
int sim_ptx_type_word(const sim_ptx_token *t);
/* Module variable named by the token, or -1. */
int sim_ptx_var_index(const sim_ptx_module *m, const sim_ptx_token *t);
int sim_ptx_func_index(const sim_ptx_module *m, const char *s, int len);
/* A name of the function's scope, or NULL; for a register range the
 * register's index in *index. */
const sim_ptx_name *sim_ptx_lookup(const sim_ptx_parser *p, const char *s, int len, uint32_t *index);
int sim_ptx_add_name(sim_ptx_parser *p, sim_ptx_name n);
/* ptx_parse.c: a .global/.const/.shared variable (a .shared one in a
 * function is a module variable too). */
int sim_ptx_variable(sim_ptx_parser *p, int is_extern);
/* ptx_body.c: the body of function p->func, from its '{' to its '}'. */
int sim_ptx_parse_body(sim_ptx_parser *p);

#endif
