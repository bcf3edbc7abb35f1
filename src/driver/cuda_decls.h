/*
 * cuda_decls.h -- gpulua's own declarations of the part of the CUDA driver
 * API it uses (types, handles, values, structs), so that no cuda.h is needed
 * to build: the driver is loaded at run time (driver_cuda.c), never linked.
 * The facts are NVIDIA's (cuda.h of CUDA 13.0, 64-bit Linux); the lists'
 * shapes and the check against the toolkit's headers are in decls.h. The
 * calls themselves, with the version of each entry point, are driver.h's
 * table. Add a value here when gpulua starts to use it.
 */
#ifndef GPULUA_DRIVER_CUDA_DECLS_H
#define GPULUA_DRIVER_CUDA_DECLS_H

#include <stddef.h>
#include <stdint.h>

#include "decls.h"

/* The CUDA version these declarations are taken from (cuda.h's CUDA_VERSION
 * of 13.0); the sim's cuDriverGetVersion answers it. */
#define GL_CUDA_API_VERSION 13000

#define GL_CU_SCALARS(X) X(cuuint64_t, uint64_t) X(CUdevice, int) X(CUdeviceptr, unsigned long long)

#define GL_CU_HANDLES(X)                                                                           \
  X(CUcontext, CUctx_st) X(CUmodule, CUmod_st) X(CUfunction, CUfunc_st) X(CUevent, CUevent_st)     \
  X(CUstream, CUstream_st) X(CUgraph, CUgraph_st) X(CUgraphNode, CUgraphNode_st)                   \
  X(CUgraphExec, CUgraphExec_st) X(CUmemoryPool, CUmemPoolHandle_st)

#define GL_CU_FN_TYPES(X) X(CUhostFn, void, (void *userData))

#define GL_CU_ENUMS(X)                                                                             \
  X(CUresult, cudaError_enum, GL_CU_RESULT)                                                        \
  X(CUdevice_attribute, CUdevice_attribute_enum, GL_CU_DEVICE_ATTRIBUTE)                           \
  X(CUfunction_attribute, CUfunction_attribute_enum, GL_CU_FUNCTION_ATTRIBUTE)                     \
  X(CUstream_flags, CUstream_flags_enum, GL_CU_STREAM_FLAGS)                                       \
  X(CUevent_flags, CUevent_flags_enum, GL_CU_EVENT_FLAGS)                                          \
  X(CUmemPool_attribute, CUmemPool_attribute_enum, GL_CU_MEMPOOL_ATTRIBUTE)                        \
  X(CUmemLocationType, CUmemLocationType_enum, GL_CU_MEM_LOCATION_TYPE)                            \
  X(CUmemAccess_flags, CUmemAccess_flags_enum, GL_CU_MEM_ACCESS_FLAGS)                             \
  X(CUstreamCaptureMode, CUstreamCaptureMode_enum, GL_CU_STREAM_CAPTURE_MODE)                      \
  X(CUstreamCaptureStatus, CUstreamCaptureStatus_enum, GL_CU_STREAM_CAPTURE_STATUS)                \
  X(CUgraphInstantiate_flags, CUgraphInstantiate_flags_enum, GL_CU_GRAPH_INSTANTIATE_FLAGS)        \
  X(CUgraphExecUpdateResult, CUgraphExecUpdateResult_enum, GL_CU_GRAPH_EXEC_UPDATE_RESULT)         \
  X(CUdriverProcAddress_flags, CUdriverProcAddress_flags_enum, GL_CU_PROC_ADDRESS_FLAGS)           \
  X(CUdriverProcAddressQueryResult, CUdriverProcAddressQueryResult_enum, GL_CU_PROC_ADDRESS_RESULT)

#define GL_CU_RESULT(V)                                                                            \
  V(CUDA_SUCCESS, 0) V(CUDA_ERROR_INVALID_VALUE, 1) V(CUDA_ERROR_OUT_OF_MEMORY, 2)                 \
  V(CUDA_ERROR_NOT_INITIALIZED, 3) V(CUDA_ERROR_DEINITIALIZED, 4) V(CUDA_ERROR_STUB_LIBRARY, 34)   \
  V(CUDA_ERROR_NO_DEVICE, 100) V(CUDA_ERROR_INVALID_DEVICE, 101) V(CUDA_ERROR_INVALID_IMAGE, 200)  \
  V(CUDA_ERROR_INVALID_CONTEXT, 201) V(CUDA_ERROR_NO_BINARY_FOR_GPU, 209)                          \
  V(CUDA_ERROR_ECC_UNCORRECTABLE, 214) V(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, 217)                  \
  V(CUDA_ERROR_INVALID_PTX, 218) V(CUDA_ERROR_INVALID_HANDLE, 400) V(CUDA_ERROR_ILLEGAL_STATE, 401) \
  V(CUDA_ERROR_NOT_FOUND, 500) V(CUDA_ERROR_NOT_READY, 600) V(CUDA_ERROR_ILLEGAL_ADDRESS, 700)     \
  V(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, 701) V(CUDA_ERROR_LAUNCH_TIMEOUT, 702)                     \
  V(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, 704) V(CUDA_ERROR_ASSERT, 710)                         \
  V(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, 712) V(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, 713)  \
  V(CUDA_ERROR_HARDWARE_STACK_ERROR, 714) V(CUDA_ERROR_ILLEGAL_INSTRUCTION, 715)                   \
  V(CUDA_ERROR_MISALIGNED_ADDRESS, 716) V(CUDA_ERROR_INVALID_ADDRESS_SPACE, 717)                   \
  V(CUDA_ERROR_INVALID_PC, 718) V(CUDA_ERROR_LAUNCH_FAILED, 719) V(CUDA_ERROR_NOT_SUPPORTED, 801)  \
  V(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, 900) V(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, 901)      \
  V(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, 904) V(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, 905)           \
  V(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, 910) V(CUDA_ERROR_UNKNOWN, 999)

#define GL_CU_DEVICE_ATTRIBUTE(V)                                                                  \
  V(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1) V(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 2)        \
  V(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 3) V(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 4)              \
  V(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 5) V(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 6)                \
  V(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 7) V(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 8)   \
  V(CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 9) V(CU_DEVICE_ATTRIBUTE_WARP_SIZE, 10)             \
  V(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 12) V(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 13)         \
  V(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 16) V(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 19)   \
  V(CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 31) V(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 36)       \
  V(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 37) V(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 38)      \
  V(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 39)                                        \
  V(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 40) V(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 41)      \
  V(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 75)                                              \
  V(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 76)                                              \
  V(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 97)                                     \
  V(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 115)

#define GL_CU_FUNCTION_ATTRIBUTE(V)                                                                \
  V(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 0) V(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, 1)          \
  V(CU_FUNC_ATTRIBUTE_NUM_REGS, 4) V(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 8)

#define GL_CU_STREAM_FLAGS(V) V(CU_STREAM_NON_BLOCKING, 0x1)
#define GL_CU_EVENT_FLAGS(V) V(CU_EVENT_BLOCKING_SYNC, 0x1) V(CU_EVENT_DISABLE_TIMING, 0x2)
#define GL_CU_MEMPOOL_ATTRIBUTE(V) V(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, 4)
#define GL_CU_MEM_LOCATION_TYPE(V) V(CU_MEM_LOCATION_TYPE_DEVICE, 0x1)
#define GL_CU_MEM_ACCESS_FLAGS(V) V(CU_MEM_ACCESS_FLAGS_PROT_READWRITE, 0x3)

#define GL_CU_STREAM_CAPTURE_MODE(V)                                                               \
  V(CU_STREAM_CAPTURE_MODE_GLOBAL, 0) V(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, 1)                    \
  V(CU_STREAM_CAPTURE_MODE_RELAXED, 2)

#define GL_CU_STREAM_CAPTURE_STATUS(V)                                                             \
  V(CU_STREAM_CAPTURE_STATUS_NONE, 0) V(CU_STREAM_CAPTURE_STATUS_ACTIVE, 1)                        \
  V(CU_STREAM_CAPTURE_STATUS_INVALIDATED, 2)

#define GL_CU_GRAPH_INSTANTIATE_FLAGS(V)                                                           \
  V(CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH, 1) V(CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD, 2)   \
  V(CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY, 8)

#define GL_CU_GRAPH_EXEC_UPDATE_RESULT(V)                                                          \
  V(CU_GRAPH_EXEC_UPDATE_SUCCESS, 0x0) V(CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, 0x2)

#define GL_CU_PROC_ADDRESS_FLAGS(V) V(CU_GET_PROC_ADDRESS_DEFAULT, 0)
#define GL_CU_PROC_ADDRESS_RESULT(V) V(CU_GET_PROC_ADDRESS_SUCCESS, 0)

/* cuda.h #defines these flags */
#define GL_CU_CONSTANTS(X)                                                                         \
  X(CU_MEMHOSTALLOC_PORTABLE, 0x01) X(CU_MEMHOSTREGISTER_PORTABLE, 0x01)                           \
  X(CU_MEMHOSTREGISTER_DEVICEMAP, 0x02) X(CU_MEMHOSTREGISTER_IOMEMORY, 0x04)                       \
  X(CU_MEMHOSTREGISTER_READ_ONLY, 0x08)

#define GL_CU_STRUCTS(X)                                                                           \
  X(CUmemLocation, CUmemLocation_st, GL_CU_MEM_LOCATION)                                           \
  X(CUmemAccessDesc, CUmemAccessDesc_st, GL_CU_MEM_ACCESS_DESC)                                    \
  X(CUgraphExecUpdateResultInfo, CUgraphExecUpdateResultInfo_st, GL_CU_GRAPH_EXEC_UPDATE_RESULT_INFO)

#define GL_CU_MEM_LOCATION(M, S) M(S, CUmemLocationType, type) M(S, int, id)
#define GL_CU_MEM_ACCESS_DESC(M, S) M(S, CUmemLocation, location) M(S, CUmemAccess_flags, flags)
#define GL_CU_GRAPH_EXEC_UPDATE_RESULT_INFO(M, S)                                                  \
  M(S, CUgraphExecUpdateResult, result) M(S, CUgraphNode, errorNode) M(S, CUgraphNode, errorFromNode)

#ifndef GL_DECLS_FROM_TOOLKIT
GL_CU_SCALARS(GL_DECL_SCALAR)
GL_CU_HANDLES(GL_DECL_HANDLE)
GL_CU_ENUMS(GL_DECL_ENUM)
GL_CU_FN_TYPES(GL_DECL_FN_TYPE)
enum { GL_CU_CONSTANTS(GL_DECL_VALUE) };
GL_CU_STRUCTS(GL_DECL_STRUCT)
#endif

/* cuGetProcAddress_v2, which the loader takes with dlsym (driver_cuda.c). */
typedef CUresult (*gld_cuGetProcAddress_fn)(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                           CUdriverProcAddressQueryResult *symbolStatus);

#endif
