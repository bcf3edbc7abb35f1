/*
 * compile.h -- CUDA C to a loadable image with NVRTC (loaded at run time,
 * driver/nvrtc.h), through the on-disk kernel cache (kcache.h).
 */
#ifndef GPULUA_CORE_COMPILE_H
#define GPULUA_CORE_COMPILE_H

#include <stddef.h>

#include "types.h"

#define GL_COMPILE_MAX_OPTIONS 63

/* Compile src (srclen bytes) named `name` for dev, with the user's options
 * (at most GL_COMPILE_MAX_OPTIONS). *image: a malloc'd CUBIN, or PTX with a
 * NUL after it. `what` names the caller in messages ("gpu.compile"); a
 * compile error's message holds NVRTC's log. */
int gl_compile(gl_device *dev, const char *what, const char *name, const char *src, size_t srclen,
               const char *const *opts, int nopts, void **image, size_t *image_len);

#endif
