/*
 * l_event.c -- event userdata: s:record{timing = bool} and s:record(e)
 * (the same event recorded again); sync, query, elapsed. The core event (core/event.h) lives in the userdata.
 */
#include "l_async.h"

#include <string.h>

static const char *const record_options[] = {"timing", NULL};

/* s:record(e): e recorded again on s, returned; nothing is allocated. */
static int rerecord(lua_State *L, gl_stream *s, gl_event *e) {
  if (!e->ev || !e->s) return luaL_argerror(L, 2, "the event has been released");
  gl_site site = GL_SITE(L);
  const char *call = e->timing ? "s:record{timing = true}" : "s:record";
  if (gl_event_rerecord(e, s, call, &site) != 0) return gll_raise(L, s->dev->rt);
  lua_pushvalue(L, 2); /* returned (cheaper than dropping the arguments) */
  return 1;
}

int gll_stream_record(lua_State *L) {
  gl_stream *s = gll_check_stream(L, 1);
  gl_event *old = gll_testudata(L, 2, &gll_event_type);
  if (old) return rerecord(L, s, old);
  if (lua_type(L, 2) == LUA_TUSERDATA)
    return luaL_argerror(L, 2, lua_pushfstring(L, "expected an event to record again or a table of options, got %s",
                                               gll_given(L, 2)));
  int timing = 0;
  if (gll_check_options(L, 2, "s:record", record_options)) {
    lua_getfield(L, 2, "timing");
    if (!lua_isnil(L, -1)) {
      if (!lua_isboolean(L, -1)) luaL_error(L, "s:record: option 'timing' expected a boolean, got %s", gll_given(L, -1));
      timing = lua_toboolean(L, -1);
    }
    lua_pop(L, 1);
  }
  gl_event *e = gll_newudata(L, sizeof *e, 0, &gll_event_type);
  gl_site site = GL_SITE(L);
  const char *call = timing ? "s:record{timing = true}" : "s:record";
  if (gl_event_record(e, s, timing, call, &site) != 0) return gll_raise(L, s->dev->rt);
  return 1;
}

static gl_event *check_event(lua_State *L, int idx) {
  gl_event *e = gll_testudata(L, idx, &gll_event_type);
  if (!e) luaL_typeerror(L, idx, "gpulua.Event");
  if (e->s) GL_NOT_IN_HOST_KERNEL(L, "e:");
  int rc = gl_event_check(e);
  if (rc == -2) luaL_error(L, "gpulua.Event has been released");
  if (rc != 0) gll_raise(L, e->s->dev->rt);
  return e;
}

int gll_event_sync(lua_State *L) {
  gl_event *e = check_event(L, 1);
  gl_site site = GL_SITE(L);
  if (gl_event_sync(e, "e:sync", &site) != 0) return gll_raise(L, e->s->dev->rt);
  gll_safe_point(L);
  lua_settop(L, 1);
  return 1;
}

/* e:await(): in a task, yields until the work e marks finished; elsewhere,
 * e:sync(). Returns e. */
int gll_event_await(lua_State *L) {
  gl_event *e = check_event(L, 1);
  GL_NOT_IN_HOST_KERNEL(L, "e:");
  if (gll_in_task(L)) return gll_task_await_event(L, e, "e:await");
  gl_site site = GL_SITE(L);
  if (gl_event_sync(e, "e:await", &site) != 0) return gll_raise(L, e->s->dev->rt);
  gll_safe_point(L);
  lua_settop(L, 1);
  return 1;
}

int gll_event_query(lua_State *L) {
  gl_event *e = check_event(L, 1);
  gl_site site = GL_SITE(L);
  int done;
  if (gl_event_query(e, &done, "e:query", &site) != 0) return gll_raise(L, e->s->dev->rt);
  if (done) gll_safe_point(L);
  lua_pushboolean(L, done);
  return 1;
}

/* e:elapsed(later) -> milliseconds from e to later; waits for both. */
int gll_event_elapsed(lua_State *L) {
  gl_event *a = check_event(L, 1);
  gl_event *b = check_event(L, 2);
  gl_site site = GL_SITE(L);
  float ms;
  if (gl_event_elapsed(a, b, &ms, "e:elapsed", &site) != 0) return gll_raise(L, a->s->dev->rt);
  lua_pushnumber(L, ms);
  return 1;
}

/* __gc, through gll_release (an event has no method of its own to release it) */
static gl_runtime *e_held(void *o) {
  gl_event *e = o;
  return e->s ? e->s->dev->rt : NULL;
}

static void e_collect(lua_State *L, void *o) {
  (void)L;
  gl_event_release(o);
}

static const gll_release_ops event_release = {.type = &gll_event_type, .held = e_held, .collect = e_collect};

int gll_event_gc(lua_State *L) { return gll_release(L, &event_release, GL_RELEASE_GC); }

int gll_event_tostring(lua_State *L) {
  gl_event *e = gll_checkudata(L, 1, &gll_event_type);
  if (!e->s) lua_pushliteral(L, "gpulua.Event (released)");
  else lua_pushfstring(L, "gpulua.Event(on '%s' of device %d%s)", e->s->name, e->s->dev->ordinal,
                       e->timing ? ", timing" : "");
  return 1;
}
