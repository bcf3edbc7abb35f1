/*
 * l_graph.c -- CUDA graphs from Lua (core/graph.h): s:capture(fn, opts),
 * g:launch(s), g:update(fn), g:close() (also <close> and __gc), and the
 * fields name, nodes, device.
 *
 * fn runs in protected mode with the garbage collector stopped: a finalizer
 * that frees memory or closes a stream must not run inside a capture. Any
 * error leaving fn (a refused call, a failed check, the script's own)
 * discards the capture, so the streams are usable again, and is raised
 * again from s:capture unchanged.
 */
#include "bindings.h"

#include <stdio.h>
#include <string.h>

#include "graph.h"

typedef struct graph_ud {
  gl_graph *g;            /* NULL once closed (or the runtime went first) */
  int closed;             /* by g:close() or a <close> variable ... */
  int closed_at;          /* ... there (a location) */
  char name[GL_GRAPH_NAME_MAX + 1]; /* the graph's, for messages once it is closed */
} graph_ud;

static gl_graph *check_graph(lua_State *L, int idx) {
  graph_ud *u = gll_checkudata(L, idx, &gll_graph_type);
  if (!u->g) luaL_error(L, "graph is closed");
  GL_NOT_IN_HOST_KERNEL(L, "g:");
  return u->g;
}

static const char *const capture_options[] = {"name", NULL};

static const char *check_graph_name(lua_State *L, int idx, const char *fname) {
  return gll_check_options(L, idx, fname, capture_options) ? gll_opt_name(L, idx, fname, GL_GRAPH_NAME_MAX) : NULL;
}

/* The function to capture, argument 2 of `fname` (whose form is `usage`):
 * an error names the call and what was given ({stream = s} alone, say). */
static void check_capture_fn(lua_State *L, const char *fname, const char *usage) {
  if (lua_type(L, 2) != LUA_TFUNCTION)
    luaL_error(L, "%s: expected a function to capture, as in %s, got %s", fname, usage, gll_given(L, 2));
}

/* fn(s) in protected mode, the collector stopped; LUA_OK or the status with
 * the error on top. */
static int run_captured(lua_State *L, int fn, int s) {
  int gc = lua_gc(L, LUA_GCISRUNNING);
  if (gc) lua_gc(L, LUA_GCSTOP);
  lua_pushvalue(L, fn);
  lua_pushvalue(L, s);
  int status = lua_pcall(L, 1, 0, 0);
  if (gc) lua_gc(L, LUA_GCRESTART);
  return status;
}

/* The end of a capture failed: its error, raised after the finalizers
 * deferred during the capture have run (which cannot change it). */
static int end_raise(lua_State *L, gl_runtime *rt) {
  gll_push_error(L, rt);
  gll_release_deferred(L);
  return lua_error(L);
}

/* s:capture(fn, opts) -> Graph */
int gll_stream_capture(lua_State *L) {
  gl_stream *s = gll_check_stream(L, 1);
  check_capture_fn(L, "s:capture", "s:capture(function(cs) ... end[, {name =}])");
  const char *name = check_graph_name(L, 3, "s:capture");
  gl_runtime *rt = s->dev->rt;
  graph_ud *u = gll_newudata(L, sizeof *u, 0, &gll_graph_type);
  int at = lua_gettop(L);
  gl_site site = GL_SITE(L);
  gl_graph *g;
  if (gl_graph_begin(s, name, "s:capture", &site, &g) != 0) return gll_raise(L, rt);
  u->g = g;
  g->handle = &u->g;
  int status = run_captured(L, 2, 1);
  if (gl_graph_end(&u->g, status == LUA_OK, "s:capture", &site) != 0) return end_raise(L, rt);
  gll_release_deferred(L);
  if (status != LUA_OK) return lua_error(L); /* the capture is discarded: fn's own error */
  lua_settop(L, at);
  return 1;
}

/* g:launch(s) -> g */
int gll_graph_launch(lua_State *L) {
  gl_graph *g = check_graph(L, 1);
  gl_stream *s = gll_check_stream(L, 2);
  gl_site site = GL_SITE(L);
  if (gl_graph_launch(g, s, "g:launch", &site) != 0) return gll_raise(L, g->dev->rt);
  lua_pushvalue(L, 1); /* returned (cheaper than dropping the arguments) */
  return 1;
}

/* g:update(fn, opts) -> g, updated (true: in place; false: rebuilt). fn gets
 * the stream to capture on: opts.stream, or the device's main stream. */
int gll_graph_update(lua_State *L) {
  gl_graph *g = check_graph(L, 1);
  check_capture_fn(L, "g:update", "g:update(function(cs) ... end[, {stream =}])");
  static const char *const update_options[] = {"stream", NULL};
  gll_check_options(L, 3, "g:update", update_options);
  gl_stream *s = gll_opt_stream(L, 3, g->dev, "g:update");
  gl_runtime *rt = g->dev->rt;
  /* fn gets the stream's own handle (a second handle's finalizer would close it) */
  if (lua_isnoneornil(L, 3) || lua_getfield(L, 3, "stream") == LUA_TNIL) {
    lua_settop(L, 3);
    gll_push_device(L, g->dev);
    lua_getfield(L, -1, "main");
  }
  int sidx = lua_gettop(L);
  gl_site site = GL_SITE(L);
  gl_graph *fresh;
  if (gl_graph_begin_update(g, s, "g:update", &site, &fresh) != 0) return gll_raise(L, rt);
  int status = run_captured(L, 2, sidx);
  int rebuilt = 0;
  if (gl_graph_end_update(g, fresh, status == LUA_OK, &rebuilt, "g:update", &site) != 0) return end_raise(L, rt);
  gll_release_deferred(L);
  if (status != LUA_OK) return lua_error(L);
  lua_settop(L, 1);
  lua_pushboolean(L, !rebuilt);
  return 2;
}

/* g:close(), __close and __gc, through gll_release. Inside a capture the
 * graph is closed at once and its memory let go when the capture ends
 * (gl_graph_close); inside its own g:update, closing it is refused. */
static gl_runtime *g_held(void *o) {
  graph_ud *u = o;
  return u->g ? u->g->dev->rt : NULL;
}

static int g_released(lua_State *L, void *o) {
  graph_ud *u = o;
  if (!u->closed) return 0;
  lua_pushfstring(L, "graph '%s' is already closed (at %s)", u->name, gl_loc_text(gll_rt(L), u->closed_at));
  return 1;
}

static int g_close(lua_State *L, void *o, int block) {
  graph_ud *u = o;
  gl_graph *g = u->g;
  gl_runtime *rt = g->dev->rt;
  gl_site site = GL_SITE(L);
  if (gl_graph_check_close(g, block ? "closing a graph (<close>)" : "g:close", &site) != 0) return gll_raise(L, rt);
  u->closed = 1;
  u->closed_at = gl_site_loc(rt, &site);
  snprintf(u->name, sizeof u->name, "%s", g->name);
  u->g = NULL;
  gl_graph_close(g); /* waits for nothing: destroyed once its replays finish */
  return 0;
}

static void g_collect(lua_State *L, void *o) {
  (void)L;
  graph_ud *u = o;
  gl_graph *g = u->g;
  u->g = NULL;
  gl_graph_close(g);
}

static const gll_release_ops graph_release = {
  .type = &gll_graph_type,
  .call = "g:close",
  .collected = "the graph is closed already",
  .block = "closing a graph (<close>)",
  .allowed = GL_RELEASE_IN_CAPTURE,
  .held = g_held,
  .released = g_released,
  .close = g_close,
  .collect = g_collect,
};

int gll_graph_release(lua_State *L) { return gll_release(L, &graph_release, gll_release_how(L)); }

int gll_graph_field(lua_State *L) {
  graph_ud *u = gll_checkudata(L, 1, &gll_graph_type);
  const char *k = lua_tostring(L, 2);
  if (!k) return 0;
  int name = strcmp(k, "name") == 0, nodes = strcmp(k, "nodes") == 0, device = strcmp(k, "device") == 0,
      launches = strcmp(k, "launches") == 0;
  if (!name && !nodes && !device && !launches) return 0;
  gl_graph *g = u->g;
  if (!g) lua_pushnil(L);
  else if (name) lua_pushstring(L, g->name);
  else if (nodes) lua_pushinteger(L, (lua_Integer)g->nodes);
  else if (launches) lua_pushinteger(L, (lua_Integer)g->launches);
  else gll_push_device(L, g->dev);
  return 1;
}

int gll_graph_tostring(lua_State *L) {
  graph_ud *u = gll_checkudata(L, 1, &gll_graph_type);
  if (!u->g) lua_pushliteral(L, "gpulua.Graph (closed)");
  else lua_pushfstring(L, "gpulua.Graph('%s', %d nodes, device %d)", u->g->name, (int)u->g->nodes,
                       u->g->dev->ordinal);
  return 1;
}
