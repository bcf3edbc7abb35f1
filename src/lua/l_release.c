/*
 * l_release.c -- the one release prologue of every object type (see
 * bindings.h: gll_release): freeing twice, a <close> after a release, a
 * finalizer during a capture, and the refusals inside host kernels and
 * captures behave the same for every type.
 */
#include "bindings.h"

/* "x:" of "x:free", for the host kernel's refusal */
static void call_prefix(const char *call, char *out, size_t size) {
  const char *colon = strchr(call, ':');
  size_t n = colon ? (size_t)(colon - call) + 1 : 0;
  if (n >= size) n = size - 1;
  memcpy(out, call, n);
  out[n] = '\0';
}

int gll_release(lua_State *L, const gll_release_ops *t, gll_release_how how) {
  void *o = gll_checkudata(L, 1, t->type);
  gl_runtime *rt = t->held(o);
  if (how == GL_RELEASE_GC) {
    if (rt && !gll_gc_defer(L, rt)) t->collect(L, o);
    return 0;
  }
  int block = how == GL_RELEASE_CLOSE;
  if (!rt) { /* released by its method and then collected, or only collected */
    if (block) return 0;
    if (t->released(L, o)) return luaL_error(L, "%s: %s", t->call, lua_tostring(L, -1));
    return luaL_error(L, "%s: %s: its finalizer (__gc) released it", t->call, t->collected);
  }
  if (t->released(L, o)) return block ? 0 : luaL_error(L, "%s: %s", t->call, lua_tostring(L, -1));
  if (!(t->allowed & GL_RELEASE_IN_HOST_KERNEL) && gl_in_host_kernel()) {
    char prefix[16];
    call_prefix(t->call, prefix, sizeof prefix);
    gll_refuse_in_host_kernel(L, prefix, NULL);
  }
  if (!(t->allowed & GL_RELEASE_IN_CAPTURE)) GL_NOT_IN_CAPTURE(L, rt, block ? t->block : t->call);
  return t->close(L, o, block);
}
