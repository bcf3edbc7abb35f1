/*
 * trace_text.c -- the text timeline (--timeline, gpu.timeline()): a row of
 * TL_W columns per stream, each column the kind of work that took most of
 * its time. Only finished operations are drawn; those still queued are
 * counted, per row and in all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "runtime.h"
#include "stream.h"
#include "trace_internal.h"

enum { TL_W = 72, TL_KINDS = 6 }; /* columns; kinds of work: H D C F K G */
static const char tl_mark[TL_KINDS] = {'H', 'D', 'C', 'F', 'K', 'G'};

static int tl_kind(gl_op_kind k) {
  switch (k) {
  case GL_OP_H2D: return 0;
  case GL_OP_D2H: return 1;
  case GL_OP_D2D:
  case GL_OP_PEER: return 2;
  case GL_OP_FILL: return 3;
  case GL_OP_GRAPH: return 5;
  default: return 4;
  }
}

/* One stream's row: each column shows the kind of work that took most of
 * its time; then every kind the row holds gets at least one column (the one
 * where it took most time, among columns whose kind shows elsewhere too),
 * so that a short kernel between long copies never disappears. */
static void timeline_row(const gl_trace *T, const gl_stream *s, double lo, double span, char row[TL_W + 1],
                         long *ops, long *pending) {
  double t[TL_W][TL_KINDS];
  memset(t, 0, sizeof t);
  *ops = *pending = 0;
  for (long k = 0; k < T->n; k++) {
    const op_rec *o = &T->ops[k];
    if (o->s != s) continue;
    if (!o->done) {
      (*pending)++;
      continue;
    }
    (*ops)++;
    int kind = tl_kind(o->kind);
    double a = (o->ts - lo) / span * TL_W, b = (o->ts + o->dur - lo) / span * TL_W;
    int c0 = (int)a, c1 = (int)b;
    if (c0 >= TL_W) c0 = TL_W - 1;
    if (c1 >= TL_W) c1 = TL_W - 1;
    for (int c = c0; c <= c1; c++) {
      double from = a > c ? a : c, to = b < c + 1 ? b : c + 1;
      t[c][kind] += to > from ? to - from : 1e-9; /* an instant still counts */
    }
  }
  int shown[TL_KINDS] = {0}, held[TL_KINDS] = {0};
  for (int c = 0; c < TL_W; c++) {
    int best = -1;
    for (int k = 0; k < TL_KINDS; k++) {
      if (t[c][k] > 0) held[k] = 1;
      if (t[c][k] > 0 && (best < 0 || t[c][k] >= t[c][best])) best = k;
    }
    row[c] = best < 0 ? '.' : tl_mark[best];
    if (best >= 0) shown[best]++;
  }
  for (int k = 0; k < TL_KINDS; k++) {
    if (!held[k] || shown[k]) continue;
    int at = -1;
    for (int c = 0; c < TL_W; c++) {
      if (t[c][k] <= 0) continue;
      int cur = -1;
      for (int m = 0; m < TL_KINDS; m++) if (row[c] == tl_mark[m]) cur = m;
      int spare = cur < 0 || shown[cur] > 1;
      if (spare && (at < 0 || t[c][k] > t[at][k])) at = c;
    }
    if (at < 0) continue; /* every column is the only one of its kind: the row is too short */
    for (int m = 0; m < TL_KINDS; m++) if (row[at] == tl_mark[m]) shown[m]--;
    row[at] = tl_mark[k];
    shown[k]++;
  }
  row[TL_W] = '\0';
}

void gl_trace_text(const gl_trace *T, gl_buf *out) {
  double lo, hi;
  long done = gl_trace_span(T, &lo, &hi);
  if (T->n == 0) {
    gl_buf_printf(out, "gpulua timeline: nothing was queued%s\n",
                  T->dropped ? " since the oldest records were let go" : "");
    return;
  }
  if (done == 0) {
    gl_buf_printf(out, "gpulua timeline: nothing has finished yet (%ld operation%s queued)\n", T->n,
                  T->n == 1 ? "" : "s");
    return;
  }
  double span = hi > lo ? hi - lo : 1;
  gl_buf_printf(out, "gpulua timeline: %.3f ms, one column = %.1f us   H h2d  D d2h  C d2d/peer  F fill  K kernel  G graph replay\n",
                span / 1e3, span / TL_W);
  gl_stream **seen = NULL;
  int nseen = gl_trace_streams(T, &seen);
  for (int r = 0; r < nseen; r++) { /* one row per stream, in order of first use */
    char row[TL_W + 1], label[GL_STREAM_NAME_MAX + 16], more[48] = "";
    long ops, pending;
    timeline_row(T, seen[r], lo, span, row, &ops, &pending);
    snprintf(label, sizeof label, "%s #%d", seen[r]->name, seen[r]->id);
    if (pending) snprintf(more, sizeof more, ", %ld pending", pending);
    gl_buf_printf(out, "dev%d %-14.14s |%s| %ld op%s%s\n", seen[r]->dev->ordinal, label, row, ops, ops == 1 ? "" : "s",
                  more);
  }
  free(seen);
  if (done < T->n)
    gl_buf_printf(out, "%ld operation%s still queued (not finished) %s not shown yet\n", T->n - done,
                  T->n - done == 1 ? "" : "s", T->n - done == 1 ? "is" : "are");
  if (T->dropped)
    gl_buf_printf(out, "(the %ld oldest operations are no longer kept, the latest %ld are: recording for "
                       "%s alone keeps the latest %d, and any not finished yet)\n", T->dropped, T->n,
                  T->rt->names.timeline, GL_TRACE_KEEP);
}
