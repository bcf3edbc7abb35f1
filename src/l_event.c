/*
 * l_event.c -- events: recorded on a stream with s:record{timing = bool};
 * sync, query, elapsed.
 */
#include "core.h"
#include "checker.h"

#include <stdlib.h>
#include <string.h>

/* Events no longer needed (collected Event objects, finished trace records)
 * are kept for reuse: creating a CUDA event costs more than recording one. */
CUresult gl_event_take(gl_device *d, int timing, CUevent *ev) {
  if (d->npool[timing]) {
    *ev = d->event_pool[timing][--d->npool[timing]];
    return CUDA_SUCCESS;
  }
  gl_set_ctx(d);
  return gl_drv.cuEventCreate(ev, timing ? 0 : CU_EVENT_DISABLE_TIMING);
}

void gl_event_give(gl_device *d, CUevent ev, int timing) {
  if (d->npool[timing] == d->cappool[timing]) {
    int cap = d->cappool[timing] ? 2 * d->cappool[timing] : 32;
    CUevent *p = cap <= 4096 ? realloc(d->event_pool[timing], (size_t)cap * sizeof *p) : NULL;
    if (!p) {
      gl_set_ctx(d);
      gl_drv.cuEventDestroy(ev);
      return;
    }
    d->event_pool[timing] = p;
    d->cappool[timing] = cap;
  }
  d->event_pool[timing][d->npool[timing]++] = ev;
}

void gl_event_pool_clear(gl_device *d) {
  gl_set_ctx(d);
  for (int t = 0; t < 2; t++) {
    for (int i = 0; i < d->npool[t]; i++) gl_drv.cuEventDestroy(d->event_pool[t][i]);
    free(d->event_pool[t]);
    d->event_pool[t] = NULL;
    d->npool[t] = d->cappool[t] = 0;
  }
}

void gl_event_new(lua_State *L, gl_stream *s, int timing) {
  gl_event *e = lua_newuserdatauv(L, sizeof *e, 0);
  memset(e, 0, sizeof *e);
  gl_check(L, s->dev, gl_event_take(s->dev, timing != 0, &e->ev), "cuEventCreate");
  gl_set_ctx(s->dev);
  gl_setmetatable(L, GL_EVENT_MT); /* from here on __gc destroys it */
  e->s = s;
  gl_stream_ref(s);
  e->seq = s->seq;
  e->timing = timing;
  e->snap = gl_clock_snapshot(s, &e->snap_gen, &e->nsnap);
  GL_CALL(L, s->dev, cuEventRecord, e->ev, s->cu);
}

static gl_event *check_event(lua_State *L, int idx) {
  gl_event *e = gl_testudata(L, idx, GL_EVENT_MT);
  if (!e) luaL_typeerror(L, idx, "gpulua event");
  if (!e->ev) luaL_error(L, "gpulua event has been released");
  gl_check_poison(L, e->s->dev);
  return e;
}

static void reached(gl_event *e) {
  if (e->snap) gl_clock_host_reached_snapshot(e->s->dev->rt, e->snap, e->snap_gen, e->nsnap);
  else if (e->s->done_seq < e->seq) e->s->done_seq = e->seq;
}

static int e_sync(lua_State *L) {
  gl_event *e = check_event(L, 1);
  GL_CALL(L, e->s->dev, cuEventSynchronize, e->ev);
  reached(e);
  lua_settop(L, 1);
  return 1;
}

static int e_query(lua_State *L) {
  gl_event *e = check_event(L, 1);
  CUresult r = gl_drv.cuEventQuery(e->ev);
  if (r == CUDA_ERROR_NOT_READY) {
    lua_pushboolean(L, 0);
    return 1;
  }
  gl_check(L, e->s->dev, r, "cuEventQuery");
  reached(e);
  lua_pushboolean(L, 1);
  return 1;
}

/* e:elapsed(later) -> milliseconds from e to later; waits for both. */
static int e_elapsed(lua_State *L) {
  gl_event *a = check_event(L, 1);
  gl_event *b = check_event(L, 2);
  if (!a->timing || !b->timing)
    return luaL_error(L, "event:elapsed: both events must be recorded with timing = true (%s was not)",
                      !a->timing ? "the first" : "the second");
  GL_CALL(L, a->s->dev, cuEventSynchronize, a->ev);
  GL_CALL(L, b->s->dev, cuEventSynchronize, b->ev);
  reached(a);
  reached(b);
  float ms = 0;
  GL_CALL(L, a->s->dev, cuEventElapsedTime, &ms, a->ev, b->ev);
  lua_pushnumber(L, ms);
  return 1;
}

static int e_gc(lua_State *L) {
  gl_event *e = gl_checkudata(L, 1, GL_EVENT_MT);
  if (e->ev && e->s && e->s->dev->opened) gl_event_give(e->s->dev, e->ev, e->timing != 0);
  e->ev = NULL;
  if (e->s) gl_stream_unref(e->s);
  e->s = NULL;
  free(e->snap);
  free(e->snap_gen);
  e->snap = NULL;
  e->snap_gen = NULL;
  return 0;
}

static int e_tostring(lua_State *L) {
  gl_event *e = gl_checkudata(L, 1, GL_EVENT_MT);
  if (!e->s) lua_pushliteral(L, "gpulua.Event (released)");
  else lua_pushfstring(L, "gpulua.Event(on '%s' of device %d%s)", e->s->name, e->s->dev->ordinal,
                       e->timing ? ", timing" : "");
  return 1;
}

void gl_open_event(lua_State *L) {
  if (!gl_newmetatable(L, GL_EVENT_MT)) {
    lua_pop(L, 1);
    return;
  }
  static const luaL_Reg methods[] = {
    {"sync", e_sync}, {"query", e_query}, {"elapsed", e_elapsed}, {NULL, NULL}};
  luaL_newlib(L, methods);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, e_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, e_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
}
