/*
 * dl_search.c -- see dl_search.h.
 */
#include "dl_search.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

void *gld_dl_open(const char *path, char *why, size_t len) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) snprintf(why, len, "%s", dlerror());
  return h;
}

void *gld_dl_need(void *h, const char *path, const char *name, char *why, size_t len) {
  void *sym = dlsym(h, name);
  if (!sym) {
    snprintf(why, len, "%s lacks %s", path, name);
    dlclose(h);
  }
  return sym;
}

const char *gld_dl_search(const char *what, const char *env_name, const char *const *paths, size_t npaths,
                         const char *tried, gld_dl_try try_load, char *out, size_t outlen) {
  char why[600];
  const char *env = getenv(env_name);
  if (env && *env) {
    if (try_load(env, why, sizeof why)) return NULL;
    snprintf(out, outlen, "%s could not be loaded: %s=%.200s: %s", what, env_name, env, why);
    return out;
  }
  char first[600] = "";
  for (size_t i = 0; i < npaths; i++) {
    if (try_load(paths[i], why, sizeof why)) return NULL;
    if (i == 0) snprintf(first, sizeof first, "%s", why);
  }
  snprintf(out, outlen, "%s could not be loaded (%s): %s", what, tried, first);
  return out;
}
