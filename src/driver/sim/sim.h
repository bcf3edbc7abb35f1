/*
 * sim.h -- what the sim backend offers beyond the CUDA-shaped driver table:
 * the upper layer reaches it through the extension table (driver_ext.h,
 * filled by sim_ext.c); the driver's own tests call it directly.
 */
#ifndef GPULUA_SIM_H
#define GPULUA_SIM_H

#include "cuda_decls.h"
#include "driver_ext.h"
#include <stddef.h>

/* A host operation for a sim stream, run in stream order on its worker
 * thread. A non-zero return marks the stream failed with
 * CUDA_ERROR_LAUNCH_FAILED (as a faulting kernel would). */
typedef int (*gld_sim_fn)(void *user);

/* Queue fn(user) on a sim stream (the sim's stand-in for a kernel launch). */
CUresult gld_sim_enqueue(CUstream stream, gld_sim_fn fn, void *user);

/* The ordinal of the device a sim stream belongs to, or -1. */
int gld_sim_device_of(CUstream stream);

/* The operations queued on a sim stream and not yet finished (what its
 * queue holds), or -1 for no stream. */
long gld_sim_stream_pending(CUstream stream);

/* A launch as a host implementation sees it, and the implementation
 * (driver_ext.h: the upper layer reaches them through gld_drv_ext). */
#define GL_SIM_MAX_PARAMS GL_HOST_MAX_PARAMS
typedef gld_host_launch gld_sim_launch;
typedef gld_host_kernel_fn gld_sim_kernel_fn;

/* Give a sim function (from cuModuleGetFunction) its host implementation,
 * run on the stream's worker, or on the main thread when on_main is set.
 * skipped (may be NULL) runs where fn would for a launch that a fault on its
 * context skips, to release what the launch's parameters hold.
 * sizes: the bytes of each parameter, to copy them at launch. args (may be
 * NULL): what a launch's parameters are, for GPULUA_SIM_KERNELS=compare,
 * which runs both the PTX and fn where it is given (sim_compare.c). */
CUresult gld_sim_func_set_host(CUfunction f, gld_sim_kernel_fn fn, gld_sim_kernel_fn skipped, void *user, int on_main,
                              int nparams, const size_t *sizes, gld_host_args_fn args);

/* The streams' worker threads not yet joined: those of live streams and of
 * destroyed streams whose workers have not ended or not been joined. */
int gld_sim_workers_live(void);
/* Wait at most ms for the workers of destroyed streams to drain and end,
 * then join those ended (what the sim does at exit, waiting 2 s at most);
 * returns how many destroyed streams' workers have not ended. */
int gld_sim_workers_settle(int ms);

/* The thread that runs on_main host kernels (the Lua thread). */
void gld_sim_set_main_thread(void);

/* The sim's cuMemHostAlloc gives zeroed memory (large sizes lazily, as fresh
 * pages), so the upper layer need not touch every page of a new buffer
 * (gld_drv_ext.host_alloc_zeroed). */

/* The pinned host memory GPULUA_SIM_HOST_MEMORY allows: fills avail and
 * total and returns 1, or returns 0 when no limit is set. */
int gld_sim_host_memory(size_t *avail, size_t *total);

/* What the sim knows of the fault that ended device `ordinal`'s context (a
 * PTX run's message): 0 with it in buf, -1 when it knows nothing. */
int gld_sim_fault_detail(int ordinal, char *buf, size_t len, gld_fault_where *where);

/* Why the calling thread's last module load failed (GPULUA_SIM_KERNELS=ptx:
 * what the interpreter cannot run, and its line), or "". */
const char *gld_sim_load_error(void);

/* cuModuleLoadData for a module whose kernels all run the sim's own C
 * implementations (the built-ins): never decoded for the interpreter. */
CUresult gld_sim_load_builtins(CUmodule *m, const void *image);

/* Check the GPULUA_SIM_* environment; on a bad value fill `why` and return -1. */
int gld_sim_config_error(char *why, size_t whylen);

/* ---- the timing model (sim_model.h says how it works) ------------------- */

/* A model's figures, as a model file gives them (sim_model_file.c): rates in
 * GB/s (1e9 bytes a second), times in microseconds. */
typedef struct gld_sim_model {
  char name[128];        /* the GPU it describes */
  double h2d_gbps, d2h_gbps, bidir_gbps; /* copies over the host link: each way, both ways at once */
  double d2d_gbps;       /* a copy within a device (bytes copied per second) */
  double mem_gbps;       /* the memory rate kernels share (bytes read and written per second) */
  double peer_gbps;      /* a copy between devices (optional: default h2d_gbps) */
  double launch_us;      /* before a kernel's work starts (also a fill's) */
  double copy_latency_us; /* before a copy's bytes move */
  double host_us;        /* the host's time to queue one operation (optional: default 0) */
  double switch_us;      /* work that depends on work of another engine (a kernel after a copy) starts
                            this long after it (optional: default 0) */
  int copy_engines;      /* copies in flight at once per device (split between the directions) */
} gld_sim_model;

/* Read and check the model file at path: 0, or -1 with why ("FILE: field
 * 'h2d_gbps' is missing"). */
int gld_sim_model_read(const char *path, gld_sim_model *m, char *why, size_t whylen);
/* Use m (copied) from now on, before any stream exists; NULL: none. */
void gld_sim_model_use(const gld_sim_model *m);
/* 1 when a model is in use. */
int gld_sim_model_active(void);
/* The name of the model in use (its file's "name"), or NULL. */
const char *gld_sim_model_name(void);
/* cuLaunchKernel with the kernel's cost for the model: bytes it moves (at
 * the model's mem_gbps) plus microseconds of its own. */
CUresult gld_sim_launch_costed(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                              unsigned bz, unsigned shared, CUstream s, void **params, void **extra,
                              double mem_bytes, double us, int tag);
/* The virtual time of an event's last record, in seconds from the model's
 * start (it must have completed: the host has seen it); 0, or -1 when there
 * is no model or no such time. */
int gld_sim_model_event_time(CUevent e, double *seconds);
/* The host's virtual clock, in seconds from the model's start. */
double gld_sim_model_host_time(void);
/* Queries this thread makes while on (1) are quiet: gpulua's own, for
 * display and bookkeeping (a stream's description, the trace's harvest, the
 * progress line, reaping memory), not the script's. Under a timing model a
 * quiet query finds work done only when the model has it done by the host's
 * virtual clock, and moves nothing; a script's query that finds work done is
 * a host sync and moves the host's clock to it. Returns the previous
 * setting. */
int gld_sim_quiet(int on);

#endif
