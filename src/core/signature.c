/*
 * signature.c -- the kernel signature grammar:
 *   signature := "" | param { "," param }
 *   param     := [ "const" ] type [ "*" ]
 *   type      := a dtype (i8 ... f64) | "void" (pointers only)
 *                | a C spelling: char, int8_t ... uint64_t, int, unsigned,
 *                  long, size_t, float, double, half, __half, __nv_bfloat16
 */
#include "signature.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "dtype.h"

static const struct { const char *c; const char *dt; } aliases[] = {
  {"char", "i8"},        {"signed char", "i8"}, {"unsigned char", "u8"}, {"int8_t", "i8"},
  {"uint8_t", "u8"},     {"short", "i16"},      {"int16_t", "i16"},      {"uint16_t", "u16"},
  {"unsigned short", "u16"}, {"int", "i32"},    {"int32_t", "i32"},      {"unsigned", "u32"},
  {"unsigned int", "u32"}, {"uint32_t", "u32"}, {"long", "i64"},         {"long long", "i64"},
  {"int64_t", "i64"},    {"unsigned long", "u64"}, {"unsigned long long", "u64"},
  {"uint64_t", "u64"},   {"size_t", "u64"},     {"half", "f16"},         {"__half", "f16"},
  {"__nv_bfloat16", "bf16"}, {"float", "f32"},  {"double", "f64"},
};

size_t gl_param_size(const gl_param *p) { return p->is_ptr ? sizeof(void *) : gl_dtypes[p->dtype].size; }

static int type_of(const char *name) {
  int d = gl_dtype_parse(name);
  if (d >= 0) return d;
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (strcmp(name, aliases[i].c) == 0) return gl_dtype_parse(aliases[i].dt);
  if (strcmp(name, "void") == 0) return -1;
  return -2;
}

int gl_signature_parse(const char *s, gl_signature *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  const char *p = s;
  while (isspace((unsigned char)*p)) p++;
  if (*p == '\0') return 0; /* no parameters */
  for (int index = 1;; index++) {
    /* one parameter: up to the next comma */
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    char text[128];
    if (len >= sizeof text) {
      snprintf(err, errlen, "parameter %d is too long", index);
      return -1;
    }
    memcpy(text, p, len);
    text[len] = '\0';
    /* trim, take the stars off the end */
    char *t = text;
    while (isspace((unsigned char)*t)) t++;
    char *e = t + strlen(t);
    while (e > t && isspace((unsigned char)e[-1])) *--e = '\0';
    int stars = 0;
    while (e > t && (e[-1] == '*' || isspace((unsigned char)e[-1]))) {
      if (e[-1] == '*') stars++;
      *--e = '\0';
    }
    gl_param prm = {0, 0, 0};
    if (strncmp(t, "const", 5) == 0 && (isspace((unsigned char)t[5]) || t[5] == '\0')) {
      prm.is_const = 1;
      t += 5;
      while (isspace((unsigned char)*t)) t++;
    }
    /* collapse inner runs of spaces ("unsigned   int") */
    char name[128];
    size_t k = 0;
    for (const char *q = t; *q && k + 1 < sizeof name; q++) {
      if (isspace((unsigned char)*q)) {
        if (k && name[k - 1] != ' ') name[k++] = ' ';
      } else name[k++] = *q;
    }
    name[k] = '\0';
    if (!name[0]) {
      snprintf(err, errlen, "parameter %d is empty", index);
      return -1;
    }
    if (stars > 1) {
      snprintf(err, errlen, "parameter %d ('%s'): pointers to pointers are not supported", index, text);
      return -1;
    }
    int dt = type_of(name);
    if (dt == -2) {
      snprintf(err, errlen, "parameter %d: unknown type '%s' (expected a dtype: " GL_DTYPE_NAMES
                            ", or void*)", index, name);
      return -1;
    }
    prm.is_ptr = stars == 1;
    prm.dtype = dt;
    if (dt == -1 && !prm.is_ptr) {
      snprintf(err, errlen, "parameter %d: void is only allowed as a pointer (void*)", index);
      return -1;
    }
    if (prm.is_const && !prm.is_ptr) prm.is_const = 0; /* const on a scalar changes nothing */
    if (out->n == GL_MAX_PARAMS) {
      snprintf(err, errlen, "more than %d parameters", GL_MAX_PARAMS);
      return -1;
    }
    out->p[out->n++] = prm;
    if (!end) break;
    p = end + 1;
  }
  return 0;
}

void gl_signature_format(const gl_signature *sig, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < sig->n && used < len; i++) {
    const gl_param *p = &sig->p[i];
    used += (size_t)snprintf(buf + used, len - used, "%s%s%s%s", i ? ", " : "", p->is_const ? "const " : "",
                             p->dtype < 0 ? "void" : gl_dtypes[p->dtype].name, p->is_ptr ? "*" : "");
  }
}
