/*
 * blas.c -- gemm on cuBLAS (see blas.h): the row-major problem checked
 * against its slices, mapped onto column-major cuBLAS (C^T = op(B)^T op(A)^T:
 * the operands swap, each keeps its own transpose), and queued through
 * gl_queue_op; the per-stream handles and workspaces.
 */
#include "blas.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cublas_table.h"
#include "device.h"
#include "driver_ext.h"
#include "error.h"
#include "graph.h"
#include "queue.h"
#include "runtime.h"
#include "stream.h"

typedef struct gl_blas_slot {
  cublasHandle_t h;
  gl_slice ws; /* the workspace: an allocation of the stream's */
  char what[GL_STREAM_NAME_MAX + 48]; /* "the cuBLAS workspace of stream 'x'", for messages */
} gl_blas_slot;

/* cuBLAS's recommendation: 32 MiB on sm_90 and later, 4 MiB before; or the
 * backend's own figure (the sim's cuBLAS uses none: small). */
static size_t workspace_bytes(const gl_device *d) {
  if (gld_drv_ext.blas_workspace) return gld_drv_ext.blas_workspace;
  return (size_t)(d->cc_major >= 9 ? 32 : 4) << 20;
}

/* `call` (the script's) failed in cuBLAS function fn with status st */
static int blas_fail(gl_runtime *rt, const char *call, const char *fn, cublasStatus_t st) {
  const char *text = gld_blas.cublasGetStatusString ? gld_blas.cublasGetStatusString(st) : NULL;
  return gl_fail(rt, "%s: %s failed: %s (cuBLAS status %d)", call, fn, text ? text : "?", (int)st);
}

static int idle_room(gl_device *d) {
  if (d->nblas_idle < d->capblas_idle) return 0;
  int cap = d->capblas_idle ? 2 * d->capblas_idle : 4;
  struct cublasContext **v = realloc(d->blas_idle, (size_t)cap * sizeof *v);
  if (!v) return -1;
  d->blas_idle = v;
  d->capblas_idle = cap;
  return 0;
}

/* A new slot (outside any capture): a handle (an idle one of the device's,
 * else a new one) and a workspace allocated on stream `on`; the handle not
 * yet bound to a stream. An error begins with `call`; an allocation's says
 * `what` it was for. */
static int slot_new(gl_stream *on, const char *call, const char *what, gl_site *site, gl_blas_slot **out) {
  gl_device *d = on->dev;
  gl_runtime *rt = d->rt;
  const char *why = gld_cublas_load();
  if (why) return gl_fail(rt, "%s: %s", call, why);
  gl_blas_slot *b = calloc(1, sizeof *b);
  if (!b) return gl_fail_nomem(rt, NULL);
  gl_set_ctx(d);
  cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
  if (d->nblas_idle > 0) b->h = d->blas_idle[--d->nblas_idle];
  else if ((st = gld_blas.cublasCreate_v2(&b->h)) != CUBLAS_STATUS_SUCCESS) {
    free(b);
    return blas_fail(rt, call, "cublasCreate", st);
  }
  if (gl_slice_alloc(on, GL_U8, workspace_bytes(d), 0, site, &b->ws) != 0) {
    gl_buf keep = GL_BUF_INIT; /* the allocation's message, with what it was for before it */
    gl_buf_printf(&keep, "%s", gl_error_message(rt));
    gl_fail_code(rt, gl_error_code(rt), "%s: %s: %s", call, what, gl_buf_str(&keep));
    gl_buf_free(&keep);
    if (idle_room(d) == 0) d->blas_idle[d->nblas_idle++] = b->h;
    else gld_blas.cublasDestroy_v2(b->h);
    free(b);
    return -1;
  }
  *out = b;
  return 0;
}

/* Bind slot b to stream s, which owns it from now on (its close gives it back). */
static int slot_bind(gl_stream *s, gl_blas_slot *b, const char *call) {
  snprintf(b->what, sizeof b->what, "the cuBLAS workspace of stream '%s'", s->name);
  s->blas = b;
  const char *fn = "cublasSetStream";
  cublasStatus_t st = gld_blas.cublasSetStream_v2(b->h, (cudaStream_t)s->cu);
  if (st == CUBLAS_STATUS_SUCCESS) { /* after the stream: setting one resets the other */
    fn = "cublasSetWorkspace";
    st = gld_blas.cublasSetWorkspace_v2(b->h, (void *)(uintptr_t)gl_slice_ptr(&b->ws), gl_slice_bytes(&b->ws));
  }
  if (st == CUBLAS_STATUS_SUCCESS) fn = "cublasSetMathMode", st = gld_blas.cublasSetMathMode(b->h, CUBLAS_DEFAULT_MATH);
  return st == CUBLAS_STATUS_SUCCESS ? 0 : blas_fail(s->dev->rt, call, fn, st);
}

/* s's slot, made at its first gemm; inside a capture (where nothing may be
 * allocated) one of the spares its device made before the capture began. */
static int slot_of(gl_stream *s, const char *call, gl_site *site, gl_blas_slot **out) {
  if (s->blas) {
    *out = s->blas;
    return 0;
  }
  gl_device *d = s->dev;
  gl_runtime *rt = d->rt;
  gl_blas_slot *b = NULL;
  if (rt->capture) {
    if (d->nblas_spare == 0)
      return gl_fail(rt, "%s: stream '%s' has no cuBLAS handle and workspace of its own, and inside a capture a "
                         "gemm allocates nothing: %s%s%s",
                     call, s->name, gld_blas.loaded ? "the " GL_BLAS_SPARES_TEXT " spares made before the capture are "
                                                     "taken (more streams of one capture than that use cuBLAS)"
                                                   : "run one ",
                     gld_blas.loaded ? "" : call,
                     gld_blas.loaded ? "" : " before capturing (cuBLAS is then loaded, and each capture starts with "
                                           "spares for the streams forked inside it)");
    b = d->blas_spare[--d->nblas_spare];
  } else {
    char what[GL_STREAM_NAME_MAX + 48];
    snprintf(what, sizeof what, "the cuBLAS workspace of stream '%s'", s->name);
    if (slot_new(s, call, what, site, &b) != 0) return -1;
  }
  if (slot_bind(s, b, call) != 0) return -1;
  *out = b;
  return 0;
}

static void slot_free(gl_device *d, gl_blas_slot *b) {
  gl_slice_collect(&b->ws); /* freed after its uses (or with the graphs that hold it) */
  if (idle_room(d) == 0) d->blas_idle[d->nblas_idle++] = b->h;
  else gld_blas.cublasDestroy_v2(b->h); /* no room to keep it: destroyed, which waits for the device */
  free(b);
}

int gl_blas_capture_prepare(gl_stream *s, const char *call, gl_site *site) {
  gl_device *d = s->dev;
  if (!gld_blas.loaded) return 0; /* no gemm yet in this process: nothing to prepare */
  if (!d->blas_spare && !(d->blas_spare = calloc(GL_BLAS_SPARES, sizeof *d->blas_spare)))
    return gl_fail_nomem(d->rt, NULL);
  if (d->nblas_spare == GL_BLAS_SPARES) return 0;
  /* made on the device's spares stream, which the host then sees finish: no
   * stream needs ordering after their making, so a capture (or g:update)
   * changes nothing about which streams may replay its graph */
  gl_stream *on;
  if (gl_stream_spares(d, site, &on) != 0) return -1;
  while (d->nblas_spare < GL_BLAS_SPARES) {
    gl_blas_slot *b = NULL;
    if (slot_new(on, call, "a spare cuBLAS workspace (for the streams forked inside a capture)", site, &b) != 0)
      return -1;
    d->blas_spare[d->nblas_spare++] = b;
  }
  return gl_stream_spares_ready(on, site);
}

void gl_blas_stream_close(gl_stream *s) {
  gl_blas_slot *b = s->blas;
  if (!b) return;
  s->blas = NULL;
  slot_free(s->dev, b);
}

void gl_blas_device_close(gl_device *d) {
  for (gl_stream *s = d->streams; s; s = s->next_open) gl_blas_stream_close(s);
  while (d->nblas_spare > 0) slot_free(d, d->blas_spare[--d->nblas_spare]);
  free(d->blas_spare);
  d->blas_spare = NULL;
  for (int i = 0; i < d->nblas_idle; i++) gld_blas.cublasDestroy_v2(d->blas_idle[i]);
  free(d->blas_idle);
  d->blas_idle = NULL;
  d->nblas_idle = d->capblas_idle = 0;
}

/* ---- the checks ------------------------------------------------------ */

static int live_slice(const gl_gemm_req *r, const char *name, const gl_slice *x) {
  gl_runtime *rt = r->s->dev->rt;
  gl_buf who = GL_BUF_INIT;
  gl_buf_printf(&who, "%s: %s", r->call, name);
  int rc = gl_slice_check_as(x, gl_buf_str(&who));
  gl_buf_free(&who);
  if (rc == -2) return gl_fail(rt, "%s: %s is a released slice", r->call, name);
  if (rc != 0) return -1;
  if (x->a->dev != r->s->dev)
    return gl_fail(rt, "%s: %s is a slice of device %d, but stream '%s' is on device %d", r->call, name,
                   x->a->dev->ordinal, r->s->name, r->s->dev->ordinal);
  return 0;
}

/* The elements a stored matrix (rows x cols, leading dimension ld) of each
 * of `count` batches `stride` apart reaches: the last one's index + 1 (0 when
 * it has none). */
static int64_t reach(int64_t rows, int64_t cols, int64_t ld, int64_t count, int64_t stride) {
  if (rows == 0 || cols == 0 || count == 0) return 0;
  return (count - 1) * stride + (rows - 1) * ld + cols;
}

typedef struct {
  const char *name;  /* "a", "b", "c" */
  gl_slice *x;
  int64_t rows, cols, ld, stride, need;
} mat;

static int check_matrix(const gl_gemm_req *g, mat *m, const char *ldname, const char *sname) {
  gl_runtime *rt = g->s->dev->rt;
  int64_t width = m->cols > 1 ? m->cols : 1;
  if (m->ld < 0) m->ld = width;
  else if (m->ld < width || m->ld > INT_MAX)
    return gl_fail(rt, "%s: %s = %lld, but %s's rows are %lld elements wide (%s must be %lld to %d)", g->call, ldname,
                   (long long)m->ld, m->name, (long long)m->cols, ldname, (long long)width, INT_MAX);
  int64_t one = m->rows * m->ld; /* a matrix's footprint */
  if (m->stride < 0) m->stride = one;
  int64_t count = g->count ? g->count : 1;
  if (g->count > 1 && m->stride > (INT64_MAX / 2) / (count - 1))
    return gl_fail(rt, "%s: %s = %lld is too large for count = %lld", g->call, sname, (long long)m->stride,
                   (long long)count);
  m->need = reach(m->rows, m->cols, m->ld, count, m->stride);
  if ((uint64_t)m->need > m->x->count) {
    if (g->count)
      return gl_fail(rt, "%s: %s has %zu elements, but %lld x %lld with %s = %lld, count = %lld and %s = %lld "
                         "reaches element %lld",
                     g->call, m->name, m->x->count, (long long)m->rows, (long long)m->cols, ldname, (long long)m->ld,
                     (long long)count, sname, (long long)m->stride, (long long)m->need);
    return gl_fail(rt, "%s: %s has %zu elements, but %lld x %lld with %s = %lld needs %lld", g->call, m->name, m->x->count,
                   (long long)m->rows, (long long)m->cols, ldname, (long long)m->ld, (long long)m->need);
  }
  return 0;
}

/* c shares no memory with a or b (the elements each reaches): cuBLAS leaves
 * such a product undefined, and the sim's loop would read elements of c it
 * has already written (in place C = A*A gives wrong numbers). */
static int check_apart(const gl_gemm_req *g, const mat *c, const mat *x, size_t es) {
  uint64_t clo = c->x->lo, chi = clo + (uint64_t)c->need * es, xlo = x->x->lo, xhi = xlo + (uint64_t)x->need * es;
  if (!gl_ranges_overlap(c->x, clo, chi, x->x, xlo, xhi)) return 0;
  gl_buf cb = GL_BUF_INIT, xb = GL_BUF_INIT;
  gl_slice_range(c->x, clo, chi, 0, &cb);
  gl_slice_range(x->x, xlo, xhi, 1, &xb);
  gl_fail(g->s->dev->rt, "%s: c (%s) overlaps %s (%s): c must not share memory with a or b (cuBLAS leaves the "
                         "result undefined); write c to memory apart from them",
          g->call, gl_buf_str(&cb), x->name, gl_buf_str(&xb));
  gl_buf_free(&cb);
  gl_buf_free(&xb);
  return -1;
}

static int cuda_type(gl_dtype dt, int *type, int *compute) {
  switch (dt) {
  case GL_F32: *type = CUDA_R_32F, *compute = CUBLAS_COMPUTE_32F; return 0;
  case GL_F64: *type = CUDA_R_64F, *compute = CUBLAS_COMPUTE_64F; return 0;
  case GL_F16: *type = CUDA_R_16F, *compute = CUBLAS_COMPUTE_32F; return 0;
  case GL_BF16: *type = CUDA_R_16BF, *compute = CUBLAS_COMPUTE_32F; return 0;
  default: return -1;
  }
}

int gl_gemm(const gl_gemm_req *g) {
  gl_stream *s = g->s;
  gl_runtime *rt = s->dev->rt;
  const char *call = g->call;
  if (gl_stream_check(s) != 0) return -1;
  if (live_slice(g, "a", g->a) || live_slice(g, "b", g->b) || live_slice(g, "c", g->c)) return -1;
  gl_dtype dt = g->c->dtype;
  int type, compute;
  if (cuda_type(dt, &type, &compute) != 0)
    return gl_fail(rt, "%s: works on f32, f64, f16 and bf16 slices, got %s %s slice", call, gl_dtype_article(dt),
                   gl_dtypes[dt].name);
  if (g->a->dtype != dt || g->b->dtype != dt)
    return gl_fail(rt, "%s: a, b and c must have one dtype, got %s, %s and %s", call, gl_dtypes[g->a->dtype].name,
                   gl_dtypes[g->b->dtype].name, gl_dtypes[dt].name);
  const char *dim = g->m < 0 || g->m > INT_MAX ? "m" : g->n < 0 || g->n > INT_MAX ? "n" : g->k < 0 || g->k > INT_MAX ? "k" : NULL;
  if (dim)
    return gl_fail(rt, "%s: %s = %lld is out of range (0 to %d)", call, dim,
                   (long long)(dim[0] == 'm' ? g->m : dim[0] == 'n' ? g->n : g->k), INT_MAX);
  if (g->count < 0 || g->count > INT_MAX)
    return gl_fail(rt, "%s: count = %lld is out of range (1 to %d)", call, (long long)g->count, INT_MAX);
  mat A = {"a", g->a, g->trans_a ? g->k : g->m, g->trans_a ? g->m : g->k, g->lda, g->stride_a, 0};
  mat B = {"b", g->b, g->trans_b ? g->n : g->k, g->trans_b ? g->k : g->n, g->ldb, g->stride_b, 0};
  mat C = {"c", g->c, g->m, g->n, g->ldc, g->stride_c, 0};
  if (check_matrix(g, &A, "lda", "stride_a") || check_matrix(g, &B, "ldb", "stride_b") ||
      check_matrix(g, &C, "ldc", "stride_c"))
    return -1;
  if (g->count > 1 && C.stride < C.rows * C.ld && C.rows && C.cols)
    return gl_fail(rt, "%s: stride_c = %lld makes the %lld matrices of c overlap (each takes %lld elements)", call,
                   (long long)C.stride, (long long)g->count, (long long)(C.rows * C.ld));
  size_t es = gl_dtypes[dt].size;
  if (check_apart(g, &C, &A, es) != 0 || check_apart(g, &C, &B, es) != 0) return -1;
  if (g->m == 0 || g->n == 0) return 0; /* an empty C: nothing to compute */
  gl_blas_slot *slot = NULL;
  if (slot_of(s, call, g->site, &slot) != 0) return -1;

  char ra[80], rb[80], rc[80]; /* the roles in conflicts' messages: "s:gemm a" */
  snprintf(ra, sizeof ra, "%s a", call);
  snprintf(rb, sizeof rb, "%s b", call);
  snprintf(rc, sizeof rc, "%s c", call);
  gl_operand o[5];
  int n = 0;
  o[n++] = (gl_operand){&g->a->a->acc, g->a->lo, g->a->lo + (uint64_t)A.need * es, 0, g->a, NULL, ra, 0, NULL};
  o[n++] = (gl_operand){&g->b->a->acc, g->b->lo, g->b->lo + (uint64_t)B.need * es, 0, g->b, NULL, rb, 0, NULL};
  uint64_t chi = g->c->lo + (uint64_t)C.need * es;
  if (g->beta != 0) o[n++] = (gl_operand){&g->c->a->acc, g->c->lo, chi, 0, g->c, NULL, rc, 0, NULL};
  o[n++] = (gl_operand){&g->c->a->acc, g->c->lo, chi, 1, g->c, NULL, rc, 0, NULL};
  o[n++] = (gl_operand){&slot->ws.a->acc, slot->ws.lo, slot->ws.hi, 1, &slot->ws, NULL, call, 0, slot->what};
  gl_op op = {.kind = GL_OP_GEMM, .name = "gemm", .call = call, .bytes = (size_t)C.need * es, .opnd = o, .nopnd = n};
  /* column-major: C^T (n x m) = op(B)^T (n x k) op(A)^T (k x m) */
  op.u.gemm.handle = slot->h;
  op.u.gemm.ta = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  op.u.gemm.tb = g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  op.u.gemm.m = (int)g->n;
  op.u.gemm.n = (int)g->m;
  op.u.gemm.k = (int)g->k;
  op.u.gemm.a = (const void *)(uintptr_t)gl_slice_ptr(g->b);
  op.u.gemm.lda = (int)B.ld;
  op.u.gemm.sa = B.stride;
  op.u.gemm.b = (const void *)(uintptr_t)gl_slice_ptr(g->a);
  op.u.gemm.ldb = (int)A.ld;
  op.u.gemm.sb = A.stride;
  op.u.gemm.c = (void *)(uintptr_t)gl_slice_ptr(g->c);
  op.u.gemm.ldc = (int)C.ld;
  op.u.gemm.sc = C.stride;
  op.u.gemm.count = (int)g->count;
  op.u.gemm.dtype = type;
  op.u.gemm.compute = compute;
  op.u.gemm.alpha = g->alpha;
  op.u.gemm.beta = g->beta;
  op.u.gemm.call = call;
  return gl_queue_op(s, &op, g->site);
}

int gl_blas_submit(gl_op *op) {
  const __typeof__(op->u.gemm) *q = &op->u.gemm;
  float af = (float)q->alpha, bf = (float)q->beta;
  const void *alpha = q->compute == CUBLAS_COMPUTE_64F ? (const void *)&q->alpha : (const void *)&af;
  const void *beta = q->compute == CUBLAS_COMPUTE_64F ? (const void *)&q->beta : (const void *)&bf;
  cublasStatus_t st;
  if (q->count)
    st = gld_blas.cublasGemmStridedBatchedEx(q->handle, (cublasOperation_t)q->ta, (cublasOperation_t)q->tb, q->m, q->n,
                                            q->k, alpha, q->a, (cudaDataType)q->dtype, q->lda, q->sa, q->b,
                                            (cudaDataType)q->dtype, q->ldb, q->sb, beta, q->c, (cudaDataType)q->dtype,
                                            q->ldc, q->sc, q->count, (cublasComputeType_t)q->compute,
                                            CUBLAS_GEMM_DEFAULT);
  else
    st = gld_blas.cublasGemmEx(q->handle, (cublasOperation_t)q->ta, (cublasOperation_t)q->tb, q->m, q->n, q->k, alpha,
                              q->a, (cudaDataType)q->dtype, q->lda, q->b, (cudaDataType)q->dtype, q->ldb, beta, q->c,
                              (cudaDataType)q->dtype, q->ldc, (cublasComputeType_t)q->compute, CUBLAS_GEMM_DEFAULT);
  op->u.gemm.status = (int)st;
  return st == CUBLAS_STATUS_SUCCESS ? 0 : -1;
}

int gl_blas_fail(gl_runtime *rt, const gl_op *op, const char *fn) {
  return blas_fail(rt, op->u.gemm.call, fn, (cublasStatus_t)op->u.gemm.status);
}
