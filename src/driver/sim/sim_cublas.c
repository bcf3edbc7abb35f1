/*
 * sim_cublas.c -- the sim's cuBLAS (cublas_table.h): handles bound to sim
 * streams, and GEMMs (plain and strided batched, column-major as cuBLAS's)
 * in f32, f64, f16 and bf16 computed on the stream's worker in stream order:
 * each call queues one operation, as a kernel launch does, so the sim's
 * captures and replays take it like any launch. The argument checks and the
 * status codes follow cuBLAS's. f64 accumulates in f64, the others in f32.
 */
#include "cublas_table.h"
#include "halfprec.h"
#include "sim_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cublasContext { /* what the toolkit declares opaque */
  CUstream stream;
  void *workspace;
  size_t workspace_bytes;
  cublasMath_t math;
};

/* One GEMM, as the operation's record holds it (copied at the call). */
typedef struct gemm_args {
  int ta, tb, m, n, k, lda, ldb, ldc, count;
  long long sa, sb, sc;
  cudaDataType type;
  double alpha, beta;
  const void *a, *b;
  void *c;
} gemm_args;

static double load(cudaDataType t, const void *p, size_t i) {
  switch (t) {
  case CUDA_R_64F: return ((const double *)p)[i];
  case CUDA_R_32F: return ((const float *)p)[i];
  case CUDA_R_16F: return gld_f16_to_f32(((const uint16_t *)p)[i]);
  default: return gld_bf16_to_f32(((const uint16_t *)p)[i]);
  }
}

static void store(cudaDataType t, void *p, size_t i, double v) {
  switch (t) {
  case CUDA_R_64F: ((double *)p)[i] = v; break;
  case CUDA_R_32F: ((float *)p)[i] = (float)v; break;
  case CUDA_R_16F: ((uint16_t *)p)[i] = gld_f32_to_f16((float)v); break;
  default: ((uint16_t *)p)[i] = gld_f32_to_bf16((float)v); break;
  }
}

/* C = alpha op(A) op(B) + beta C for each batch, column-major; C is not read
 * when beta is 0 (as cuBLAS: it may hold anything, NaN included). */
static int gemm_host(void *user, const gld_sim_launch *launch) {
  (void)user;
  gemm_args g;
  memcpy(&g, launch->params[0], sizeof g);
  int f64 = g.type == CUDA_R_64F;
  for (int bt = 0; bt < g.count; bt++) {
    const char *A = (const char *)g.a, *B = (const char *)g.b;
    size_t es = f64 ? 8 : g.type == CUDA_R_32F ? 4 : 2;
    A += (size_t)(bt * g.sa) * es;
    B += (size_t)(bt * g.sb) * es;
    char *C = (char *)g.c + (size_t)(bt * g.sc) * es;
    for (int j = 0; j < g.n; j++)
      for (int i = 0; i < g.m; i++) {
        double acc = 0;
        float accf = 0;
        for (int l = 0; l < g.k; l++) {
          size_t ia = g.ta ? (size_t)l + (size_t)i * g.lda : (size_t)i + (size_t)l * g.lda;
          size_t ib = g.tb ? (size_t)j + (size_t)l * g.ldb : (size_t)l + (size_t)j * g.ldb;
          double p = load(g.type, A, ia) * load(g.type, B, ib);
          if (f64) acc += p;
          else accf += (float)p;
        }
        size_t ic = (size_t)i + (size_t)j * g.ldc;
        double v = f64 ? g.alpha * acc : (double)((float)g.alpha * accf);
        if (g.beta != 0) v += (f64 ? g.beta : (double)(float)g.beta) * load(g.type, C, ic);
        store(g.type, C, ic, v);
      }
  }
  return 0;
}

static struct CUfunc_st gemm_func = {.name = "cublasGemm (sim)", .host = gemm_host, .nparams = 1,
                                     .sizes = {sizeof(gemm_args)}, .ptx_nparams = -1, .max_threads = 1024};

static cublasStatus_t s_create(cublasHandle_t *h) {
  if (!h) return CUBLAS_STATUS_INVALID_VALUE;
  if (!sim_S.initialized) return CUBLAS_STATUS_NOT_INITIALIZED;
  *h = calloc(1, sizeof **h);
  return *h ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

static cublasStatus_t s_destroy(cublasHandle_t h) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  free(h);
  return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t s_set_stream(cublasHandle_t h, cudaStream_t st) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  h->stream = (CUstream)st;
  h->workspace = NULL; /* as cuBLAS: setting the stream resets the workspace */
  h->workspace_bytes = 0;
  return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t s_set_workspace(cublasHandle_t h, void *ws, size_t bytes) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (bytes && !ws) return CUBLAS_STATUS_INVALID_VALUE;
  h->workspace = ws;
  h->workspace_bytes = bytes;
  return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t s_set_math_mode(cublasHandle_t h, cublasMath_t mode) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  h->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}

static const char *s_status_string(cublasStatus_t st) {
  switch (st) {
  case CUBLAS_STATUS_SUCCESS: return "the operation completed successfully";
  case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
  case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
  case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
  case CUBLAS_STATUS_ARCH_MISMATCH: return "an absent device architectural feature is required";
  case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
  case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
  default: return "an unknown internal error has occurred";
  }
}

static int dtype_ok(cudaDataType t) {
  return t == CUDA_R_32F || t == CUDA_R_64F || t == CUDA_R_16F || t == CUDA_R_16BF;
}

static cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const void *alpha, const void *A, cudaDataType at, int lda, long long sa, const void *B,
                           cudaDataType bt, int ldb, long long sb, const void *beta, void *C, cudaDataType ct,
                           int ldc, long long sc, int count, cublasComputeType_t compute) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!sim_S.initialized) return CUBLAS_STATUS_NOT_INITIALIZED;
  if ((ta != CUBLAS_OP_N && ta != CUBLAS_OP_T && ta != CUBLAS_OP_C) ||
      (tb != CUBLAS_OP_N && tb != CUBLAS_OP_T && tb != CUBLAS_OP_C) || m < 0 || n < 0 || k < 0 || count < 0 ||
      lda < (ta == CUBLAS_OP_N ? (m > 1 ? m : 1) : (k > 1 ? k : 1)) ||
      ldb < (tb == CUBLAS_OP_N ? (k > 1 ? k : 1) : (n > 1 ? n : 1)) || ldc < (m > 1 ? m : 1) || !alpha || !beta)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (!dtype_ok(at) || bt != at || ct != at) return CUBLAS_STATUS_NOT_SUPPORTED;
  int f64 = at == CUDA_R_64F;
  if (compute != (f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F)) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (!h->stream) return CUBLAS_STATUS_INVALID_VALUE; /* the sim has no NULL stream */
  if (m == 0 || n == 0 || count == 0) return CUBLAS_STATUS_SUCCESS;
  gemm_args g = {ta != CUBLAS_OP_N, tb != CUBLAS_OP_N, m, n, k, lda, ldb, ldc, count, sa, sb, sc, at, 0, 0, A, B, C};
  g.alpha = f64 ? *(const double *)alpha : *(const float *)alpha;
  g.beta = f64 ? *(const double *)beta : *(const float *)beta;
  /* the timing model's cost: the bytes of A, B and C it moves (no flop rate in the model) */
  double es = f64 ? 8 : at == CUDA_R_32F ? 4 : 2;
  double bytes = es * count * ((double)m * k + (double)k * n + (g.beta != 0 ? 2.0 : 1.0) * m * n);
  CUresult r = sim_enqueue_host_call(&gemm_func, &g, sizeof g, h->stream, bytes);
  return r == CUDA_SUCCESS ? CUBLAS_STATUS_SUCCESS
         : r == CUDA_ERROR_OUT_OF_MEMORY ? CUBLAS_STATUS_ALLOC_FAILED : CUBLAS_STATUS_EXECUTION_FAILED;
}

static cublasStatus_t s_gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                             const void *alpha, const void *A, cudaDataType at, int lda, const void *B,
                             cudaDataType bt, int ldb, const void *beta, void *C, cudaDataType ct, int ldc,
                             cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  (void)algo;
  return gemm(h, ta, tb, m, n, k, alpha, A, at, lda, 0, B, bt, ldb, 0, beta, C, ct, ldc, 0, 1, compute);
}

static cublasStatus_t s_gemm_batched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                     int k, const void *alpha, const void *A, cudaDataType at, int lda,
                                     long long sa, const void *B, cudaDataType bt, int ldb, long long sb,
                                     const void *beta, void *C, cudaDataType ct, int ldc, long long sc, int count,
                                     cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  (void)algo;
  return gemm(h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc, count, compute);
}

void gld_cublas_sim_table(gld_cublas *t) {
  memset(t, 0, sizeof *t);
  snprintf(t->path, sizeof t->path, "sim");
  t->cublasCreate_v2 = s_create;
  t->cublasDestroy_v2 = s_destroy;
  t->cublasSetStream_v2 = s_set_stream;
  t->cublasSetWorkspace_v2 = s_set_workspace;
  t->cublasSetMathMode = s_set_math_mode;
  t->cublasGetStatusString = s_status_string;
  t->cublasGemmEx = s_gemm;
  t->cublasGemmStridedBatchedEx = s_gemm_batched;
}
