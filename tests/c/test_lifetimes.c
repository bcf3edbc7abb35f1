/*
 * test_lifetimes.c -- object lifetimes through a real Lua state on the sim
 * backend: memory comes back after frees and collection, views keep their
 * allocation alive, closing a state with live objects drains and releases
 * everything, and a second state in the same process works; a state closed
 * from inside a capture (os.exit(code, true)) still releases what its
 * objects held; a sim host kernel of one state is no place for another
 * state's gpulua either.
 */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpulua.h"

#include "check.h"

static lua_State *new_state(void) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  luaL_requiref(L, "gpulua", luaopen_gpulua, 0);
  lua_setglobal(L, "gpu");
  return L;
}

/* Run a chunk; returns its first result as an integer (or -1), reports errors. */
static long long run(lua_State *L, const char *code) {
  if (luaL_dostring(L, code) != LUA_OK) {
    fprintf(stderr, "lua error: %s\n  in: %s\n", lua_tostring(L, -1), code);
    failures++;
    lua_pop(L, 1);
    return -1;
  }
  long long v = lua_isinteger(L, -1) ? (long long)lua_tointeger(L, -1) : -1;
  lua_settop(L, 0);
  return v;
}

static long long free_mem(lua_State *L, int dev) {
  char code[96];
  snprintf(code, sizeof code, "gpu.device(%d):sync(); return gpu.device(%d):free_memory()", dev, dev);
  return run(L, code);
}

static void test_free_and_collect(void) {
  lua_State *L = new_state();
  long long total = run(L, "return gpu.device(0).memory");
  CHECK(free_mem(L, 0) == total, "a fresh device has all its memory free");
  run(L, "x = gpu.device(0):alloc('f32', 1 << 20)");
  CHECK(free_mem(L, 0) == total - (4 << 20), "an allocation takes its bytes");
  run(L, "x:free()");
  CHECK(free_mem(L, 0) == total, "x:free() gives them back");
  run(L, "x = gpu.device(0):alloc('f64', 1000); x = nil; collectgarbage(); collectgarbage()");
  CHECK(free_mem(L, 0) == total, "garbage collection gives them back");
  lua_close(L);
}

static void test_views_keep_alive(void) {
  lua_State *L = new_state();
  long long total = run(L, "return gpu.device(0).memory");
  run(L, "local x = gpu.device(0):zeros('i32', 256); v = x:view(10, 5); x = nil; collectgarbage(); collectgarbage()");
  CHECK(free_mem(L, 0) < total, "a view keeps its allocation");
  CHECK(run(L, "return v:read()[1]") == 0, "and its contents stay readable");
  run(L, "v = nil; collectgarbage(); collectgarbage()");
  CHECK(free_mem(L, 0) == total, "the allocation goes with its last view");
  run(L, "local x = gpu.device(0):zeros('i32', 256); w = x:view(0, 5); x:free()");
  CHECK(free_mem(L, 0) == total, "an explicit free frees despite live views");
  lua_close(L);
}

static void test_close_with_live_objects(void) {
  lua_State *L = new_state();
  run(L,
      "local d = gpu.device(0)\n"
      "s = d:stream{name = 'live'}\n"
      "h = gpu.host('f32', 1 << 16)\n"
      "x = d:alloc('f32', 1 << 16, {stream = s})\n"
      "for i = 1, 50 do s:copy(x, h); s:copy(h, x) end\n"
      "e = s:record{timing = true}\n"
      "v = x:view(3, 7)\n");
  lua_close(L); /* must drain the queued copies and release everything */
  CHECK(1, "lua_close returned");
}

static void test_second_state(void) {
  lua_State *L = new_state();
  long long total = run(L, "return gpu.device(1).memory");
  CHECK(free_mem(L, 1) == total, "a new state starts with all memory free after the last one closed");
  CHECK(run(L, "local h = gpu.host('u8', {1, 2, 3}); local x = gpu.device(1):alloc('u8', 3); "
               "gpu.device(1).main:copy(x, h); return x:read()[3]") == 3,
        "and works");
  lua_close(L);
}

/* Run a chunk expected to fail; returns its message (static copy), or "". */
static const char *run_fails(lua_State *L, const char *code) {
  static char msg[1024];
  msg[0] = '\0';
  if (luaL_dostring(L, code) == LUA_OK) {
    lua_settop(L, 0);
    return msg;
  }
  snprintf(msg, sizeof msg, "%s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "(not a string)");
  lua_settop(L, 0);
  return msg;
}

/* Two states open at once keep their own runtime: policy, locations, the
 * checker's records, and closing one leaves the other working. The unordered
 * use is of memory allocated on s (the checker counts the allocation as s's
 * write) and never written there: under policy off in A no two threads touch
 * it at once, so ThreadSanitizer has no real race to report (with zeros, s's
 * memset and t's fill did race, as the script asked). */
static void test_two_states_at_once(void) {
  lua_State *A = new_state(), *B = new_state();
  const char *race = "local d = gpu.device(0); local s, t = d:stream(), d:stream(); "
                     "local x = d:alloc('f32', 64, {stream = s}); t:fill(x, 1)";
  run(A, "gpu.policy('off')");
  CHECK(strcmp(run_fails(A, race), "") == 0, "policy off in A lets the unordered fill through");
  const char *msg = run_fails(B, race);
  CHECK(strstr(msg, "s:fill: slice f32[64] on device 0 is written on stream") != NULL,
        "B is still strict and refuses it: %s", msg);
  run(A, "a_slice = gpu.device(0):zeros('i32', 8); gpu.device(0).main:fill(a_slice, 7)");
  lua_close(A);
  CHECK(run(B, "local x = gpu.device(0):zeros('i32', 4); gpu.device(0).main:fill(x, 5); return x:read()[4]") == 5,
        "B works after A closed");
  msg = run_fails(B, "local x = gpu.device(1):zeros('f32', 4); x:free(); x:free()");
  CHECK(strstr(msg, "already freed (at [string") != NULL, "B's locations are B's: %s", msg);
  lua_close(B);
}

static void test_closed_stream_struct_outlives(void) {
  lua_State *L = new_state();
  long long total = run(L, "return gpu.device(0).memory");
  /* the slice's free must be ordered after a stream that is closed and collected by then */
  run(L, "local d = gpu.device(0); local s = d:stream(); x = d:alloc('f32', 4096, {stream = s}); "
         "s:fill(x, 2); s:close(); s = nil; collectgarbage(); collectgarbage()");
  CHECK(run(L, "return math.tointeger(x:read()[4096])") == 2, "the work of a closed stream completed");
  run(L, "x = nil; collectgarbage(); collectgarbage()");
  CHECK(free_mem(L, 0) == total, "and the slice is freed after it");
  lua_close(L);
}

/* What os.exit(code, true) does, but the exit: the state is closed from
 * inside the running script, which never resumes (the test goes on at the
 * setjmp instead). */
static jmp_buf after_close;
static int close_state(lua_State *L) {
  lua_close(L);
  longjmp(after_close, 1);
}

/* The finalizers that run as a state closes inside a capture are kept for
 * the capture's end, which never comes: they must run before the runtime's
 * teardown all the same, or their memory is never given back. Another state
 * watches device 0's memory (the sim's is the process's). */
static void test_close_inside_capture(void) {
  static const char *const scripts[] = {
    "local d = gpu.device(0)\n"
    "local x, y = d:alloc('u8', 262144), d:zeros('f32', 64)\n"
    "d.main:capture(function(cs) cs:fill(y, 1); close_state() end)\n",
    "local d = gpu.device(0)\n"
    "local x, y = d:alloc('u8', 262144), d:zeros('f32', 64)\n"
    "local g = d.main:capture(function(cs) cs:fill(x, 1) end)\n"
    "g:launch(d.main)\n"
    "g:update(function(cs) cs:fill(x, 2); cs:fill(y, 3); close_state() end)\n",
  };
  static const char *const where[] = {"s:capture", "g:update"};
  lua_State *watch = new_state();
  for (int i = 0; i < 2; i++) {
    long long before = free_mem(watch, 0);
    lua_State *L = new_state();
    lua_register(L, "close_state", close_state);
    if (setjmp(after_close) == 0) {
      run(L, scripts[i]);
      CHECK(0, "close_state returned");
    }
    long long after = free_mem(watch, 0);
    CHECK(after == before, "a state closed inside %s's function gives its memory back: %lld bytes missing",
          where[i], before - after);
  }
  lua_close(watch);
}

/* other(code): runs code in the other state, protected; returns "ok" or its
 * error message. */
static lua_State *other;
static int in_other(lua_State *L) {
  const char *code = luaL_checkstring(L, 1);
  int status = luaL_loadstring(other, code);
  if (status == LUA_OK) status = lua_pcall(other, 0, 0, 0);
  lua_pushstring(L, status == LUA_OK ? "ok" : lua_tostring(other, -1));
  lua_settop(other, 0);
  return 1;
}

/* A host kernel holds its device until it returns: a second state's gpulua
 * called from inside it is refused as the first state's is (dev:sync and
 * gpu.sync there would wait for that very kernel). A hang ends the test by
 * SIGALRM, a failure. */
static void test_host_kernel_refuses_other_states(void) {
  lua_State *A = new_state();
  other = new_state();
  lua_register(A, "other", in_other);
  run(other, "d = gpu.device(0); y = d:zeros('f32', 8)");
  alarm(60);
  long long refused = run(A,
      "local d = gpu.device(0)\n"
      "local k = gpu.load('" GL_TEST_DATA "/twice.ptx'):kernel('twice', 'const f32*, f32*, u64')\n"
      "local x, y = d:zeros('f32', 8), d:zeros('f32', 8)\n"
      "local said = {}\n"
      "k:host(function()\n"
      "  for _, c in ipairs{'d:sync()', 'gpu.sync()', 'y:read()', 'd:alloc(\"f32\", 4)', 'd:stream()'} do\n"
      "    said[#said + 1] = other(c)\n"
      "  end\n"
      "end)\n"
      "d.main:launch(k, {grid = 1, block = 32}, x, y, 8)\n"
      "d.main:sync()\n"
      "local n = 0\n"
      "for _, m in ipairs(said) do\n"
      "  if m:find('cannot be called from inside a host kernel (k:host)', 1, true) then n = n + 1\n"
      "  else print('not refused: ' .. m) end\n"
      "end\n"
      "return n\n");
  alarm(0);
  CHECK(refused == 5, "every call of the other state is refused inside the host kernel: %lld of 5", refused);
  CHECK(run(other, "d:sync(); return math.tointeger(y:read()[1])") == 0, "and works after it");
  lua_close(A);
  lua_close(other);
}

int main(void) {
  setenv("GPULUA_BACKEND", "sim", 1);
  setenv("GPULUA_SIM_KERNELS", "host", 1); /* host_kernel_refuses_other_states runs a k:host function */
  struct { const char *name; void (*fn)(void); } tests[] = {
    {"free_and_collect", test_free_and_collect},
    {"views_keep_alive", test_views_keep_alive},
    {"close_with_live_objects", test_close_with_live_objects},
    {"second_state", test_second_state},
    {"closed_stream_struct_outlives", test_closed_stream_struct_outlives},
    {"two_states_at_once", test_two_states_at_once},
    {"close_inside_capture", test_close_inside_capture},
    {"host_kernel_refuses_other_states", test_host_kernel_refuses_other_states},
  };
  int passed = 0, failed = 0;
  for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
    int before = failures;
    tests[i].fn();
    if (failures == before) passed++;
    else {
      failed++;
      fprintf(stderr, "FAILED: %s\n", tests[i].name);
    }
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
