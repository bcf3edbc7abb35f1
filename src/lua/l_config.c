/*
 * l_config.c -- launch configurations: a cfg table read on each launch
 * ({grid =, block =, shared =}), and gpu.config{...}, the same checked once
 * into an immutable object that a launch copies without reading a table.
 */
#include "l_kernel.h"

#include <stdio.h>
#include <string.h>

#include "ops.h"

static const char *const cfg_fields[] = {"grid", "block", "shared", NULL};

/* A gpu.config: the configuration, and the form each field was given in. */
typedef struct config_ud {
  gl_launch_cfg c;
  int ndims[2]; /* grid's and block's dimensions; 0: given as a number; -1: grid "auto" */
} config_ud;

/* The largest grid or block dimension any device takes (CUDA's grid.x limit);
 * each device's own, smaller limits are checked at the launch (launch.c). */
#define GL_CFG_DIM_MAX 0x7fffffff

/* cfg.<field>, a table whose length `len` is not 1 to 3: say what it must be
 * and what was given; a table of length 0 with a key (as {x = 4, y = 4}) is
 * named by that key. */
static void table_shape_error(lua_State *L, const char *what, int vidx, const char *field, lua_Integer len) {
  const char *hint = "";
  lua_pushnil(L);
  if (len == 0 && lua_next(L, vidx)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) == LUA_TSTRING)
      hint = lua_pushfstring(L, " with key '%s' (the dimensions are a list: {4, 2}, not {x = 4, y = 2})",
                             lua_tostring(L, -1));
    else hint = lua_pushfstring(L, " with key %s", gll_given(L, -1));
  }
  luaL_error(L, "%s: cfg.%s must have 1 to 3 dimensions, a list {x[, y[, z]]} of positive integers, got a table of "
                "length %I%s", what, field, len, hint);
}

/* cfg.<field> (the value at vidx): a number or {x, y, z} of positive
 * integers; returns its dimensions (0: a number). The grid may also be
 * "auto" or absent: grid.x = 0, for the built-ins to choose (launch.c), and
 * -1 returned. */
static int dims(lua_State *L, const char *what, int vidx, const char *field, unsigned out[3]) {
  out[0] = out[1] = out[2] = 1;
  int t = lua_type(L, vidx), grid = field[0] == 'g';
  if (grid && (t == LUA_TNIL || (t == LUA_TSTRING && strcmp(lua_tostring(L, vidx), "auto") == 0))) {
    out[0] = 0;
    return -1;
  }
  if (t == LUA_TNIL) luaL_error(L, "%s: cfg.%s is required (a number or {x, y, z})", what, field);
  if (grid && t != LUA_TNUMBER && t != LUA_TTABLE)
    luaL_error(L, "%s: cfg.grid expected a number, {x, y, z} or \"auto\", got %s", what, gll_given(L, vidx));
  if (t != LUA_TNUMBER && t != LUA_TTABLE)
    luaL_error(L, "%s: cfg.%s expected a number or {x, y, z}, got %s", what, field, gll_given(L, vidx));
  lua_Integer len = t == LUA_TNUMBER ? 1 : luaL_len(L, vidx); /* __len may say anything: no cast before the check */
  if (len < 1 || len > 3) table_shape_error(L, what, vidx, field, len);
  int n = (int)len;
  for (int i = 0; i < n; i++) {
    if (t == LUA_TTABLE) lua_geti(L, vidx, i + 1);
    else lua_pushvalue(L, vidx);
    int ok;
    lua_Integer v = lua_tointegerx(L, -1, &ok);
    const char *axis = t == LUA_TTABLE ? (i == 0 ? ".x" : i == 1 ? ".y" : ".z") : "";
    if (!ok || v < 1)
      luaL_error(L, "%s: cfg.%s%s must be a positive integer, got %s", what, field, axis, gll_given(L, -1));
    if (v > GL_CFG_DIM_MAX)
      luaL_error(L, "%s: cfg.%s%s must be at most %d (no device takes a larger grid or block dimension), got %s",
                 what, field, axis, GL_CFG_DIM_MAX, gll_given(L, -1));
    out[i] = (unsigned)v;
    lua_pop(L, 1);
  }
  return t == LUA_TNUMBER ? 0 : n;
}

/* The cfg table at idx in one pass over its keys (the launch's hot path: no
 * lookup by name), each value into its slot; then the fields in a fixed
 * order, so the first error named does not depend on the table's layout. An
 * unknown key is an error naming it (gll_check_options). */
static void read_cfg(lua_State *L, int idx, const char *what, gl_launch_cfg *c, int ndims[2]) {
  int base = lua_gettop(L);
  lua_settop(L, base + 3); /* slots: grid, block, shared */
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
    int f = strcmp(k, "grid") == 0 ? 0 : strcmp(k, "block") == 0 ? 1 : strcmp(k, "shared") == 0 ? 2 : -1;
    if (f < 0) {
      lua_settop(L, base);
      char prefix[32];
      snprintf(prefix, sizeof prefix, "%s: cfg", what);
      gll_check_options(L, idx, prefix, cfg_fields); /* raises */
    }
    lua_replace(L, base + 1 + f); /* the key stays on top for lua_next */
  }
  ndims[0] = dims(L, what, base + 1, "grid", c->grid);
  ndims[1] = dims(L, what, base + 2, "block", c->block);
  c->shared = 0;
  c->id = 0;
  if (!lua_isnil(L, base + 3)) {
    int ok;
    lua_Integer shared = lua_tointegerx(L, base + 3, &ok);
    if (!ok || shared < 0 || shared > 0x7fffffff)
      luaL_error(L, "%s: cfg.shared must be a non-negative integer (bytes), got %s", what, gll_given(L, base + 3));
    c->shared = (unsigned)shared;
  }
  lua_settop(L, base);
}

const gl_launch_cfg *gll_launch_cfg_arg(lua_State *L, int idx, gl_launch_cfg *read) {
  config_ud *u = gll_testudata(L, idx, &gll_config_type); /* the prepared form first: the fast one */
  if (u) return &u->c;
  if (lua_type(L, idx) == LUA_TTABLE) {
    int ndims[2];
    read_cfg(L, idx, "s:launch", read, ndims);
    return read;
  }
  luaL_error(L, "s:launch: cfg expected a table {grid =, block =, shared =} or a gpu.config, got %s", gll_given(L, idx));
  return NULL;
}

int gll_is_config(lua_State *L, int idx) { return gll_testudata(L, idx, &gll_config_type) != NULL; }

/* gpu.config{grid =, block =, shared =} */
int gll_gpu_config(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  config_ud *u = gll_newudata(L, sizeof *u, 0, &gll_config_type);
  read_cfg(L, 1, "gpu.config", &u->c, u->ndims);
  u->c.id = ++gll_rt(L)->configs;
  return 1;
}

static void push_dims(lua_State *L, const unsigned d[3], int n) {
  if (n < 0) {
    lua_pushliteral(L, "auto");
    return;
  }
  if (n == 0) {
    lua_pushinteger(L, d[0]);
    return;
  }
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushinteger(L, d[i]);
    lua_seti(L, -2, i + 1);
  }
}

/* the fields, as given (a new table for a dimension given as one) */
int gll_config_field(lua_State *L) {
  config_ud *u = gll_checkudata(L, 1, &gll_config_type);
  const char *k = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : "";
  if (strcmp(k, "grid") == 0) push_dims(L, u->c.grid, u->ndims[0]);
  else if (strcmp(k, "block") == 0) push_dims(L, u->c.block, u->ndims[1]);
  else if (strcmp(k, "shared") == 0) lua_pushinteger(L, u->c.shared);
  else return 0;
  return 1;
}

int gll_config_newindex(lua_State *L) {
  return luaL_error(L, "gpulua.Config is immutable: make another with gpu.config{...} (cannot set '%s')",
                    luaL_tolstring(L, 2, NULL));
}

int gll_config_tostring(lua_State *L) {
  config_ud *u = gll_checkudata(L, 1, &gll_config_type);
  const gl_launch_cfg *c = &u->c;
  if (c->grid[0] == 0)
    lua_pushfstring(L, "gpulua.Config(grid auto, block %Ix%Ix%I, shared %I)", (lua_Integer)c->block[0],
                    (lua_Integer)c->block[1], (lua_Integer)c->block[2], (lua_Integer)c->shared);
  else
    lua_pushfstring(L, "gpulua.Config(grid %Ix%Ix%I, block %Ix%Ix%I, shared %I)", (lua_Integer)c->grid[0],
                    (lua_Integer)c->grid[1], (lua_Integer)c->grid[2], (lua_Integer)c->block[0],
                    (lua_Integer)c->block[1], (lua_Integer)c->block[2], (lua_Integer)c->shared);
  return 1;
}
