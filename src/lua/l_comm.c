/*
 * l_comm.c -- NCCL communicators from Lua (core/comm.h): gpu.comm{devices =}
 * and gpu.comm{rank =, size =, id_file =, device =}; the collectives
 * comm:all_reduce, broadcast, reduce, all_gather, reduce_scatter, each over
 * lists with one entry per rank of this process; comm:close (also <close>
 * and __gc); the fields size, devices.
 */
#include "bindings.h"

#include <string.h>

#include "comm.h"

typedef struct comm_ud {
  gl_comm *c;     /* NULL once released */
  int local_rank; /* gpu.comm{}: the launcher's local rank; else -1 */
} comm_ud;

static int field_nil(lua_State *L, int t, const char *k) {
  int nil = lua_getfield(L, t, k) == LUA_TNIL;
  lua_pop(L, 1);
  return nil;
}

static gl_comm *check_comm(lua_State *L) {
  comm_ud *u = gll_checkudata(L, 1, &gll_comm_type);
  if (!u->c) luaL_error(L, "gpulua.Comm has been released");
  GL_NOT_IN_HOST_KERNEL(L, "comm:");
  return u->c;
}

/* A device option: an ordinal or a device. */
static gl_device *device_value(lua_State *L, int idx, const char *what) {
  int isint;
  lua_Integer i = lua_tointegerx(L, idx, &isint);
  if (isint && lua_type(L, idx) == LUA_TNUMBER) {
    gl_runtime *rt = gll_rt(L);
    if (i < 0 || i >= rt->ndev)
      luaL_error(L, "gpu.comm: %s: device %d does not exist (%d device%s)", what, (int)i, rt->ndev,
                 rt->ndev == 1 ? "" : "s");
    return gll_open_device(L, (int)i);
  }
  if (lua_type(L, idx) == LUA_TUSERDATA) return gll_check_device(L, idx);
  luaL_error(L, "gpu.comm: %s expected a device or a device ordinal, got %s", what, gll_given(L, idx));
  return NULL;
}

static const char *const comm_keys[] = {"devices", "rank", "size", "id_file", "device", "timeout", "store", NULL};

/* gpu.comm{devices = {...}} or gpu.comm{rank =, size =, id_file =, device =, timeout =} */
int gll_gpu_comm(lua_State *L) {
  gl_runtime *rt = gll_rt(L);
  GL_NOT_IN_HOST_KERNEL(L, "gpu.");
  if (lua_type(L, 1) != LUA_TTABLE) return luaL_error(L, "gpu.comm: expected a table of options, got %s", gll_given(L, 1));
  gll_check_options(L, 1, "gpu.comm", comm_keys);
  lua_settop(L, 1);
  comm_ud *u = gll_newudata(L, sizeof *u, 1, &gll_comm_type); /* at 2; uservalue 1: the devices list */
  gl_site site = GL_SITE(L);
  u->local_rank = -1;
  int has_devices = lua_getfield(L, 1, "devices") != LUA_TNIL; /* at 3 */
  if (!has_devices && field_nil(L, 1, "rank") && field_nil(L, 1, "size")) {
    lua_settop(L, 2); /* gpu.comm{}: the launcher's job */
    u->c = gll_comm_job_open(L, &u->local_rank);
    lua_setiuservalue(L, 2, 1);
    return 1;
  }
  if (!field_nil(L, 1, "store"))
    return luaL_error(L, "gpu.comm: option 'store' is for gpu.comm{} (the launcher's job), not with '%s'",
                      has_devices ? "devices" : "rank");
  if (has_devices) {
    static const char *const others[] = {"rank", "size", "id_file", "device"};
    for (int i = 0; i < 4; i++) {
      if (lua_getfield(L, 1, others[i]) != LUA_TNIL)
        return luaL_error(L, "gpu.comm: give 'devices' (ranks in this process) or 'rank', 'size', 'id_file' and "
                             "'device' (one rank per process), not both ('%s' given with 'devices')",
                          others[i]);
      lua_pop(L, 1);
    }
    if (lua_type(L, 3) != LUA_TTABLE || lua_rawlen(L, 3) == 0)
      return luaL_error(L, "gpu.comm: option 'devices' expected a non-empty list of devices or ordinals, got %s",
                        gll_given(L, 3));
    int n = (int)lua_rawlen(L, 3);
    if (n > GL_MAX_LOCAL_RANKS) return luaL_error(L, "gpu.comm: more than %d devices", GL_MAX_LOCAL_RANKS);
    gl_device *devs[GL_MAX_LOCAL_RANKS];
    lua_createtable(L, n, 0); /* at 4: comm.devices */
    for (int i = 0; i < n; i++) {
      lua_rawgeti(L, 3, i + 1);
      char what[48];
      snprintf(what, sizeof what, "option 'devices' entry %d", i + 1);
      devs[i] = device_value(L, -1, what);
      lua_pop(L, 1);
      gll_push_device(L, devs[i]);
      lua_rawseti(L, 4, i + 1);
    }
    if (gl_comm_new_local(rt, "gpu.comm", n, devs, &site, &u->c) != 0) return gll_raise(L, rt);
  } else {
    static const char *const need[] = {"rank", "size", "id_file", "device"};
    for (int i = 0; i < 4; i++)
      if (lua_getfield(L, 1, need[i]) == LUA_TNIL)
        return luaL_error(L, "gpu.comm: give 'devices' (ranks in this process) or 'rank', 'size', 'id_file' and "
                             "'device' (one rank per process): '%s' is missing",
                          need[i]);
    /* rank at 4, size at 5, id_file at 6, device at 7 */
    int ok1, ok2;
    lua_Integer rank = lua_tointegerx(L, 4, &ok1), size = lua_tointegerx(L, 5, &ok2);
    if (!ok2 || size < 1 || size > 1 << 20)
      return luaL_error(L, "gpu.comm: option 'size' expected an integer >= 1, got %s", gll_given(L, 5));
    if (!ok1 || rank < 0 || rank >= size)
      return luaL_error(L, "gpu.comm: option 'rank' expected an integer from 0 to size - 1 = %d, got %s", (int)size - 1,
                        gll_given(L, 4));
    if (lua_type(L, 6) != LUA_TSTRING || lua_rawlen(L, 6) == 0)
      return luaL_error(L, "gpu.comm: option 'id_file' expected a file path, got %s", gll_given(L, 6));
    gl_device *dev = device_value(L, 7, "option 'device'");
    double timeout = 60;
    if (lua_getfield(L, 1, "timeout") != LUA_TNIL) { /* at 8 */
      if (lua_type(L, 8) != LUA_TNUMBER || !(lua_tonumber(L, 8) > 0))
        return luaL_error(L, "gpu.comm: option 'timeout' expected a number of seconds > 0, got %s", gll_given(L, 8));
      timeout = lua_tonumber(L, 8);
    }
    lua_createtable(L, 1, 0);
    gll_push_device(L, dev);
    lua_rawseti(L, -2, 1);
    lua_insert(L, 4); /* comm.devices at 4 */
    if (gl_comm_new_rank(rt, "gpu.comm", (int)rank, (int)size, lua_tostring(L, 7), timeout, dev, &site, &u->c) != 0)
      return gll_raise(L, rt);
  }
  lua_pushvalue(L, 4);
  lua_setiuservalue(L, 2, 1);
  lua_settop(L, 2);
  return 1;
}

/* The list at idx (or, for one rank, a single slice): n slices, one per rank. */
static void slice_list(lua_State *L, int idx, const char *what, const char *role, int n, gl_slice **out) {
  gl_slice *one = gll_test_slice(L, idx);
  if (one && n == 1) {
    out[0] = one;
    return;
  }
  if (lua_type(L, idx) != LUA_TTABLE)
    luaL_error(L, "%s: %s expected a list of slices, one per rank of this process (%d), got %s", what, role, n,
               gll_given(L, idx));
  if ((int)lua_rawlen(L, idx) != n)
    luaL_error(L, "%s: %s has %d entr%s, but the communicator has %d rank%s in this process", what, role,
               (int)lua_rawlen(L, idx), lua_rawlen(L, idx) == 1 ? "y" : "ies", n, n == 1 ? "" : "s");
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, idx, i + 1);
    out[i] = gll_test_slice(L, -1);
    if (!out[i]) luaL_error(L, "%s: %s entry %d expected a slice, got %s", what, role, i + 1, gll_given(L, -1));
    lua_pop(L, 1);
  }
}

/* opts.streams (default each device's main stream) */
void gll_comm_stream_list(lua_State *L, int opts, const char *what, gl_comm *c, gl_stream **out) {
  if (opts == 0 || lua_getfield(L, opts, "streams") == LUA_TNIL) {
    if (opts) lua_pop(L, 1);
    for (int i = 0; i < c->n; i++) out[i] = c->devs[i]->main;
    return;
  }
  int idx = lua_gettop(L);
  if (lua_type(L, idx) != LUA_TTABLE || (int)lua_rawlen(L, idx) != c->n)
    luaL_error(L, "%s: option 'streams' expected a list of %d stream%s, one per rank of this process, got %s", what,
               c->n, c->n == 1 ? "" : "s", gll_given(L, idx));
  for (int i = 0; i < c->n; i++) {
    lua_rawgeti(L, idx, i + 1);
    if (!gll_testudata(L, -1, &gll_stream_type))
      luaL_error(L, "%s: option 'streams' entry %d expected a stream, got %s", what, i + 1, gll_given(L, -1));
    out[i] = gll_check_stream(L, lua_gettop(L));
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

static int op_option(lua_State *L, int opts, const char *what) {
  if (opts == 0 || lua_getfield(L, opts, "op") == LUA_TNIL) {
    if (opts) lua_pop(L, 1);
    return 0; /* sum */
  }
  const char *name = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
  int op = name ? gl_comm_op_parse(name) : -1;
  if (op < 0 && name)
    luaL_error(L, "%s: option 'op' expected one of sum, prod, max, min, avg, got '%s'", what, name);
  if (op < 0)
    luaL_error(L, "%s: option 'op' expected one of sum, prod, max, min, avg, got %s", what, gll_given(L, -1));
  lua_pop(L, 1);
  return op;
}

static int root_option(lua_State *L, int opts, const char *what) {
  if (opts == 0 || lua_getfield(L, opts, "root") == LUA_TNIL) {
    if (opts) lua_pop(L, 1);
    return 0;
  }
  int ok;
  lua_Integer r = lua_tointegerx(L, -1, &ok);
  if (!ok || lua_type(L, -1) != LUA_TNUMBER)
    luaL_error(L, "%s: option 'root' expected an integer rank, got %s", what, gll_given(L, -1));
  lua_pop(L, 1);
  return r < -1 || r > 1 << 20 ? -1 : (int)r;
}

/* The shared body: args at 2 (and 3 for all_gather/reduce_scatter), options
 * last; read into a gl_coll_req, then one core call checks the rest and
 * queues it. */
static int collective(lua_State *L, gl_coll_kind kind, const char *what, int two_lists,
                      const char *const *keys) {
  gl_comm *c = check_comm(L);
  int opts_at = two_lists ? 4 : 3;
  int opts = lua_isnoneornil(L, opts_at) ? 0 : opts_at;
  if (opts) gll_check_options(L, opts, what, keys);
  gl_slice *send[GL_MAX_LOCAL_RANKS], *recv[GL_MAX_LOCAL_RANKS];
  gl_stream *streams[GL_MAX_LOCAL_RANKS];
  slice_list(L, 2, what, two_lists ? "send" : kind == GL_COLL_BROADCAST ? "the buffers" : "send", c->n, send);
  if (two_lists) {
    slice_list(L, 3, what, "recv", c->n, recv);
  } else if (opts && lua_getfield(L, opts, "recv") != LUA_TNIL) {
    slice_list(L, lua_gettop(L), what, "option 'recv'", c->n, recv);
    lua_pop(L, 1);
  } else {
    if (opts) lua_pop(L, 1);
    memcpy(recv, send, sizeof(gl_slice *) * (size_t)c->n); /* in place */
  }
  gll_comm_stream_list(L, opts, what, c, streams);
  gl_site site = GL_SITE(L);
  gl_coll_req k = {.call = what, .comm = c, .kind = kind, .send = send, .recv = recv, .streams = streams, .site = &site};
  k.op = op_option(L, opts, what);
  k.root = root_option(L, opts, what);
  if (gl_comm_collective(&k) != 0) return gll_raise(L, c->rt);
  lua_pushvalue(L, 1);
  return 1;
}

int gll_comm_all_reduce(lua_State *L) {
  static const char *const keys[] = {"op", "recv", "streams", NULL};
  return collective(L, GL_COLL_ALL_REDUCE, "comm:all_reduce", 0, keys);
}
int gll_comm_broadcast(lua_State *L) {
  static const char *const keys[] = {"root", "recv", "streams", NULL};
  return collective(L, GL_COLL_BROADCAST, "comm:broadcast", 0, keys);
}
int gll_comm_reduce(lua_State *L) {
  static const char *const keys[] = {"root", "op", "recv", "streams", NULL};
  return collective(L, GL_COLL_REDUCE, "comm:reduce", 0, keys);
}
int gll_comm_all_gather(lua_State *L) {
  static const char *const keys[] = {"streams", NULL};
  return collective(L, GL_COLL_ALL_GATHER, "comm:all_gather", 1, keys);
}
int gll_comm_reduce_scatter(lua_State *L) {
  static const char *const keys[] = {"op", "streams", NULL};
  return collective(L, GL_COLL_REDUCE_SCATTER, "comm:reduce_scatter", 1, keys);
}

/* comm:close(), __close and __gc, through gll_release */
static gl_runtime *c_held(void *o) {
  comm_ud *u = o;
  return u->c ? u->c->rt : NULL;
}

static int c_released(lua_State *L, void *o) {
  gl_comm *c = ((comm_ud *)o)->c;
  if (!c || !c->closed) return 0;
  lua_pushfstring(L, "the communicator was closed already (at %s)", gl_loc_text(c->rt, c->closed_at));
  return 1;
}

static int c_close(lua_State *L, void *o, int block) {
  (void)block;
  gl_comm *c = ((comm_ud *)o)->c;
  gl_site site = GL_SITE(L);
  if (gl_comm_close(c, "comm:close", gl_site_loc(c->rt, &site)) != 0) return gll_raise(L, c->rt);
  return 0;
}

static void c_collect(lua_State *L, void *o) {
  (void)L;
  comm_ud *u = o;
  gl_comm *c = u->c;
  u->c = NULL;
  gl_comm_release(c);
}

static const gll_release_ops comm_release = {
  .type = &gll_comm_type,
  .call = "comm:close",
  .collected = "the communicator is closed already",
  .block = "closing a communicator (<close>)",
  .allowed = GL_RELEASE_IN_CAPTURE,
  .held = c_held,
  .released = c_released,
  .close = c_close,
  .collect = c_collect,
};

int gll_comm_release(lua_State *L) { return gll_release(L, &comm_release, gll_release_how(L)); }

int gll_comm_field(lua_State *L) {
  comm_ud *u = gll_checkudata(L, 1, &gll_comm_type);
  const char *k = lua_tostring(L, 2);
  if (!k) return 0;
  if (strcmp(k, "size") == 0) {
    if (u->c) lua_pushinteger(L, u->c->size);
    else lua_pushnil(L);
    return 1;
  }
  if (strcmp(k, "devices") == 0) {
    lua_getiuservalue(L, 1, 1);
    return 1;
  }
  int one = u->c && u->c->n == 1; /* rank, device: of a communicator with one rank here */
  if (strcmp(k, "rank") == 0 || strcmp(k, "local_rank") == 0) {
    int v = k[0] == 'r' ? (one ? u->c->first_rank : -1) : (u->c ? u->local_rank : -1);
    if (v >= 0) lua_pushinteger(L, v);
    else lua_pushnil(L);
    return 1;
  }
  if (strcmp(k, "device") == 0) {
    if (one) gll_push_device(L, u->c->devs[0]);
    else lua_pushnil(L);
    return 1;
  }
  return 0;
}

int gll_comm_tostring(lua_State *L) {
  comm_ud *u = gll_checkudata(L, 1, &gll_comm_type);
  if (!u->c) lua_pushliteral(L, "gpulua.Comm (released)");
  else lua_pushfstring(L, "gpulua.Comm(%d rank%s, %d here%s)", u->c->size, u->c->size == 1 ? "" : "s", u->c->n,
                       u->c->closed ? ", closed" : "");
  return 1;
}
