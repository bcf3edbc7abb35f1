/*
 * nvrtc_table.h -- the NVRTC functions gpulua uses, as a table filled with
 * dlopen/dlsym by nvrtc.c (the driver table's sibling).
 */
#ifndef GPULUA_DRIVER_NVRTC_H
#define GPULUA_DRIVER_NVRTC_H

#include <nvrtc.h>
#include <stddef.h>

#define GL_NVRTC_CALLS(X)                                                              \
  X(const char *, nvrtcGetErrorString, (nvrtcResult result))                           \
  X(nvrtcResult, nvrtcVersion, (int *major, int *minor))                               \
  X(nvrtcResult, nvrtcCreateProgram, (nvrtcProgram * prog, const char *src, const char *name, \
                                      int numHeaders, const char *const *headers,      \
                                      const char *const *includeNames))                \
  X(nvrtcResult, nvrtcDestroyProgram, (nvrtcProgram * prog))                           \
  X(nvrtcResult, nvrtcCompileProgram, (nvrtcProgram prog, int numOptions,              \
                                       const char *const *options))                    \
  X(nvrtcResult, nvrtcGetPTXSize, (nvrtcProgram prog, size_t *ptxSizeRet))             \
  X(nvrtcResult, nvrtcGetPTX, (nvrtcProgram prog, char *ptx))                          \
  X(nvrtcResult, nvrtcGetProgramLogSize, (nvrtcProgram prog, size_t *logSizeRet))      \
  X(nvrtcResult, nvrtcGetProgramLog, (nvrtcProgram prog, char *log))

typedef struct gl_nvrtc {
#define GL_NVRTC_MEMBER(ret, name, params) ret(*name) params;
  GL_NVRTC_CALLS(GL_NVRTC_MEMBER)
#undef GL_NVRTC_MEMBER
  /* optional (NVRTC 11.1+): direct CUBIN output */
  nvrtcResult (*nvrtcGetCUBINSize_)(nvrtcProgram prog, size_t *size);
  nvrtcResult (*nvrtcGetCUBIN_)(nvrtcProgram prog, char *cubin);
  /* optional (NVRTC 11.2+): the architectures it can target */
  nvrtcResult (*nvrtcGetNumSupportedArchs_)(int *n);
  nvrtcResult (*nvrtcGetSupportedArchs_)(int *archs);
  int loaded, major, minor;
  char path[512];
} gl_nvrtc;

extern gl_nvrtc gl_nv;

/* The architecture to compile for a device of compute capability cc (e.g.
 * 90): cc itself when this NVRTC supports it, else the newest it supports
 * below cc, or -1 when it supports none; *exact says which. */
int gl_nvrtc_arch(int cc, int *exact);

/* Load NVRTC once. NULL on success, else a message saying why not. */
const char *gl_nvrtc_load(void);

#endif
