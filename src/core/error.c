/*
 * error.c -- the growable message buffer and the runtime's error (error.h),
 * and poisoning: a sticky driver fault makes its device unusable, and every
 * later call there names the fault.
 */
#include "error.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "device.h"
#include "driver_ext.h"
#include "memory.h"
#include "runtime.h"
#include "stream.h"

void gl_buf_vprintf(gl_buf *b, const char *fmt, va_list ap) {
  if (b->failed) return;
  va_list again;
  va_copy(again, ap);
  char small[256];
  int len = vsnprintf(small, sizeof small, fmt, ap);
  if (len < 0) {
    va_end(again);
    return;
  }
  size_t need = b->n + (size_t)len + 1;
  if (need > b->cap) {
    size_t cap = b->cap ? b->cap : 128;
    while (cap < need) cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
      b->failed = 1;
      va_end(again);
      return;
    }
    b->s = s;
    b->cap = cap;
  }
  if ((size_t)len < sizeof small) memcpy(b->s + b->n, small, (size_t)len + 1);
  else vsnprintf(b->s + b->n, (size_t)len + 1, fmt, again);
  va_end(again);
  b->n += (size_t)len;
}

void gl_buf_printf(gl_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  gl_buf_vprintf(b, fmt, ap);
  va_end(ap);
}

const char *gl_buf_str(const gl_buf *b) {
  if (b->failed) return "gpulua: out of host memory (while writing a message)";
  return b->s ? b->s : "";
}

void gl_buf_reset(gl_buf *b) {
  b->n = 0;
  b->failed = 0;
  if (b->s) b->s[0] = '\0';
}

void gl_buf_free(gl_buf *b) {
  free(b->s);
  memset(b, 0, sizeof *b);
}

/* Replace the error's message by a freshly formatted one (the arguments may
 * point into the old message). */
static int set_error(gl_runtime *rt, CUresult code, const char *fmt, va_list ap) {
  gl_buf fresh = GL_BUF_INIT;
  gl_buf_vprintf(&fresh, fmt, ap);
  gl_buf_free(&rt->err.msg);
  rt->err.msg = fresh;
  rt->err.code = code;
  return -1;
}

int gl_fail(gl_runtime *rt, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  set_error(rt, CUDA_SUCCESS, fmt, ap);
  va_end(ap);
  return -1;
}

int gl_fail_code(gl_runtime *rt, CUresult code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  set_error(rt, code, fmt, ap);
  va_end(ap);
  return -1;
}

int gl_fail_nomem(gl_runtime *rt, const char *what) {
  if (what) return gl_fail_code(rt, CUDA_ERROR_OUT_OF_MEMORY, "%s: out of host memory", what);
  return gl_fail_code(rt, CUDA_ERROR_OUT_OF_MEMORY, "gpulua: out of host memory");
}

const char *gl_error_message(const gl_runtime *rt) { return gl_buf_str(&rt->err.msg); }

CUresult gl_error_code(const gl_runtime *rt) { return rt->err.code; }

/* The fault's message, kept on the device: the fault, where it was seen,
 * and (the driver reports a fault late and does not say which kernel) the
 * launches not known to have finished, the likely culprits. */
/* What the backend knows of dev's fault (a kernel the sim ran), into b:
 * its text, with the memory the access hit named as the scripts know it
 * (the slice and where it was allocated) and the launch's line. */
static void backend_detail(gl_device *dev, gl_buf *b) {
  char known[512];
  gld_fault_where w = {.launch_at = SIZE_MAX, .tag = -1};
  if (!gld_drv_ext.fault_detail || gld_drv_ext.fault_detail(dev->ordinal, known, sizeof known, &w) != 0) return;
  gl_runtime *rt = dev->rt;
  gl_alloc *a = NULL;
  for (int i = 0; w.name_len && !a && i < rt->ndev; i++)
    if (rt->devs[i].opened) a = gl_alloc_at(&rt->devs[i], (CUdeviceptr)w.base);
  size_t n = strlen(known);
  for (size_t i = 0; i <= n; i++) {
    if (a && i == w.name_at) gl_alloc_describe(a, dev, b);
    if (i == w.launch_at && w.tag != GL_LOC_NONE) gl_buf_printf(b, ", launched at %s", gl_loc_text(rt, w.tag));
    if (i == n) break;
    if (!a || i < w.name_at || i >= w.name_at + w.name_len) gl_buf_printf(b, "%c", known[i]);
  }
}

void gl_device_poison(gl_device *dev, CUresult r, const char *call, gl_site *site) {
  gl_runtime *rt = dev->rt;
  gl_buf *p = &dev->poison;
  gl_buf known = GL_BUF_INIT;
  if (r == CUDA_ERROR_LAUNCH_FAILED && rt->host_kernel_error.n && rt->host_kernel_error_dev == dev->ordinal) {
    known = rt->host_kernel_error; /* a host kernel of this device raised: its error, taken */
    rt->host_kernel_error = (gl_buf)GL_BUF_INIT;
  } else {
    backend_detail(dev, &known);
  }
  const char *detail = gl_buf_str(&known);
  gl_buf_printf(p, "device %d is poisoned by a fault: %s: %s (%s, seen at %s)%s%s", dev->ordinal,
                gld_error_name(r), gld_error_string(r), call, gl_loc_text(rt, gl_site_loc(rt, site)),
                detail[0] ? ": " : "", detail);
  gl_buf_free(&known);
  int named = 0;
  for (gl_stream *s = dev->streams; s; s = s->next_open) {
    if (s->last_launch_seq <= s->done_seq) continue;
    if (named == 3) {
      gl_buf_printf(p, ", ...");
      break;
    }
    const char *at = s->last_launch_loc >= 0 ? gl_loc_text(rt, s->last_launch_loc) : "an unrecorded line";
    gl_buf_printf(p, "%s kernel '%s' launched on stream '%s' at %s", named ? "," : "; not known to have finished:",
                  gl_loc_text(rt, s->last_kernel), s->name, at);
    named++;
  }
}

int gl_fail_cu(gl_runtime *rt, gl_device *dev, CUresult r, const char *call, gl_site *site) {
  int sticky = gld_error_is_sticky(r);
  if (dev && sticky && !gl_device_poisoned(dev)) gl_comm_fault(rt, dev, r, call, site); /* poisons dev */
  if (dev && sticky) return gl_fail_code(rt, r, "%s", gl_buf_str(&dev->poison));
  return gl_fail_code(rt, r, "%s failed: %s: %s", call, gld_error_name(r), gld_error_string(r));
}
