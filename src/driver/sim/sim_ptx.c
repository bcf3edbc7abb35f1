/*
 * sim_ptx.c -- reading what the sim needs from PTX text: where an entry is,
 * its parameter list, its .maxntid. Plain C on strings, with nothing of the
 * sim's state, so the fuzzer links this file alone.
 */

#include "sim_ptx.h"

#include <stdlib.h>
#include <string.h>

/* The text after ".entry name", or NULL. */
const char *gld_ptx_entry(const char *ptx, const char *name) {
  size_t n = strlen(name);
  for (const char *p = strstr(ptx, ".entry"); p; p = strstr(p + 6, ".entry")) {
    const char *q = p + 6;
    while (*q == ' ' || *q == '\t') q++;
    if (strncmp(q, name, n) == 0 && (q[n] == '(' || q[n] == ' ' || q[n] == '\n' || q[n] == '\r' || q[n] == '\t'))
      return q + n;
  }
  return NULL;
}

/* Read ".param [.align A] .type name[[N]]" declarations, as the driver's
 * cuFuncGetParamInfo reports them (offsets aligned). An ".align" after the
 * type (".ptr .align 1") is the pointee's, not the parameter's. Returns the
 * number of parameters, 0 without a list. A list this reader cannot make
 * sense of leaves the parameters unknown (-1), as for a CUBIN, rather than
 * reporting a wrong layout. */
int gld_ptx_params(const char *after, size_t *offsets, size_t *sizes, int max) {
  const char *p = after;
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  if (*p != '(') return 0; /* no parameter list */
  const char *end = strchr(p, ')');
  if (!end) return -1;
  int n = 0;
  size_t off = 0;
  for (const char *q = strstr(p, ".param"); q && q < end; q = strstr(q + 6, ".param")) {
    if (n >= max) return -1;
    size_t align = 0, size = 0, count = 1;
    const char *next = strstr(q + 6, ".param");
    if (!next || next > end) next = end;
    static const struct { const char *t; size_t n; } types[] = {
      {".u8", 1}, {".s8", 1}, {".b8", 1}, {".u16", 2}, {".s16", 2}, {".b16", 2}, {".f16", 2},
      {".u32", 4}, {".s32", 4}, {".b32", 4}, {".f32", 4}, {".u64", 8}, {".s64", 8}, {".b64", 8}, {".f64", 8}};
    const char *type_at = NULL;
    for (const char *t = q + 6; t < next && !size; t++) {
      if (*t != '.') continue;
      for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        size_t len = strlen(types[i].t);
        if (strncmp(t, types[i].t, len) == 0 && (t[len] == ' ' || t[len] == '\t')) {
          size = types[i].n;
          type_at = t;
          break;
        }
      }
    }
    if (!size) return -1;
    const char *a = strstr(q + 6, ".align");
    if (a && a < type_at) {
      char *e;
      unsigned long v = strtoul(a + 6, &e, 10);
      if (e == a + 6 || v == 0 || v > 256 || (v & (v - 1))) return -1; /* a power of two */
      align = v;
    }
    const char *br = memchr(type_at, '[', (size_t)(next - type_at));
    if (br) {
      char *e;
      unsigned long v = strtoul(br + 1, &e, 10);
      if (e == br + 1 || *e != ']' || v == 0 || v > 32768) return -1;
      count = v;
    }
    if (!align) align = size;
    off = (off + align - 1) / align * align;
    if (off + size * count > 32768) return -1; /* past the driver's limit on parameter bytes */
    offsets[n] = off;
    sizes[n] = size * count;
    off += size * count;
    n++;
  }
  return n;
}

/* The entry's ".maxntid x[, y[, z]]" (from __launch_bounds__), between its
 * parameter list and its body: the threads a block may have, or 1024. */
int gld_ptx_max_threads(const char *after) {
  const char *body = strchr(after, '{');
  const char *m = strstr(after, ".maxntid");
  if (!m || (body && m > body)) return 1024;
  unsigned long long threads = 1;
  char *p = (char *)m + 8;
  for (int i = 0; i < 3; i++) {
    char *end;
    unsigned long v = strtoul(p, &end, 10);
    if (end == p) break;
    threads *= v;
    p = end;
    while (*p == ' ' || *p == '\t') p++;
    if (*p != ',') break;
    p++;
  }
  return threads >= 1 && threads <= 1024 ? (int)threads : 1024;
}
