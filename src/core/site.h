/*
 * site.h -- script locations: interned texts ("file:line", kernel names)
 * and the call site of the operation being made.
 *
 * Locations are small integers into the runtime's table of interned texts;
 * every record, free and close keeps one (an id, never a copy of the text).
 * A gl_site stands for the caller's location without computing it: the
 * layer above (the Lua bindings) gives a function that finds it, and the
 * core asks only when a record or a message needs it.
 */
#ifndef GPULUA_CORE_SITE_H
#define GPULUA_CORE_SITE_H

#include "types.h"

#define GL_LOC_NONE (-1)

struct gl_site {
  int (*resolve)(gl_runtime *rt, void *ctx); /* the caller's location, interned; NULL: unknown */
  void *ctx;
  int loc;                                   /* cached; GL_LOC_UNRESOLVED until asked */
};
#define GL_LOC_UNRESOLVED (-2)

/* The site's location, found once (GL_LOC_NONE without a site). */
int gl_site_loc(gl_runtime *rt, gl_site *site);

/* The table of interned texts. */
typedef struct gl_locations {
  char **text;
  int n, cap;
  int *slot;       /* open addressing: hash -> index + 1 */
  int nslot;
  struct {         /* a cache for the Lua layer: (source, line) -> location */
    const void *source;
    int line, loc;
  } cache[64];
} gl_locations;

/* Intern `text`; GL_LOC_NONE when out of memory (it then reads "?"). */
int gl_intern(gl_runtime *rt, const char *text);
const char *gl_loc_text(const gl_runtime *rt, int loc);
void gl_locations_free(gl_locations *t);

#endif
