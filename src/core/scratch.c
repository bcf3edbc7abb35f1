/*
 * scratch.c -- the streams' scratch memory for the built-in reductions (see
 * scratch.h), made and released the way blas.c makes cuBLAS's workspaces.
 */
#include "scratch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "error.h"
#include "queue.h"
#include "runtime.h"

/* A new scratch, allocated on stream `on` with its ticket zeroed there
 * (outside any capture) for `call`; not yet any stream's. An error says
 * `what` it was for. */
static int scratch_new(gl_stream *on, const char *call, const char *what, gl_site *site, gl_scratch **out) {
  gl_runtime *rt = on->dev->rt;
  gl_scratch *c = calloc(1, sizeof *c);
  if (!c) return gl_fail_nomem(rt, NULL);
  snprintf(c->what, sizeof c->what, "the reduction scratch of stream '%s'", on->name); /* until bound */
  if (gl_slice_alloc(on, GL_U8, GL_SCRATCH_BYTES, 0, site, &c->mem) != 0) {
    gl_buf keep = GL_BUF_INIT; /* the allocation's message, after what it was for */
    gl_buf_printf(&keep, "%s", gl_error_message(rt));
    gl_fail_code(rt, gl_error_code(rt), "%s: %s", what, gl_buf_str(&keep));
    gl_buf_free(&keep);
    free(c);
    return -1;
  }
  gl_operand o = {&c->mem.a->acc, 0, GL_SCRATCH_PARTS, 1, &c->mem, NULL, NULL, 0, c->what};
  gl_op op = {.kind = GL_OP_FILL, .name = "reduction scratch", .call = call, .bytes = GL_SCRATCH_PARTS, .opnd = &o,
              .nopnd = 1};
  op.u.fill.p = gl_slice_ptr(&c->mem);
  op.u.fill.size = 1;
  if (gl_queue_op(on, &op, site) != 0) {
    gl_slice_collect(&c->mem);
    free(c);
    return -1;
  }
  *out = c;
  return 0;
}

static void scratch_free(gl_scratch *c) {
  gl_slice_collect(&c->mem); /* freed after its uses (or with the graphs that hold it) */
  free(c);
}

static void bind(gl_stream *s, gl_scratch *c) {
  snprintf(c->what, sizeof c->what, "the reduction scratch of stream '%s'", s->name);
  s->scratch = c;
  s->dev->reduced = 1;
}

int gl_scratch_of(gl_stream *s, const char *call, gl_site *site, gl_scratch **out) {
  if (s->scratch) {
    *out = s->scratch;
    return 0;
  }
  gl_device *d = s->dev;
  gl_runtime *rt = d->rt;
  gl_scratch *c = NULL;
  if (rt->capture) {
    if (d->nscratch_spare == 0)
      return gl_fail(rt, "%s: a reduction on stream '%s' needs scratch memory of its own, and inside a capture "
                         "nothing is allocated: %s",
                     call, s->name,
                     d->reduced ? "the " GL_SCRATCH_SPARES_TEXT " spares made before the capture are taken "
                                  "(more streams of one capture than that reduce)"
                                : "run one reduction on this device before capturing (each capture then "
                                  "starts with scratch for its streams)");
    c = d->scratch_spare[--d->nscratch_spare];
  } else {
    gl_buf what = GL_BUF_INIT;
    gl_buf_printf(&what, "%s: the reduction scratch of stream '%s'", call, s->name);
    int rc = scratch_new(s, call, gl_buf_str(&what), site, &c);
    gl_buf_free(&what);
    if (rc != 0) return -1;
  }
  bind(s, c);
  *out = c;
  return 0;
}

int gl_scratch_capture_prepare(gl_stream *s, gl_site *site) {
  gl_device *d = s->dev;
  if (!d->reduced) return 0; /* no reduction yet on this device: nothing to prepare */
  gl_scratch *c;
  if (!d->scratch_spare && !(d->scratch_spare = calloc(GL_SCRATCH_SPARES, sizeof *d->scratch_spare)))
    return gl_fail_nomem(d->rt, NULL);
  if (d->nscratch_spare == GL_SCRATCH_SPARES) return 0;
  /* made on the device's spares stream, which the host then sees finish (the
   * tickets zeroed): no stream needs ordering after their making */
  gl_stream *on;
  if (gl_stream_spares(d, site, &on) != 0) return -1;
  while (d->nscratch_spare < GL_SCRATCH_SPARES) {
    char what[96];
    snprintf(what, sizeof what, "%s: a spare reduction scratch (for the streams of a capture)", d->rt->names.capture);
    if (scratch_new(on, d->rt->names.capture, what, site, &c) != 0)
      return -1;
    d->scratch_spare[d->nscratch_spare++] = c;
  }
  return gl_stream_spares_ready(on, site);
}

void gl_scratch_stream_close(gl_stream *s) {
  gl_scratch *c = s->scratch;
  if (!c) return;
  s->scratch = NULL;
  scratch_free(c);
}

void gl_scratch_device_close(gl_device *d) {
  for (gl_stream *s = d->streams; s; s = s->next_open) gl_scratch_stream_close(s);
  while (d->nscratch_spare > 0) scratch_free(d->scratch_spare[--d->nscratch_spare]);
  free(d->scratch_spare);
  d->scratch_spare = NULL;
}
