/*
 * builtins.h -- the built-in kernel library's table (see builtins.c,
 * kernels/builtins.cu); module.c loads them per device.
 */
#ifndef GPULUA_BUILTINS_H
#define GPULUA_BUILTINS_H

#include "sim.h"

typedef struct {
  int ptr;    /* index of a pointer parameter */
  int count;  /* index of the element-count parameter that bounds it */
  int stride; /* index of a stride parameter that multiplies the count, or -1 */
} gl_builtin_bound;

typedef struct {
  const char *name;
  const char *signature; /* T stands for f32 or f64 */
  const char *doc;
  gl_sim_kernel_fn host[2]; /* f32, f64 */
  gl_builtin_bound bounds[4];
  int nbounds;
  int needs_warps; /* block.x must be a multiple of 32 (warp reductions) */
  int passes;      /* its memory traffic in passes over n elements (axpy: x read, y read and
                      written: 3), for the sim's timing model: bytes = passes * n * size */
} gl_builtin;

extern const gl_builtin gl_builtins[];
extern const int gl_nbuiltins;

/* kernels/builtins.cu, embedded at build time */
const char *gl_builtins_cuda_source(void);

#endif
