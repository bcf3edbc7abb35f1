/*
 * device.h -- devices: opened lazily (primary context, limits, memory pool,
 * main stream), the current context, peer access, synchronisation, and the
 * two ways a device stops answering normally: a fault poisons it, and an
 * error found where nothing could report it (a finalizer) is kept on it and
 * reported by the next call there.
 */
#ifndef GPULUA_CORE_DEVICE_H
#define GPULUA_CORE_DEVICE_H

#include "driver.h"
#include "dtype.h"
#include "error.h"
#include "types.h"

#define GL_MAX_BUILTINS 16

struct gl_device {
  gl_runtime *rt;
  int ordinal;
  int opened;
  CUdevice cu;
  CUcontext ctx;
  char name[256];
  size_t memory;
  int cc_major, cc_minor, sms;
  int copy_engines;     /* copies the device runs at once with work (CUDA's async engines) */
  int max_threads_per_block, max_block[3], max_grid[3];
  int max_threads_per_sm, max_regs_per_block; /* for the built-ins' grid "auto" (launch.c) */
  int max_shared, max_shared_optin;
  int prio_least, prio_greatest;
  int stream_counter;
  gl_stream *main;
  gl_stream *streams;        /* open streams, main included */
  gl_buf poison;             /* non-empty once a fault poisoned the device */
  gl_buf pending;            /* an error a finalizer found: reported by the next call here */
  CUevent *event_pool[2];    /* events no longer needed, [timing] (event.c) */
  int npool[2], cappool[2];
  gl_module *builtins[GL_NDTYPES]; /* the built-in kernels' module of each dtype, loaded at its first use */
  gl_kernel *builtin_kernel[GL_MAX_BUILTINS][GL_NDTYPES];
  int reduced;               /* a built-in reduction has run here: captures prepare scratch (scratch.h) */
  struct gl_scratch **scratch_spare; /* scratch made for captures' forks (scratch.h) */
  int nscratch_spare;
  struct cublasContext **blas_idle; /* cuBLAS handles of closed streams, for the next (blas.h) */
  int nblas_idle, capblas_idle;
  struct gl_blas_slot **blas_spare;  /* handles and workspaces made for captures' forks (blas.h) */
  int nblas_spare;
  gl_stream *spares;         /* where the spares are made, from the first (gl_stream_spares) */
  gl_alloc *allocs;          /* its slices' allocations, for naming memory in a fault (gl_alloc_at) */
  CUstream *watchers;        /* idle streams that wait for an event for e:await (after.h) */
  int nwatchers, capwatchers;
};

/* Device `ordinal`, opened at first use. `call`: the call's name as the
 * caller wrote it ("gpu.device"), which the errors begin with. */
int gl_device_open(gl_runtime *rt, int ordinal, const char *call, gl_device **out);
/* Make d's context current on this thread. */
void gl_set_ctx(gl_device *d);
/* 0 when d can take work; else -1: shut down, poisoned (the fault), or an
 * error a finalizer kept (reported once). */
int gl_device_check_slow(gl_device *d);
static inline int gl_device_check(gl_device *d) {
  return d->opened && !d->poison.n && !d->pending.n ? 0 : gl_device_check_slow(d); /* the usual case, at once */
}
static inline int gl_device_poisoned(const gl_device *d) { return d->poison.n != 0; }
/* Keep the runtime's current error on d, for gl_device_check to report (a
 * finalizer's failure: never lost, never raised where it happened). */
void gl_device_keep_error(gl_device *d);
/* Wait for all work on d; the host then knows every stream of d finished. */
int gl_device_sync(gl_device *d, gl_site *site);
int gl_device_free_memory(gl_device *d, size_t *free_bytes, size_t *total);
/* After an allocation failed: wait for the device (every queued free has
 * then happened) and give the pool's cached memory back to the driver. The
 * checker learns nothing from this wait. */
int gl_device_reclaim(gl_device *d, gl_site *site);
/* Give the memory pool's unused memory back to the driver. */
void gl_device_trim(gl_device *d);

/* gpu.peer(a, b): let work on device b use memory of device a (`call`:
 * the call's name, as above; opening a device is named rt->names.device). */
int gl_peer_grant(gl_runtime *rt, int a, int b, const char *call);

/* Teardown of one opened device (runtime.c): drain, destroy its streams,
 * events and modules, keep the context retained. */
void gl_device_close(gl_device *d);

#endif
