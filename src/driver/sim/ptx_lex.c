/*
 * ptx_lex.c -- PTX text into tokens: words (opcodes with their modifiers,
 * directives, names, registers such as %tid.x), numbers, strings and
 * punctuation, each with its line. Comments are dropped.
 */

#include "ptx_ir.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int word_start(int c) { return isalpha(c) || c == '_' || c == '$' || c == '%' || c == '.'; }
static int word_char(int c) { return isalnum(c) || c == '_' || c == '$' || c == '.' || c == ':'; }

sim_ptx_token *sim_ptx_lex(const char *text, int *count, char *err, size_t errlen) {
  size_t cap = 1024, n = 0;
  sim_ptx_token *t = malloc(cap * sizeof *t);
  if (!t) {
    snprintf(err, errlen, "out of memory reading PTX");
    return NULL;
  }
  int line = 1;
  const char *p = text;
  for (;;) {
    while (*p && isspace((unsigned char)*p)) {
      if (*p == '\n') line++;
      p++;
    }
    if (p[0] == '/' && p[1] == '/') {
      while (*p && *p != '\n') p++;
      continue;
    }
    if (p[0] == '/' && p[1] == '*') {
      const char *e = strstr(p + 2, "*/");
      if (!e) {
        snprintf(err, errlen, "line %d: unterminated comment", line);
        free(t);
        return NULL;
      }
      for (; p < e; p++)
        if (*p == '\n') line++;
      p = e + 2;
      continue;
    }
    if (n + SIM_TOK_PAD >= cap) {
      sim_ptx_token *nt = realloc(t, 2 * cap * sizeof *t);
      if (!nt) {
        snprintf(err, errlen, "out of memory reading PTX");
        free(t);
        return NULL;
      }
      t = nt;
      cap *= 2;
    }
    sim_ptx_token *k = &t[n];
    k->s = p;
    k->line = line;
    if (!*p) {
      /* the end, SIM_TOK_PAD times: a parser that steps over a fixed
       * number of tokens ("p->i += 2") still lands on an end */
      for (int i = 0; i < SIM_TOK_PAD; i++) t[n + (size_t)i] = (sim_ptx_token){SIM_TOK_END, p, 0, line};
      break;
    }
    unsigned char c = (unsigned char)*p;
    if (isdigit(c)) {
      k->kind = SIM_TOK_NUM;
      while (isalnum((unsigned char)*p) || *p == '.' ||
             ((*p == '+' || *p == '-') && (p[-1] == 'e' || p[-1] == 'E') && !(k->s[0] == '0' && (k->s[1] == 'x' || k->s[1] == 'X'))))
        p++;
    } else if (word_start(c)) {
      k->kind = SIM_TOK_WORD;
      p++;
      /* a label or a register ends at ':' unless ':' is part of a
       * modifier (.L2::128B): two colons in a row */
      while (word_char((unsigned char)*p)) {
        if (*p == ':' && p[1] != ':' && p[-1] != ':') break;
        p++;
      }
    } else if (c == '"') {
      k->kind = SIM_TOK_STR;
      p++;
      while (*p && *p != '"' && *p != '\n') p++;
      if (*p != '"') {
        snprintf(err, errlen, "line %d: unterminated string", line);
        free(t);
        return NULL;
      }
      p++;
    } else if (strchr(",;{}()[]<>+-|!@:=", c)) {
      k->kind = c;
      p++;
    } else {
      snprintf(err, errlen, "line %d: unexpected character '%c' in PTX", line, isprint(c) ? c : '?');
      free(t);
      return NULL;
    }
    k->len = (int)(p - k->s);
    n++;
  }
  *count = (int)n;
  return t;
}

static int hexval(const char *s, int len, uint64_t *v) {
  uint64_t x = 0;
  if (len <= 0 || len > 16) return -1;
  for (int i = 0; i < len; i++) {
    int c = (unsigned char)s[i], d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return -1;
    x = x << 4 | (uint64_t)d;
  }
  *v = x;
  return 0;
}

int sim_ptx_number(const sim_ptx_token *t, uint64_t *bits, int *is_float, int *is_f32) {
  const char *s = t->s;
  int len = t->len;
  *is_float = 0;
  *is_f32 = 0;
  if (len >= 2 && s[0] == '0' && (s[1] == 'f' || s[1] == 'F')) {
    *is_float = *is_f32 = 1;
    return len == 10 ? hexval(s + 2, 8, bits) : -1;
  }
  if (len >= 2 && s[0] == '0' && (s[1] == 'd' || s[1] == 'D')) {
    *is_float = 1;
    return len == 18 ? hexval(s + 2, 16, bits) : -1;
  }
  char buf[64];
  if (len >= (int)sizeof buf) return -1;
  memcpy(buf, s, (size_t)len);
  buf[len] = 0;
  if (buf[len - 1] == 'U' || buf[len - 1] == 'u') buf[--len] = 0;
  if (strpbrk(buf, ".eE") && !(buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X'))) {
    char *end;
    double d = strtod(buf, &end);
    if (*end) return -1;
    memcpy(bits, &d, sizeof d);
    *is_float = 1;
    return 0;
  }
  char *end;
  errno = 0;
  unsigned long long v;
  if (buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X')) v = strtoull(buf + 2, &end, 16);
  else if (buf[0] == '0' && (buf[1] == 'b' || buf[1] == 'B')) v = strtoull(buf + 2, &end, 2);
  else if (buf[0] == '0' && buf[1]) v = strtoull(buf + 1, &end, 8);
  else v = strtoull(buf, &end, 10);
  if (*end || errno) return -1;
  *bits = v;
  return 0;
}
