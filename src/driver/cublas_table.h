/*
 * cublas_table.h -- the cuBLAS functions gpulua uses, as a table: filled with
 * dlopen/dlsym from libcublas (cublas.c) on the cuda backend, with the sim's
 * own implementations (sim_cublas.c) on sim. Declared by the toolkit's
 * cublas_v2.h, as the driver's calls are by cuda.h.
 */
#ifndef GPULUA_DRIVER_CUBLAS_TABLE_H
#define GPULUA_DRIVER_CUBLAS_TABLE_H

#include <cublas_v2.h>

#define GL_CUBLAS_CALLS(X)                                                                                  \
  X(cublasStatus_t, cublasCreate_v2, (cublasHandle_t * handle))                                             \
  X(cublasStatus_t, cublasDestroy_v2, (cublasHandle_t handle))                                              \
  X(cublasStatus_t, cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t stream))                       \
  X(cublasStatus_t, cublasSetWorkspace_v2, (cublasHandle_t handle, void *workspace, size_t bytes))          \
  X(cublasStatus_t, cublasSetMathMode, (cublasHandle_t handle, cublasMath_t mode))                          \
  X(const char *, cublasGetStatusString, (cublasStatus_t status))                                           \
  X(cublasStatus_t, cublasGemmEx,                                                                           \
    (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,        \
     const void *alpha, const void *A, cudaDataType Atype, int lda, const void *B, cudaDataType Btype,      \
     int ldb, const void *beta, void *C, cudaDataType Ctype, int ldc, cublasComputeType_t computeType,      \
     cublasGemmAlgo_t algo))                                                                                \
  X(cublasStatus_t, cublasGemmStridedBatchedEx,                                                             \
    (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,        \
     const void *alpha, const void *A, cudaDataType Atype, int lda, long long int strideA, const void *B,   \
     cudaDataType Btype, int ldb, long long int strideB, const void *beta, void *C, cudaDataType Ctype,     \
     int ldc, long long int strideC, int batchCount, cublasComputeType_t computeType,                       \
     cublasGemmAlgo_t algo))

typedef struct gl_cublas {
#define GL_CUBLAS_MEMBER(ret, name, params) ret(*name) params;
  GL_CUBLAS_CALLS(GL_CUBLAS_MEMBER)
#undef GL_CUBLAS_MEMBER
  int loaded;
  char path[512]; /* the library loaded, or "sim" */
} gl_cublas;

extern gl_cublas gl_blas;

/* Load cuBLAS once (sim: the sim's table, always there). NULL on success,
 * else a message naming what was tried and why it failed. On the cuda
 * backend: GPULUA_CUBLAS, else libcublas.so.13, then .so.12, on the loader's
 * path and in the usual CUDA toolkit folders. */
const char *gl_cublas_load(int sim);

/* The sim's table (sim_cublas.c). */
void gl_cublas_sim_table(gl_cublas *t);

#endif
