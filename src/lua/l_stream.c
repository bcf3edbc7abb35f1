/*
 * l_stream.c -- stream userdata: dev:stream{}, s:fork{}, wait, join, sync,
 * query, close (the operations queued on a stream are in l_copy.c,
 * l_launch.c and l_event.c).
 *
 * A stream userdata holds a reference to its core stream (core/stream.h).
 * Closing (s:close(), <close> or __gc: one release function) makes the
 * device's main stream wait for the stream's queued work, then destroys the
 * driver's stream; its work is never lost.
 */
#include "bindings.h"

#include <string.h>

typedef struct {
  gl_stream *s; /* NULL once the finalizer ran */
} stream_ud;

void gll_push_stream(lua_State *L, gl_stream *s) {
  stream_ud *u = gll_newudata(L, sizeof *u, 0, &gll_stream_type);
  u->s = s;
  gl_stream_ref(s);
}

static gl_stream *to_stream(lua_State *L, int idx) {
  stream_ud *u = gll_testudata(L, idx, &gll_stream_type);
  if (!u) luaL_typeerror(L, idx, "gpulua.Stream");
  if (!u->s) luaL_error(L, "gpulua.Stream has been released (its finalizer ran)");
  return u->s;
}

gl_stream *gll_check_stream(lua_State *L, int idx) {
  gl_stream *s = to_stream(L, idx);
  GL_NOT_IN_HOST_KERNEL(L, "s:");
  if (gl_stream_check(s) != 0) gll_raise(L, s->dev->rt);
  return s;
}

gl_stream *gll_opt_stream(lua_State *L, int opts_idx, gl_device *dev, const char *fname) {
  if (lua_isnoneornil(L, opts_idx)) return dev->main;
  lua_getfield(L, opts_idx, "stream");
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return dev->main;
  }
  if (!gll_testudata(L, -1, &gll_stream_type))
    luaL_error(L, "%s: option 'stream' expected a gpulua.Stream, got %s", fname, gll_given(L, -1));
  gl_stream *s = gll_check_stream(L, -1);
  lua_pop(L, 1);
  return s;
}

static const char *const stream_options[] = {"name", "priority", NULL};

/* The option 'priority' of call `what` ("dev:stream"), checked against dev's range. */
static int check_priority(lua_State *L, gl_device *dev, int idx, const char *what) {
  if (lua_isnoneornil(L, idx)) return 0;
  lua_getfield(L, idx, "priority");
  int prio = 0;
  if (!lua_isnil(L, -1)) {
    int ok;
    lua_Integer p = lua_tointegerx(L, -1, &ok);
    if (!ok)
      luaL_error(L, "%s: option 'priority' expected an integer, got %s", what, gll_given(L, -1));
    if (p > dev->prio_least || p < dev->prio_greatest)
      luaL_error(L, "%s: option 'priority' must be from %d (highest) to %d (lowest) on device %d, got %I", what,
                 dev->prio_greatest, dev->prio_least, dev->ordinal, (LUAI_UACINT)p);
    prio = (int)p;
  }
  lua_pop(L, 1);
  return prio;
}


/* dev:stream{name =, priority =} */
int gll_dev_stream(lua_State *L) {
  gl_device *dev = gll_check_device(L, 1);
  if (gl_device_check(dev) != 0) return gll_raise(L, dev->rt);
  gll_check_options(L, 2, "dev:stream", stream_options);
  const char *name = gll_opt_name(L, 2, "dev:stream", GL_STREAM_NAME_MAX);
  int prio = check_priority(L, dev, 2, "dev:stream");
  gl_stream *s;
  gl_site site = GL_SITE(L);
  if (gl_stream_new(dev, name, prio, 0, &s, &site) != 0) return gll_raise(L, dev->rt);
  gll_push_stream(L, s);
  gl_stream_unref(s); /* the userdata holds it now */
  return 1;
}

int gll_stream_fork(lua_State *L) {
  gl_stream *s = gll_check_stream(L, 1);
  gll_check_options(L, 2, "s:fork", stream_options);
  const char *name = gll_opt_name(L, 2, "s:fork", GL_STREAM_NAME_MAX);
  int prio = check_priority(L, s->dev, 2, "s:fork");
  gl_stream *t;
  gl_site site = GL_SITE(L);
  int rc = gl_stream_fork(s, name, prio, &t, "s:fork", &site);
  if (t) {
    gll_push_stream(L, t);
    gl_stream_unref(t);
  }
  if (rc != 0) return gll_raise(L, s->dev->rt);
  return 1;
}

int gll_stream_wait(lua_State *L) {
  gl_stream *s = gll_check_stream(L, 1);
  gl_event *e = gll_testudata(L, 2, &gll_event_type);
  if (!e) return luaL_typeerror(L, 2, "gpulua.Event");
  if (!e->ev || !e->s) return luaL_argerror(L, 2, "the event has been released");
  gl_site site = GL_SITE(L);
  if (gl_stream_wait_event(s, e, "s:wait", &site) != 0) return gll_raise(L, s->dev->rt);
  lua_pushvalue(L, 1); /* returned (cheaper than dropping the arguments) */
  return 1;
}

int gll_stream_join(lua_State *L) {
  gl_stream *s = gll_check_stream(L, 1);
  gl_stream *t = gll_check_stream(L, 2);
  if (t == s) return luaL_argerror(L, 2, "a stream cannot join itself");
  gl_site site = GL_SITE(L);
  if (gl_stream_join(s, t, 0, &site) != 0) return gll_raise(L, s->dev->rt);
  lua_settop(L, 1);
  return 1;
}

int gll_stream_sync(lua_State *L) {
  gl_stream *s = gll_check_stream(L, 1);
  gl_site site = GL_SITE(L);
  if (gl_stream_sync(s, "s:sync", &site) != 0) return gll_raise(L, s->dev->rt);
  gll_safe_point(L);
  lua_settop(L, 1);
  return 1;
}

int gll_stream_query(lua_State *L) {
  gl_stream *s = gll_check_stream(L, 1);
  gl_site site = GL_SITE(L);
  int done;
  if (gl_stream_query(s, &done, "s:query", &site) != 0) return gll_raise(L, s->dev->rt);
  if (done) gll_safe_point(L);
  lua_pushboolean(L, done);
  return 1;
}

/* s:close(), __close and __gc, through gll_release */
static gl_runtime *s_held(void *o) {
  stream_ud *u = o;
  return u->s ? u->s->dev->rt : NULL;
}

static int s_released(lua_State *L, void *o) {
  gl_stream *s = ((stream_ud *)o)->s;
  if (!s || s->cu || s->is_main) return 0;
  lua_pushfstring(L, "stream '%s' of device %d is already closed (closed at %s)", s->name, s->dev->ordinal,
                  gl_loc_text(s->dev->rt, s->closed_at));
  return 1;
}

static int s_close(lua_State *L, void *o, int block) {
  (void)block;
  gl_stream *s = ((stream_ud *)o)->s;
  gl_runtime *rt = s->dev->rt;
  if (s->is_main)
    return luaL_error(L, "stream 'main' of device %d cannot be closed: it lives as long as the device",
                      s->dev->ordinal);
  if (gl_stream_close(s, gll_lua_loc(rt, L), 1) != 0) return gll_raise(L, rt);
  return 0;
}

/* close if still open, then drop the reference */
static void s_collect(lua_State *L, void *o) {
  (void)L;
  stream_ud *u = o;
  gl_stream *s = u->s;
  gl_runtime *rt = s->dev->rt;
  if (s->cu && !s->is_main && s->dev->opened && gl_stream_close(s, gl_intern(rt, "garbage collection"), 0) != 0)
    gl_device_keep_error(s->dev);
  u->s = NULL;
  gl_stream_unref(s);
}

static const gll_release_ops stream_release = {
  .type = &gll_stream_type,
  .call = "s:close",
  .collected = "the stream is closed already",
  .block = "closing a stream (<close>)",
  .held = s_held,
  .released = s_released,
  .close = s_close,
  .collect = s_collect,
};

int gll_stream_release(lua_State *L) { return gll_release(L, &stream_release, gll_release_how(L)); }

int gll_stream_tostring(lua_State *L) {
  stream_ud *u = gll_checkudata(L, 1, &gll_stream_type);
  gl_stream *s = u->s;
  if (!s) lua_pushliteral(L, "gpulua.Stream (released)");
  else {
    gl_buf d = GL_BUF_INIT;
    gl_stream_describe(s, &d);
    lua_pushfstring(L, "gpulua.Stream(%s)", gl_buf_str(&d) + strlen("stream "));
    gl_buf_free(&d);
  }
  return 1;
}

int gll_stream_field(lua_State *L) {
  stream_ud *u = gll_checkudata(L, 1, &gll_stream_type);
  const char *k = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : "";
  int name = strcmp(k, "name") == 0, device = strcmp(k, "device") == 0;
  if (!name && !device) return 0;
  if (!u->s) lua_pushnil(L); /* released: its finalizer ran */
  else if (name) lua_pushstring(L, u->s->name);
  else gll_push_device(L, u->s->dev);
  return 1;
}
