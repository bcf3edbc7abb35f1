/*
 * driver.h -- the driver table: one struct of function pointers shaped exactly
 * like the CUDA driver API calls gpulua uses, and the process's one table,
 * gl_drv (driver.c).
 *
 * Two backends fill it: driver_cuda.c (dlopen("libcuda.so.1") and
 * cuGetProcAddress) and the sim backend (sim_*.c: a software device in host
 * memory). Everything above this table is backend-agnostic. The driver is a
 * process-wide resource, so the table and the chosen backend are too: they
 * are filled once (core/options.c: gl_backend_choose) before any runtime.
 *
 * The list is an X-macro so the struct, the loader and the names stay in one
 * place: X(name, parameter list).  cuda.h renames some entry points to their
 * versioned symbols (cuEventElapsedTime -> cuEventElapsedTime_v2, ...); the
 * member names follow the same macros, and the loader asks cuGetProcAddress for
 * the base name at this header's CUDA_VERSION, so the signatures always match.
 */
#ifndef GPULUA_DRIVER_H
#define GPULUA_DRIVER_H

#include <cuda.h>

#define GL_DRIVER_CALLS(X)                                                            \
  X(cuGetErrorName, (CUresult error, const char **pStr))                              \
  X(cuGetErrorString, (CUresult error, const char **pStr))                            \
  X(cuInit, (unsigned int Flags))                                                     \
  X(cuDriverGetVersion, (int *driverVersion))                                         \
  X(cuDeviceGetCount, (int *count))                                                   \
  X(cuDeviceGet, (CUdevice *device, int ordinal))                                     \
  X(cuDeviceGetName, (char *name, int len, CUdevice dev))                             \
  X(cuDeviceTotalMem, (size_t *bytes, CUdevice dev))                                  \
  X(cuDeviceGetAttribute, (int *pi, CUdevice_attribute attrib, CUdevice dev))         \
  X(cuDeviceCanAccessPeer, (int *canAccessPeer, CUdevice dev, CUdevice peerDev))      \
  X(cuDeviceGetDefaultMemPool, (CUmemoryPool *pool_out, CUdevice dev))                \
  X(cuMemPoolSetAttribute, (CUmemoryPool pool, CUmemPool_attribute attr, void *value)) \
  X(cuMemPoolSetAccess, (CUmemoryPool pool, const CUmemAccessDesc *map, size_t count)) \
  X(cuMemPoolTrimTo, (CUmemoryPool pool, size_t minBytesToKeep))                     \
  X(cuDevicePrimaryCtxRetain, (CUcontext *pctx, CUdevice dev))                        \
  X(cuDevicePrimaryCtxRelease, (CUdevice dev))                                        \
  X(cuCtxSetCurrent, (CUcontext ctx))                                                 \
  X(cuCtxSynchronize, (void))                                                         \
  X(cuCtxGetStreamPriorityRange, (int *leastPriority, int *greatestPriority))         \
  X(cuCtxEnablePeerAccess, (CUcontext peerContext, unsigned int Flags))               \
  X(cuStreamCreateWithPriority, (CUstream *phStream, unsigned int flags, int priority)) \
  X(cuStreamDestroy, (CUstream hStream))                                              \
  X(cuStreamWaitEvent, (CUstream hStream, CUevent hEvent, unsigned int Flags))        \
  X(cuStreamSynchronize, (CUstream hStream))                                          \
  X(cuStreamQuery, (CUstream hStream))                                                \
  X(cuEventCreate, (CUevent *phEvent, unsigned int Flags))                            \
  X(cuEventDestroy, (CUevent hEvent))                                                 \
  X(cuEventRecord, (CUevent hEvent, CUstream hStream))                                \
  X(cuEventSynchronize, (CUevent hEvent))                                             \
  X(cuEventQuery, (CUevent hEvent))                                                   \
  X(cuEventElapsedTime, (float *pMilliseconds, CUevent hStart, CUevent hEnd))         \
  X(cuMemGetInfo, (size_t *free, size_t *total))                                      \
  X(cuMemAllocAsync, (CUdeviceptr *dptr, size_t bytesize, CUstream hStream))          \
  X(cuMemFreeAsync, (CUdeviceptr dptr, CUstream hStream))                             \
  X(cuMemHostAlloc, (void **pp, size_t bytesize, unsigned int Flags))                 \
  X(cuMemFreeHost, (void *p))                                                         \
  X(cuMemcpyHtoDAsync, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, \
                        CUstream hStream))                                            \
  X(cuMemcpyDtoHAsync, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,       \
                        CUstream hStream))                                            \
  X(cuMemcpyDtoDAsync, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, \
                        CUstream hStream))                                            \
  X(cuMemcpyPeerAsync, (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, \
                        CUcontext srcContext, size_t ByteCount, CUstream hStream))    \
  X(cuMemsetD8Async, (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)) \
  X(cuMemsetD16Async, (CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream)) \
  X(cuMemsetD32Async, (CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)) \
  X(cuMemsetD2D32Async, (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,     \
                         size_t Width, size_t Height, CUstream hStream))              \
  X(cuLaunchHostFunc, (CUstream hStream, CUhostFn fn, void *userData))                \
  X(cuModuleLoadData, (CUmodule *module, const void *image))                          \
  X(cuModuleUnload, (CUmodule hmod))                                                  \
  X(cuModuleGetFunction, (CUfunction *hfunc, CUmodule hmod, const char *name))        \
  X(cuFuncGetAttribute, (int *pi, CUfunction_attribute attrib, CUfunction hfunc))     \
  X(cuLaunchKernel, (CUfunction f, unsigned int gridDimX, unsigned int gridDimY,      \
                     unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, \
                     unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, \
                     void **kernelParams, void **extra))                               \
  X(cuStreamBeginCapture, (CUstream hStream, CUstreamCaptureMode mode))                \
  X(cuStreamEndCapture, (CUstream hStream, CUgraph *phGraph))                         \
  X(cuStreamIsCapturing, (CUstream hStream, CUstreamCaptureStatus *captureStatus))    \
  X(cuGraphGetNodes, (CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes))         \
  X(cuGraphInstantiateWithFlags, (CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags)) \
  X(cuGraphUpload, (CUgraphExec hGraphExec, CUstream hStream))                       \
  X(cuGraphLaunch, (CUgraphExec hGraphExec, CUstream hStream))                       \
  X(cuGraphExecUpdate, (CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo *resultInfo)) \
  X(cuGraphExecDestroy, (CUgraphExec hGraphExec))                                   \
  X(cuGraphDestroy, (CUgraph hGraph))

/* Optional calls: a driver may lack them (older drivers); the pointer is NULL then. */
#define GL_DRIVER_OPTIONAL_CALLS(X)                                                   \
  X(cuFuncGetParamInfo, (CUfunction func, size_t paramIndex, size_t *paramOffset,     \
                         size_t *paramSize))

typedef struct gl_driver {
#define GL_DRIVER_MEMBER(name, params) CUresult (*name) params;
  GL_DRIVER_CALLS(GL_DRIVER_MEMBER)
  GL_DRIVER_OPTIONAL_CALLS(GL_DRIVER_MEMBER)
#undef GL_DRIVER_MEMBER
} gl_driver;

extern gl_driver gl_drv;            /* the chosen backend's table */
extern const char *gl_backend_name; /* "cuda" or "sim" once chosen, else NULL */
extern int gl_is_sim;               /* the backend is sim */

/* The driver's name and description of a result ("CUDA_ERROR_UNKNOWN" and
 * "unrecognised error code" when it cannot say). */
const char *gl_error_name(CUresult r);
const char *gl_error_string(CUresult r);
/* A fault after which the context is unusable (the device is poisoned). */
int gl_error_is_sticky(CUresult r);

/* Fill `d` from the real driver. Returns 0 on success; otherwise fills `why`
 * with one line saying why there is no usable CUDA device (no libcuda, stub
 * library, no device, ...). */
int gl_driver_cuda_load(gl_driver *d, char *why, size_t whylen);

/* Fill `d` with the software device. Never fails. */
void gl_driver_sim_load(gl_driver *d);

#endif
