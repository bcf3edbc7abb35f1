/*
 * test_cuda_decls.c -- gpulua declares the CUDA driver API, NVRTC and cuBLAS
 * it uses itself (src/driver/cuda_decls.h, driver.h, nvrtc_table.h,
 * cublas_table.h: no toolkit header is needed to build). Where the toolkit's
 * headers exist, this checks every one of those declarations against them,
 * at compile time: it includes the toolkit's headers, then gpulua's with
 * GL_DECLS_FROM_TOOLKIT (only the lists, decls.h), and walks each list:
 *   - each value (enum value, #define'd flag) equals the toolkit's;
 *   - each enum type, rebuilt from gpulua's values, has the toolkit's size,
 *     alignment and sign (so gpulua's partial enum passes as the toolkit's);
 *   - each scalar, handle and function pointer type is the toolkit's type;
 *   - each struct, rebuilt from gpulua's member list, has the toolkit's size
 *     and alignment, and each member the toolkit's offset and type;
 *   - each driver call's parameters are those of the entry point version the
 *     loader asks cuGetProcAddress for (cudaTypedefs.h's PFN_<name>_v<N>),
 *     and cuGetProcAddress_v2's type is gld_cuGetProcAddress_fn;
 *   - each NVRTC and cuBLAS call's type is the toolkit's function's.
 * CMake builds it where cuda.h and cudaTypedefs.h exist; the NVRTC and cuBLAS
 * parts where nvrtc.h (GL_CHECK_NVRTC) and cublas_v2.h (GL_CHECK_CUBLAS) do.
 * Its run prints what it checked; a difference is a compile error naming it.
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <stddef.h>
#include <stdio.h>
#ifdef GL_CHECK_NVRTC
#include <nvrtc.h>
#endif
#ifdef GL_CHECK_CUBLAS
#include <cublas_v2.h>
#endif

#define GL_DECLS_FROM_TOOLKIT
#include "driver.h"
#ifdef GL_CHECK_NVRTC
#include "nvrtc_table.h"
#endif
#ifdef GL_CHECK_CUBLAS
#include "cublas_table.h"
#endif

#define SAME_VALUE(name, value)                                                                    \
  _Static_assert((long long)(name) == (long long)(value), "gpulua's " #name " is " #value ", not the toolkit's value");
#define MIRROR_VALUE(name, value) gl_mirror_##name = (value),
#define SAME_ENUM(type, tag, values)                                                               \
  values(SAME_VALUE) typedef enum { values(MIRROR_VALUE) } gl_mirror_##type;                       \
  _Static_assert(sizeof(gl_mirror_##type) == sizeof(type) && _Alignof(gl_mirror_##type) == _Alignof(type) && \
                     ((gl_mirror_##type)-1 > (gl_mirror_##type)0) == ((type)-1 > (type)0),         \
                 "gpulua's " #type " differs in size, alignment or sign from the toolkit's");
#define SAME_SCALAR(name, type)                                                                    \
  _Static_assert(__builtin_types_compatible_p(name, type), "the toolkit's " #name " is not " #type);
#define SAME_HANDLE(name, tag)                                                                     \
  _Static_assert(__builtin_types_compatible_p(name, struct tag *), "the toolkit's " #name " is not struct " #tag " *");
#define SAME_FN_TYPE(name, ret, params)                                                            \
  _Static_assert(__builtin_types_compatible_p(name, ret(*) params), "the toolkit's " #name " differs from gpulua's");
#define MIRROR_MEMBER(S, type, name) type name;
#define SAME_MEMBER(S, type, name)                                                                 \
  _Static_assert(offsetof(gl_mirror_##S, name) == offsetof(S, name), #S "." #name "'s offset differs from the toolkit's"); \
  _Static_assert(__builtin_types_compatible_p(__typeof__(((S *)0)->name), type),                   \
                 "the toolkit's " #S "." #name " is not a " #type);
#define SAME_STRUCT(type, tag, members)                                                            \
  typedef struct { members(MIRROR_MEMBER, type) } gl_mirror_##type;                                \
  _Static_assert(sizeof(gl_mirror_##type) == sizeof(type) && _Alignof(gl_mirror_##type) == _Alignof(type), \
                 "gpulua's " #type " differs in size or alignment from the toolkit's");              \
  members(SAME_MEMBER, type)
#define SAME_CALL(name, version, params)                                                           \
  _Static_assert(__builtin_types_compatible_p(PFN_##name##_v##version, CUresult(*) params),        \
                 #name "'s parameters differ from those of its version " #version " (cudaTypedefs.h)");
#define SAME_FUNCTION(ret, name, params)                                                           \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&name), ret(*) params),                   \
                 #name "'s declaration differs from the toolkit's");

/* the driver */
GL_CU_SCALARS(SAME_SCALAR)
GL_CU_HANDLES(SAME_HANDLE)
GL_CU_FN_TYPES(SAME_FN_TYPE)
GL_CU_ENUMS(SAME_ENUM)
GL_CU_CONSTANTS(SAME_VALUE)
GL_CU_STRUCTS(SAME_STRUCT)
GL_DRIVER_CALLS(SAME_CALL)
GL_DRIVER_OPTIONAL_CALLS(SAME_CALL)
_Static_assert(__builtin_types_compatible_p(gld_cuGetProcAddress_fn, PFN_cuGetProcAddress_v12000),
               "gld_cuGetProcAddress_fn is not cuGetProcAddress_v2's type");

#ifdef GL_CHECK_NVRTC
GL_NVRTC_HANDLES(SAME_HANDLE)
GL_NVRTC_ENUMS(SAME_ENUM)
GL_NVRTC_CALLS(SAME_FUNCTION)
GL_NVRTC_OPTIONAL_CALLS(SAME_FUNCTION)
#endif

#ifdef GL_CHECK_CUBLAS
GL_CUBLAS_HANDLES(SAME_HANDLE)
GL_CUBLAS_ENUMS(SAME_ENUM)
GL_CUBLAS_CALLS(SAME_FUNCTION)
#endif

/* What was checked, counted from the same lists. */
#define ONE_2(a, b) +1
#define ONE_3(a, b, c) +1
#define ONE_MEMBER(S, type, name) +1
#define VALUES_OF(type, tag, values) values(ONE_2)
#define MEMBERS_OF(type, tag, members) members(ONE_MEMBER, type)

int main(void) {
  printf("driver: %d values of %d enums, %d flags, %d types, %d structs (%d members), %d calls and "
         "cuGetProcAddress_v2: as cuda.h's (CUDA_VERSION %d; gpulua's are CUDA %d's)\n",
         0 GL_CU_ENUMS(VALUES_OF), 0 GL_CU_ENUMS(ONE_3), 0 GL_CU_CONSTANTS(ONE_2),
         0 GL_CU_SCALARS(ONE_2) GL_CU_HANDLES(ONE_2) GL_CU_FN_TYPES(ONE_3), 0 GL_CU_STRUCTS(ONE_3),
         0 GL_CU_STRUCTS(MEMBERS_OF), 0 GL_DRIVER_CALLS(ONE_3) GL_DRIVER_OPTIONAL_CALLS(ONE_3), CUDA_VERSION,
         GL_CUDA_API_VERSION);
#ifdef GL_CHECK_NVRTC
  printf("nvrtc: %d values of %d enums, %d types, %d calls: as nvrtc.h's\n", 0 GL_NVRTC_ENUMS(VALUES_OF),
         0 GL_NVRTC_ENUMS(ONE_3), 0 GL_NVRTC_HANDLES(ONE_2), 0 GL_NVRTC_CALLS(ONE_3) GL_NVRTC_OPTIONAL_CALLS(ONE_3));
#else
  printf("nvrtc: not checked (no nvrtc.h)\n");
#endif
#ifdef GL_CHECK_CUBLAS
  printf("cublas: %d values of %d enums, %d types, %d calls: as cublas_v2.h's\n", 0 GL_CUBLAS_ENUMS(VALUES_OF),
         0 GL_CUBLAS_ENUMS(ONE_3), 0 GL_CUBLAS_HANDLES(ONE_2), 0 GL_CUBLAS_CALLS(ONE_3));
#else
  printf("cublas: not checked (no cublas_v2.h)\n");
#endif
  return 0;
}
