/*
 * bench/baselines/launch_pairs.c -- gpulua's launch and event costs against the raw
 * driver, interleaved in one process. The GPU machine is a noisy VM: the
 * same loop measured a minute apart differs by 20 to 30%, more than the
 * goals' margins, so comparing one process's figures with another's says
 * little. Here each round times every case of bench/workloads/launch_pairs.lua (in a
 * Lua state with gpulua) right beside the raw driver's loop of the same
 * calls (the same kernels, compiled here, on a stream of the same primary
 * context), in alternating order, and the ratio is taken per round; the
 * median over the rounds and its spread are printed.
 *
 * The graph cases compare a chain of CHAIN empty kernels captured and
 * replayed by gpulua with the same capture and replay made raw: host time
 * of the launch calls per replayed kernel, and the cost of one capture with
 * its instantiation.
 *
 *   launch_pairs [ops per loop] [rounds] [path to launch_pairs.lua]
 * Prints "RESULT pair_<case>_ratio <median> x <min> <max>" and the medians of
 * both sides; needs the cuda backend.
 */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#define RAW_NAME "launch_pairs"
#include "raw_common.h"

#include "gpulua.h"

typedef struct raw_side {
  CUcontext ctx;
  CUstream s, s2;
  CUevent ev;
  CUfunction f1, f8;
  CUgraphExec chain;
  void *params[8];
  CUdeviceptr ptrs[8];
} raw_side;

static CUgraphExec raw_capture(raw_side *r);

static void raw_setup(raw_side *r) {
  CUdevice dev;
  r->ctx = raw_open(&dev); /* the context gpulua uses too */
  CK(cuStreamCreateWithPriority(&r->s, CU_STREAM_NON_BLOCKING, 0));
  CK(cuStreamCreateWithPriority(&r->s2, CU_STREAM_NON_BLOCKING, 0));
  CK(cuEventCreate(&r->ev, CU_EVENT_DISABLE_TIMING));
  CUmodule m = compile(empty_src, "empty.cu");
  CK(cuModuleGetFunction(&r->f1, m, "empty1"));
  CK(cuModuleGetFunction(&r->f8, m, "empty8"));
  CUdeviceptr buf;
  CK(cuMemAllocAsync(&buf, 1 << 20, r->s));
  CK(cuStreamSynchronize(r->s));
  for (int i = 0; i < 8; i++) {
    r->ptrs[i] = buf + (CUdeviceptr)(i * 256);
    r->params[i] = &r->ptrs[i];
  }
  r->chain = raw_capture(r);
}

#define CHAIN 1000

/* the chain of CHAIN empty launches captured on s and instantiated */
static CUgraphExec raw_capture(raw_side *r) {
  CUgraph g;
  CUgraphExec x;
  CK(cuStreamBeginCapture(r->s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  for (int i = 0; i < CHAIN; i++) CK(cuLaunchKernel(r->f1, 1, 1, 1, 32, 1, 1, 0, r->s, r->params, NULL));
  CK(cuStreamEndCapture(r->s, &g));
  CK(cuGraphInstantiateWithFlags(&x, g, 0));
  CK(cuGraphUpload(x, r->s));
  CK(cuGraphDestroy(g));
  return x;
}

/* the raw loop of kind "launch1", "launch8", "event", "graph" (per replayed
 * kernel, the launch calls only) or "capture" (per capture): us per op */
static double raw_run(raw_side *r, const char *kind, int n) {
  CK(cuCtxSetCurrent(r->ctx));
  if (strcmp(kind, "graph") == 0) {
    CK(cuStreamSynchronize(r->s));
    double t0 = now();
    for (int i = 0; i < n; i++) CK(cuGraphLaunch(r->chain, r->s));
    double us = (now() - t0) / ((double)n * CHAIN) * 1e6;
    CK(cuStreamSynchronize(r->s));
    return us;
  }
  if (strcmp(kind, "capture") == 0) {
    CK(cuStreamSynchronize(r->s));
    double t0 = now();
    for (int i = 0; i < n; i++) CK(cuGraphExecDestroy(raw_capture(r)));
    double us = (now() - t0) / n * 1e6;
    CK(cuStreamSynchronize(r->s));
    return us;
  }
  CK(cuStreamSynchronize(r->s));
  CK(cuStreamSynchronize(r->s2));
  double t0 = now();
  if (strcmp(kind, "event") == 0) {
    for (int i = 0; i < n; i++) {
      CK(cuEventRecord(r->ev, r->s));
      CK(cuStreamWaitEvent(r->s2, r->ev, 0));
    }
  } else {
    CUfunction f = strcmp(kind, "launch8") == 0 ? r->f8 : r->f1;
    for (int i = 0; i < n; i++) CK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, r->s, r->params, NULL));
  }
  CK(cuStreamSynchronize(r->s));
  CK(cuStreamSynchronize(r->s2));
  return (now() - t0) / n * 1e6;
}

/* The floor of any Lua binding of an 8-argument launch, for the case
 * launch_8arg_floor: F:launch(k, cfg, a, ..., h) with F a plain table, a C
 * function that reads each of its 11 arguments as a typed userdata must
 * (lua_touserdata and lua_rawlen) and then makes the raw launch on the raw
 * side's stream, with no checks and no records; raw_sync() waits for it. */
static int floor_launch8(lua_State *L) {
  raw_side *r = lua_touserdata(L, lua_upvalueindex(1));
  size_t sum = 0;
  for (int i = 1; i <= 11; i++) sum += (size_t)lua_touserdata(L, i) + lua_rawlen(L, i);
  if (sum == 0) return luaL_error(L, "floor_launch8: no arguments");
  CK(cuLaunchKernel(r->f8, 1, 1, 1, 32, 1, 1, 0, r->s, r->params, NULL));
  return 0;
}

static int floor_sync(lua_State *L) {
  raw_side *r = lua_touserdata(L, lua_upvalueindex(1));
  CK(cuStreamSynchronize(r->s));
  return 0;
}

/* the Lua case `name` of the cases table at index 1: us per op */
static double lua_run(lua_State *L, const char *name, int n) {
  lua_getfield(L, 1, name);
  lua_getfield(L, -1, "run");
  lua_pushinteger(L, n);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
    fprintf(stderr, "launch_pairs: %s: %s\n", name, lua_tostring(L, -1));
    exit(1);
  }
  double us = lua_tonumber(L, -1);
  lua_pop(L, 2);
  return us;
}

#define MAX_CASES 16
#define MAX_ROUNDS 64

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 20000;
  int rounds = argc > 2 ? atoi(argv[2]) : 9;
  const char *script = argc > 3 ? argv[3] : "bench/workloads/launch_pairs.lua";
  if (n < 1 || rounds < 1 || rounds > MAX_ROUNDS) {
    fprintf(stderr, "usage: launch_pairs [ops per loop >= 1] [rounds 1..%d] [launch_pairs.lua]\n", MAX_ROUNDS);
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0); /* each result as it comes, whatever happens later */
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  luaL_requiref(L, "gpulua", luaopen_gpulua, 0);
  lua_pop(L, 1);
  raw_side r; /* set up below; the floor's functions keep its address */
  lua_createtable(L, 0, 2); /* the global launch_pairs_floor = {launch =, sync =} */
  lua_pushlightuserdata(L, &r);
  lua_pushcclosure(L, floor_launch8, 1);
  lua_setfield(L, -2, "launch");
  lua_pushlightuserdata(L, &r);
  lua_pushcclosure(L, floor_sync, 1);
  lua_setfield(L, -2, "sync");
  lua_setglobal(L, "launch_pairs_floor");
  if (luaL_dofile(L, script) != LUA_OK || !lua_istable(L, -1)) {
    fprintf(stderr, "launch_pairs: %s: %s\n", script, lua_isstring(L, -1) ? lua_tostring(L, -1) : "no cases table");
    return 1;
  }
  lua_settop(L, 1); /* the cases table, at 1 */
  raw_setup(&r);

  const char *names[MAX_CASES], *kinds[MAX_CASES];
  int counts[MAX_CASES];
  int nc = 0;
  lua_pushnil(L);
  while (lua_next(L, 1) && nc < MAX_CASES) {
    names[nc] = lua_tostring(L, -2); /* the keys stay in the table */
    lua_getfield(L, -1, "div");
    int div = lua_isinteger(L, -1) ? (int)lua_tointeger(L, -1) : 1;
    counts[nc] = div > 0 && n / div > 0 ? n / div : 1;
    lua_getfield(L, -2, "raw");
    kinds[nc++] = lua_tostring(L, -1); /* a string of the table too */
    lua_pop(L, 3);
  }
  static double traw[MAX_CASES][MAX_ROUNDS], tlua[MAX_CASES][MAX_ROUNDS], ratio[MAX_CASES][MAX_ROUNDS];
  for (int c = 0; c < nc; c++) { /* warm-up: the lazy parts of both sides */
    raw_run(&r, kinds[c], counts[c] / 10 + 1);
    lua_run(L, names[c], counts[c] / 10 + 1);
  }
  for (int k = 0; k < rounds; k++)
    for (int c = 0; c < nc; c++) {
      if ((k + c) % 2 == 0) {
        traw[c][k] = raw_run(&r, kinds[c], counts[c]);
        tlua[c][k] = lua_run(L, names[c], counts[c]);
      } else {
        tlua[c][k] = lua_run(L, names[c], counts[c]);
        traw[c][k] = raw_run(&r, kinds[c], counts[c]);
      }
      ratio[c][k] = tlua[c][k] / traw[c][k];
    }
  for (int c = 0; c < nc; c++) {
    double lo = ratio[c][0], hi = ratio[c][0];
    for (int k = 1; k < rounds; k++) {
      if (ratio[c][k] < lo) lo = ratio[c][k];
      if (ratio[c][k] > hi) hi = ratio[c][k];
    }
    printf("RESULT pair_%s_ratio %.4f x %.4f %.4f\n", names[c], median(ratio[c], rounds), lo, hi);
    printf("RESULT pair_%s_us %.4f us raw %.4f\n", names[c], median(tlua[c], rounds), median(traw[c], rounds));
  }
  lua_close(L);
  return 0;
}
