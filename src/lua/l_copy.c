/*
 * l_copy.c -- s:copy(dst, src) and s:fill(x, value), asynchronous on s
 * (core/copy.c picks the driver call and checks sizes and devices).
 */
#include "bindings.h"

#include "ops.h"

static gl_ref get_end(lua_State *L, int idx, const char *role) {
  gl_ref e = {gl_test_slice(L, idx), NULL};
  if (!e.x && !(e.h = gl_test_hostbuf(L, idx)))
    luaL_error(L, "s:copy: %s (argument #%d) expected a slice or a host buffer, got %s", role, idx - 1,
               gl_given(L, idx));
  return e;
}

int gl_stream_copy(lua_State *L) {
  gl_stream *s = gl_check_stream(L, 1);
  gl_ref dst = get_end(L, 2, "dst"), src = get_end(L, 3, "src");
  gl_site site = GL_SITE(L);
  if (gl_copy(s, dst, src, &site) != 0) return gl_raise(L, s->dev->rt);
  lua_pushvalue(L, 1); /* returned (cheaper than dropping the arguments) */
  return 1;
}

int gl_stream_fill(lua_State *L) {
  gl_stream *s = gl_check_stream(L, 1);
  gl_slice *x = gl_test_slice(L, 2);
  if (!x) {
    if (gl_test_hostbuf(L, 2)) return luaL_error(L, "s:fill: argument #1 is a host buffer; fill it with h:fill(value)");
    return luaL_typeerror(L, 2, "gpulua.Slice");
  }
  gl_check_slice_alive(L, x, 1);
  luaL_checkany(L, 3);
  unsigned char v[8];
  const char *why = gl_dtype_encode(L, 3, x->dtype, v);
  if (why) {
    return luaL_error(L, "s:fill: value: %s for %s, got %s", why, gl_dtypes[x->dtype].name, gl_given(L, 3));
  }
  gl_site site = GL_SITE(L);
  if (gl_fill(s, x, v, &site) != 0) return gl_raise(L, s->dev->rt);
  lua_pushvalue(L, 1); /* returned (cheaper than dropping the arguments) */
  return 1;
}
