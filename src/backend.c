/*
 * backend.c -- options from the host's command line and the environment, and
 * the choice of backend (once per process).
 */

#include "core.h"
#include "gpulua.h"
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

gl_driver gl_drv;
const char *gl_backend_name;
int gl_is_sim;

static struct {
  char backend[8];
  char policy[8];
  char trace[1024];
  int timeline;
} opt;

static int valid_backend(const char *v) { return strcmp(v, "cuda") == 0 || strcmp(v, "sim") == 0; }

int gl_policy_parse(const char *v) {
  if (strcmp(v, "strict") == 0) return GL_POLICY_STRICT;
  if (strcmp(v, "auto") == 0) return GL_POLICY_AUTO;
  if (strcmp(v, "off") == 0) return GL_POLICY_OFF;
  return -1;
}

int gpulua_set_option(const char *name, const char *value) {
  if (!name || !value) return -1;
  if (strcmp(name, "backend") == 0) {
    if (!valid_backend(value)) return -1;
    snprintf(opt.backend, sizeof opt.backend, "%s", value);
  } else if (strcmp(name, "policy") == 0) {
    if (gl_policy_parse(value) < 0) return -1;
    snprintf(opt.policy, sizeof opt.policy, "%s", value);
  } else if (strcmp(name, "trace") == 0) {
    if (!*value || strlen(value) >= sizeof opt.trace) return -1;
    snprintf(opt.trace, sizeof opt.trace, "%s", value);
  } else if (strcmp(name, "timeline") == 0) {
    opt.timeline = strcmp(value, "0") != 0;
  } else {
    return -1;
  }
  return 0;
}

/* The policy to start with: --policy, else GPULUA_POLICY, else strict. */
int gl_initial_policy(lua_State *L) {
  if (opt.policy[0]) return gl_policy_parse(opt.policy);
  const char *e = getenv("GPULUA_POLICY");
  if (e && *e) {
    int p = gl_policy_parse(e);
    if (p < 0) luaL_error(L, "GPULUA_POLICY must be strict, auto or off, got '%s'", e);
    return p;
  }
  return GL_POLICY_STRICT;
}

const char *gl_trace_option(void) {
  if (opt.trace[0]) return opt.trace;
  const char *e = getenv("GPULUA_TRACE");
  return e && *e ? e : NULL;
}

int gl_timeline_option(void) { return opt.timeline; }

static void load_sim(lua_State *L) {
  char why[256];
  if (gl_sim_config_error(why, sizeof why) != 0) luaL_error(L, "gpulua: %s", why);
  gl_driver_sim_load(&gl_drv);
  CUresult r = gl_drv.cuInit(0);
  if (r != CUDA_SUCCESS) luaL_error(L, "gpulua: the sim backend failed to start: %s", gl_error_name(r));
  gl_backend_name = "sim";
  gl_is_sim = 1;
}

void gl_choose_backend(lua_State *L) {
  if (gl_backend_name) return;
  const char *pref = opt.backend[0] ? opt.backend : getenv("GPULUA_BACKEND");
  const char *source = opt.backend[0] ? "--backend" : "GPULUA_BACKEND";
  if (pref && *pref && !valid_backend(pref))
    luaL_error(L, "gpulua: %s must be cuda or sim, got '%s'", source, pref);
  if (pref && strcmp(pref, "sim") == 0) {
    load_sim(L);
    return;
  }
  char why[512];
  if (gl_driver_cuda_load(&gl_drv, why, sizeof why) == 0) {
    gl_backend_name = "cuda";
    return;
  }
  if (pref && strcmp(pref, "cuda") == 0)
    luaL_error(L, "gpulua: %s=cuda, but %s", source, why);
  fprintf(stderr, "gpulua: no usable CUDA device (%s); using the sim backend\n", why);
  load_sim(L);
}
