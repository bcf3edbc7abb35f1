/*
 * location.c -- the runtime's table of interned texts (see site.h).
 */
#include "runtime.h"
#include "site.h"

#include <stdlib.h>
#include <string.h>

static unsigned hash_str(const char *s) {
  unsigned h = 2166136261u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

static int grow_slots(gl_locations *t) {
  int ns = t->nslot ? 2 * t->nslot : 256;
  int *slot = calloc((size_t)ns, sizeof *slot);
  if (!slot) return -1;
  for (int i = 0; i < t->n; i++) {
    unsigned j = hash_str(t->text[i]) & (unsigned)(ns - 1);
    while (slot[j]) j = (j + 1) & (unsigned)(ns - 1);
    slot[j] = i + 1;
  }
  free(t->slot);
  t->slot = slot;
  t->nslot = ns;
  return 0;
}

int gl_intern(gl_runtime *rt, const char *text) {
  gl_locations *t = &rt->locs;
  if (t->n * 2 >= t->nslot && grow_slots(t) != 0) return GL_LOC_NONE;
  unsigned mask = (unsigned)(t->nslot - 1), j = hash_str(text) & mask;
  while (t->slot[j]) {
    if (strcmp(t->text[t->slot[j] - 1], text) == 0) return t->slot[j] - 1;
    j = (j + 1) & mask;
  }
  if (t->n == t->cap) {
    int cap = t->cap ? 2 * t->cap : 256;
    char **v = realloc(t->text, (size_t)cap * sizeof *v);
    if (!v) return GL_LOC_NONE;
    t->text = v;
    t->cap = cap;
  }
  char *copy = strdup(text);
  if (!copy) return GL_LOC_NONE;
  t->text[t->n] = copy;
  t->slot[j] = t->n + 1;
  return t->n++;
}

const char *gl_loc_text(const gl_runtime *rt, int loc) {
  return loc >= 0 && loc < rt->locs.n ? rt->locs.text[loc] : "?";
}

int gl_site_loc(gl_runtime *rt, gl_site *site) {
  if (!site) return GL_LOC_NONE;
  if (site->loc == GL_LOC_UNRESOLVED) site->loc = site->resolve ? site->resolve(rt, site->ctx) : GL_LOC_NONE;
  return site->loc;
}

void gl_locations_free(gl_locations *t) {
  for (int i = 0; i < t->n; i++) free(t->text[i]);
  free(t->text);
  free(t->slot);
  memset(t, 0, sizeof *t);
}
