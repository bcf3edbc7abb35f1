/*
 * test_nccl_decls.c -- gpulua declares the NCCL it calls itself
 * (src/driver/nccl_table.h: no nccl.h is needed to build); where the
 * toolkit's nccl.h exists, this checks those declarations against it: every
 * result, reduction and data type value gpulua uses, the unique id's size,
 * and each function's type, parameter by parameter (gpulua's int-typed enums
 * stand for NCCL's enum types of the same size).
 */
#include <nccl.h>
#include <stdio.h>

#include "nccl_table.h"

#define SAME(a, b) _Static_assert((int)(a) == (int)(b), #a " differs from nccl.h's " #b)
SAME(GL_NCCL_SUCCESS, ncclSuccess);
SAME(GL_NCCL_UNHANDLED_CUDA_ERROR, ncclUnhandledCudaError);
SAME(GL_NCCL_SYSTEM_ERROR, ncclSystemError);
SAME(GL_NCCL_INTERNAL_ERROR, ncclInternalError);
SAME(GL_NCCL_INVALID_ARGUMENT, ncclInvalidArgument);
SAME(GL_NCCL_INVALID_USAGE, ncclInvalidUsage);
SAME(GL_NCCL_REMOTE_ERROR, ncclRemoteError);
SAME(GL_NCCL_IN_PROGRESS, ncclInProgress);
SAME(GL_NCCL_SUM, ncclSum);
SAME(GL_NCCL_PROD, ncclProd);
SAME(GL_NCCL_MAX, ncclMax);
SAME(GL_NCCL_MIN, ncclMin);
SAME(GL_NCCL_AVG, ncclAvg);
SAME(GL_NCCL_INT8, ncclInt8);
SAME(GL_NCCL_UINT8, ncclUint8);
SAME(GL_NCCL_INT32, ncclInt32);
SAME(GL_NCCL_UINT32, ncclUint32);
SAME(GL_NCCL_INT64, ncclInt64);
SAME(GL_NCCL_UINT64, ncclUint64);
SAME(GL_NCCL_FLOAT16, ncclFloat16);
SAME(GL_NCCL_FLOAT32, ncclFloat32);
SAME(GL_NCCL_FLOAT64, ncclFloat64);
SAME(GL_NCCL_BFLOAT16, ncclBfloat16);
SAME(GL_NCCL_UNIQUE_ID_BYTES, NCCL_UNIQUE_ID_BYTES);
_Static_assert(sizeof(gld_ncclUniqueId) == sizeof(ncclUniqueId), "the unique id's size");
_Static_assert(sizeof(gld_ncclResult) == sizeof(ncclResult_t) && sizeof(gld_ncclRedOp) == sizeof(ncclRedOp_t) &&
                   sizeof(gld_ncclDataType) == sizeof(ncclDataType_t),
               "the enum types' sizes");

/* Each function's type, with gpulua's stand-ins replaced by NCCL's own. */
#define gld_ncclResult ncclResult_t
#define gld_ncclRedOp ncclRedOp_t
#define gld_ncclDataType ncclDataType_t
#define gld_ncclUniqueId ncclUniqueId
#define CUstream cudaStream_t
#define CHECK_TYPE(ret, name, params)                                                 \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&name), ret(*) params),     \
                 #name "'s declaration differs from nccl.h's");
GL_NCCL_CALLS(CHECK_TYPE)

int main(void) {
  printf("nccl declarations: as nccl.h's\n");
  return 0;
}
