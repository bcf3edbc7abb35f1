/*
 * error.h -- how the core reports failure, and the growable text buffer its
 * messages are written into (no fixed buffer that could truncate them).
 *
 * Every core call that can fail returns 0, or -1 with the runtime's error
 * set: a message that names the object, what was expected and what was
 * given, and the driver's result when a driver call failed. The Lua layer
 * raises that message at the script line that made the call. Out of host
 * memory is an error like any other ("out of host memory"), never an abort.
 */
#ifndef GPULUA_CORE_ERROR_H
#define GPULUA_CORE_ERROR_H

#include <stdarg.h>

#include "driver.h"
#include "types.h"

#if defined(__GNUC__)
#define GL_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define GL_PRINTF(f, a)
#endif

/* A growable NUL-terminated string. A failed append (out of memory) keeps
 * what fits and marks the buffer failed; gl_buf_str then says so. */
typedef struct gl_buf {
  char *s;
  size_t n, cap;
  int failed;
} gl_buf;

#define GL_BUF_INIT {NULL, 0, 0, 0}
void gl_buf_printf(gl_buf *b, const char *fmt, ...) GL_PRINTF(2, 3);
void gl_buf_vprintf(gl_buf *b, const char *fmt, va_list ap);
const char *gl_buf_str(const gl_buf *b);
void gl_buf_reset(gl_buf *b); /* empty, keeping the memory */
void gl_buf_free(gl_buf *b);

/* The runtime's last error. */
typedef struct gl_error {
  gl_buf msg;
  CUresult code; /* the driver's result, CUDA_ERROR_OUT_OF_MEMORY for any
                    out-of-memory, CUDA_SUCCESS for other errors */
} gl_error;

/* Set the error (a message) and return -1. */
int gl_fail(gl_runtime *rt, const char *fmt, ...) GL_PRINTF(2, 3);
/* ... with a result code. */
int gl_fail_code(gl_runtime *rt, CUresult code, const char *fmt, ...) GL_PRINTF(3, 4);
/* Out of host memory: "gpulua: out of host memory" (what may add context). */
int gl_fail_nomem(gl_runtime *rt, const char *what);
/* A driver call failed: "<call> failed: NAME: description". A sticky fault
 * poisons `dev` (may be NULL) first, and the message is then the poison's,
 * which names the fault, where it was seen and the launches that may have
 * caused it. */
int gl_fail_cu(gl_runtime *rt, gl_device *dev, CUresult r, const char *call, gl_site *site);
/* Poison dev with fault r, as gl_fail_cu does, and nothing else (comm.c). */
void gl_device_poison(gl_device *dev, CUresult r, const char *call, gl_site *site);

const char *gl_error_message(const gl_runtime *rt);
CUresult gl_error_code(const gl_runtime *rt);

#endif
