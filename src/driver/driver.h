/*
 * driver.h -- the driver table: one struct of function pointers shaped exactly
 * like the CUDA driver API calls gpulua uses, and the process's one table,
 * gld_drv (driver.c).
 *
 * Two backends fill it: driver_cuda.c (dlopen("libcuda.so.1") and
 * cuGetProcAddress) and the sim backend (sim/: a software device in host
 * memory). What a backend offers beyond this table is in its extension table,
 * gld_drv_ext (driver_ext.h). Everything above the two tables is
 * backend-agnostic: it tests an extension, never the backend. The driver is a
 * process-wide resource, so the table and the chosen backend are too: they
 * are filled once (core/options.c: gl_backend_choose) before any runtime.
 *
 * The types are gpulua's own declarations (cuda_decls.h): no cuda.h is
 * needed. The list is an X-macro so the struct, the loader and the names stay
 * in one place: X(name, version, parameter list). An entry point can have
 * several versions of one name (cuStreamDestroy and cuStreamDestroy_v2, whose
 * ABI came with CUDA 4.0; cuCtxSynchronize gained a parameter in 13.0): the
 * version is the CUDA version of the one whose parameters are written here
 * (the N of cudaTypedefs.h's PFN_<name>_v<N>), and the loader asks
 * cuGetProcAddress for the base name at that version, which returns exactly
 * that one (NVIDIA's documented use: "cuMemAlloc" at the _v2 variant's
 * version). A driver older than a version refuses it (CUDA_ERROR_INVALID_VALUE),
 * so the newest version here (12.8) is the oldest driver gpulua loads, the
 * optional calls aside. tests/c/test_cuda_decls.c checks each entry against
 * PFN_<name>_v<version> where the toolkit's headers exist.
 */
#ifndef GPULUA_DRIVER_H
#define GPULUA_DRIVER_H

#include "cuda_decls.h"

#define GL_DRIVER_CALLS(X)                                                                          \
  X(cuGetErrorName, 6000, (CUresult error, const char **pStr))                                      \
  X(cuGetErrorString, 6000, (CUresult error, const char **pStr))                                    \
  X(cuInit, 2000, (unsigned int Flags))                                                             \
  X(cuDriverGetVersion, 2020, (int *driverVersion))                                                 \
  X(cuDeviceGetCount, 2000, (int *count))                                                           \
  X(cuDeviceGet, 2000, (CUdevice *device, int ordinal))                                             \
  X(cuDeviceGetName, 2000, (char *name, int len, CUdevice dev))                                     \
  X(cuDeviceTotalMem, 3020, (size_t *bytes, CUdevice dev))                                          \
  X(cuDeviceGetAttribute, 2000, (int *pi, CUdevice_attribute attrib, CUdevice dev))                 \
  X(cuDeviceCanAccessPeer, 4000, (int *canAccessPeer, CUdevice dev, CUdevice peerDev))              \
  X(cuDeviceGetDefaultMemPool, 11020, (CUmemoryPool *pool_out, CUdevice dev))                       \
  X(cuMemPoolSetAttribute, 11020, (CUmemoryPool pool, CUmemPool_attribute attr, void *value))       \
  X(cuMemPoolSetAccess, 11020, (CUmemoryPool pool, const CUmemAccessDesc *map, size_t count))       \
  X(cuMemPoolTrimTo, 11020, (CUmemoryPool pool, size_t minBytesToKeep))                             \
  X(cuDevicePrimaryCtxRetain, 7000, (CUcontext *pctx, CUdevice dev))                                \
  X(cuDevicePrimaryCtxRelease, 11000, (CUdevice dev))                                               \
  X(cuCtxSetCurrent, 4000, (CUcontext ctx))                                                         \
  X(cuCtxSynchronize, 2000, (void))                                                                 \
  X(cuCtxGetStreamPriorityRange, 5050, (int *leastPriority, int *greatestPriority))                 \
  X(cuCtxEnablePeerAccess, 4000, (CUcontext peerContext, unsigned int Flags))                       \
  X(cuStreamCreateWithPriority, 5050, (CUstream *phStream, unsigned int flags, int priority))       \
  X(cuStreamDestroy, 4000, (CUstream hStream))                                                      \
  X(cuStreamWaitEvent, 3020, (CUstream hStream, CUevent hEvent, unsigned int Flags))                \
  X(cuStreamSynchronize, 2000, (CUstream hStream))                                                  \
  X(cuStreamQuery, 2000, (CUstream hStream))                                                        \
  X(cuEventCreate, 2000, (CUevent *phEvent, unsigned int Flags))                                    \
  X(cuEventDestroy, 4000, (CUevent hEvent))                                                         \
  X(cuEventRecord, 2000, (CUevent hEvent, CUstream hStream))                                        \
  X(cuEventSynchronize, 2000, (CUevent hEvent))                                                     \
  X(cuEventQuery, 2000, (CUevent hEvent))                                                           \
  X(cuEventElapsedTime, 12080, (float *pMilliseconds, CUevent hStart, CUevent hEnd))                \
  X(cuMemGetInfo, 3020, (size_t *free, size_t *total))                                              \
  X(cuMemAllocAsync, 11020, (CUdeviceptr *dptr, size_t bytesize, CUstream hStream))                 \
  X(cuMemFreeAsync, 11020, (CUdeviceptr dptr, CUstream hStream))                                    \
  X(cuMemHostAlloc, 2020, (void **pp, size_t bytesize, unsigned int Flags))                         \
  X(cuMemFreeHost, 2000, (void *p))                                                                 \
  X(cuMemHostRegister, 6050, (void *p, size_t bytesize, unsigned int Flags))                        \
  X(cuMemHostUnregister, 4000, (void *p))                                                           \
  X(cuMemcpyHtoDAsync, 3020, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,         \
    CUstream hStream))                                                                              \
  X(cuMemcpyDtoHAsync, 3020, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,               \
    CUstream hStream))                                                                              \
  X(cuMemcpyDtoDAsync, 3020, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,       \
    CUstream hStream))                                                                              \
  X(cuMemcpyPeerAsync, 4000, (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,   \
    CUcontext srcContext, size_t ByteCount, CUstream hStream))                                      \
  X(cuMemsetD8Async, 3020, (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream))   \
  X(cuMemsetD16Async, 3020, (CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream)) \
  X(cuMemsetD32Async, 3020, (CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream))   \
  X(cuMemsetD2D32Async, 3020, (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,             \
    size_t Width, size_t Height, CUstream hStream))                                                 \
  X(cuLaunchHostFunc, 10000, (CUstream hStream, CUhostFn fn, void *userData))                       \
  X(cuModuleLoadData, 2000, (CUmodule *module, const void *image))                                  \
  X(cuModuleUnload, 2000, (CUmodule hmod))                                                          \
  X(cuModuleGetFunction, 2000, (CUfunction *hfunc, CUmodule hmod, const char *name))                \
  X(cuModuleGetGlobal, 3020, (CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name))   \
  X(cuFuncGetAttribute, 2020, (int *pi, CUfunction_attribute attrib, CUfunction hfunc))             \
  X(cuLaunchKernel, 4000, (CUfunction f, unsigned int gridDimX, unsigned int gridDimY,              \
    unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,                          \
    unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,                          \
    void **kernelParams, void **extra))                                                             \
  X(cuStreamBeginCapture, 10010, (CUstream hStream, CUstreamCaptureMode mode))                      \
  X(cuStreamEndCapture, 10000, (CUstream hStream, CUgraph *phGraph))                                \
  X(cuStreamIsCapturing, 10000, (CUstream hStream, CUstreamCaptureStatus *captureStatus))           \
  X(cuGraphGetNodes, 10000, (CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes))                 \
  X(cuGraphInstantiateWithFlags, 11040, (CUgraphExec *phGraphExec, CUgraph hGraph,                  \
    unsigned long long flags))                                                                      \
  X(cuGraphUpload, 11010, (CUgraphExec hGraphExec, CUstream hStream))                               \
  X(cuGraphLaunch, 10000, (CUgraphExec hGraphExec, CUstream hStream))                               \
  X(cuGraphExecUpdate, 12000, (CUgraphExec hGraphExec, CUgraph hGraph,                              \
    CUgraphExecUpdateResultInfo *resultInfo))                                                       \
  X(cuGraphExecDestroy, 10000, (CUgraphExec hGraphExec))                                            \
  X(cuGraphDestroy, 10000, (CUgraph hGraph))

/* Optional calls: a driver may lack them (older drivers); the pointer is NULL then. */
#define GL_DRIVER_OPTIONAL_CALLS(X)                                                      \
  X(cuFuncGetParamInfo, 12040, (CUfunction func, size_t paramIndex, size_t *paramOffset, \
    size_t *paramSize))

typedef struct gld_driver {
#define GL_DRIVER_MEMBER(name, version, params) CUresult (*name) params;
  GL_DRIVER_CALLS(GL_DRIVER_MEMBER)
  GL_DRIVER_OPTIONAL_CALLS(GL_DRIVER_MEMBER)
#undef GL_DRIVER_MEMBER
} gld_driver;

extern gld_driver gld_drv;            /* the chosen backend's table */
extern const char *gld_backend_name; /* "cuda" or "sim" once chosen, else NULL */

/* The driver's name and description of a result ("CUDA_ERROR_UNKNOWN" and
 * "unrecognised error code" when it cannot say). */
const char *gld_error_name(CUresult r);
const char *gld_error_string(CUresult r);
/* A fault after which the context is unusable (the device is poisoned). */
int gld_error_is_sticky(CUresult r);

/* Fill `d` from the real driver. Returns 0 on success; otherwise fills `why`
 * with one line saying why there is no usable CUDA device (no libcuda, stub
 * library, no device, ...). */
int gld_driver_cuda_load(gld_driver *d, char *why, size_t whylen);

/* The sim backend's setup, before gld_driver_sim_load: its GPULUA_SIM_*
 * environment checked (-1 with why on a bad value); the timing model file at
 * path read and checked (-1 with why: "FILE: field 'h2d_gbps' is missing"),
 * and used from now on when `use` is set (path NULL: no model). */
int gld_driver_sim_check(char *why, size_t whylen);
int gld_driver_sim_model(const char *path, int use, char *why, size_t whylen);

/* Fill `d` with the software device. Never fails. Its extensions:
 * gld_driver_sim_load_ext (driver_ext.h). */
void gld_driver_sim_load(gld_driver *d);

#endif
