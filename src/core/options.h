/*
 * options.h -- the options the host sets from its command line (before any
 * runtime exists, so they are process-wide), their environment variables,
 * and the choice of backend (once per process: the driver table is one).
 */
#ifndef GPULUA_CORE_OPTIONS_H
#define GPULUA_CORE_OPTIONS_H

#include <stddef.h>

#include "error.h"
#include "types.h"

/* gpulua.h's C interface: name "backend", "policy", "trace", "timeline" or
 * "sim_model";
 * 0 when accepted, -1 when the name or the value is not valid. */
int gpulua_set_option(const char *name, const char *value);
/* gpulua.h's C interface: the backend gl_backend_choose would choose, and
 * why, without choosing (for the host's --version) */
const char *gpulua_backend_probe(char *why, size_t whylen);

int gl_policy_parse(const char *v); /* -1 when not a policy */
const char *gl_policy_name(gl_policy p);
/* --policy, else GPULUA_POLICY, else strict; -1 (with why) on a bad value. */
int gl_initial_policy(gl_buf *why);
const char *gl_trace_option(void);  /* --trace, else GPULUA_TRACE, else NULL */
/* --timeline, else GPULUA_TIMELINE: "1" the text timeline (1), "0" none,
 * any other value the file the SVG timeline is written to (gl_timeline_svg_option) */
int gl_timeline_option(void);
const char *gl_timeline_svg_option(void); /* that file, else NULL */
/* -1 (with why) when that value is a word like yes, true or off, not a file
 * name; else 0. */
int gl_timeline_check(gl_buf *why);

/* Fill gld_drv once: --backend, else GPULUA_BACKEND, else cuda when the
 * driver loads and has a device, else sim with one line on stderr saying
 * why. 0, or -1 with the reason in why. */
int gl_backend_choose(gl_buf *why);

#endif
