/*
 * builtins.h -- the built-in kernel library's table (see builtins.c,
 * kernels/builtins.cu); module.c loads them per device and per dtype, one
 * NVRTC program each; launch.c checks their element counts, picks a grid
 * "auto" and passes a reduction its stream's scratch (scratch.h).
 */
#ifndef GPULUA_BUILTINS_H
#define GPULUA_BUILTINS_H

#include "dtype.h"

typedef struct {
  int ptr;    /* index of a pointer parameter */
  int count;  /* index of the element-count parameter that bounds it; -1: one element (a reduction's out) */
  int stride; /* index of a stride parameter that multiplies the count, or -1 */
} gl_builtin_bound;

/* A reduction's kernel takes this many parameters after the script's: the
 * stream's scratch, as its ticket and its partials (scratch.h). */
#define GL_BUILTIN_HIDDEN 2

typedef struct {
  const char *name;
  const char *signature; /* T stands for the dtype */
  const char *doc;
  gl_builtin_bound bounds[4];
  int nbounds;
  int reduces; /* a reduction: a one-dimensional block of a multiple of 32 threads (warp trees), a grid of at
                  most GL_REDUCE_BLOCKS blocks, GL_BUILTIN_HIDDEN parameters more */
  int passes;  /* its memory traffic in passes over n elements (axpy: x read, y read and
                  written: 3), for the sim's timing model: bytes = passes * n * size */
} gl_builtin;

extern const gl_builtin gl_builtins[];
extern const int gl_nbuiltins;

/* kernels/builtins.cu, embedded at build time; compiled once per dtype with
 * the option gl_builtins_cuda_option(dt) ("-DGL_DTYPE_f32"), which
 * instantiates that dtype's kernels alone. */
const char *gl_builtins_cuda_source(void);
const char *gl_builtins_cuda_option(gl_dtype dt);

#endif
