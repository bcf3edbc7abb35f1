/*
 * trace.c -- the trace of a run (see trace.h).
 *
 * Each traced operation is bracketed by two timing events from its device's
 * pool, recorded on its stream; on sim the workers' clocks stamp them, so one
 * code path serves both backends. Times are taken relative to a base event
 * recorded on an idle stream of each device when it is first traced.
 * Finished operations are harvested as the trace grows, so events are
 * reused and long pipelines keep a bounded number of them. The text
 * timeline is trace_text.c's, the SVG timeline trace_svg.c's.
 */
#include "trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device.h"
#include "driver.h"
#include "event.h"
#include "runtime.h"
#include "stream.h"
#include "driver_ext.h"
#include "trace_internal.h"

static const char *const kind_names[] = {"copy h2d", "copy d2h", "copy d2d", "copy peer", "fill", "launch", "graph", "gemm", "collective"};

static double host_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The clock a trace's times are on: the host's, or with a backend's timing
 * model the virtual one (driver_ext.h), in seconds. `base`: a device's base event
 * (completed), or NULL for the clock now. */
static double trace_clock(CUevent base) {
  double t;
  if (gld_drv_ext.model_host_time)
    return base && gld_drv_ext.model_event_time(base, &t) == 0 ? t : gld_drv_ext.model_host_time();
  return host_now();
}

static dev_state *dev_of(gl_trace *T, gl_device *d) {
  if (d->ordinal >= T->ndev) return NULL;
  dev_state *ds = &T->dev[d->ordinal];
  if (!ds->ready) {
    gl_set_ctx(d);
    if (gld_drv.cuStreamCreateWithPriority(&ds->idle, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS ||
        gld_drv.cuEventCreate(&ds->base, 0) != CUDA_SUCCESS)
      return NULL;
    gld_drv.cuEventRecord(ds->base, ds->idle);
    gld_drv.cuEventSynchronize(ds->base);
    ds->base_host = trace_clock(ds->base);
    ds->ready = 1;
  }
  return ds;
}

/* timing events from the device's pool (event.h) */
static CUevent take_event(gl_trace *T, gl_device *d) {
  CUevent e = NULL;
  if (!dev_of(T, d) || gl_event_take(d, 1, &e) != CUDA_SUCCESS) return NULL;
  return e;
}

/* Read an op's times once its end event has completed (or wait for it). */
static void harvest(gl_trace *T, op_rec *o, int wait) {
  if (o->done) return;
  gl_device *d = o->s->dev;
  if (!d->opened || gl_device_poisoned(d) || !o->a || !o->b) {
    if (d->opened) { /* its events go back to the pool, which the device's close destroys */
      if (o->a) gl_event_give(d, o->a, 1);
      if (o->b) gl_event_give(d, o->b, 1);
    }
    o->a = o->b = NULL;
    o->done = 1; /* no times: drawn as an instant */
    return;
  }
  gl_set_ctx(d);
  if (wait) gld_drv.cuEventSynchronize(o->b);
  else {
    int q = gld_drv_quiet(1); /* the trace's own harvest moves no clock */
    CUresult r = gld_drv.cuEventQuery(o->b);
    gld_drv_quiet(q);
    if (r != CUDA_SUCCESS) return;
  }
  dev_state *ds = &T->dev[d->ordinal];
  float ms_a = 0, ms_b = 0;
  gld_drv.cuEventElapsedTime(&ms_a, ds->base, o->a);
  gld_drv.cuEventElapsedTime(&ms_b, ds->base, o->b);
  double off = (ds->base_host - T->t0) * 1e6;
  o->ts = off + ms_a * 1e3;
  o->dur = (ms_b - ms_a) * 1e3;
  if (o->dur < 0) o->dur = 0;
  gl_event_give(d, o->a, 1);
  gl_event_give(d, o->b, 1);
  o->a = o->b = NULL;
  o->done = 1;
}

/* The oldest finished records go, leaving the latest `keep` (more when some
 * of those older than them have not finished). */
static void drop_oldest(gl_trace *T, long keep) {
  long cut = T->n - keep;
  if (cut > T->harvested) cut = T->harvested;
  if (cut <= 0) return;
  for (long i = 0; i < cut; i++) gl_stream_unref(T->ops[i].s);
  memmove(T->ops, T->ops + cut, (size_t)(T->n - cut) * sizeof *T->ops);
  T->n -= cut;
  T->harvested -= cut;
  T->dropped += cut;
  long kept = 0;
  for (long k = 0; k < T->nflows; k++) {
    flow_rec f = T->flows[k];
    if (f.from < cut) {
      gl_stream_unref(f.to);
      continue;
    }
    f.from -= cut;
    T->flows[kept++] = f;
  }
  T->nflows = kept;
}

/* Recording for gpu.timeline() only keeps the latest GL_TRACE_KEEP records
 * (a file or a timeline at exit needs them all). While work is queued, up to
 * half as many again are held, so that records go GL_TRACE_KEEP / 4 or more
 * at a time; gpu.timeline() drops down to GL_TRACE_KEEP before it shows them. */
static int keeps_latest_only(const gl_trace *T) { return !T->file[0] && !T->svg[0] && !T->timeline; }

static void trim(gl_trace *T) {
  if (!keeps_latest_only(T) || T->n <= GL_TRACE_KEEP + GL_TRACE_KEEP / 2) return;
  long cut = T->n - GL_TRACE_KEEP;
  if (cut > T->harvested) cut = T->harvested;
  if (cut < GL_TRACE_KEEP / 4) return; /* too few finished to go yet */
  drop_oldest(T, GL_TRACE_KEEP);
}

/* The begin event of the operation being queued on s, taken off the list
 * (NULL when none). A collective begins on all its ranks' streams before it
 * ends on any. */
static CUevent take_pending(gl_trace *T, const gl_stream *s) {
  for (int i = 0; i < T->npending; i++)
    if (T->pending[i].s == s) {
      CUevent e = T->pending[i].e;
      T->pending[i] = T->pending[--T->npending];
      return e;
    }
  return NULL;
}

void gl_trace_begin(gl_stream *s) {
  gl_trace *T = s->dev->rt->trace;
  if (!T) return;
  CUevent stale = take_pending(T, s); /* an operation whose queueing failed */
  if (stale) gl_event_give(s->dev, stale, 1);
  if (T->npending == GL_TRACE_PENDING) return; /* no begin event: drawn as an instant */
  CUevent e = take_event(T, s->dev);
  if (!e) return;
  gld_drv.cuEventRecord(e, s->cu);
  T->pending[T->npending++] = (pending_rec){s, s->dev, e};
}

void gl_trace_end(gl_stream *s, gl_op_kind kind, const char *name, size_t bytes) {
  gl_trace *T = s->dev->rt->trace;
  if (!T) return;
  CUevent a = take_pending(T, s), b = take_event(T, s->dev);
  if (b) gld_drv.cuEventRecord(b, s->cu);
  if (T->n == T->cap) {
    long cap = T->cap ? 2 * T->cap : 1024;
    op_rec *v = realloc(T->ops, (size_t)cap * sizeof *v);
    if (!v) return;
    T->ops = v;
    T->cap = cap;
  }
  op_rec *o = &T->ops[T->n++];
  memset(o, 0, sizeof *o);
  o->s = s;
  gl_stream_ref(s);
  o->seq = s->seq;
  o->kind = kind;
  o->name = gl_intern(T->rt, name ? name : kind_names[kind]);
  o->bytes = bytes;
  o->a = a;
  o->b = b;
  if (T->n - T->harvested > 4096) { /* give finished events back to the pool */
    long i = T->harvested;
    for (; i < T->n; i++) {
      harvest(T, &T->ops[i], 0);
      if (!T->ops[i].done) break;
    }
    T->harvested = i;
    trim(T);
    gl_set_ctx(s->dev); /* a stream let go may have set another device's context */
  }
}

void gl_trace_wait(gl_stream *s, gl_stream *t, uint64_t seq, const char *kind) {
  gl_trace *T = s->dev->rt->trace;
  if (!T || s == t || s->dev->rt->capture) return; /* a capture's waits are inside its replays */
  long from = -1;
  for (long i = T->n - 1; i >= 0 && i >= T->n - 100000; i--)
    if (T->ops[i].s == t && T->ops[i].seq <= seq) {
      from = i;
      break;
    }
  if (from < 0) return; /* nothing traced to wait for */
  if (T->nflows == T->capflows) {
    long cap = T->capflows ? 2 * T->capflows : 256;
    flow_rec *v = realloc(T->flows, (size_t)cap * sizeof *v);
    if (!v) return;
    T->flows = v;
    T->capflows = cap;
  }
  flow_rec *f = &T->flows[T->nflows++];
  f->from = from;
  f->to = s;
  gl_stream_ref(s);
  f->to_seq = s->seq;
  f->kind = kind;
}

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

int gl_trace_streams(const gl_trace *T, gl_stream ***out) {
  int n = 0, cap = 0;
  gl_stream **v = NULL;
  for (long i = 0; i < T->n; i++) {
    int j = 0;
    while (j < n && v[j] != T->ops[i].s) j++;
    if (j < n) continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 16;
      gl_stream **nv = realloc(v, (size_t)cap * sizeof *nv);
      if (!nv) break;
      v = nv;
    }
    v[n++] = T->ops[i].s;
  }
  *out = v;
  return n;
}

long gl_trace_span(const gl_trace *T, double *lo, double *hi) {
  long done = 0;
  *lo = *hi = 0;
  for (long i = 0; i < T->n; i++) {
    const op_rec *o = &T->ops[i];
    if (!o->done) continue;
    if (done == 0 || o->ts < *lo) *lo = o->ts;
    if (done == 0 || o->ts + o->dur > *hi) *hi = o->ts + o->dur;
    done++;
  }
  return done;
}

const op_rec *gl_trace_flow_target(const gl_trace *T, const flow_rec *f) {
  for (long i = f->from + 1; i < T->n; i++)
    if (T->ops[i].s == f->to && T->ops[i].seq > f->to_seq) return &T->ops[i];
  return NULL;
}

/* Write the trace to path; -1 with errno set when it cannot. */
static int write_json(const gl_trace *T, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fprintf(f, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
  int first = 1;
#define SEP() (first ? (first = 0, "") : ",\n")
  /* a process per device, a thread (track) per stream */
  for (int d = 0; d < T->ndev; d++) {
    if (!T->dev[d].ready) continue;
    gl_device *dv = &T->rt->devs[d];
    fprintf(f, "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":", SEP(), d);
    char name[300];
    snprintf(name, sizeof name, "device %d: %s", d, dv->name); /* the driver's name: under 256 bytes */
    json_string(f, name);
    fprintf(f, "}}");
  }
  gl_stream **seen = NULL;
  int nseen = gl_trace_streams(T, &seen);
  for (int i = 0; i < nseen; i++) { /* name each stream's track */
    op_rec one = {.s = seen[i]}, *o = &one;
    fprintf(f, "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":", SEP(),
            o->s->dev->ordinal, o->s->id);
    char track[GL_STREAM_NAME_MAX + 16];
    snprintf(track, sizeof track, "%s #%d", o->s->name, o->s->id); /* streams may share a name */
    json_string(f, track);
    fprintf(f, "}}");
  }
  free(seen);
  for (long i = 0; i < T->n; i++) {
    op_rec *o = &T->ops[i];
    const char *name = gl_loc_text(T->rt, o->name);
    fprintf(f, "%s{\"name\":", SEP());
    json_string(f, name);
    fprintf(f, ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"bytes\":%zu",
            o->kind == GL_OP_LAUNCH ? "launch" : o->kind == GL_OP_FILL ? "fill" : o->kind == GL_OP_GRAPH ? "graph"
            : o->kind == GL_OP_GEMM ? "gemm" : o->kind == GL_OP_COLL ? "nccl" : "copy",
            o->s->dev->ordinal, o->s->id, o->ts, o->dur, o->kind == GL_OP_GRAPH ? 0 : o->bytes);
    if (o->kind == GL_OP_GRAPH) fprintf(f, ",\"graph\":true,\"nodes\":%zu", o->bytes); /* a replay: its node count */
    if (o->kind == GL_OP_LAUNCH) {
      fprintf(f, ",\"kernel\":");
      json_string(f, name);
    }
    fprintf(f, ",\"stream\":");
    json_string(f, o->s->name);
    fprintf(f, "}}");
  }
  long id = 1;
  for (long k = 0; k < T->nflows; k++, id++) {
    flow_rec *fl = &T->flows[k];
    op_rec *from = &T->ops[fl->from];
    const op_rec *to = gl_trace_flow_target(T, fl);
    if (!to) continue;
    const char *nm = fl->kind;
    fprintf(f, "%s{\"name\":\"%s\",\"cat\":\"wait\",\"ph\":\"s\",\"id\":%ld,\"pid\":%d,\"tid\":%d,\"ts\":%.3f}", SEP(),
            nm, id, from->s->dev->ordinal, from->s->id, from->ts + from->dur);
    fprintf(f, "%s{\"name\":\"%s\",\"cat\":\"wait\",\"ph\":\"f\",\"bp\":\"e\",\"id\":%ld,\"pid\":%d,\"tid\":%d,\"ts\":%.3f}",
            SEP(), nm, id, to->s->dev->ordinal, to->s->id, to->ts);
  }
#undef SEP
  fprintf(f, "\n]}\n");
  return fclose(f) == 0 ? 0 : -1;
}

static int begin(gl_runtime *rt, int timeline) {
  gl_trace *T = calloc(1, sizeof *T);
  if (!T) return gl_fail_nomem(rt, rt->names.trace);
  T->dev = calloc((size_t)(rt->ndev > 0 ? rt->ndev : 1), sizeof *T->dev);
  if (!T->dev) {
    free(T);
    return gl_fail_nomem(rt, rt->names.trace);
  }
  T->rt = rt;
  T->ndev = rt->ndev;
  T->timeline = timeline;
  T->t0 = trace_clock(NULL);
  rt->trace = T;
  return 0;
}

/* Forget the records (after they were written): a new trace starts. */
static void drop_records(gl_trace *T) {
  for (long i = 0; i < T->n; i++) gl_stream_unref(T->ops[i].s);
  for (long k = 0; k < T->nflows; k++) gl_stream_unref(T->flows[k].to);
  T->n = T->harvested = T->nflows = 0;
}

/* A file name the trace can hold that can be written now, not only at exit;
 * else the error, with the system's reason. */
static int check_writable(gl_runtime *rt, const char *what, const char *file) {
  if (!*file || strlen(file) >= sizeof rt->trace->file)
    return gl_fail(rt, "%s: '%s' is not a usable file name", what, file);
  FILE *probe = fopen(file, "a");
  if (!probe) return gl_fail(rt, "%s: cannot write %s: %s", what, file, strerror(errno));
  fclose(probe);
  return 0;
}

int gl_trace_start(gl_runtime *rt, const char *what, const char *file, int timeline) {
  if (file && check_writable(rt, what, file) != 0) return -1;
  gl_trace *T = rt->trace;
  if (T && T->file[0] && file) { /* the running trace is written first */
    if (gl_trace_write(rt, what) != 0) return -1;
    drop_records(T);
  }
  if (!T && begin(rt, timeline) != 0) return -1;
  if (timeline) rt->trace->timeline = 1;
  if (file) snprintf(rt->trace->file, sizeof rt->trace->file, "%s", file);
  return 0;
}

int gl_trace_start_svg(gl_runtime *rt, const char *what, const char *svg) {
  if (check_writable(rt, what, svg) != 0) return -1;
  if (!rt->trace && begin(rt, 0) != 0) return -1;
  snprintf(rt->trace->svg, sizeof rt->trace->svg, "%s", svg);
  return 0;
}

/* Read the times of every op that has finished, waiting for none; the
 * number still pending. */
static long harvest_finished(gl_trace *T) {
  long pending = 0;
  for (long i = T->harvested; i < T->n; i++) {
    harvest(T, &T->ops[i], 0);
    if (!T->ops[i].done) pending++;
    else if (i == T->harvested) T->harvested = i + 1;
  }
  return pending;
}

int gl_trace_timeline(gl_runtime *rt, const char *what, gl_buf *text, const char *svg) {
  if (svg && check_writable(rt, what, svg) != 0) return -1;
  int started = 0;
  if (!rt->trace) {
    if (begin(rt, 0) != 0) return -1;
    started = 1;
    if (text)
      gl_buf_printf(text, "gpulua timeline: nothing was being recorded; recording starts now, and %s() shows the "
                          "work queued from here on\n", what);
  }
  gl_trace *T = rt->trace;
  harvest_finished(T);
  if (keeps_latest_only(T)) drop_oldest(T, GL_TRACE_KEEP);
  if (svg && gl_trace_svg_write(T, svg) != 0) return gl_fail(rt, "%s: cannot write %s: %s", what, svg, strerror(errno));
  if (text && !started && !svg) gl_trace_text(T, text);
  return started;
}

const char *gl_trace_file(const gl_runtime *rt) {
  return rt->trace && rt->trace->file[0] ? rt->trace->file : NULL;
}

int gl_trace_write(gl_runtime *rt, const char *call) {
  gl_trace *T = rt->trace;
  if (!T || !T->file[0]) return gl_fail(rt, "%s: no trace file (start one with %s)", call, rt->names.trace_start);
  for (long i = 0; i < T->n; i++) harvest(T, &T->ops[i], 1);
  if (write_json(T, T->file) != 0) return gl_fail(rt, "%s: cannot write %s: %s", call, T->file, strerror(errno));
  return 0;
}

void gl_trace_finish(gl_runtime *rt) {
  gl_trace *T = rt->trace;
  if (!T) return;
  for (long i = 0; i < T->n; i++) harvest(T, &T->ops[i], 1);
  if (T->file[0] && write_json(T, T->file) != 0) /* at exit: nothing left to raise to */
    fprintf(stderr, "gpulua: cannot write the trace to %s: %s\n", T->file, strerror(errno));
  if (T->svg[0] && gl_trace_svg_write(T, T->svg) != 0)
    fprintf(stderr, "gpulua: cannot write the timeline to %s: %s\n", T->svg, strerror(errno));
  if (T->timeline) {
    gl_buf text = GL_BUF_INIT;
    gl_trace_text(T, &text);
    fputs(gl_buf_str(&text), stderr);
    gl_buf_free(&text);
  }
  rt->trace = NULL;
  drop_records(T);
  for (int i = 0; i < T->npending; i++) /* begun, never ended: their queueing failed */
    if (T->pending[i].dev->opened) gl_event_give(T->pending[i].dev, T->pending[i].e, 1);
  for (int d = 0; d < T->ndev; d++) {
    dev_state *ds = &T->dev[d];
    if (!ds->ready || !rt->devs[d].opened) continue;
    gl_set_ctx(&rt->devs[d]);
    gld_drv.cuEventDestroy(ds->base);
    gld_drv.cuStreamDestroy(ds->idle);
  }
  free(T->ops);
  free(T->flows);
  free(T->dev);
  free(T);
}
