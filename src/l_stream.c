/*
 * l_stream.c -- streams: creation, record/wait/join/fork, sync/query, close.
 *
 * A stream userdata holds a reference to its C struct. Closing (close(),
 * <close> or __gc: one function serves all three, as in liolib.c) makes the
 * device's main stream wait for the stream's queued work, then destroys the
 * CUDA stream; its work is never lost. The struct lives on while slices or
 * host buffers still name it, so later frees can still be ordered after it.
 */
#include "core.h"
#include "checker.h"
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  gl_stream *s;
} stream_ud;

void gl_stream_ref(gl_stream *s) { s->refs++; }

void gl_stream_unref(gl_stream *s) {
  if (!s || --s->refs > 0) return;
  if (s->dev->opened) {
    gl_set_ctx(s->dev);
    if (s->cu) gl_drv.cuStreamDestroy(s->cu);
    if (s->tail_ev) gl_drv.cuEventDestroy(s->tail_ev);
    if (s->final_ev) gl_drv.cuEventDestroy(s->final_ev);
  }
  if (s->prev_open) {
    *s->prev_open = s->next_open;
    if (s->next_open) s->next_open->prev_open = s->prev_open;
  }
  gl_checker_stream_free(s);
  free(s);
}

const char *gl_stream_name(gl_stream *s) { return s->name; }

gl_stream *gl_stream_new(lua_State *L, gl_device *dev, const char *name, int priority, int is_main) {
  gl_stream *s = calloc(1, sizeof *s);
  if (!s) luaL_error(L, "gpulua: out of host memory");
  s->refs = 1;
  s->dev = dev;
  s->is_main = is_main;
  if (name) snprintf(s->name, sizeof s->name, "%s", name);
  else snprintf(s->name, sizeof s->name, "stream%d", ++dev->stream_counter);
  gl_set_ctx(dev);
  CUresult r = gl_drv.cuStreamCreateWithPriority(&s->cu, CU_STREAM_NON_BLOCKING, priority);
  if (r == CUDA_SUCCESS) r = gl_drv.cuEventCreate(&s->tail_ev, CU_EVENT_DISABLE_TIMING);
  if (r != CUDA_SUCCESS) {
    if (s->cu) gl_drv.cuStreamDestroy(s->cu);
    free(s);
    gl_check(L, dev, r, "cuStreamCreateWithPriority");
  }
  gl_checker_stream_new(dev->rt, s);
  s->next_open = dev->streams;
  if (dev->streams) dev->streams->prev_open = &s->next_open;
  s->prev_open = &dev->streams;
  dev->streams = s;
  return s;
}

void gl_push_stream(lua_State *L, gl_stream *s) {
  stream_ud *u = lua_newuserdatauv(L, sizeof *u, 0);
  u->s = s;
  gl_stream_ref(s);
  gl_setmetatable(L, GL_STREAM_MT);
}

static gl_stream *to_stream(lua_State *L, int idx) {
  stream_ud *u = gl_testudata(L, idx, GL_STREAM_MT);
  if (!u) luaL_typeerror(L, idx, "gpulua stream");
  if (!u->s) luaL_error(L, "gpulua stream has been released (its finalizer ran)");
  return u->s;
}

gl_stream *gl_check_stream(lua_State *L, int idx) {
  gl_stream *s = to_stream(L, idx);
  if (!s->cu)
    luaL_error(L, "stream '%s' of device %d is closed (closed at %s)", s->name, s->dev->ordinal,
               s->closed_at);
  if (!s->dev->opened) luaL_error(L, "gpulua has been shut down");
  gl_check_poison(L, s->dev);
  return s;
}

gl_stream *gl_opt_stream(lua_State *L, int opts_idx, gl_device *dev) {
  if (lua_isnoneornil(L, opts_idx)) return dev->main;
  luaL_checktype(L, opts_idx, LUA_TTABLE);
  lua_getfield(L, opts_idx, "stream");
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return dev->main;
  }
  if (!gl_testudata(L, -1, GL_STREAM_MT))
    luaL_error(L, "option 'stream' expected a gpulua stream, got %s", luaL_typename(L, -1));
  gl_stream *s = gl_check_stream(L, -1);
  lua_pop(L, 1);
  return s;
}

void gl_stream_mark_synced(gl_stream *s) { gl_clock_host_reached(s, s->seq); }

CUresult gl_stream_order_after(gl_stream *waiter, gl_stream *s) {
  if (waiter == s) return CUDA_SUCCESS;
  gl_clock_join(waiter, s);
  if (s->done_seq >= s->seq) return CUDA_SUCCESS;
  CUevent ev = s->final_ev;
  if (s->cu) {
    gl_set_ctx(s->dev);
    CUresult r = gl_drv.cuEventRecord(s->tail_ev, s->cu);
    if (r != CUDA_SUCCESS) return r;
    ev = s->tail_ev;
  }
  if (!ev) return CUDA_SUCCESS;
  gl_set_ctx(waiter->dev);
  CUresult r = gl_drv.cuStreamWaitEvent(waiter->cu, ev, 0);
  if (r == CUDA_SUCCESS) waiter->seq++;
  return r;
}

void gl_stream_close(lua_State *L, gl_stream *s, const char *where) {
  if (!s->cu || s->is_main) return;
  gl_device *dev = s->dev;
  gl_set_ctx(dev);
  CUresult r = gl_drv.cuEventCreate(&s->final_ev, CU_EVENT_DISABLE_TIMING);
  if (r == CUDA_SUCCESS) r = gl_drv.cuEventRecord(s->final_ev, s->cu);
  if (r == CUDA_SUCCESS && dev->main && dev->main->cu) {
    r = gl_drv.cuStreamWaitEvent(dev->main->cu, s->final_ev, 0);
    if (r == CUDA_SUCCESS) {
      gl_clock_join(dev->main, s);
      gl_trace_wait(dev->main, s, s->seq, 0);
      dev->main->seq++;
    }
  }
  gl_drv.cuStreamDestroy(s->cu); /* queued work still completes */
  s->cu = NULL;
  snprintf(s->closed_at, sizeof s->closed_at, "%s", where ? where : "garbage collection");
  if (s->prev_open) {
    *s->prev_open = s->next_open;
    if (s->next_open) s->next_open->prev_open = s->prev_open;
    s->prev_open = NULL;
    s->next_open = NULL;
  }
  if (L && r != CUDA_SUCCESS) gl_check(L, dev, r, "cuEventRecord");
}

/* ---- methods ----------------------------------------------------------- */

static int opt_bool_field(lua_State *L, int idx, const char *k, int def) {
  if (lua_isnoneornil(L, idx)) return def;
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_getfield(L, idx, k);
  int v = def;
  if (!lua_isnil(L, -1)) {
    if (!lua_isboolean(L, -1))
      luaL_error(L, "option '%s' expected a boolean, got %s", k, luaL_typename(L, -1));
    v = lua_toboolean(L, -1);
  }
  lua_pop(L, 1);
  return v;
}

static int s_record(lua_State *L) {
  gl_stream *s = gl_check_stream(L, 1);
  int timing = opt_bool_field(L, 2, "timing", 0);
  gl_event_new(L, s, timing);
  return 1;
}

static int s_wait(lua_State *L) {
  gl_stream *s = gl_check_stream(L, 1);
  gl_event *e = gl_testudata(L, 2, GL_EVENT_MT);
  if (!e) return luaL_typeerror(L, 2, "gpulua event");
  if (!e->ev || !e->s) return luaL_argerror(L, 2, "the event has been released");
  gl_set_ctx(s->dev);
  GL_CALL(L, s->dev, cuStreamWaitEvent, s->cu, e->ev, 0);
  gl_clock_merge(s, e->snap, e->snap_gen, e->nsnap);
  gl_trace_wait(s, e->s, e->seq, 0);
  s->seq++;
  lua_settop(L, 1);
  return 1;
}

static int s_join(lua_State *L) {
  gl_stream *s = gl_check_stream(L, 1);
  gl_stream *t = gl_check_stream(L, 2);
  if (t == s) return luaL_argerror(L, 2, "a stream cannot join itself");
  gl_trace_wait(s, t, t->seq, 0);
  gl_check(L, s->dev, gl_stream_order_after(s, t), "cuStreamWaitEvent");
  lua_settop(L, 1);
  return 1;
}

static int check_priority(lua_State *L, gl_device *dev, int idx) {
  if (lua_isnoneornil(L, idx)) return 0;
  lua_getfield(L, idx, "priority");
  int prio = 0;
  if (!lua_isnil(L, -1)) {
    int ok;
    lua_Integer p = lua_tointegerx(L, -1, &ok);
    if (!ok)
      luaL_error(L, "option 'priority' expected an integer, got %s",
                 lua_type(L, -1) == LUA_TNUMBER ? lua_tostring(L, -1) : luaL_typename(L, -1));
    if (p > dev->prio_least || p < dev->prio_greatest)
      luaL_error(L, "option 'priority' must be from %d (highest) to %d (lowest) on device %d, got %I",
                 dev->prio_greatest, dev->prio_least, dev->ordinal, (LUAI_UACINT)p);
    prio = (int)p;
  }
  lua_pop(L, 1);
  return prio;
}

static const char *check_name(lua_State *L, int idx) {
  if (lua_isnoneornil(L, idx)) return NULL;
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_getfield(L, idx, "name");
  const char *name = NULL;
  if (!lua_isnil(L, -1)) {
    if (lua_type(L, -1) != LUA_TSTRING)
      luaL_error(L, "option 'name' expected a string, got %s", luaL_typename(L, -1));
    name = lua_tostring(L, -1);
    if (strlen(name) == 0 || strlen(name) >= sizeof(((gl_stream *)0)->name))
      luaL_error(L, "option 'name' must be 1 to %d characters long",
                 (int)sizeof(((gl_stream *)0)->name) - 1);
  }
  lua_pop(L, 1); /* the string stays reachable from the options table */
  return name;
}

/* dev:stream{name =, priority =} */
int gl_dev_stream(lua_State *L) {
  gl_device *dev = gl_check_device(L, 1);
  gl_check_poison(L, dev);
  if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TTABLE);
  const char *name = check_name(L, 2);
  int prio = check_priority(L, dev, 2);
  gl_stream *s = gl_stream_new(L, dev, name, prio, 0);
  gl_push_stream(L, s);
  gl_stream_unref(s); /* the userdata holds it now */
  return 1;
}

static int s_fork(lua_State *L) {
  gl_stream *s = gl_check_stream(L, 1);
  if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TTABLE);
  const char *name = check_name(L, 2);
  int prio = check_priority(L, s->dev, 2);
  gl_stream *t = gl_stream_new(L, s->dev, name, prio, 0);
  gl_push_stream(L, t);
  gl_stream_unref(t);
  gl_trace_wait(t, s, s->seq, 0);
  gl_check(L, s->dev, gl_stream_order_after(t, s), "cuStreamWaitEvent");
  return 1;
}

static int s_sync(lua_State *L) {
  gl_stream *s = gl_check_stream(L, 1);
  gl_set_ctx(s->dev);
  uint64_t seq = s->seq;
  GL_CALL(L, s->dev, cuStreamSynchronize, s->cu);
  gl_clock_host_reached(s, seq);
  lua_settop(L, 1);
  return 1;
}

static int s_query(lua_State *L) {
  gl_stream *s = gl_check_stream(L, 1);
  gl_set_ctx(s->dev);
  uint64_t seq = s->seq;
  CUresult r = gl_drv.cuStreamQuery(s->cu);
  if (r == CUDA_ERROR_NOT_READY) {
    lua_pushboolean(L, 0);
    return 1;
  }
  gl_check(L, s->dev, r, "cuStreamQuery");
  gl_clock_host_reached(s, seq);
  lua_pushboolean(L, 1);
  return 1;
}

/* s:close(), __close and __gc (gl_release_mode says which) */
static int s_close(lua_State *L) {
  stream_ud *u = gl_checkudata(L, 1, GL_STREAM_MT);
  int mode = gl_release_mode(L);
  gl_stream *s = u->s;
  if (!s) return 0;
  if (mode == GL_RELEASE_GC) { /* __gc: close if still open, then drop the reference */
    if (s->cu && !s->is_main && s->dev->opened) gl_stream_close(NULL, s, "garbage collection");
    u->s = NULL;
    gl_stream_unref(s);
    return 0;
  }
  if (s->is_main)
    return luaL_error(L, "stream 'main' of device %d cannot be closed: it lives as long as the device",
                      s->dev->ordinal);
  if (!s->cu) {
    if (mode == GL_RELEASE_CLOSE) return 0; /* a <close> after an explicit close */
    return luaL_error(L, "stream '%s' of device %d is already closed (closed at %s)", s->name,
                      s->dev->ordinal, s->closed_at);
  }
  char where[GL_WHERE_MAX];
  gl_where(L, where, sizeof where);
  gl_stream_close(L, s, where);
  return 0;
}

static int s_tostring(lua_State *L) {
  stream_ud *u = gl_checkudata(L, 1, GL_STREAM_MT);
  gl_stream *s = u->s;
  if (!s) lua_pushliteral(L, "gpulua.Stream (released)");
  else lua_pushfstring(L, "gpulua.Stream('%s' on device %d%s)", s->name, s->dev->ordinal,
                       s->cu ? "" : ", closed");
  return 1;
}

static int s_index(lua_State *L) {
  stream_ud *u = gl_checkudata(L, 1, GL_STREAM_MT);
  const char *k = luaL_checkstring(L, 2);
  if (!u->s) return 0;
  if (strcmp(k, "name") == 0) {
    lua_pushstring(L, u->s->name);
    return 1;
  }
  if (strcmp(k, "device") == 0) {
    gl_push_device(L, u->s->dev);
    return 1;
  }
  lua_getmetatable(L, 1);
  lua_getfield(L, -1, "methods");
  lua_getfield(L, -1, k);
  return 1;
}

void gl_open_stream(lua_State *L) {
  if (!gl_newmetatable(L, GL_STREAM_MT)) {
    lua_pop(L, 1);
    return;
  }
  static const luaL_Reg methods[] = {
    {"record", s_record}, {"wait", s_wait},   {"join", s_join},
    {"fork", s_fork},     {"sync", s_sync},   {"query", s_query},
    {"copy", gl_stream_copy}, {"fill", gl_stream_fill}, {"launch", gl_stream_launch}, {NULL, NULL}};
  luaL_newlib(L, methods);
  gl_set_release(L, s_close, "close");
  lua_setfield(L, -2, "methods");
  lua_pushcfunction(L, s_index);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, s_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
}
