/*
 * l_async.h -- what host callbacks (l_after.c: s:after, gpu.poll, the safe
 * points) and tasks (l_task.c: gpu.spawn, gpu.loop, the awaits) share: the
 * state's record of both, kept in the registry as a userdata whose user
 * values are
 *   1: the points' tokens: [token] = the s:after function, or the task's
 *      thread that waits there; [-token] = where the callback was queued
 *      ("job.lua:12");
 *   2: the tasks: [thread] = TASK_READY or TASK_WAITING;
 *   3: the ready queue: [head .. tail - 1] = threads.
 * A token is never reused: a point whose task was discarded is taken like
 * any other and finds its token gone.
 */
#ifndef GPULUA_LUA_ASYNC_H
#define GPULUA_LUA_ASYNC_H

#include "bindings.h"

enum { GLL_ASYNC_TOKENS = 1, GLL_ASYNC_TASKS = 2, GLL_ASYNC_READY = 3 };
enum { GLL_TASK_READY = 1, GLL_TASK_WAITING = 2 };

typedef struct gll_async {
  lua_Integer next_token;
  int draining;           /* callbacks are running: a safe point inside one runs none */
  int looping;            /* gpu.loop runs */
  int ntasks;             /* spawned and not finished */
  lua_Integer head, tail; /* the ready queue's bounds */
} gll_async;

/* The state's record, pushed (made at the first use). */
gll_async *gll_async_push(lua_State *L);
/* A new token for the value on top (popped): a function (s:after's, with
 * `where`) or a task's thread (where NULL). a: gll_async_push's, at index ai. */
uint64_t gll_async_token(lua_State *L, gll_async *a, int ai, const char *where);

/* l_task.c: the task whose thread is L, when gpu.loop runs it and it may
 * yield: 1; else 0 (the main thread, a coroutine of the script's own). */
int gll_in_task(lua_State *L);
/* The thread at idx, if it is a task waiting, is ready again (queued). */
void gll_task_wake(lua_State *L, gll_async *a, int ai, int idx);
/* Inside a task: queue the point of the task's await on s (token: the
 * task's thread), then yield; k (may be NULL) continues the C function
 * when the task is resumed, and first calls gll_task_resumed with its
 * context. Never returns (yields). */
int gll_task_await_stream(lua_State *L, gl_stream *s, const char *call, lua_KFunction k);
/* ... on e (recorded): once the work it marks finished. */
int gll_task_await_event(lua_State *L, gl_event *e, const char *call);
/* A task resumed at its point: the device it waited on (ctx, the
 * continuation's context) checked as a sync checks it, a collective there
 * that a faulted rank left unfinished included; raises the failure. */
int gll_task_resumed(lua_State *L, lua_KContext ctx);

#endif
