/*
 * cublas_table.h -- the cuBLAS functions gpulua uses, as a table: filled with
 * dlopen/dlsym from libcublas (cublas.c) on the cuda backend, with the sim's
 * own implementations (sim_cublas.c) on sim; and gpulua's own declarations of
 * the types they take (cublas_api.h's and library_types.h's; no cuBLAS
 * header is needed to build: decls.h says how the lists below become
 * declarations and how tests/c/test_cuda_decls.c checks them against
 * cublas_v2.h where it exists).
 */
#ifndef GPULUA_DRIVER_CUBLAS_TABLE_H
#define GPULUA_DRIVER_CUBLAS_TABLE_H

#include <stddef.h>

#include "decls.h"

#define GL_CUBLAS_HANDLES(X) X(cublasHandle_t, cublasContext) X(cudaStream_t, CUstream_st)

#define GL_CUBLAS_ENUMS(X)                                                           \
  X(cublasStatus_t, , GL_CUBLAS_STATUS) X(cublasOperation_t, , GL_CUBLAS_OPERATION)  \
  X(cublasMath_t, , GL_CUBLAS_MATH) X(cublasComputeType_t, , GL_CUBLAS_COMPUTE_TYPE) \
  X(cublasGemmAlgo_t, , GL_CUBLAS_GEMM_ALGO) X(cudaDataType, cudaDataType_t, GL_CUDA_DATA_TYPE)

#define GL_CUBLAS_STATUS(V)                                                                        \
  V(CUBLAS_STATUS_SUCCESS, 0) V(CUBLAS_STATUS_NOT_INITIALIZED, 1) V(CUBLAS_STATUS_ALLOC_FAILED, 3) \
  V(CUBLAS_STATUS_INVALID_VALUE, 7) V(CUBLAS_STATUS_ARCH_MISMATCH, 8)                              \
  V(CUBLAS_STATUS_EXECUTION_FAILED, 13) V(CUBLAS_STATUS_NOT_SUPPORTED, 15)
#define GL_CUBLAS_OPERATION(V) V(CUBLAS_OP_N, 0) V(CUBLAS_OP_T, 1) V(CUBLAS_OP_C, 2)
#define GL_CUBLAS_MATH(V) V(CUBLAS_DEFAULT_MATH, 0)
#define GL_CUBLAS_COMPUTE_TYPE(V) V(CUBLAS_COMPUTE_32F, 68) V(CUBLAS_COMPUTE_64F, 70)
#define GL_CUBLAS_GEMM_ALGO(V) V(CUBLAS_GEMM_DEFAULT, -1)
#define GL_CUDA_DATA_TYPE(V) V(CUDA_R_32F, 0) V(CUDA_R_64F, 1) V(CUDA_R_16F, 2) V(CUDA_R_16BF, 14)

#ifndef GL_DECLS_FROM_TOOLKIT
GL_CUBLAS_HANDLES(GL_DECL_HANDLE)
GL_CUBLAS_ENUMS(GL_DECL_ENUM)
#endif

#define GL_CUBLAS_CALLS(X)                                                                                \
  X(cublasStatus_t, cublasCreate_v2, (cublasHandle_t * handle))                                           \
  X(cublasStatus_t, cublasDestroy_v2, (cublasHandle_t handle))                                            \
  X(cublasStatus_t, cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t stream))                     \
  X(cublasStatus_t, cublasSetWorkspace_v2, (cublasHandle_t handle, void *workspace, size_t bytes))        \
  X(cublasStatus_t, cublasSetMathMode, (cublasHandle_t handle, cublasMath_t mode))                        \
  X(const char *, cublasGetStatusString, (cublasStatus_t status))                                         \
  X(cublasStatus_t, cublasGemmEx,                                                                         \
    (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,      \
     const void *alpha, const void *A, cudaDataType Atype, int lda, const void *B, cudaDataType Btype,    \
     int ldb, const void *beta, void *C, cudaDataType Ctype, int ldc, cublasComputeType_t computeType,    \
     cublasGemmAlgo_t algo))                                                                              \
  X(cublasStatus_t, cublasGemmStridedBatchedEx,                                                           \
    (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,      \
     const void *alpha, const void *A, cudaDataType Atype, int lda, long long int strideA, const void *B, \
     cudaDataType Btype, int ldb, long long int strideB, const void *beta, void *C, cudaDataType Ctype,   \
     int ldc, long long int strideC, int batchCount, cublasComputeType_t computeType,                     \
     cublasGemmAlgo_t algo))

typedef struct gld_cublas {
#define GL_CUBLAS_MEMBER(ret, name, params) ret(*name) params;
  GL_CUBLAS_CALLS(GL_CUBLAS_MEMBER)
#undef GL_CUBLAS_MEMBER
  int loaded;
  char path[512]; /* the library loaded, or "sim" */
} gld_cublas;

extern gld_cublas gld_blas;

/* Load cuBLAS once (the backend's own where it has one: gld_drv_ext). NULL
 * on success, else a message naming what was tried and why it failed.
 * Otherwise: GPULUA_CUBLAS, else libcublas.so.13, then .so.12, on the loader's
 * path and in the usual CUDA toolkit folders. */
const char *gld_cublas_load(void);

/* The sim's table (sim_cublas.c), reached through gld_drv_ext.cublas_table; its path
 * is "sim". */
void gld_cublas_sim_table(gld_cublas *t);

#endif
