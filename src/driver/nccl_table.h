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
} gld_ncclUniqueId;

typedef int gld_ncclResult; /* ncclResult_t: */
enum {
  GL_NCCL_SUCCESS = 0, GL_NCCL_UNHANDLED_CUDA_ERROR = 1, GL_NCCL_SYSTEM_ERROR = 2, GL_NCCL_INTERNAL_ERROR = 3,
  GL_NCCL_INVALID_ARGUMENT = 4, GL_NCCL_INVALID_USAGE = 5, GL_NCCL_REMOTE_ERROR = 6, GL_NCCL_IN_PROGRESS = 7
};
typedef int gld_ncclRedOp; /* ncclRedOp_t: ncclSum .. ncclAvg */
enum { GL_NCCL_SUM = 0, GL_NCCL_PROD = 1, GL_NCCL_MAX = 2, GL_NCCL_MIN = 3, GL_NCCL_AVG = 4 };
typedef int gld_ncclDataType; /* ncclDataType_t */
enum {
  GL_NCCL_INT8 = 0, GL_NCCL_UINT8 = 1, GL_NCCL_INT32 = 2, GL_NCCL_UINT32 = 3, GL_NCCL_INT64 = 4, GL_NCCL_UINT64 = 5,
  GL_NCCL_FLOAT16 = 6, GL_NCCL_FLOAT32 = 7, GL_NCCL_FLOAT64 = 8, GL_NCCL_BFLOAT16 = 9
};

#define GL_NCCL_CALLS(X)                                                                                        \
  X(gld_ncclResult, ncclGetVersion, (int *version))                                                              \
  X(gld_ncclResult, ncclGetUniqueId, (gld_ncclUniqueId * id))                                                     \
  X(gld_ncclResult, ncclCommInitAll, (ncclComm_t * comms, int ndev, const int *devlist))                         \
  X(gld_ncclResult, ncclCommInitRank, (ncclComm_t * comm, int nranks, gld_ncclUniqueId id, int rank))             \
  X(gld_ncclResult, ncclCommDestroy, (ncclComm_t comm))                                                          \
  X(gld_ncclResult, ncclCommAbort, (ncclComm_t comm))                                                            \
  X(gld_ncclResult, ncclGroupStart, (void))                                                                      \
  X(gld_ncclResult, ncclGroupEnd, (void))                                                                        \
  X(gld_ncclResult, ncclAllReduce, (const void *send, void *recv, size_t count, gld_ncclDataType type,             \
                                   gld_ncclRedOp op, ncclComm_t comm, CUstream stream))                            \
  X(gld_ncclResult, ncclBroadcast, (const void *send, void *recv, size_t count, gld_ncclDataType type, int root,   \
                                   ncclComm_t comm, CUstream stream))                                            \
  X(gld_ncclResult, ncclReduce, (const void *send, void *recv, size_t count, gld_ncclDataType type,                \
                                gld_ncclRedOp op, int root, ncclComm_t comm, CUstream stream))                     \
  X(gld_ncclResult, ncclAllGather, (const void *send, void *recv, size_t sendcount, gld_ncclDataType type,         \
                                   ncclComm_t comm, CUstream stream))                                            \
  X(gld_ncclResult, ncclReduceScatter, (const void *send, void *recv, size_t recvcount, gld_ncclDataType type,     \
                                       gld_ncclRedOp op, ncclComm_t comm, CUstream stream))                        \
  X(gld_ncclResult, ncclSend, (const void *send, size_t count, gld_ncclDataType type, int peer, ncclComm_t comm,   \
                              CUstream stream))                                                                  \
  X(gld_ncclResult, ncclRecv, (void *recv, size_t count, gld_ncclDataType type, int peer, ncclComm_t comm,         \
                              CUstream stream))                                                                  \
  X(const char *, ncclGetErrorString, (gld_ncclResult result))                                                   \
  X(gld_ncclResult, ncclCommGetAsyncError, (ncclComm_t comm, gld_ncclResult * async))

typedef struct gld_nccl {
#define GL_NCCL_MEMBER(ret, name, params) ret(*name) params;
  GL_NCCL_CALLS(GL_NCCL_MEMBER)
#undef GL_NCCL_MEMBER
  int loaded, version;
  char path[512]; /* the library loaded, or "sim" */
} gld_nccl;

extern gld_nccl gld_nc;

/* Load NCCL once (the backend's own where it has one: gld_drv_ext). NULL on success, else a message
 * naming what was tried: GPULUA_NCCL, else libnccl.so.2 on the loader's path
 * and in the usual CUDA folders. */
const char *gld_nccl_load(void);

/* The sim's table (sim_nccl.c), reached through gld_drv_ext.nccl_table; its path
 * is "sim". */
void gld_nccl_sim_table(gld_nccl *t);

#endif
