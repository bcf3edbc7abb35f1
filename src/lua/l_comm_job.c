/*
 * l_comm_job.c -- gpu.comm{} (neither devices nor rank): this process's rank
 * of a job of many processes, from its launcher's environment
 * (core/comm_job.h), meeting the others at the job's store; the options
 * device, timeout, store and id_file.
 */
#include "bindings.h"

#include "comm_job.h"

#define DEFAULT_TIMEOUT 300.0 /* seconds: every rank of a big job has time to start */

static const char *opt_string(lua_State *L, const char *key) {
  if (lua_getfield(L, 1, key) == LUA_TNIL) {
    lua_pop(L, 1);
    return NULL;
  }
  if (lua_type(L, -1) != LUA_TSTRING || lua_rawlen(L, -1) == 0)
    luaL_error(L, "gpu.comm: option '%s' expected %s, got %s", key,
               key[0] == 's' ? "an address 'host:port'" : "a file path", gll_given(L, -1));
  const char *v = lua_tostring(L, -1);
  lua_pop(L, 1); /* the options table keeps it */
  return v;
}

gl_comm *gll_comm_job_open(lua_State *L, int *local_rank) {
  gl_runtime *rt = gll_rt(L);
  gl_job_req q = {.call = "gpu.comm", .timeout_s = DEFAULT_TIMEOUT};
  char err[600];
  if (gl_job_find(NULL, NULL, &q.job, err, sizeof err) != 0) luaL_error(L, "gpu.comm: %s", err);
  q.store = opt_string(L, "store");
  q.id_file = opt_string(L, "id_file");
  if (lua_getfield(L, 1, "timeout") != LUA_TNIL) {
    if (lua_type(L, -1) != LUA_TNUMBER || !(lua_tonumber(L, -1) > 0))
      luaL_error(L, "gpu.comm: option 'timeout' expected a number of seconds > 0, got %s", gll_given(L, -1));
    q.timeout_s = lua_tonumber(L, -1);
  }
  lua_pop(L, 1);
  if (lua_getfield(L, 1, "device") == LUA_TNIL) {
    if (rt->ndev < 1) luaL_error(L, "gpu.comm: this process sees no device");
    q.dev = gll_open_device(L, q.job.local_rank % rt->ndev);
  } else {
    int isint;
    lua_Integer i = lua_tointegerx(L, -1, &isint);
    if (isint && lua_type(L, -1) == LUA_TNUMBER) {
      if (i < 0 || i >= rt->ndev)
        luaL_error(L, "gpu.comm: option 'device': device %d does not exist (%d device%s)", (int)i, rt->ndev,
                   rt->ndev == 1 ? "" : "s");
      q.dev = gll_open_device(L, (int)i);
    } else if (lua_type(L, -1) == LUA_TUSERDATA) {
      q.dev = gll_check_device(L, lua_gettop(L));
    } else {
      luaL_error(L, "gpu.comm: option 'device' expected a device or a device ordinal, got %s", gll_given(L, -1));
    }
  }
  lua_pop(L, 1);
  gl_site site = GL_SITE(L);
  q.site = &site;
  gl_comm *c = NULL;
  if (gl_comm_new_job(rt, &q, &c) != 0) gll_raise(L, rt);
  c->first_rank = q.job.rank; /* a job of one made in-process is rank 0 too */
  *local_rank = q.job.local_rank;
  lua_createtable(L, 1, 0); /* comm.devices */
  gll_push_device(L, q.dev);
  lua_rawseti(L, -2, 1);
  return c;
}
