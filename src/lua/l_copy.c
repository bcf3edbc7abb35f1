/*
 * l_copy.c -- s:copy(dst, src) and s:fill(x, value), asynchronous on s: the
 * operands (and a fill's value, encoded) into a request, then one core call
 * (core/copy.c checks liveness, sizes and devices, picks the driver call).
 */
#include "bindings.h"

#include "ops.h"

static gl_ref get_end(lua_State *L, int idx, const char *role) {
  gl_ref e = {gll_test_slice(L, idx), NULL};
  if (!e.x && !(e.h = gll_test_hostbuf(L, idx)))
    luaL_error(L, "s:copy: %s (argument #%d) expected a slice or a host buffer, got %s", role, idx - 1,
               gll_given(L, idx));
  return e;
}

int gll_stream_copy(lua_State *L) {
  gl_stream *s = gll_check_stream(L, 1);
  gl_site site = GL_SITE(L);
  gl_copy_req r = {.call = "s:copy", .s = s, .site = &site};
  r.dst = get_end(L, 2, "dst");
  r.src = get_end(L, 3, "src");
  if (gl_copy_submit(&r) != 0) return gll_raise(L, s->dev->rt);
  lua_pushvalue(L, 1); /* returned (cheaper than dropping the arguments) */
  return 1;
}

int gll_stream_fill(lua_State *L) {
  gl_stream *s = gll_check_stream(L, 1);
  gl_slice *x = gll_test_slice(L, 2);
  if (!x) {
    if (gll_test_hostbuf(L, 2)) return luaL_error(L, "s:fill: argument #1 is a host buffer; fill it with h:fill(value)");
    return luaL_typeerror(L, 2, "gpulua.Slice");
  }
  gl_site site = GL_SITE(L);
  gl_fill_req r = {.call = "s:fill", .s = s, .x = x, .site = &site};
  r.missing = lua_isnone(L, 3);
  if (!r.missing && (r.why = gll_dtype_encode(L, 3, x->dtype, r.value))) r.given = gll_given(L, 3);
  int rc = gl_fill_submit(&r);
  if (rc == GL_REFUSED && r.missing) luaL_checkany(L, 3); /* Lua's own message */
  if (rc == GL_REFUSED) return luaL_error(L, "%s", gl_error_message(s->dev->rt));
  if (rc != 0) return gll_raise(L, s->dev->rt);
  lua_pushvalue(L, 1); /* returned (cheaper than dropping the arguments) */
  return 1;
}
