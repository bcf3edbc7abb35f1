/*
 * l_after.c -- host callbacks: s:after(fn), gpu.poll(), and the safe points
 * where the callbacks whose points the device reached run (and tasks whose
 * awaits it reached are made ready: l_task.c).
 *
 * A safe point is the start of every gpulua function and method (each is
 * registered through gll_setfuncs_safe, whose wrapper tests one process-wide
 * count before calling it), the end of every wait (s:sync, e:sync, x:read,
 * dev:sync, gpu.sync, a query that finds its work finished), gpu.loop and
 * gpu.poll. None runs inside a sim host kernel, during a capture, or inside
 * a callback (a gpulua call there runs no other callback: they run in turn,
 * in the order their streams reached them).
 */
#include "l_async.h"

#include "after.h"
#include "graph.h"

static const char async_key = 'A';

gll_async *gll_async_push(lua_State *L) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &async_key) == LUA_TUSERDATA) return lua_touserdata(L, -1);
  lua_pop(L, 1);
  gll_async *a = lua_newuserdatauv(L, sizeof *a, 3);
  memset(a, 0, sizeof *a);
  a->next_token = 1;
  a->head = a->tail = 1;
  for (int i = 1; i <= 3; i++) {
    lua_newtable(L);
    lua_setiuservalue(L, -2, i);
  }
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &async_key);
  return a;
}

uint64_t gll_async_token(lua_State *L, gll_async *a, int ai, const char *where) {
  lua_Integer t = a->next_token++;
  lua_getiuservalue(L, ai, GLL_ASYNC_TOKENS);
  lua_rotate(L, -2, 1); /* tokens, value */
  lua_rawseti(L, -2, t);
  if (where) {
    lua_pushstring(L, where);
    lua_rawseti(L, -2, -t);
  }
  lua_pop(L, 1);
  return (uint64_t)t;
}

/* Run the reached points' callbacks (a at ai, its tokens table at ti). An
 * error in one ends the run here, named by where it was queued. */
static int run_reached(lua_State *L, gl_runtime *rt, gll_async *a, int ai, int ti) {
  uint64_t token;
  int ran = 0;
  while (gl_after_take(rt, &token)) {
    lua_Integer t = (lua_Integer)token;
    int kind = lua_rawgeti(L, ti, t);
    lua_pushnil(L);
    lua_rawseti(L, ti, t);
    if (kind == LUA_TTHREAD) {
      gll_task_wake(L, a, ai, lua_gettop(L));
      lua_pop(L, 1);
      continue;
    }
    if (kind != LUA_TFUNCTION) { /* a discarded task's point */
      lua_pop(L, 1);
      continue;
    }
    lua_rawgeti(L, ti, -t);
    lua_pushnil(L);
    lua_rawseti(L, ti, -t);
    lua_insert(L, -2); /* where, fn */
    ran++;
    if (lua_pcall(L, 0, 0, 0) != LUA_OK) {
      a->draining = 0;
      const char *msg = luaL_tolstring(L, -1, NULL);
      luaL_where(L, 1);
      lua_pushfstring(L, "%ss:after callback (queued at %s) failed: %s", lua_tostring(L, -1), lua_tostring(L, -4), msg);
      lua_error(L);
    }
    lua_pop(L, 1); /* where */
  }
  return ran;
}

/* The safe point: returns the number of callbacks run. */
static int after_run(lua_State *L) {
  if (gl_in_host_kernel()) return 0;
  gl_runtime *rt = gll_rt(L);
  if (rt->capture || !rt->after) return 0;
  int top = lua_gettop(L);
  gll_async *a = gll_async_push(L);
  int ran = 0;
  if (!a->draining) {
    a->draining = 1;
    lua_getiuservalue(L, top + 1, GLL_ASYNC_TOKENS);
    ran = run_reached(L, rt, a, top + 1, top + 2);
    a->draining = 0;
  }
  lua_settop(L, top);
  return ran;
}

void gll_after_run(lua_State *L) { after_run(L); }

/* Every gpulua function goes through this: the safe point, then the
 * function (upvalue 1), which sees the same stack and upvalues. */
static int safe_call(lua_State *L) {
  gll_safe_point(L);
  return lua_tocfunction(L, lua_upvalueindex(1))(L);
}

void gll_setfuncs_safe(lua_State *L, const luaL_Reg *l) {
  for (; l->name; l++) {
    if (!l->func) {
      lua_pushboolean(L, 0); /* a placeholder, as luaL_setfuncs */
    } else if (l->func == gll_gpu_poll || l->func == gll_gpu_loop) {
      lua_pushcfunction(L, l->func); /* safe points of their own: gpu.poll counts what it runs */
    } else {
      lua_pushcfunction(L, l->func);
      lua_pushcclosure(L, safe_call, 1);
    }
    lua_setfield(L, -2, l->name);
  }
}

/* s:after(fn) */
int gll_stream_after(lua_State *L) {
  gl_stream *s = gll_check_stream(L, 1);
  GL_NOT_IN_HOST_KERNEL(L, "s:");
  if (!lua_isfunction(L, 2))
    return luaL_argerror(L, 2, lua_pushfstring(L, "s:after expects a function to run, got %s", gll_given(L, 2)));
  lua_settop(L, 2);
  gll_async *a = gll_async_push(L);
  luaL_where(L, 1);
  size_t n;
  const char *where = lua_tolstring(L, -1, &n);
  if (n >= 2 && where[n - 1] == ' ') lua_pushlstring(L, where, n - 2); /* "job.lua:12: " -> "job.lua:12" */
  else lua_pushliteral(L, "?");
  lua_pushvalue(L, 2);
  uint64_t token = gll_async_token(L, a, 3, lua_tostring(L, -2));
  gl_site site = GL_SITE(L);
  if (gl_after_queue(s, token, "s:after", &site) != 0) {
    lua_getiuservalue(L, 3, GLL_ASYNC_TOKENS);
    lua_pushnil(L);
    lua_rawseti(L, -2, (lua_Integer)token);
    lua_pushnil(L);
    lua_rawseti(L, -2, -(lua_Integer)token);
    return gll_raise(L, s->dev->rt);
  }
  lua_settop(L, 1);
  return 1;
}

/* gpu.poll() -> the number of callbacks it ran */
int gll_gpu_poll(lua_State *L) {
  GL_NOT_IN_HOST_KERNEL(L, "gpu.");
  gl_runtime *rt = gll_rt(L);
  GL_NOT_IN_CAPTURE(L, rt, "gpu.poll");
  gl_site site = GL_SITE(L);
  if (gl_after_poll(rt, "gpu.poll", &site) != 0) return gll_raise(L, rt);
  lua_pushinteger(L, after_run(L));
  return 1;
}
