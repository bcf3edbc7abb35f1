/*
 * queue.c -- the one path of every queued operation (see queue.h).
 */
#include "queue.h"

#include <stdio.h>
#include <string.h>

#include "blas.h"
#include "checker.h"
#include "device.h"
#include "graph.h"
#include "hostmem.h"
#include "memory.h"
#include "module.h"
#include "runtime.h"
#include "driver_ext.h"
#include "stream.h"
#include "trace.h"

void gl_operand_describe(const gl_op *op, const gl_operand *o, gl_buf *what, gl_buf *role) {
  if (o->what) gl_buf_printf(what, "%s", o->what);
  else if (o->x) gl_slice_describe(o->x, what);
  else if (o->h) gl_hostbuf_describe(o->h, what);
  else gl_buf_printf(what, "memory");
  const char *call = gl_op_call(op);
  if (o->role) gl_buf_printf(role, "%s", o->role);
  else if (op->kind != GL_OP_LAUNCH) /* a copy's dst (1) or src (2), or the call alone */
    gl_buf_printf(role, "%s%s", call, o->arg == 1 ? " dst" : o->arg == 2 ? " src" : "");
  else if (o->arg) gl_buf_printf(role, "%s of '%s' argument %d", call, op->name, o->arg);
  else gl_buf_printf(role, "%s of '%s'", call, op->name); /* gpulua's own memory (a reduction's scratch) */
}

static void stream_text(gl_buf *b, const gl_stream *t, int two) {
  if (two) gl_buf_printf(b, "stream '%s' of device %d", t->name, t->dev->ordinal);
  else gl_buf_printf(b, "stream '%s' (device %d)", t->name, t->dev->ordinal);
}

void gl_conflict_stream(gl_buf *b, const gl_stream *s, const gl_conflict *c) {
  stream_text(b, s, c->other->dev != s->dev);
}

void gl_conflict_tail(gl_buf *b, const gl_stream *s, const gl_conflict *c, int fork) {
  gl_runtime *rt = s->dev->rt;
  const gl_stream *t = c->other;
  int two = t->dev != s->dev;
  char wait[GL_STREAM_NAME_MAX + 64], join[GL_STREAM_NAME_MAX + 64];
  snprintf(wait, sizeof wait, rt->names.wait_on, s->name);
  snprintf(join, sizeof join, rt->names.join_on, s->name);
  gl_buf_printf(b, ", while ");
  stream_text(b, t, two);
  gl_buf_printf(b,
                " may still %s it (queued at %s); order the streams first (%s on an event recorded after that, "
                "%s, %sor a host sync of stream '%s'",
                c->other_writes ? "be writing" : "be reading", gl_loc_text(rt, c->other_loc), wait, join,
                fork ? "a fork, " : "", t->name);
  if (two) gl_buf_printf(b, " of device %d", t->dev->ordinal);
  gl_buf_printf(b, ")");
}

/* The strict policy's error: the operation, the memory, both streams and
 * both script lines, and how to order them. */
static int conflict_error(gl_stream *s, const gl_op *op, const gl_operand *o, const gl_conflict *c,
                          gl_site *site) {
  gl_runtime *rt = s->dev->rt;
  gl_buf msg = GL_BUF_INIT, what = GL_BUF_INIT, role = GL_BUF_INIT;
  gl_operand_describe(op, o, &what, &role);
  gl_buf_printf(&msg, "%s: %s %s on ", gl_buf_str(&role), gl_buf_str(&what), o->write ? "is written" : "is read");
  gl_conflict_stream(&msg, s, c);
  gl_buf_printf(&msg, " at %s", gl_loc_text(rt, gl_site_loc(rt, site)));
  gl_conflict_tail(&msg, s, c, 1);
  if (op->kind == GL_OP_D2H && op->u.copy.read && o->x && c->other->dev == s->dev && c->other->cu) {
    char read[GL_STREAM_NAME_MAX + 64];
    snprintf(read, sizeof read, rt->names.read_on, c->other->name);
    gl_buf_printf(&msg, ", or read it on stream '%s'", c->other->name);
    if (s->is_main) gl_buf_printf(&msg, " (%s reads on the device's main stream)", rt->names.read_default);
    gl_buf_printf(&msg, ": %s", read);
  }
  gl_fail(rt, "%s", gl_buf_str(&msg));
  gl_buf_free(&msg);
  gl_buf_free(&what);
  gl_buf_free(&role);
  return -1;
}

static int runs_of(const gl_operand *o, int n, int any_range, gl_run *r) {
  int nr = 0;
  for (int i = 0; i < n; i++) gl_run_add(r, &nr, i, o[i].acc, o[i].lo, o[i].hi, o[i].write, any_range);
  return nr;
}

/* A launch's operands from its slices, in parameter order: const T*
 * parameters are reads, other pointers writes; then a reduction's scratch (a
 * write) and the module's variables in use (a __constant__ one read). */
static const gl_operand *launch_operands(const gl_op *op, gl_operand *buf) {
  const gl_kernel *k = op->u.launch.k;
  int n = 0;
  for (int i = 0; i < k->sig.n; i++) {
    gl_slice *x = op->u.launch.slices[i];
    if (x) buf[n++] = (gl_operand){&x->a->acc, x->lo, x->hi, !k->sig.p[i].is_const, x, NULL, NULL, i + 1, NULL};
  }
  gl_slice *sc = op->u.launch.scratch;
  if (sc) buf[n++] = (gl_operand){&sc->a->acc, sc->lo, sc->hi, 1, sc, NULL, NULL, 0, op->u.launch.scratch_what};
  for (gl_alloc *v = k->m->vars; v && n < GL_MAX_OPERANDS; v = v->next_var) /* as launch.c's pass_vars */
    buf[n++] = (gl_operand){&v->acc, 0, v->bytes, !v->var_const, NULL, NULL, NULL, 0, v->var_what};
  return buf;
}

/* Every run under the policy (gl_access_admit): under strict a conflict is
 * an error naming the first operand of the run that has it. */
static int check_operands(gl_stream *s, const gl_op *op, const gl_operand *o, const gl_run *r, int nr, gl_site *site) {
  if (s->dev->rt->policy == GL_POLICY_OFF) return 0; /* admits everything */
  for (int i = 0; i < nr; i++) {
    gl_conflict c;
    int rc = gl_access_admit(r[i].acc, s, r[i].lo, r[i].hi, r[i].write, &c, site);
    if (rc < 0) return -1;
    if (rc == 0) continue;
    gl_operand made[GL_MAX_OPERANDS];
    if (!o) o = launch_operands(op, made);
    const gl_operand *first = &o[r[i].first];
    for (int k = r[i].first; k < r[i].end; k++)
      if (gl_access_conflict(o[k].acc, s, o[k].lo, o[k].hi, o[k].write, &c)) return conflict_error(s, op, &o[k], &c, site);
    return conflict_error(s, op, first, &c, site); /* the union's conflict is one of theirs: not reached */
  }
  return 0;
}

/* Room for each run's record on s before anything is queued: one stream's
 * lane per memory at most, once for runs on the same memory. */
static int reserve_operands(gl_runtime *rt, const gl_run *r, int nr) {
  for (int i = 0; i < nr; i++)
    if ((i == 0 || r[i].acc != r[i - 1].acc) && gl_access_reserve(r[i].acc, 1) != 0) return gl_fail_nomem(rt, NULL);
  return 0;
}

/* The driver call(s) of op; *queued: how many operations went onto s. */
static CUresult submit(gl_stream *s, gl_op *op, int loc, int *queued, const char **call) {
  *queued = 1;
  switch (op->kind) {
  case GL_OP_H2D:
    *call = "cuMemcpyHtoDAsync";
    return gld_drv.cuMemcpyHtoDAsync(op->u.copy.dst, op->u.copy.hsrc, op->bytes, s->cu);
  case GL_OP_D2H:
    *call = "cuMemcpyDtoHAsync";
    return gld_drv.cuMemcpyDtoHAsync(op->u.copy.hdst, op->u.copy.src, op->bytes, s->cu);
  case GL_OP_D2D:
    *call = "cuMemcpyDtoDAsync";
    return gld_drv.cuMemcpyDtoDAsync(op->u.copy.dst, op->u.copy.src, op->bytes, s->cu);
  case GL_OP_PEER:
    *call = "cuMemcpyPeerAsync";
    return gld_drv.cuMemcpyPeerAsync(op->u.copy.dst, op->u.copy.dctx, op->u.copy.src, op->u.copy.sctx, op->bytes,
                                    s->cu);
  case GL_OP_FILL: {
    CUdeviceptr p = op->u.fill.p;
    size_t n = op->bytes / op->u.fill.size;
    const unsigned char *v = op->u.fill.v;
    switch (op->u.fill.size) {
    case 1:
      *call = "cuMemsetD8Async";
      return gld_drv.cuMemsetD8Async(p, v[0], n, s->cu);
    case 2: {
      unsigned short u;
      memcpy(&u, v, 2);
      *call = "cuMemsetD16Async";
      return gld_drv.cuMemsetD16Async(p, u, n, s->cu);
    }
    case 4: {
      unsigned u;
      memcpy(&u, v, 4);
      *call = "cuMemsetD32Async";
      return gld_drv.cuMemsetD32Async(p, u, n, s->cu);
    }
    default: {
      unsigned lo, hi;
      memcpy(&lo, v, 4);
      memcpy(&hi, v + 4, 4);
      if (lo == hi) {
        *call = "cuMemsetD32Async";
        return gld_drv.cuMemsetD32Async(p, lo, 2 * n, s->cu);
      }
      /* an 8-byte pattern: the low and the high words as two pitched 2D fills */
      *call = "cuMemsetD2D32Async";
      CUresult r = gld_drv.cuMemsetD2D32Async(p, 8, lo, 1, n, s->cu);
      if (r != CUDA_SUCCESS) return r;
      *queued = 2;
      r = gld_drv.cuMemsetD2D32Async(p + 4, 8, hi, 1, n, s->cu);
      if (r != CUDA_SUCCESS) *queued = 1;
      return r;
    }
    }
  }
  case GL_OP_GRAPH: break; /* replays go through gl_graph_launch */
  case GL_OP_COLL: break;  /* collectives: one group over several streams (comm.c) */
  case GL_OP_GEMM:
    *call = op->u.gemm.count ? "cublasGemmStridedBatchedEx" : "cublasGemmEx";
    return gl_blas_submit(op) == 0 ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN; /* the status is in op->u.gemm */
  case GL_OP_LAUNCH: {
    const unsigned *g = op->u.launch.grid, *b = op->u.launch.block;
    *call = "cuLaunchKernel";
    if (op->u.launch.modeled) /* with its cost, for the backend's timing model */
      return gld_drv_ext.launch_costed(op->u.launch.k->f, g[0], g[1], g[2], b[0], b[1], b[2], op->u.launch.shared,
                                      s->cu, op->u.launch.params, NULL, op->u.launch.model_bytes,
                                      op->u.launch.model_us, loc);
    return gld_drv.cuLaunchKernel(op->u.launch.k->f, g[0], g[1], g[2], b[0], b[1], b[2], op->u.launch.shared, s->cu,
                                 op->u.launch.params, NULL);
  }
  }
  *queued = 0;
  return CUDA_ERROR_INVALID_VALUE;
}

const char *gl_op_call(const gl_op *op) { return op->call ? op->call : op->name; }

static int fail_launch(gl_runtime *rt, gl_device *dev, const gl_op *op, CUresult r, const char *call, gl_site *site) {
  if (op->kind == GL_OP_GEMM) return gl_blas_fail(rt, op, call);
  if (op->kind != GL_OP_LAUNCH) return gl_fail_cu(rt, dev, r, call, site);
  gl_buf what = GL_BUF_INIT;
  gl_buf_printf(&what, "cuLaunchKernel of kernel '%s'", op->name);
  gl_fail_cu(rt, dev, r, gl_buf_str(&what), site);
  gl_buf_free(&what);
  return -1;
}

/* During a capture (graph.h): the same checks against the capture's own
 * records, the driver call (captured, nothing runs), then the records there
 * and the graph's uses; the memory's real records are left alone, and
 * nothing is traced (a replay is). */
static int queue_captured(gl_stream *s, gl_op *op, gl_graph *g, gl_site *site) {
  gl_device *dev = s->dev;
  gl_runtime *rt = dev->rt;
  if (gl_capture_check_stream(rt, s, gl_op_call(op), site) != 0) return -1;
  gl_operand local[GL_MAX_OPERANDS], made[GL_MAX_OPERANDS];
  if (op->nopnd > GL_MAX_OPERANDS) return gl_fail(rt, "%s: too many operands", gl_op_call(op));
  const gl_operand *opnd = op->opnd ? op->opnd : launch_operands(op, made);
  for (int i = 0; i < op->nopnd; i++) {
    const gl_operand *o = &opnd[i];
    if (o->h && !o->h->m->pinned)
      return gl_fail(rt,
                     "%s at %s: a copy with pageable host memory cannot be captured into graph '%s' (the driver "
                     "would copy it at once): use a pinned host buffer (%s, the default)",
                     gl_op_call(op), gl_loc_text(rt, gl_site_loc(rt, site)), g->name, rt->names.host_alloc);
    if (!gl_graph_local(g, o)) return gl_fail_nomem(rt, NULL); /* every memory's entry made first: */
  }
  for (int i = 0; i < op->nopnd; i++) { /* ... the entries may move while the list grows */
    local[i] = opnd[i];
    local[i].acc = gl_graph_local(g, &opnd[i]); /* found now, nothing is added */
  }
  gl_run runs[GL_MAX_OPERANDS];
  int nr = runs_of(local, op->nopnd, rt->policy == GL_POLICY_OFF, runs);
  if (check_operands(s, op, local, runs, nr, site) != 0) return -1;
  if (op->bytes == 0 && op->kind != GL_OP_LAUNCH) return 0;
  if (reserve_operands(rt, runs, nr) != 0) return -1;
  if (op->kind == GL_OP_LAUNCH && !op->u.launch.k->m->permanent && gl_graph_add_module(g, op->u.launch.k->m) != 0)
    return gl_fail_nomem(rt, NULL);
  gl_set_ctx(dev);
  int queued;
  const char *call = "";
  int loc = gl_site_loc(rt, site); /* a replay's messages name it, whatever the policy then */
  CUresult r = submit(s, op, loc, &queued, &call);
  s->seq += (uint64_t)queued;
  if (r != CUDA_SUCCESS) return fail_launch(rt, dev, op, r, call, site);
  s->last_kind = (int)op->kind + 1;
  for (int i = 0; i < op->nopnd; i++) {
    gl_access_record(local[i].acc, s, local[i].lo, local[i].hi, local[i].write, loc);
    if (gl_graph_add_use(g, op, &opnd[i], loc) != 0) return gl_fail_nomem(rt, NULL);
  }
  return 0;
}

/* op's runs (its own, or found into `own`) in *runs, checked on s under the
 * policy: their count, or -1 with the runtime's error. */
static inline int checked_runs(gl_stream *s, const gl_op *op, gl_run *own, const gl_run **runs, gl_site *site) {
  gl_runtime *rt = s->dev->rt;
  if (op->nopnd > GL_MAX_OPERANDS) return gl_fail(rt, "%s: too many operands", gl_op_call(op));
  int nr = op->nruns;
  *runs = op->runs;
  if (!*runs) {
    nr = runs_of(op->opnd, op->nopnd, rt->policy == GL_POLICY_OFF, own);
    *runs = own;
  }
  if (rt->policy != GL_POLICY_OFF && check_operands(s, op, op->opnd, *runs, nr, site) != 0) return -1;
  return nr;
}

/* Each run's access at s's position now, with the script location (none under off). */
static void record_runs(gl_stream *s, const gl_run *runs, int nr, int loc) {
  for (int i = 0; i < nr; i++) gl_access_record(runs[i].acc, s, runs[i].lo, runs[i].hi, runs[i].write, loc);
}

const char *gl_op_kind_text(gl_op_kind k) {
  switch (k) {
  case GL_OP_H2D: return "a copy host -> device";
  case GL_OP_D2H: return "a copy device -> host";
  case GL_OP_D2D: return "a copy device -> device";
  case GL_OP_PEER: return "a peer copy";
  case GL_OP_FILL: return "a fill";
  case GL_OP_LAUNCH: return "a launch";
  case GL_OP_GRAPH: return "a graph launch";
  case GL_OP_GEMM: return "a gemm";
  default: return "a collective";
  }
}

int gl_queue_op(gl_stream *s, gl_op *op, gl_site *site) {
  gl_device *dev = s->dev;
  gl_runtime *rt = dev->rt;
  if (rt->capture) return queue_captured(s, op, rt->capture, site);
  gl_module *m = op->kind == GL_OP_LAUNCH && !op->u.launch.k->m->permanent ? op->u.launch.k->m : NULL;
  gl_run own[GL_MAX_OPERANDS];
  const gl_run *runs = NULL;
  int nr = checked_runs(s, op, own, &runs, site);
  if (nr < 0) return -1;
  if (op->bytes == 0 && op->kind != GL_OP_LAUNCH) return 0; /* an empty view: nothing to queue */
  if (reserve_operands(rt, runs, nr) != 0) return -1;
  if (m && gl_access_reserve(&m->uses, 1) != 0) return gl_fail_nomem(rt, NULL);

  gl_set_ctx(dev);
  if (rt->trace) gl_trace_begin(s);
  int queued;
  const char *call = "";
  /* locations only serve messages, which policy off never gives */
  int loc = op->nopnd && rt->policy != GL_POLICY_OFF ? gl_site_loc(rt, site) : GL_LOC_NONE;
  CUresult r = submit(s, op, loc, &queued, &call);
  s->seq += (uint64_t)queued;
  if (r != CUDA_SUCCESS) return fail_launch(rt, dev, op, r, call, site);
  s->last_kind = (int)op->kind + 1;
  if (rt->trace) gl_trace_end(s, op->kind, op->name, op->kind == GL_OP_LAUNCH ? 0 : op->bytes);
  if (op->kind == GL_OP_LAUNCH) { /* a later fault names the kernels that may have caused it */
    s->last_launch_seq = s->seq;
    s->last_kernel = op->u.launch.k->name_id;
    s->last_launch_loc = loc;
    if (m) gl_access_mark(&m->uses, s); /* the module stays loaded until it finishes */
  }
  record_runs(s, runs, nr, loc);
  return 0;
}

int gl_queue_admit(gl_stream *s, gl_op *op, gl_site *site) {
  gl_run own[GL_MAX_OPERANDS];
  const gl_run *runs = NULL;
  int nr = checked_runs(s, op, own, &runs, site);
  return nr < 0 ? -1 : reserve_operands(s->dev->rt, runs, nr);
}

void gl_queue_recorded(gl_stream *s, gl_op *op, gl_site *site) {
  gl_runtime *rt = s->dev->rt;
  s->seq++;
  s->last_kind = (int)op->kind + 1;
  if (rt->trace) gl_trace_end(s, op->kind, op->name, op->bytes);
  int loc = op->nopnd && rt->policy != GL_POLICY_OFF ? gl_site_loc(rt, site) : GL_LOC_NONE;
  gl_run own[GL_MAX_OPERANDS];
  record_runs(s, own, runs_of(op->opnd, op->nopnd, rt->policy == GL_POLICY_OFF, own), loc);
}
