/*
 * l_blas.c -- s:gemm{...}: the table read into a gl_gemm_req on the stack
 * (every key known, each value of its kind), then one core call that checks
 * the rest and queues it (core/blas.c).
 */
#include "bindings.h"

#include "blas.h"

static const char *const gemm_keys[] = {"a",       "b",       "c",   "m",   "n",     "k",        "alpha",
                                        "beta",    "trans_a", "trans_b", "lda", "ldb", "ldc",      "count",
                                        "stride_a", "stride_b", "stride_c", NULL};

/* The field `key` of the options table at 2, pushed; its type. */
static int field(lua_State *L, const char *key) { return lua_getfield(L, 2, key); }

static gl_slice *slice_field(lua_State *L, const char *key) {
  field(L, key);
  gl_slice *x = gll_test_slice(L, -1);
  if (!x) luaL_error(L, "s:gemm: option '%s' expected a slice, got %s", key, gll_given(L, -1));
  lua_pop(L, 1);
  return x;
}

/* An integer option: `dflt` when absent and not required; at least `min`. */
static int64_t int_field(lua_State *L, const char *key, int required, int64_t dflt, int64_t min) {
  int t = field(L, key);
  if (t == LUA_TNIL && !required) {
    lua_pop(L, 1);
    return dflt;
  }
  int ok;
  lua_Integer v = lua_tointegerx(L, -1, &ok);
  if (!ok || t != LUA_TNUMBER || v < min)
    luaL_error(L, "s:gemm: option '%s' expected %s integer%s, got %s", key, required ? "an" : "an optional",
               min > 0 ? " >= 1" : " >= 0", gll_given(L, -1));
  lua_pop(L, 1);
  return (int64_t)v;
}

static double number_field(lua_State *L, const char *key, double dflt) {
  int t = field(L, key);
  double v = dflt;
  if (t != LUA_TNIL) {
    if (t != LUA_TNUMBER) luaL_error(L, "s:gemm: option '%s' expected a number, got %s", key, gll_given(L, -1));
    v = lua_tonumber(L, -1);
  }
  lua_pop(L, 1);
  return v;
}

static int bool_field(lua_State *L, const char *key) {
  int t = field(L, key);
  if (t != LUA_TNIL && t != LUA_TBOOLEAN)
    luaL_error(L, "s:gemm: option '%s' expected a boolean, got %s", key, gll_given(L, -1));
  int v = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

/* s:gemm{a =, b =, c =, m =, n =, k =, alpha =, beta =, trans_a =, trans_b =,
 *        lda =, ldb =, ldc =, count =, stride_a =, stride_b =, stride_c =} */
int gll_stream_gemm(lua_State *L) {
  gl_stream *s = gll_check_stream(L, 1);
  if (lua_type(L, 2) != LUA_TTABLE)
    return luaL_error(L, "s:gemm: expected a table of options {a =, b =, c =, m =, n =, k =, ...}, got %s",
                      gll_given(L, 2));
  gll_check_options(L, 2, "s:gemm", gemm_keys);
  lua_settop(L, 2);
  gl_site site = GL_SITE(L);
  gl_gemm_req g = {.call = "s:gemm", .s = s, .site = &site};
  g.a = slice_field(L, "a");
  g.b = slice_field(L, "b");
  g.c = slice_field(L, "c");
  g.m = int_field(L, "m", 1, 0, 0);
  g.n = int_field(L, "n", 1, 0, 0);
  g.k = int_field(L, "k", 1, 0, 0);
  g.alpha = number_field(L, "alpha", 1);
  g.beta = number_field(L, "beta", 0);
  g.trans_a = bool_field(L, "trans_a");
  g.trans_b = bool_field(L, "trans_b");
  g.lda = int_field(L, "lda", 0, -1, 1);
  g.ldb = int_field(L, "ldb", 0, -1, 1);
  g.ldc = int_field(L, "ldc", 0, -1, 1);
  g.count = int_field(L, "count", 0, 0, 1);
  g.stride_a = int_field(L, "stride_a", 0, -1, 0);
  g.stride_b = int_field(L, "stride_b", 0, -1, 0);
  g.stride_c = int_field(L, "stride_c", 0, -1, 0);
  if (!g.count) {
    static const char *const strides[] = {"stride_a", "stride_b", "stride_c"};
    for (int i = 0; i < 3; i++)
      if (field(L, strides[i]) != LUA_TNIL)
        return luaL_error(L, "s:gemm: option '%s' needs 'count' (a strided batched gemm)", strides[i]);
      else lua_pop(L, 1);
  }
  if (gl_gemm(&g) != 0) return gll_raise(L, s->dev->rt);
  lua_pushvalue(L, 1);
  return 1;
}
