/*
 * sim_model_file.c -- reading a timing model's file (GPULUA_SIM_MODEL,
 * --sim-model; gpu.calibrate writes one): a JSON object of the model's
 * figures, parsed with jansson, every field checked. An error names the file,
 * the field and what was wrong: a field missing, of the wrong type, out of
 * its range, or not a field of the model (a misspelt one), with the fields
 * there are.
 */
#include "sim.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct {
  const char *name;
  size_t offset;  /* in gld_sim_model: a double, or the int copy_engines */
  int optional;
  double lo, hi;  /* the range, both ends allowed but a rate's 0 */
  const char *unit;
} field;

#define F(n, opt, lo, hi, unit) {#n, offsetof(gld_sim_model, n), opt, lo, hi, unit}
static const field fields[] = {
  F(h2d_gbps, 0, 0, 1e6, "GB/s"),        F(d2h_gbps, 0, 0, 1e6, "GB/s"),
  F(bidir_gbps, 0, 0, 2e6, "GB/s"),      F(d2d_gbps, 0, 0, 1e6, "GB/s"),
  F(mem_gbps, 0, 0, 1e6, "GB/s"),        F(launch_us, 0, 0, 1e6, "microseconds"),
  F(copy_latency_us, 0, 0, 1e6, "microseconds"), F(copy_engines, 0, 1, 64, "engines"),
  F(peer_gbps, 1, 0, 1e6, "GB/s"),       F(host_us, 1, 0, 1e6, "microseconds"),
  F(switch_us, 1, 0, 1e6, "microseconds"),
};
#undef F
#define NFIELDS (sizeof fields / sizeof fields[0])

/* "name, h2d_gbps, ..., host_us, notes" */
static void field_list(char *out, size_t len) {
  size_t at = (size_t)snprintf(out, len, "name");
  for (size_t i = 0; i < NFIELDS && at < len; i++) at += (size_t)snprintf(out + at, len - at, ", %s", fields[i].name);
  if (at < len) snprintf(out + at, len - at, ", notes");
}

static int is_rate(const field *f) { return strstr(f->name, "_gbps") != NULL; }

int gld_sim_model_read(const char *path, gld_sim_model *m, char *why, size_t whylen) {
  memset(m, 0, sizeof *m);
  json_error_t err;
  json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
  if (!root) {
    if (err.line < 1) snprintf(why, whylen, "%s: cannot read it: %s", path, err.text);
    else snprintf(why, whylen, "%s:%d: not a model file (JSON): %s", path, err.line, err.text);
    return -1;
  }
  int rc = -1;
  if (!json_is_object(root)) {
    snprintf(why, whylen, "%s: a model file holds one JSON object of the model's fields, got a JSON %s", path,
             json_is_array(root) ? "array" : "value");
    goto out;
  }
  const char *key;
  json_t *v;
  json_object_foreach(root, key, v) { /* every field is one of the model's */
    int known = strcmp(key, "name") == 0 || strcmp(key, "notes") == 0;
    for (size_t i = 0; i < NFIELDS && !known; i++) known = strcmp(key, fields[i].name) == 0;
    if (!known) {
      char list[400];
      field_list(list, sizeof list);
      snprintf(why, whylen, "%s: unknown field '%s' (the fields are: %s)", path, key, list);
      goto out;
    }
  }
  json_t *name = json_object_get(root, "name");
  if (!name || !json_is_string(name) || json_string_length(name) == 0) {
    snprintf(why, whylen, "%s: field 'name' %s (the GPU the model describes, a string)", path,
             !name ? "is missing" : "must be a non-empty string");
    goto out;
  }
  snprintf(m->name, sizeof m->name, "%s", json_string_value(name));
  json_t *notes = json_object_get(root, "notes");
  if (notes && !json_is_string(notes)) {
    snprintf(why, whylen, "%s: field 'notes' must be a string", path);
    goto out;
  }
  for (size_t i = 0; i < NFIELDS; i++) {
    const field *f = &fields[i];
    json_t *x = json_object_get(root, f->name);
    if (!x) {
      if (f->optional) continue;
      snprintf(why, whylen, "%s: field '%s' is missing (%s)", path, f->name, f->unit);
      goto out;
    }
    int integral = strcmp(f->name, "copy_engines") == 0;
    if (!json_is_number(x) || (integral && !json_is_integer(x))) {
      snprintf(why, whylen, "%s: field '%s' must be %s (%s)", path, f->name, integral ? "an integer" : "a number",
               f->unit);
      goto out;
    }
    double d = json_number_value(x);
    if (!isfinite(d) || d < f->lo || d > f->hi || (is_rate(f) && d <= 0)) {
      snprintf(why, whylen, "%s: field '%s' is %g, out of its range (%s %g to %g %s)", path, f->name, d,
               is_rate(f) ? "more than" : "from", f->lo, f->hi, f->unit);
      goto out;
    }
    if (integral) m->copy_engines = (int)d;
    else *(double *)((char *)m + f->offset) = d;
  }
  if (!json_object_get(root, "peer_gbps")) m->peer_gbps = m->h2d_gbps;
  if (m->bidir_gbps < (m->h2d_gbps > m->d2h_gbps ? m->h2d_gbps : m->d2h_gbps)) {
    snprintf(why, whylen, "%s: field 'bidir_gbps' (%g) is less than a single direction's rate (h2d_gbps %g, "
             "d2h_gbps %g): both ways at once cannot move less than one way alone", path, m->bidir_gbps,
             m->h2d_gbps, m->d2h_gbps);
    goto out;
  }
  rc = 0;
out:
  json_decref(root);
  return rc;
}
