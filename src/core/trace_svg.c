/*
 * trace_svg.c -- the timeline as an SVG picture (--timeline=FILE.svg,
 * gpu.timeline{file = ...}): a row per stream under a band per device, a
 * colour per kind of work (with a legend), the waits between streams as
 * arrows, a time axis with round ticks in us, ms or s, and each operation's
 * kind, name, duration and bytes in its <title> (a browser shows it on
 * hover). Self-contained: no script, no external font or file.
 *
 * An idle stretch (no operation on any stream) longer than half of all the
 * rest, such as the compiles before a first kernel, is folded into a narrow
 * grey break labelled with its length, so that the work stays readable.
 * Operations narrower than a pixel that follow each other on a row are
 * drawn as one mark whose title counts them, so a long run stays a file of
 * bounded size. Only finished operations are drawn; the rest are counted as
 * pending in the subtitle.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "runtime.h"
#include "stream.h"
#include "trace_internal.h"

enum {
  W = 1400,          /* the picture's width */
  TOP = 124,         /* the first device band's bottom: title, subtitle, legend, axis above */
  DEV_H = 22,        /* a device's band header */
  ROW_H = 22,        /* a stream's row */
  BAR_H = 14,        /* an operation's bar in its row */
  GAP_W = 36,        /* a folded idle stretch */
  BOTTOM = 58,       /* the lower axis and the note below the rows */
  MAX_FOLDS = 8,
  NKINDS = 8,
  LABEL_CHARS = 26,  /* a stream label's longest text */
};

static const char *const kind_label[NKINDS] = {"copy h2d", "copy d2h", "copy d2d / peer", "fill",
                                               "kernel", "graph replay", "gemm", "collective"};
static const char *const kind_colour[NKINDS] = {"#1f77b4", "#ff7f0e", "#9467bd", "#8c8c8c",
                                                "#2ca02c", "#17becf", "#8c564b", "#d62728"};
static const char *const op_label[] = {"copy host to device", "copy device to host", "copy device to device",
                                       "peer copy", "fill", "kernel launch", "graph replay", "gemm", "collective"};

static int svg_kind(gl_op_kind k) {
  switch (k) {
  case GL_OP_H2D: return 0;
  case GL_OP_D2H: return 1;
  case GL_OP_D2D:
  case GL_OP_PEER: return 2;
  case GL_OP_FILL: return 3;
  case GL_OP_GRAPH: return 5;
  case GL_OP_GEMM: return 6;
  case GL_OP_COLL: return 7;
  default: return 4;
  }
}

/* ---- text ---------------------------------------------------------------- */

/* s as XML character data: the five specials as entities, and what is not
 * a valid XML character in UTF-8 (control bytes, broken sequences) as '?'. */
static void xml_text(FILE *f, const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    unsigned c = *p;
    if (c < 0x80) {
      if (c == '&') fputs("&amp;", f);
      else if (c == '<') fputs("&lt;", f);
      else if (c == '>') fputs("&gt;", f);
      else if (c == '"') fputs("&quot;", f);
      else if (c == '\'') fputs("&apos;", f);
      else if (c < 0x20 && c != '\t' && c != '\n') fputc('?', f);
      else fputc((int)c, f);
      p++;
      continue;
    }
    int len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? (c <= 0xEF ? 3 : 0) : c >= 0xC2 ? 2 : 0;
    unsigned cp = len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
    int i = 1;
    for (; i < len && (p[i] & 0xC0) == 0x80; i++) cp = cp << 6 | (p[i] & 0x3F);
    int ok = len > 0 && i == len && !(len == 3 && cp < 0x800) && !(len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) &&
             !(cp >= 0xD800 && cp <= 0xDFFF) && cp != 0xFFFE && cp != 0xFFFF;
    if (ok) fwrite(p, 1, (size_t)len, f);
    else fputc('?', f);
    p += ok ? len : 1;
  }
}

/* a duration or a time in microseconds, in the unit that reads best */
static void fmt_time(char *out, size_t n, double us) {
  if (us < 1) snprintf(out, n, "%.3f us", us);
  else if (us < 1e3) snprintf(out, n, "%.1f us", us);
  else if (us < 1e6) snprintf(out, n, "%.3f ms", us / 1e3);
  else snprintf(out, n, "%.3f s", us / 1e6);
}

static void fmt_bytes(char *out, size_t n, double b) {
  if (b < 1024) snprintf(out, n, "%.0f bytes", b);
  else if (b < 1024 * 1024) snprintf(out, n, "%.0f bytes (%.1f KiB)", b, b / 1024);
  else if (b < 1024.0 * 1024 * 1024) snprintf(out, n, "%.0f bytes (%.1f MiB)", b, b / (1024 * 1024));
  else snprintf(out, n, "%.0f bytes (%.2f GiB)", b, b / (1024.0 * 1024 * 1024));
}

/* ---- time to x: the shown stretches, with the idle ones folded ----------- */

typedef struct {
  double a, b;
} range;

typedef struct {
  range seg[MAX_FOLDS + 1]; /* shown stretches of time (from lo), in order */
  int nseg;
  double x0, x1, scale;      /* plot area; pixels per microsecond */
  double lo, span, folded;   /* the first start; the whole; the folded idle time */
} timemap;

static double x_of(const timemap *M, double t) {
  double x = M->x0;
  for (int i = 0; i < M->nseg; i++) {
    const range *g = &M->seg[i];
    if (i > 0) {
      double pb = M->seg[i - 1].b;
      if (t < g->a) return x + GAP_W * (t - pb) / (g->a - pb); /* inside the fold */
      x += GAP_W;
    }
    if (t <= g->b || i == M->nseg - 1) return x + (t - g->a) * M->scale;
    x += (g->b - g->a) * M->scale;
  }
  return x;
}

static int by_start(const void *a, const void *b) {
  double x = ((const range *)a)->a, y = ((const range *)b)->a;
  return x < y ? -1 : x > y;
}

static int by_length_desc(const void *a, const void *b) {
  double x = ((const range *)a)->b - ((const range *)a)->a, y = ((const range *)b)->b - ((const range *)b)->a;
  return x > y ? -1 : x < y;
}

/* The idle stretches between the finished ops; the longest fold while one
 * is longer than half of what would still be shown. -1 when out of memory. */
static int make_timemap(const gl_trace *T, long done, double lo, double hi, double x0, double x1, timemap *M) {
  M->lo = lo;
  M->span = hi > lo ? hi - lo : 1;
  M->x0 = x0;
  M->x1 = x1;
  M->folded = 0;
  range folds[MAX_FOLDS];
  int nfold = 0;
  if (done > 1) {
    range *busy = malloc((size_t)done * sizeof *busy);
    if (!busy) return -1;
    long n = 0;
    for (long i = 0; i < T->n; i++)
      if (T->ops[i].done) busy[n++] = (range){T->ops[i].ts - lo, T->ops[i].ts - lo + T->ops[i].dur};
    qsort(busy, (size_t)n, sizeof *busy, by_start);
    long ngap = 0; /* the gaps between merged busy stretches, written over busy's front */
    double end = busy[0].b;
    for (long i = 1; i < n; i++) {
      if (busy[i].a > end) busy[ngap++] = (range){end, busy[i].a};
      if (busy[i].b > end) end = busy[i].b;
    }
    qsort(busy, (size_t)ngap, sizeof *busy, by_length_desc);
    double shown = M->span;
    for (long i = 0; i < ngap && nfold < MAX_FOLDS; i++) {
      double len = busy[i].b - busy[i].a;
      if (len <= (shown - len) / 2 || shown - len < 1e-3) break; /* (only instants would be left) */
      folds[nfold++] = busy[i];
      shown -= len;
      M->folded += len;
    }
    free(busy);
    qsort(folds, (size_t)nfold, sizeof *folds, by_start);
  }
  M->nseg = 0;
  double from = 0;
  for (int i = 0; i < nfold; i++) {
    M->seg[M->nseg++] = (range){from, folds[i].a};
    from = folds[i].b;
  }
  M->seg[M->nseg++] = (range){from, M->span};
  M->scale = (x1 - x0 - nfold * GAP_W) / (M->span - M->folded);
  return 0;
}

/* ---- the parts of the picture -------------------------------------------- */

typedef struct {
  FILE *f;
  const gl_trace *T;
  timemap M;
  gl_stream **rows;  /* by device, then in order of first use */
  int nrows, *row_y; /* each row's top */
  int *row_of_id;    /* a stream's id -> its row, or -1 */
  int max_id;
  int height;
} pic;

static int row_of(const pic *P, const gl_stream *s) {
  return s->id >= 0 && s->id <= P->max_id ? P->row_of_id[s->id] : -1;
}

/* The ticks of the axis whose labels sit at y (and their grid lines from
 * gy0 to gy1 when grid): round multiples of a step of 1, 2 or 5 times a power
 * of ten, about one per 100 pixels of shown time; labels that would touch
 * are left out. */
static void axis(const pic *P, double y, int grid, double gy0, double gy1) {
  const timemap *M = &P->M;
  double shown = M->span - M->folded, want = shown / ((M->x1 - M->x0) / 100.0 + 1e-9);
  if (!(want > 0)) want = 1;
  double p = pow(10, floor(log10(want))), step = p;
  if (want / p > 5) step = 10 * p;
  else if (want / p > 2) step = 5 * p;
  else if (want / p > 1) step = 2 * p;
  double unit = M->span >= 1e6 && step >= 1e4 ? 1e6 : M->span >= 1e3 && step >= 10 ? 1e3 : 1; /* the largest label's */
  const char *uname = unit == 1e6 ? "s" : unit == 1e3 ? "ms" : "us";
  double su = step / unit;
  int decimals = su >= 1 ? 0 : (int)ceil(-log10(su) - 1e-9);
  double last_end = -1e9;
  for (int i = 0; i < M->nseg; i++) {
    for (double k = ceil(M->seg[i].a / step - 1e-9); k * step <= M->seg[i].b + 1e-9; k++) {
      double x = x_of(M, k * step);
      if (grid)
        fprintf(P->f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x, gy0, x, gy1);
      char label[48];
      double v = k * step / unit;
      snprintf(label, sizeof label, "%.*f %s", decimals, fabs(v) < 1e-9 ? 0.0 : v, uname);
      double half = strlen(label) * 3.3;
      if (x - half < last_end + 8 || x + half > W - 2) continue;
      fprintf(P->f, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\">%s</text>\n", x, y, label);
      last_end = x + half;
    }
  }
}

static void legend(const pic *P, const long count[NKINDS], long flows, long autos) {
  FILE *f = P->f;
  double x = 12, y = 66;
  fprintf(f, "<g class=\"legend\">\n");
  for (int k = 0; k < NKINDS; k++) {
    if (!count[k]) continue;
    fprintf(f, "<rect class=\"k%d\" x=\"%.0f\" y=\"%.0f\" width=\"14\" height=\"12\" rx=\"2\"/>"
               "<text x=\"%.0f\" y=\"%.0f\">%s</text>\n", k, x, y - 10, x + 19, y, kind_label[k]);
    x += 19 + strlen(kind_label[k]) * 6.8 + 18;
  }
  if (flows - autos > 0) {
    fprintf(f, "<line class=\"flow\" x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/>"
               "<text x=\"%.0f\" y=\"%.0f\">waits for (wait, join, fork, close)</text>\n",
            x, y - 4, x + 26, y - 4, x + 32, y);
    x += 32 + 34 * 6.8 + 18;
  }
  if (autos > 0) {
    fprintf(f, "<line class=\"flow auto\" x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/>"
               "<text x=\"%.0f\" y=\"%.0f\">auto wait (policy auto)</text>\n", x, y - 4, x + 26, y - 4, x + 32, y);
    x += 32 + 23 * 6.8 + 18;
  }
  if (P->M.nseg > 1)
    fprintf(f, "<rect class=\"fold\" x=\"%.0f\" y=\"%.0f\" width=\"14\" height=\"12\"/>"
               "<text x=\"%.0f\" y=\"%.0f\">idle, folded</text>\n", x, y - 10, x + 19, y);
  fprintf(f, "</g>\n");
}

/* the device bands, the rows' backgrounds and labels, and the folds */
static void frame(const pic *P) {
  FILE *f = P->f;
  int prev_dev = -1;
  for (int r = 0; r < P->nrows; r++) {
    const gl_stream *s = P->rows[r];
    if (s->dev->ordinal != prev_dev) {
      prev_dev = s->dev->ordinal;
      int y = P->row_y[r] - DEV_H;
      fprintf(f, "<rect class=\"band\" x=\"0\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n", y, W, DEV_H);
      fprintf(f, "<text class=\"device\" x=\"8\" y=\"%d\">device %d: ", y + 15, s->dev->ordinal);
      xml_text(f, s->dev->name);
      fprintf(f, "</text>\n");
    }
    fprintf(f, "<rect class=\"%s\" x=\"0\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n", r % 2 ? "odd" : "even", P->row_y[r],
            W, ROW_H);
    char label[GL_STREAM_NAME_MAX + 32], id[16];
    snprintf(id, sizeof id, " #%d", s->id);
    size_t keep = strlen(s->name), room = LABEL_CHARS - strlen(id);
    if (keep > room) { /* a long name is cut (between UTF-8 sequences), its id kept */
      keep = room - 1;
      while (keep > 0 && ((unsigned char)s->name[keep] & 0xC0) == 0x80) keep--;
    }
    snprintf(label, sizeof label, "%.*s%s%s", (int)keep, s->name, keep < strlen(s->name) ? "\xe2\x80\xa6" : "", id);
    fprintf(f, "<text class=\"stream\" x=\"16\" y=\"%d\"><title>stream '", P->row_y[r] + 15);
    xml_text(f, s->name);
    fprintf(f, "' #%d on device %d</title>", s->id, s->dev->ordinal);
    xml_text(f, label);
    fprintf(f, "</text>\n");
  }
  int y0 = TOP - DEV_H, y1 = P->nrows ? P->row_y[P->nrows - 1] + ROW_H : TOP;
  for (int i = 1; i < P->M.nseg; i++) {
    double a = x_of(&P->M, P->M.seg[i - 1].b), b = a + GAP_W;
    char len[32];
    fmt_time(len, sizeof len, P->M.seg[i].a - P->M.seg[i - 1].b);
    fprintf(f, "<g><title>idle for %s: no operation ran on any stream (folded)</title>"
               "<rect class=\"fold\" x=\"%.1f\" y=\"%d\" width=\"%d\" height=\"%d\"/>"
               "<line class=\"foldedge\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
               "<line class=\"foldedge\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n",
            len, a, y0, GAP_W, y1 - y0, a, y0, a, y1, b, y0, b, y1);
    if (y1 - y0 >= 90)
      fprintf(f, "<text class=\"foldlabel\" transform=\"translate(%.1f %d) rotate(-90)\">idle %s</text>\n",
              a + GAP_W / 2.0 + 4, (y0 + y1) / 2, len);
    fprintf(f, "</g>\n");
  }
}

/* A mark on a row: one op, or several narrow ones of one kind in a row. */
typedef struct {
  long first, last, count;
  double xa, xb, busy, bytes;
  int kind;
} mark;

static void draw_mark(const pic *P, const mark *m) {
  FILE *f = P->f;
  const op_rec *o = &P->T->ops[m->first], *z = &P->T->ops[m->last];
  int r = row_of(P, o->s);
  double w = m->xb - m->xa < 1 ? 1 : m->xb - m->xa;
  fprintf(f, "<rect class=\"op k%d\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\"><title>", m->kind, m->xa,
          P->row_y[r] + (ROW_H - BAR_H) / 2, w, BAR_H);
  char start[32], dur[32], bytes[64];
  fmt_time(start, sizeof start, o->ts - P->M.lo);
  fmt_time(dur, sizeof dur, m->busy);
  if (m->count == 1) {
    fprintf(f, "%s: ", op_label[o->kind]);
    xml_text(f, gl_loc_text(P->T->rt, o->name));
    fprintf(f, "\nstream '");
    xml_text(f, o->s->name);
    fprintf(f, "' #%d, device %d\nstarts at %s, takes %s", o->s->id, o->s->dev->ordinal, start, dur);
    if (o->kind == GL_OP_GRAPH) fprintf(f, "\n%zu node%s", o->bytes, o->bytes == 1 ? "" : "s");
    else if (o->bytes) {
      fmt_bytes(bytes, sizeof bytes, (double)o->bytes);
      fprintf(f, "\n%s", bytes);
    }
  } else {
    fprintf(f, "%ld operations (%s), from ", m->count, kind_label[m->kind]);
    xml_text(f, gl_loc_text(P->T->rt, o->name));
    fprintf(f, " to ");
    xml_text(f, gl_loc_text(P->T->rt, z->name));
    char end[32];
    fmt_time(end, sizeof end, z->ts + z->dur - P->M.lo);
    fprintf(f, "\nstream '");
    xml_text(f, o->s->name);
    fprintf(f, "' #%d, device %d\nfrom %s to %s, busy %s", o->s->id, o->s->dev->ordinal, start, end, dur);
    if (m->bytes > 0 && m->kind != 5) {
      fmt_bytes(bytes, sizeof bytes, m->bytes);
      fprintf(f, "\n%s in all", bytes);
    }
  }
  fprintf(f, "</title></rect>\n");
}

/* every finished op, narrow neighbours of one kind merged into one mark */
static int ops(const pic *P, long count[NKINDS]) {
  mark *cur = calloc((size_t)(P->nrows ? P->nrows : 1), sizeof *cur);
  if (!cur) return -1;
  for (long i = 0; i < P->T->n; i++) {
    const op_rec *o = &P->T->ops[i];
    if (!o->done) continue;
    int r = row_of(P, o->s), k = svg_kind(o->kind);
    if (r < 0) continue;
    count[k]++;
    double xa = x_of(&P->M, o->ts - P->M.lo), xb = x_of(&P->M, o->ts + o->dur - P->M.lo);
    mark *m = &cur[r];
    if (m->count && m->kind == k && xb - xa < 1 && m->xb - m->xa < 6 && xa <= m->xb + 1 &&
        (m->count > 1 || m->xb - m->xa < 1)) {
      m->last = i;
      m->count++;
      if (xb > m->xb) m->xb = xb;
      m->busy += o->dur;
      m->bytes += (double)o->bytes;
      continue;
    }
    if (m->count) draw_mark(P, m);
    *m = (mark){i, i, 1, xa, xb, o->dur, (double)o->bytes, k};
  }
  for (int r = 0; r < P->nrows; r++)
    if (cur[r].count) draw_mark(P, &cur[r]);
  free(cur);
  return 0;
}

/* the waits: from the end of the op waited for to the start of the waiting
 * stream's next op; one arrow per pixel between two rows */
static void flows(const pic *P, long *drawn, long *autos) {
  FILE *f = P->f;
  int pairs = P->nrows <= 256 ? P->nrows * P->nrows : 0;
  long *last = pairs ? malloc((size_t)pairs * 2 * sizeof *last) : NULL;
  for (int i = 0; last && i < 2 * pairs; i++) last[i] = -1;
  for (long k = 0; k < P->T->nflows; k++) {
    const flow_rec *fl = &P->T->flows[k];
    const op_rec *from = &P->T->ops[fl->from], *to = gl_trace_flow_target(P->T, fl);
    if (!from->done || (to && !to->done)) continue;
    int ra = row_of(P, from->s), rb = row_of(P, fl->to);
    if (ra < 0 || rb < 0 || ra == rb) continue;
    /* no later op on the waiting stream (yet): the arrow ends where it may go on */
    double x1 = x_of(&P->M, from->ts + from->dur - P->M.lo), x2 = to ? x_of(&P->M, to->ts - P->M.lo) : x1;
    if (last) {
      long *l = &last[2 * (ra * P->nrows + rb)];
      if (l[0] == lround(x1) && l[1] == lround(x2)) continue;
      l[0] = lround(x1);
      l[1] = lround(x2);
    }
    int down = rb > ra, half = BAR_H / 2;
    double y1 = P->row_y[ra] + ROW_H / 2.0 + (down ? half : -half);
    double y2 = P->row_y[rb] + ROW_H / 2.0 + (down ? -half : half);
    int isauto = strcmp(fl->kind, "auto wait") == 0;
    fprintf(f, "<line class=\"flow%s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"><title>%s: stream '",
            isauto ? " auto" : "", x1, y1, x2, y2, fl->kind);
    xml_text(f, fl->to->name);
    fprintf(f, "' #%d waits for ", fl->to->id);
    xml_text(f, gl_loc_text(P->T->rt, from->name));
    fprintf(f, " on stream '");
    xml_text(f, from->s->name);
    fprintf(f, "' #%d%s</title></line>\n", from->s->id,
            to ? "" : " (no later operation of the waiting stream recorded)");
    (*drawn)++;
    if (isauto) (*autos)++;
  }
  free(last);
}

static const char style[] =
  "<style>\n"
  "text{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif;font-size:12px;fill:#222}\n"
  ".title{font-size:16px;font-weight:bold}\n.sub{fill:#555}\n"
  ".tick{font-size:11px;fill:#444;text-anchor:middle}\n.axis{stroke:#888;stroke-width:1}\n"
  ".grid{stroke:#e2e2e2;stroke-width:1}\n"
  ".stream{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:12px}\n"
  ".device{font-weight:bold}\n.band{fill:#dde6f3}\n.even{fill:#ffffff}\n.odd{fill:#f4f6f9}\n"
  ".fold{fill:#ececec}\n.foldedge{stroke:#aaa;stroke-dasharray:3 3}\n"
  ".foldlabel{font-size:11px;fill:#777;text-anchor:middle}\n"
  ".flow{stroke:#333;stroke-width:1.2;stroke-opacity:0.7;marker-end:url(#arrow)}\n"
  ".flow.auto{stroke:#c0392b;stroke-dasharray:4 2;marker-end:url(#arrow-auto)}\n"
  ".note{font-size:11px;fill:#666}\n";

/* The rows: each stream with a finished op, or waiting for one (as dev.main
 * joins the streams of a pipeline after their work), by device, then in
 * order of first use, those that only wait last. The number of devices
 * shown, or -1 when out of memory. */
static int build_rows(pic *P) {
  const gl_trace *T = P->T;
  gl_stream **seen = NULL, **waiting = NULL;
  int nseen = gl_trace_streams(T, &seen), nwait = 0, ndev = 0;
  for (int i = 0; i < nseen; i++) P->max_id = seen[i]->id > P->max_id ? seen[i]->id : P->max_id;
  for (long k = 0; k < T->nflows; k++) P->max_id = T->flows[k].to->id > P->max_id ? T->flows[k].to->id : P->max_id;
  P->row_of_id = malloc((size_t)(P->max_id + 1) * sizeof *P->row_of_id);
  if (!P->row_of_id || (nseen && !seen)) goto fail;
  for (int i = 0; i <= P->max_id; i++) P->row_of_id[i] = -1; /* then 1: has a finished op; 2: only waits */
  for (long k = 0; k < T->n; k++)
    if (T->ops[k].done) P->row_of_id[T->ops[k].s->id] = 1;
  for (long k = 0; k < T->nflows; k++) {
    gl_stream *to = T->flows[k].to;
    if (!T->ops[T->flows[k].from].done || P->row_of_id[to->id] >= 0) continue;
    if ((nwait & (nwait - 1)) == 0) { /* 0, 1, 2, 4, ...: grow */
      gl_stream **v = realloc(waiting, (size_t)(nwait ? 2 * nwait : 1) * sizeof *v);
      if (!v) goto fail;
      waiting = v;
    }
    waiting[nwait++] = to;
    P->row_of_id[to->id] = 2;
  }
  P->rows = malloc((size_t)(nseen + nwait + 1) * sizeof *P->rows);
  P->row_y = malloc((size_t)(nseen + nwait + 1) * sizeof *P->row_y);
  if (!P->rows || !P->row_y) goto fail;
  for (int d = 0; d < T->ndev; d++) {
    int first = P->nrows;
    for (int pass = 0; pass < 2; pass++) {
      gl_stream **v = pass ? waiting : seen;
      for (int i = 0; i < (pass ? nwait : nseen); i++) {
        if (v[i]->dev->ordinal != d || P->row_of_id[v[i]->id] != 1 + pass) continue;
        if (P->nrows == first) ndev++;
        P->row_y[P->nrows] = TOP + (ndev - 1) * DEV_H + P->nrows * ROW_H;
        P->rows[P->nrows++] = v[i];
      }
    }
  }
  for (int r = 0; r < P->nrows; r++) P->row_of_id[P->rows[r]->id] = r;
  free(seen);
  free(waiting);
  return ndev;
fail:
  free(seen);
  free(waiting);
  return -1;
}

int gl_trace_svg_write(const gl_trace *T, const char *path) {
  pic P = {.T = T};
  double lo, hi;
  long done = gl_trace_span(T, &lo, &hi);
  int ndev = build_rows(&P), fail = ndev < 0;
  int rows_end = P.nrows ? P.row_y[P.nrows - 1] + ROW_H : TOP - DEV_H;
  P.height = rows_end + BOTTOM;
  if (!fail && make_timemap(T, done, lo, hi, 12 + LABEL_CHARS * 7.3 + 20, W - 24, &P.M) != 0) fail = 1;
  FILE *f = fail ? NULL : fopen(path, "w");
  if (!f) {
    if (fail) errno = ENOMEM;
    free(P.rows);
    free(P.row_y);
    free(P.row_of_id);
    return -1;
  }
  P.f = f;
  fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
          W, P.height, W, P.height);
  fputs(style, f);
  for (int k = 0; k < NKINDS; k++) fprintf(f, ".k%d{fill:%s}\n", k, kind_colour[k]);
  fputs("</style>\n<defs>\n"
        "<marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" "
        "orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#333\"/></marker>\n"
        "<marker id=\"arrow-auto\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" "
        "orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#c0392b\"/></marker>\n</defs>\n", f);
  fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", W, P.height);
  char span[32], folded[32];
  fmt_time(span, sizeof span, P.M.span);
  fmt_time(folded, sizeof folded, P.M.folded);
  if (done == 0)
    fprintf(f, "<text class=\"title\" x=\"12\" y=\"24\">gpulua timeline: %s</text>\n",
            T->n ? "nothing has finished yet" : "nothing was recorded yet");
  else
    fprintf(f, "<text class=\"title\" x=\"12\" y=\"24\">gpulua timeline: %s from the first operation's start to the "
               "last one's end</text>\n", span);
  fprintf(f, "<text class=\"sub\" x=\"12\" y=\"44\">%d stream%s on %d device%s (%s backend), %ld operation%s", P.nrows,
          P.nrows == 1 ? "" : "s", ndev, ndev == 1 ? "" : "s", gld_backend_name ? gld_backend_name : "no", done,
          done == 1 ? "" : "s");
  if (T->n > done) fprintf(f, ", %ld not finished yet (not drawn)", T->n - done);
  if (T->dropped) fprintf(f, ", %ld older ones no longer kept", T->dropped);
  if (P.M.folded > 0) fprintf(f, "; idle stretches folded: %s", folded);
  fprintf(f, "</text>\n");
  long count[NKINDS] = {0}, drawn = 0, autos = 0;
  if (done > 0) {
    fprintf(f, "<line class=\"axis\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n", P.M.x0, TOP - DEV_H - 2,
            P.M.x1, TOP - DEV_H - 2);
    frame(&P);
    axis(&P, TOP - DEV_H - 7, 1, TOP - DEV_H, rows_end);
    fprintf(f, "<line class=\"axis\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n", P.M.x0, rows_end + 1, P.M.x1,
            rows_end + 1);
    axis(&P, rows_end + 15, 0, 0, 0);
    if (ops(&P, count) != 0) fail = 1;
    flows(&P, &drawn, &autos);
  }
  legend(&P, count, drawn, autos);
  fprintf(f, "<text class=\"note\" x=\"12\" y=\"%d\">Hover over an operation for its kind, name, duration and bytes, "
             "over an arrow for the wait it shows. Times from the first operation's start.</text>\n",
          P.height - 12);
  fprintf(f, "</svg>\n");
  free(P.rows);
  free(P.row_y);
  free(P.row_of_id);
  int bad = ferror(f);
  if (fclose(f) != 0 || bad || fail) {
    if (fail) errno = ENOMEM;
    else if (!errno) errno = EIO;
    return -1;
  }
  return 0;
}
