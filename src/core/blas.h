/*
 * blas.h -- cuBLAS on streams: a gemm, row-major, checked and recorded like
 * any queued operation (queue.h).
 *
 * Ownership: a stream that runs a gemm gets a cuBLAS handle and a workspace
 * of its own (gl_blas_slot), made at its first gemm outside a capture: the
 * handle bound to the stream, the workspace an allocation on that stream
 * (32 MiB on sm_90 and later, 4 MiB before, as cuBLAS recommends; small on
 * sim, whose cuBLAS needs none), so two
 * streams never share one and a gemm allocates nothing after that. Every
 * gemm records a write of its workspace, so a graph that captured one holds
 * it (its free waits for the graph) and unordered replays are caught. When
 * the stream closes, the workspace is released (its free ordered after its
 * uses) and the handle goes to its device's idle list for the next stream
 * (a destroy would wait for the whole device); the device's close destroys
 * them all. A capture cannot allocate, so each capture begins with spare
 * slots made (gl_blas_capture_prepare) for the streams forked inside it.
 */
#ifndef GPULUA_CORE_BLAS_H
#define GPULUA_CORE_BLAS_H

#include <stdint.h>

#include "memory.h"
#include "types.h"

/* One gemm, as the binding fills it: everything the operation needs. `call`
 * is the call's name as the script wrote it ("s:gemm"): every message
 * begins with it. */
typedef struct gl_gemm_req {
  const char *call;
  gl_stream *s;                /* the stream it is queued on (its workspace's owner) */
  gl_site *site;               /* the script's line */
  gl_slice *a, *b, *c;
  int64_t m, n, k;             /* C is m x n, op(A) m x k, op(B) k x n */
  int trans_a, trans_b;
  int64_t lda, ldb, ldc;       /* row-major leading dimensions; -1: the matrices' widths */
  int64_t count;               /* 0: one gemm; else strided batched with count matrices */
  int64_t stride_a, stride_b, stride_c; /* elements between batches; -1: one matrix's footprint */
  double alpha, beta;
} gl_gemm_req;

/* A gemm: the stream, the slices (live, on the stream's device, of one
 * dtype cuBLAS takes), the extents against the slices and c apart from a
 * and b, all checked in that order; then queued (reads of A and B, and of C
 * when beta ~= 0; a write of C and of the stream's workspace). 0, or -1 with
 * the runtime's error: bad extents, dtypes or devices, cuBLAS missing
 * (named), a cuBLAS status (its own text), a conflict. */
int gl_gemm(const gl_gemm_req *r);

/* The queue's side (queue.c): make op's cuBLAS call (0, or the status kept in
 * op->u.gemm.status), and the error for a failed one. */
struct gl_op;
int gl_blas_submit(struct gl_op *op);
int gl_blas_fail(gl_runtime *rt, const struct gl_op *op, const char *call);

/* Before s begins a capture (graph.c): when this process has used cuBLAS,
 * the device keeps GL_BLAS_SPARES slots made (handles and workspaces), for
 * streams forked inside the capture, whose first gemm cannot allocate. The
 * workspaces are allocated on the device's spares stream and the host waits
 * for that (gl_stream_spares): ready for any stream, with no ordering.
 * `call` (the capture's, "s:capture") begins an error's message. */
#define GL_BLAS_SPARES 4
#define GL_BLAS_SPARES_TEXT "4"
int gl_blas_capture_prepare(gl_stream *s, const char *call, gl_site *site);

/* s closes: its workspace released, its handle idle for the next stream. */
void gl_blas_stream_close(gl_stream *s);
/* The device closes (after its work finished): every handle destroyed. */
void gl_blas_device_close(gl_device *d);

#endif
