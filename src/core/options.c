/*
 * options.c -- options from the host's command line and the environment, and
 * the choice of backend (see options.h).
 */
#include "options.h"

#include "error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "driver.h"
#include "driver_ext.h"

static struct {
  char backend[8];
  char policy[8];
  char trace[1024];
  char timeline[1024]; /* "0", "1" or the SVG's file name; "" when not given */
  char sim_model[1024];
} opt;

static const char *const policy_names[] = {"strict", "auto", "off"};

static int valid_backend(const char *v) { return strcmp(v, "cuda") == 0 || strcmp(v, "sim") == 0; }

int gl_policy_parse(const char *v) {
  for (int i = 0; i < 3; i++)
    if (strcmp(v, policy_names[i]) == 0) return i;
  return -1;
}

const char *gl_policy_name(gl_policy p) { return policy_names[p]; }

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
  } else if (strcmp(name, "timeline") == 0) { /* "0", "1", or any other value: the SVG's file name */
    if (!*value || strlen(value) >= sizeof opt.timeline) return -1;
    snprintf(opt.timeline, sizeof opt.timeline, "%s", value);
  } else if (strcmp(name, "sim_model") == 0 || strcmp(name, "sim-model") == 0) {
    if (!*value || strlen(value) >= sizeof opt.sim_model) return -1;
    snprintf(opt.sim_model, sizeof opt.sim_model, "%s", value);
  } else {
    return -1;
  }
  return 0;
}

int gl_initial_policy(gl_buf *why) {
  if (opt.policy[0]) return gl_policy_parse(opt.policy);
  const char *e = getenv("GPULUA_POLICY");
  if (e && *e) {
    int p = gl_policy_parse(e);
    if (p < 0) gl_buf_printf(why, "GPULUA_POLICY must be strict, auto or off, got '%s'", e);
    return p;
  }
  return GL_POLICY_STRICT;
}

const char *gl_trace_option(void) {
  if (opt.trace[0]) return opt.trace;
  const char *e = getenv("GPULUA_TRACE");
  return e && *e ? e : NULL;
}

/* --timeline's value, else GPULUA_TIMELINE's, else NULL: "0" none, "1" the
 * text timeline, anything else the SVG's file name */
static const char *timeline_value(void) {
  if (opt.timeline[0]) return opt.timeline;
  const char *e = getenv("GPULUA_TIMELINE");
  return e && *e ? e : NULL;
}

/* A value meant as a switch, not a file name: an SVG named "yes" is never
 * what was asked for. */
static int looks_boolean(const char *v) {
  static const char *const words[] = {"yes", "no", "true", "false", "on", "off", "y", "n"};
  for (size_t i = 0; i < sizeof words / sizeof *words; i++)
    if (strcasecmp(v, words[i]) == 0) return 1;
  return 0;
}

int gl_timeline_check(gl_buf *why) {
  const char *v = timeline_value();
  if (!v || !looks_boolean(v)) return 0;
  gl_buf_printf(why,
                "gpulua: %s got '%s': give 1 for the text timeline on stderr, 0 for none, or the SVG "
                "picture's file name (FILE.svg)",
                opt.timeline[0] ? "--timeline" : "GPULUA_TIMELINE", v);
  return -1;
}

int gl_timeline_option(void) {
  const char *v = timeline_value();
  return v && strcmp(v, "1") == 0;
}

const char *gl_timeline_svg_option(void) {
  const char *v = timeline_value();
  return v && strcmp(v, "0") != 0 && strcmp(v, "1") != 0 ? v : NULL;
}

/* The timing model named by --sim-model, else GPULUA_SIM_MODEL: read and
 * checked whatever the backend (a bad file is an error either way), used on
 * sim (`use`: none when none is named). 0 (also when none is named), or -1
 * with why. */
static int read_sim_model(int use, gl_buf *why) {
  const char *path = opt.sim_model[0] ? opt.sim_model : getenv("GPULUA_SIM_MODEL");
  if (!path || !*path) return use ? gld_driver_sim_model(NULL, 1, NULL, 0) : 0;
  char bad[1536];
  if (gld_driver_sim_model(path, use, bad, sizeof bad) == 0) return 0;
  gl_buf_printf(why, "gpulua: %s: %s", opt.sim_model[0] ? "--sim-model" : "GPULUA_SIM_MODEL", bad);
  return -1;
}

static int load_sim(gl_buf *why) {
  char bad[256]; /* the sim's own messages: short */
  if (gld_driver_sim_check(bad, sizeof bad) != 0) {
    gl_buf_printf(why, "gpulua: %s", bad);
    return -1;
  }
  if (read_sim_model(1, why) != 0) return -1;
  gld_driver_sim_load(&gld_drv);
  gld_driver_sim_load_ext(&gld_drv_ext);
  CUresult r = gld_drv.cuInit(0);
  if (r != CUDA_SUCCESS) {
    gl_buf_printf(why, "gpulua: the sim backend failed to start: %s", gld_error_name(r));
    return -1;
  }
  gld_backend_name = "sim";
  return 0;
}

int gl_backend_choose(gl_buf *why) {
  if (gld_backend_name) return 0;
  const char *pref = opt.backend[0] ? opt.backend : getenv("GPULUA_BACKEND");
  const char *source = opt.backend[0] ? "--backend" : "GPULUA_BACKEND";
  if (pref && *pref && !valid_backend(pref)) {
    gl_buf_printf(why, "gpulua: %s must be cuda or sim, got '%s'", source, pref);
    return -1;
  }
  if (pref && strcmp(pref, "sim") == 0) return load_sim(why);
  if (read_sim_model(0, why) != 0) return -1; /* checked on cuda too; used on sim */
  char no_cuda[2048]; /* a dlerror() with a path, at most */
  if (gld_driver_cuda_load(&gld_drv, no_cuda, sizeof no_cuda) == 0) {
    gld_backend_name = "cuda";
    return 0;
  }
  if (pref && strcmp(pref, "cuda") == 0) {
    gl_buf_printf(why, "gpulua: %s=cuda, but %s", source, no_cuda);
    return -1;
  }
  fprintf(stderr, "gpulua: no usable CUDA device (%s); using the sim backend\n", no_cuda);
  return load_sim(why);
}

const char *gpulua_backend_probe(char *why, size_t whylen) {
  const char *pref = opt.backend[0] ? opt.backend : getenv("GPULUA_BACKEND");
  const char *source = opt.backend[0] ? "--backend" : "GPULUA_BACKEND";
  int named = pref && *pref;
  if (named && !valid_backend(pref)) {
    snprintf(why, whylen, "%s must be cuda or sim, got '%s'", source, pref);
    return NULL;
  }
  if (named && strcmp(pref, "sim") == 0) {
    snprintf(why, whylen, "%s=sim", source);
    return "sim";
  }
  gld_driver d;
  char no_cuda[2048];
  if (gld_driver_cuda_load(&d, no_cuda, sizeof no_cuda) == 0) {
    int n = 0;
    d.cuDeviceGetCount(&n);
    snprintf(why, whylen, "%s%s%d device%s", named ? source : "", named ? "=cuda; " : "", n, n == 1 ? "" : "s");
    return "cuda";
  }
  if (named) {
    snprintf(why, whylen, "%s=cuda, but %s", source, no_cuda);
    return NULL;
  }
  snprintf(why, whylen, "no usable CUDA device: %s", no_cuda);
  return "sim";
}
