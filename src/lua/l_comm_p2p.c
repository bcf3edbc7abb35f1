/*
 * l_comm_p2p.c -- comm:send, comm:recv, comm:all_to_all and comm:barrier
 * (core/comm.h's point to point calls). With one rank in this process a call
 * takes a slice (and a peer); with several, a list with one entry per rank of
 * this process (false: that rank takes no part) and a list of peers.
 */
#include "bindings.h"

#include <string.h>

#include "comm.h"

typedef struct comm_ud {
  gl_comm *c;
} comm_ud;

static gl_comm *check_comm(lua_State *L) {
  comm_ud *u = gll_checkudata(L, 1, &gll_comm_type);
  if (!u->c) luaL_error(L, "gpulua.Comm has been released");
  GL_NOT_IN_HOST_KERNEL(L, "comm:");
  return u->c;
}

/* n slices at idx: a slice (one rank here), or a list (false: no part, when allow_none) */
static void slices(lua_State *L, int idx, const char *what, const char *role, int n, int allow_none, gl_slice **out) {
  gl_slice *one = gll_test_slice(L, idx);
  if (one && n == 1) {
    out[0] = one;
    return;
  }
  if (lua_type(L, idx) != LUA_TTABLE)
    luaL_error(L, "%s: %s expected %s list of slices, one per rank of this process (%d), got %s", what, role,
               n == 1 ? "a slice or a" : "a", n, gll_given(L, idx));
  if ((int)lua_rawlen(L, idx) != n)
    luaL_error(L, "%s: %s has %d entr%s, but the communicator has %d rank%s in this process", what, role,
               (int)lua_rawlen(L, idx), lua_rawlen(L, idx) == 1 ? "y" : "ies", n, n == 1 ? "" : "s");
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, idx, i + 1);
    out[i] = allow_none && lua_toboolean(L, -1) == 0 && !lua_isnil(L, -1) ? NULL : gll_test_slice(L, -1);
    if (!out[i] && !(allow_none && lua_type(L, -1) == LUA_TBOOLEAN))
      luaL_error(L, "%s: %s entry %d expected a slice%s, got %s", what, role, i + 1, allow_none ? " or false" : "",
                 gll_given(L, -1));
    lua_pop(L, 1);
  }
}

static int peer_value(lua_State *L, int idx, const char *what, const char *role) {
  int ok;
  lua_Integer p = lua_tointegerx(L, idx, &ok);
  if (!ok || lua_type(L, idx) != LUA_TNUMBER)
    luaL_error(L, "%s: %s expected an integer rank, got %s", what, role, gll_given(L, idx));
  return p < -1 || p > 1 << 20 ? -1 : (int)p;
}

/* opts.stream (one rank here) or opts.streams (a list, one per rank, as
 * l_comm.c's collectives take it): default each device's main stream */
static void streams_of(lua_State *L, int opts, const char *what, gl_comm *c, gl_stream **out) {
  gl_stream *one = NULL;
  int listed = 0;
  if (opts) {
    if (lua_getfield(L, opts, "stream") != LUA_TNIL) {
      if (c->n != 1 || !gll_testudata(L, -1, &gll_stream_type))
        luaL_error(L, "%s: option 'stream' expected a stream (one rank in this process; with several, 'streams'), "
                      "got %s", what, gll_given(L, -1));
      one = gll_check_stream(L, lua_gettop(L));
    }
    listed = lua_getfield(L, opts, "streams") != LUA_TNIL;
    lua_pop(L, 2);
  }
  gll_comm_stream_list(L, opts, what, c, out);
  if (one && !listed) out[0] = one;
}

static const char HOLD[] = "gpulua.comm_p2p_hold"; /* comm -> the slices of its waiting parts (weak keys) */

static void hold(lua_State *L, gl_comm *c) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, HOLD) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_newtable(L);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, HOLD);
  }
  lua_pushvalue(L, 1);
  if (c->np2p == 0) {
    lua_pushnil(L);
    lua_rawset(L, -3);
  } else {
    if (lua_rawget(L, -2) != LUA_TTABLE) {
      lua_pop(L, 1);
      lua_newtable(L);
      lua_pushvalue(L, 1);
      lua_pushvalue(L, -2);
      lua_rawset(L, -4);
    }
    lua_pushvalue(L, 2);
    lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

static int p2p(lua_State *L, int is_send, const char *what) {
  static const char *const keys[] = {"stream", "streams", NULL};
  gl_comm *c = check_comm(L);
  int opts = lua_isnoneornil(L, 4) ? 0 : 4;
  if (opts) gll_check_options(L, opts, what, keys);
  gl_slice *x[GL_MAX_LOCAL_RANKS];
  int peer[GL_MAX_LOCAL_RANKS];
  gl_stream *streams[GL_MAX_LOCAL_RANKS];
  slices(L, 2, what, is_send ? "send" : "recv", c->n, 1, x);
  if (lua_type(L, 3) == LUA_TTABLE) {
    if ((int)lua_rawlen(L, 3) != c->n)
      luaL_error(L, "%s: peer has %d entries, but the communicator has %d rank%s in this process", what,
                 (int)lua_rawlen(L, 3), c->n, c->n == 1 ? "" : "s");
    for (int i = 0; i < c->n; i++) {
      lua_rawgeti(L, 3, i + 1);
      char role[32];
      snprintf(role, sizeof role, "peer entry %d", i + 1);
      peer[i] = x[i] ? peer_value(L, -1, what, role) : 0;
      lua_pop(L, 1);
    }
  } else {
    if (c->n != 1) luaL_error(L, "%s: peer expected a list of ranks, one per rank of this process (%d), got %s", what,
                              c->n, gll_given(L, 3));
    peer[0] = peer_value(L, 3, what, "peer");
  }
  streams_of(L, opts, what, c, streams);
  gl_site site = GL_SITE(L);
  gl_p2p_req k = {what, c, is_send, x, peer, streams, &site};
  int rc = gl_comm_p2p(&k);
  hold(L, c);
  if (rc != 0) return gll_raise(L, c->rt);
  lua_pushvalue(L, 1);
  return 1;
}

int gll_comm_send(lua_State *L) { return p2p(L, 1, "comm:send"); }
int gll_comm_recv(lua_State *L) { return p2p(L, 0, "comm:recv"); }

int gll_comm_all_to_all(lua_State *L) {
  static const char *const keys[] = {"stream", "streams", NULL};
  const char *what = "comm:all_to_all";
  gl_comm *c = check_comm(L);
  int opts = lua_isnoneornil(L, 4) ? 0 : 4;
  if (opts) gll_check_options(L, opts, what, keys);
  gl_slice *send[GL_MAX_LOCAL_RANKS], *recv[GL_MAX_LOCAL_RANKS];
  gl_stream *streams[GL_MAX_LOCAL_RANKS];
  slices(L, 2, what, "send", c->n, 0, send);
  slices(L, 3, what, "recv", c->n, 0, recv);
  streams_of(L, opts, what, c, streams);
  gl_site site = GL_SITE(L);
  if (gl_comm_all_to_all(c, what, send, recv, streams, &site) != 0) return gll_raise(L, c->rt);
  lua_pushvalue(L, 1);
  return 1;
}

int gll_comm_barrier(lua_State *L) {
  gl_comm *c = check_comm(L);
  if (lua_gettop(L) > 1) return luaL_error(L, "comm:barrier: takes no arguments, got %s", gll_given(L, 2));
  gl_site site = GL_SITE(L);
  if (gl_comm_barrier(c, "comm:barrier", &site) != 0) return gll_raise(L, c->rt);
  lua_pushvalue(L, 1);
  return 1;
}
