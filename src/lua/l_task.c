/*
 * l_task.c -- tasks: gpu.spawn(fn, ...) makes a coroutine, gpu.loop() runs
 * them until all have finished. Inside a task, s:await(), e:await() and
 * x:read{} queue a point (after.h) whose token is the task's thread and
 * yield; the safe point that takes the point makes the task ready again
 * (gll_task_wake), and the loop resumes ready tasks in turn. With none
 * ready, the loop blocks until the device reaches the next point
 * (gl_after_wait: no spinning). A plain coroutine.yield() in a task lets the
 * others run and leaves it ready.
 *
 * An error in a task ends the loop with that error and the task's
 * traceback; the other tasks are discarded (their coroutines closed), so
 * that a later gpu.loop starts from none.
 */
#include "l_async.h"

#include "after.h"
#include "comm.h"

int gll_in_task(lua_State *L) {
  if (!lua_isyieldable(L)) return 0;
  gll_async *a = gll_async_push(L);
  int in = 0;
  if (a->looping) {
    lua_getiuservalue(L, -1, GLL_ASYNC_TASKS);
    lua_pushthread(L);
    in = lua_rawget(L, -2) != LUA_TNIL;
    lua_pop(L, 2);
  }
  lua_pop(L, 1);
  return in;
}

static void set_state(lua_State *L, int ai, int idx, int state) {
  idx = lua_absindex(L, idx);
  lua_getiuservalue(L, ai, GLL_ASYNC_TASKS);
  lua_pushvalue(L, idx);
  if (state) lua_pushinteger(L, state);
  else lua_pushnil(L);
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

static void push_ready(lua_State *L, gll_async *a, int ai, int idx) {
  idx = lua_absindex(L, idx);
  lua_getiuservalue(L, ai, GLL_ASYNC_READY);
  lua_pushvalue(L, idx);
  lua_rawseti(L, -2, a->tail++);
  lua_pop(L, 1);
}

void gll_task_wake(lua_State *L, gll_async *a, int ai, int idx) {
  idx = lua_absindex(L, idx);
  lua_getiuservalue(L, ai, GLL_ASYNC_TASKS);
  lua_pushvalue(L, idx);
  int waiting = lua_rawget(L, -2) == LUA_TNUMBER && lua_tointeger(L, -1) == GLL_TASK_WAITING;
  lua_pop(L, 2);
  if (!waiting) return; /* discarded */
  set_state(L, ai, idx, GLL_TASK_READY);
  push_ready(L, a, ai, idx);
}

int gll_task_resumed(lua_State *L, lua_KContext ctx) {
  gl_device *d = (gl_device *)ctx;
  gl_site site = GL_SITE(L);
  if (gl_device_check(d) != 0 || gl_comm_poll(d->rt, d, &site) != 0) return gll_raise(L, d->rt);
  return 0;
}

/* The await's result once resumed: the receiver (at 1). */
static int return_receiver(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  gll_task_resumed(L, ctx);
  lua_settop(L, 1);
  return 1;
}

/* Name the running task's thread by a new token (pushed: the async record
 * below it), to queue a point with. */
static uint64_t task_token(lua_State *L, gll_async **ap) {
  gll_async *a = gll_async_push(L);
  int ai = lua_gettop(L);
  lua_pushthread(L);
  uint64_t token = gll_async_token(L, a, ai, NULL);
  *ap = a;
  return token;
}

/* The point is queued on device d: wait there (the record on top is
 * popped); k (NULL: the receiver) gives the results once resumed, its
 * context d for gll_task_resumed. */
static int wait_at_point(lua_State *L, gl_device *d, lua_KFunction k) {
  lua_pushthread(L);
  set_state(L, lua_gettop(L) - 1, -1, GLL_TASK_WAITING);
  lua_pop(L, 2);
  return lua_yieldk(L, 0, (lua_KContext)d, k ? k : return_receiver);
}

static void forget_token(lua_State *L, uint64_t token) {
  lua_getiuservalue(L, -1, GLL_ASYNC_TOKENS);
  lua_pushnil(L);
  lua_rawseti(L, -2, (lua_Integer)token);
  lua_pop(L, 1);
}

int gll_task_await_stream(lua_State *L, gl_stream *s, const char *call, lua_KFunction k) {
  gll_async *a;
  uint64_t token = task_token(L, &a);
  gl_site site = GL_SITE(L);
  if (gl_after_queue(s, token, call, &site) != 0) {
    forget_token(L, token);
    return gll_raise(L, s->dev->rt);
  }
  return wait_at_point(L, s->dev, k);
}

/* s:await(): in a task, yields until the work queued on s so far finished;
 * elsewhere, s:sync(). Returns s. */
int gll_stream_await(lua_State *L) {
  gl_stream *s = gll_check_stream(L, 1);
  GL_NOT_IN_HOST_KERNEL(L, "s:");
  if (gll_in_task(L)) return gll_task_await_stream(L, s, "s:await", NULL);
  gl_site site = GL_SITE(L);
  if (gl_stream_sync(s, "s:await", &site) != 0) return gll_raise(L, s->dev->rt);
  gll_safe_point(L);
  lua_settop(L, 1);
  return 1;
}

int gll_task_await_event(lua_State *L, gl_event *e, const char *call) {
  gll_async *a;
  uint64_t token = task_token(L, &a);
  gl_site site = GL_SITE(L);
  if (gl_after_event(e, token, call, &site) != 0) {
    forget_token(L, token);
    return gll_raise(L, e->s->dev->rt);
  }
  return wait_at_point(L, e->s->dev, NULL);
}

/* gpu.spawn(fn, ...): a task that calls fn(...) once gpu.loop runs it */
int gll_gpu_spawn(lua_State *L) {
  GL_NOT_IN_HOST_KERNEL(L, "gpu.");
  if (lua_type(L, 1) != LUA_TFUNCTION)
    return luaL_argerror(L, 1, lua_pushfstring(L, "gpu.spawn expects a function, got %s", gll_given(L, 1)));
  int n = lua_gettop(L);
  lua_State *co = lua_newthread(L);
  for (int i = 1; i <= n; i++) lua_pushvalue(L, i);
  lua_xmove(L, co, n);
  gll_async *a = gll_async_push(L);
  int ai = lua_gettop(L);
  set_state(L, ai, ai - 1, GLL_TASK_READY);
  push_ready(L, a, ai, ai - 1);
  a->ntasks++;
  return 0;
}

static int close_thread(lua_State *co, lua_State *L) {
#if LUA_VERSION_RELEASE_NUM >= 50406
  return lua_closethread(co, L);
#else
  (void)L;
  return lua_resetthread(co);
#endif
}

/* Close every task's coroutine and forget them all, those a closing
 * handler spawns too (into the fresh table, not the one walked). The first
 * error a handler raised is pushed: returns 1; else 0, nothing pushed. */
static int discard_tasks(lua_State *L, gll_async *a, int ai) {
  int failed = 0, any;
  do {
    lua_getiuservalue(L, ai, GLL_ASYNC_TASKS);
    int tasks = lua_gettop(L);
    lua_newtable(L);
    lua_setiuservalue(L, ai, GLL_ASYNC_TASKS);
    lua_newtable(L);
    lua_setiuservalue(L, ai, GLL_ASYNC_READY);
    a->ntasks = 0;
    a->head = a->tail = 1;
    any = 0;
    lua_pushnil(L);
    while (lua_next(L, tasks)) {
      lua_pop(L, 1);
      any = 1;
      lua_State *co = lua_tothread(L, -1);
      int st = close_thread(co, L);
      if (st != LUA_OK && !failed) { /* kept below the table */
        lua_xmove(co, L, 1);
        lua_insert(L, tasks++);
        failed = 1;
      }
    }
    lua_pop(L, 1);
  } while (any);
  return failed;
}

/* Discard the tasks, then raise the error on top, a closing handler's
 * error added to its message (the first: one above the error already where
 * `closing`). */
static int discard_and_raise(lua_State *L, gll_async *a, int ai, int closing) {
  int more = discard_tasks(L, a, ai);
  if (more && closing) lua_pop(L, 1); /* the first is kept */
  if (more || closing) {
    int err = lua_gettop(L) - 1;
    if (lua_type(L, err) == LUA_TSTRING) {
      const char *why = luaL_tolstring(L, err + 1, NULL);
      lua_pushfstring(L, "%s\n(and closing the tasks, a <close> handler failed: %s)", lua_tostring(L, err), why);
    } else {
      lua_pop(L, 1);
    }
  }
  return lua_error(L);
}

/* Resume the ready task at the top (popped). Raises its error, if any. */
static void resume(lua_State *L, gll_async *a, int ai) {
  lua_State *co = lua_tothread(L, -1);
  int nargs = lua_status(co) == LUA_OK ? lua_gettop(co) - 1 : 0, nres;
  int st = lua_resume(co, L, nargs, &nres);
  if (st == LUA_YIELD) {
    lua_pop(co, nres);
    lua_getiuservalue(L, ai, GLL_ASYNC_TASKS);
    lua_pushvalue(L, -2);
    int ready = lua_rawget(L, -2) == LUA_TNUMBER && lua_tointeger(L, -1) == GLL_TASK_READY;
    lua_pop(L, 2);
    if (ready) push_ready(L, a, ai, -1); /* a plain yield: the others run first */
  } else if (st == LUA_OK) {
    set_state(L, ai, -1, 0);
    a->ntasks--;
  } else {
    int t = lua_gettop(L); /* the task's thread */
    lua_pushvalue(co, -1);
    lua_xmove(co, L, 1); /* t + 1: its error */
    if (lua_type(L, t + 1) == LUA_TSTRING) luaL_traceback(L, co, lua_tostring(L, t + 1), 0);
    else lua_pushvalue(L, t + 1); /* t + 2: what the loop raises */
    set_state(L, ai, t, 0);
    a->ntasks--;
    int closing = 0; /* its own <close> variables: closing gives back its error, or a handler's */
    if (close_thread(co, L) != LUA_OK) {
      lua_xmove(co, L, 1);
      if (lua_rawequal(L, t + 1, -1)) lua_pop(L, 1);
      else closing = 1;
    }
    discard_and_raise(L, a, ai, closing);
  }
  lua_pop(L, 1);
}

static int loop_close(lua_State *L) {
  ((gll_async *)lua_touserdata(L, lua_upvalueindex(1)))->looping = 0;
  return 0;
}

/* gpu.loop(): run the tasks until all have finished */
int gll_gpu_loop(lua_State *L) {
  GL_NOT_IN_HOST_KERNEL(L, "gpu.");
  gl_runtime *rt = gll_rt(L);
  GL_NOT_IN_CAPTURE(L, rt, "gpu.loop");
  lua_settop(L, 0);
  gll_async *a = gll_async_push(L); /* 1 */
  if (a->looping) return luaL_error(L, "gpu.loop: the loop is running already (a call from a task or a callback)");
  if (a->draining) /* the loop would wait for points that only this callback's return lets be taken */
    return luaL_error(L, "gpu.loop: not inside an s:after callback (run the loop after it returns)");
  lua_newuserdatauv(L, 0, 0); /* 2: ends the loop's state however the loop ends */
  lua_createtable(L, 0, 1);
  lua_pushvalue(L, 1);
  lua_pushcclosure(L, loop_close, 1);
  lua_setfield(L, -2, "__close");
  lua_setmetatable(L, 2);
  a->looping = 1;
  lua_toclose(L, 2);
  gl_site site = GL_SITE(L);
  for (;;) {
    gll_after_run(L);
    if (a->head < a->tail) {
      lua_getiuservalue(L, 1, GLL_ASYNC_READY);
      lua_rawgeti(L, -1, a->head);
      lua_pushnil(L);
      lua_rawseti(L, -3, a->head++);
      lua_remove(L, -2);
      resume(L, a, 1);
    } else if (a->ntasks == 0) {
      break;
    } else if (!gl_after_pending(rt)) {
      int n = a->ntasks;
      luaL_where(L, 1);
      lua_pushfstring(L, "%sgpu.loop: %d task%s wait%s for work that can no longer finish (its device failed)",
                      lua_tostring(L, -1), n, n == 1 ? "" : "s", n == 1 ? "s" : "");
      return discard_and_raise(L, a, 1, 0);
    } else if (gl_after_wait(rt, "gpu.loop", &site) != 0) {
      gll_push_error(L, rt);
      return discard_and_raise(L, a, 1, 0);
    }
  }
  lua_closeslot(L, 2);
  return 0;
}
