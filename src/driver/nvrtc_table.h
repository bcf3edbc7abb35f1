/*
 * nvrtc_table.h -- the NVRTC functions gpulua uses, as a table filled with
 * dlopen/dlsym by nvrtc.c (the driver table's sibling), and gpulua's own
 * declarations of the NVRTC types they take (nvrtc.h's; no nvrtc.h is needed
 * to build: decls.h says how the lists below become declarations and how
 * tests/c/test_cuda_decls.c checks them against nvrtc.h where it exists).
 */
#ifndef GPULUA_DRIVER_NVRTC_H
#define GPULUA_DRIVER_NVRTC_H

#include <stddef.h>

#include "decls.h"

#define GL_NVRTC_HANDLES(X) X(nvrtcProgram, _nvrtcProgram)
#define GL_NVRTC_ENUMS(X) X(nvrtcResult, , GL_NVRTC_RESULT) /* an enum without a tag */
#define GL_NVRTC_RESULT(V) V(NVRTC_SUCCESS, 0)

#ifndef GL_DECLS_FROM_TOOLKIT
GL_NVRTC_HANDLES(GL_DECL_HANDLE)
GL_NVRTC_ENUMS(GL_DECL_ENUM)
#endif

#define GL_NVRTC_CALLS(X)                                                                     \
  X(const char *, nvrtcGetErrorString, (nvrtcResult result))                                  \
  X(nvrtcResult, nvrtcVersion, (int *major, int *minor))                                      \
  X(nvrtcResult, nvrtcCreateProgram, (nvrtcProgram * prog, const char *src, const char *name, \
                                      int numHeaders, const char *const *headers,             \
                                      const char *const *includeNames))                       \
  X(nvrtcResult, nvrtcDestroyProgram, (nvrtcProgram * prog))                                  \
  X(nvrtcResult, nvrtcCompileProgram, (nvrtcProgram prog, int numOptions,                     \
                                       const char *const *options))                           \
  X(nvrtcResult, nvrtcGetPTXSize, (nvrtcProgram prog, size_t *ptxSizeRet))                    \
  X(nvrtcResult, nvrtcGetPTX, (nvrtcProgram prog, char *ptx))                                 \
  X(nvrtcResult, nvrtcGetProgramLogSize, (nvrtcProgram prog, size_t *logSizeRet))             \
  X(nvrtcResult, nvrtcGetProgramLog, (nvrtcProgram prog, char *log))

/* Optional, NULL where this NVRTC lacks them; the members' names end in _:
 * CUBIN output (NVRTC 11.1+) and the architectures it can target (11.2+). */
#define GL_NVRTC_OPTIONAL_CALLS(X)                                             \
  X(nvrtcResult, nvrtcGetCUBINSize, (nvrtcProgram prog, size_t *cubinSizeRet)) \
  X(nvrtcResult, nvrtcGetCUBIN, (nvrtcProgram prog, char *cubin))              \
  X(nvrtcResult, nvrtcGetNumSupportedArchs, (int *numArchs))                   \
  X(nvrtcResult, nvrtcGetSupportedArchs, (int *supportedArchs))

typedef struct gld_nvrtc {
#define GL_NVRTC_MEMBER(ret, name, params) ret(*name) params;
#define GL_NVRTC_OPTIONAL_MEMBER(ret, name, params) ret(*name##_) params;
  GL_NVRTC_CALLS(GL_NVRTC_MEMBER)
#undef GL_NVRTC_MEMBER
  GL_NVRTC_OPTIONAL_CALLS(GL_NVRTC_OPTIONAL_MEMBER)
#undef GL_NVRTC_OPTIONAL_MEMBER
  int loaded, major, minor;
  char path[512];    /* the library file loaded */
  char include[512]; /* the toolkit's headers for its programs (gld_nvrtc_include_dir), or "" */
} gld_nvrtc;

extern gld_nvrtc gld_nv;

/* The architecture to compile for a device of compute capability cc (e.g.
 * 90): cc itself when this NVRTC supports it, else the newest it supports
 * below cc, or -1 when it supports none; *exact says which. */
int gld_nvrtc_arch(int cc, int *exact);

/* The folder of the toolkit's headers (cuda_fp16.h, ...) for the programs
 * of the NVRTC library file `lib`: the first of <lib's folder>/../include
 * (lib64/ and targets/<arch>/lib/), /../../include (Debian's multiarch
 * /usr/lib/<arch>/), /../../cuda_runtime/include (pip's CUDA 12 wheels),
 * cuda_home/include and cuda_path/include (each may be NULL) that holds
 * cuda_fp16.h or cuda_runtime.h. Fills out (len bytes) with its real path and
 * returns where it was found: "beside NVRTC", "CUDA_HOME" or "CUDA_PATH";
 * NULL (out "") when none does. */
const char *gld_nvrtc_include_dir(const char *lib, const char *cuda_home, const char *cuda_path, char *out,
                                 size_t len);

/* Load NVRTC once (and find its include folder: gld_nvrtc_include_dir of the
 * file loaded, $CUDA_HOME and $CUDA_PATH). NULL on success, else a message
 * saying why not. */
const char *gld_nvrtc_load(void);

#endif
