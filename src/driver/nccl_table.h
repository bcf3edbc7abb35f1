/*
 * nccl_table.h -- the NCCL functions gpulua uses, declared here (no nccl.h
 * is needed: the machines have libnccl.so.2 but not always its header; the
 * values are NCCL 2's, and tests/c/test_nccl_decls.c checks them against
 * nccl.h where it exists), as a table: filled with dlopen/dlsym from
 * libnccl.so.2 (nccl.c) on the cuda backend, with the sim's collectives
 * between its devices (sim_nccl.c) on sim.
 */
#ifndef GPULUA_DRIVER_NCCL_TABLE_H
#define GPULUA_DRIVER_NCCL_TABLE_H

#include <stddef.h>

#include "driver.h"

typedef struct ncclComm *ncclComm_t;
#define GL_NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[GL_NCCL_UNIQUE_ID_BYTES];
} gl_ncclUniqueId;

typedef int gl_ncclResult; /* ncclResult_t: */
enum {
  GL_NCCL_SUCCESS = 0, GL_NCCL_UNHANDLED_CUDA_ERROR = 1, GL_NCCL_SYSTEM_ERROR = 2, GL_NCCL_INTERNAL_ERROR = 3,
  GL_NCCL_INVALID_ARGUMENT = 4, GL_NCCL_INVALID_USAGE = 5, GL_NCCL_REMOTE_ERROR = 6, GL_NCCL_IN_PROGRESS = 7
};
typedef int gl_ncclRedOp; /* ncclRedOp_t: ncclSum .. ncclAvg */
enum { GL_NCCL_SUM = 0, GL_NCCL_PROD = 1, GL_NCCL_MAX = 2, GL_NCCL_MIN = 3, GL_NCCL_AVG = 4 };
typedef int gl_ncclDataType; /* ncclDataType_t */
enum {
  GL_NCCL_INT8 = 0, GL_NCCL_UINT8 = 1, GL_NCCL_INT32 = 2, GL_NCCL_UINT32 = 3, GL_NCCL_INT64 = 4, GL_NCCL_UINT64 = 5,
  GL_NCCL_FLOAT16 = 6, GL_NCCL_FLOAT32 = 7, GL_NCCL_FLOAT64 = 8, GL_NCCL_BFLOAT16 = 9
};

#define GL_NCCL_CALLS(X)                                                                                        \
  X(gl_ncclResult, ncclGetVersion, (int *version))                                                              \
  X(gl_ncclResult, ncclGetUniqueId, (gl_ncclUniqueId * id))                                                     \
  X(gl_ncclResult, ncclCommInitAll, (ncclComm_t * comms, int ndev, const int *devlist))                         \
  X(gl_ncclResult, ncclCommInitRank, (ncclComm_t * comm, int nranks, gl_ncclUniqueId id, int rank))             \
  X(gl_ncclResult, ncclCommDestroy, (ncclComm_t comm))                                                          \
  X(gl_ncclResult, ncclCommAbort, (ncclComm_t comm))                                                            \
  X(gl_ncclResult, ncclGroupStart, (void))                                                                      \
  X(gl_ncclResult, ncclGroupEnd, (void))                                                                        \
  X(gl_ncclResult, ncclAllReduce, (const void *send, void *recv, size_t count, gl_ncclDataType type,             \
                                   gl_ncclRedOp op, ncclComm_t comm, CUstream stream))                            \
  X(gl_ncclResult, ncclBroadcast, (const void *send, void *recv, size_t count, gl_ncclDataType type, int root,   \
                                   ncclComm_t comm, CUstream stream))                                            \
  X(gl_ncclResult, ncclReduce, (const void *send, void *recv, size_t count, gl_ncclDataType type,                \
                                gl_ncclRedOp op, int root, ncclComm_t comm, CUstream stream))                     \
  X(gl_ncclResult, ncclAllGather, (const void *send, void *recv, size_t sendcount, gl_ncclDataType type,         \
                                   ncclComm_t comm, CUstream stream))                                            \
  X(gl_ncclResult, ncclReduceScatter, (const void *send, void *recv, size_t recvcount, gl_ncclDataType type,     \
                                       gl_ncclRedOp op, ncclComm_t comm, CUstream stream))                        \
  X(const char *, ncclGetErrorString, (gl_ncclResult result))                                                   \
  X(gl_ncclResult, ncclCommGetAsyncError, (ncclComm_t comm, gl_ncclResult * async))

typedef struct gl_nccl {
#define GL_NCCL_MEMBER(ret, name, params) ret(*name) params;
  GL_NCCL_CALLS(GL_NCCL_MEMBER)
#undef GL_NCCL_MEMBER
  int loaded, version;
  char path[512]; /* the library loaded, or "sim" */
} gl_nccl;

extern gl_nccl gl_nc;

/* Load NCCL once (the backend's own where it has one: gl_drv_ext). NULL on success, else a message
 * naming what was tried: GPULUA_NCCL, else libnccl.so.2 on the loader's path
 * and in the usual CUDA folders. */
const char *gl_nccl_load(void);

/* The sim's table (sim_nccl.c), reached through gl_drv_ext.nccl_table; its path
 * is "sim". */
void gl_nccl_sim_table(gl_nccl *t);

#endif
