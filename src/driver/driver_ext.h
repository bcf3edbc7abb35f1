/*
 * driver_ext.h -- what a backend offers beyond the CUDA-shaped driver table:
 * the extension table gld_drv_ext (driver.c), beside gld_drv.
 *
 * Every entry is optional. The cuda backend leaves them all NULL (0); the
 * sim backend (sim/sim_ext.c) fills those it has. The layers above the
 * driver test an entry (`if (gld_drv_ext.func_set_host)`), never the
 * backend's name: what the sim alone does is reached through this table and
 * nothing else (tests/layering_check.sh keeps it so).
 */
#ifndef GPULUA_DRIVER_EXT_H
#define GPULUA_DRIVER_EXT_H

#include "cuda_decls.h"
#include <stddef.h>
#include <stdint.h>

struct gld_cublas;
struct gld_nccl;

#define GL_HOST_MAX_PARAMS 64

/* A launch as a kernel's host implementation sees it: parameters copied at
 * launch. */
typedef struct gld_host_launch {
  unsigned grid[3], block[3], shared;
  int nparams;
  int tag; /* the upper layer's name for the launch (launch_costed), -1 for none */
  void *params[GL_HOST_MAX_PARAMS];
} gld_host_launch;

/* Where a backend's fault text (fault_detail) names things the upper layer
 * can name better: the memory the faulting access hit, and the launch. */
typedef struct gld_fault_where {
  uint64_t base;    /* the first byte of the memory the access hit; 0: none */
  size_t name_at;   /* the text's words for that memory: [name_at, name_at + name_len) */
  size_t name_len;  /* 0: the text does not name it */
  size_t launch_at; /* where words about the launch may be inserted; SIZE_MAX: nowhere */
  int tag;          /* the faulting launch's tag (launch_costed); -1: unknown */
} gld_fault_where;

/* A kernel's host implementation; non-zero return = the launch failed. */
typedef int (*gld_host_kernel_fn)(void *user, const gld_host_launch *launch);

/* A parameter of one launch, as a backend that compares a kernel's device
 * code with its host implementation needs it: memory the kernel may write
 * (a non-const pointer of its signature) is given to the host implementation
 * as a copy, which is then compared with what the device code wrote, element
 * by element. */
typedef struct gld_host_arg {
  int ptr;          /* 1: a pointer to memory (the fields below say what); 0: a value (the rest unused) */
  int writes;       /* the kernel may write it (a non-const pointer) */
  const char *type; /* the element type of the signature's pointer, for messages: "f32", "void" */
  char kind;        /* its elements: 'i' signed or 'u' unsigned integers, 'f' IEEE floats, 'b' bfloat16 */
  size_t size;      /* bytes of an element: 1, 2, 4 or 8 */
  size_t count;     /* elements of the memory passed */
} gld_host_arg;

/* Fill args[0 .. launch->nparams - 1] for a launch of a host implementation
 * (func_set_host's user and the launch, as the implementation gets them). */
typedef void (*gld_host_args_fn)(void *user, const gld_host_launch *launch, gld_host_arg *args);

typedef struct gld_driver_ext {
  /* ---- properties ---- */
  /* The backend runs no device code: a kernel launches only with a host
   * implementation (func_set_host, func_set_builtin), and NVRTC need only
   * give it PTX, which it reads for the kernels' names and parameters. */
  int host_only;
  /* The backend runs the built-ins' own code (kernels/builtins.cu) rather
   * than the implementations func_set_builtin gives them: they must be
   * compiled, which needs NVRTC. The setting that says so ("SETTING=value",
   * for messages), or NULL. */
  const char *builtins_ptx;
  /* The backend reads only PTX (no CUBIN): NVRTC gives it PTX, with line
   * information (its messages name the CUDA source line). */
  int ptx_only;
  /* cuMemHostAlloc gives zeroed memory (large sizes lazily, as fresh pages),
   * so the upper layer need not touch every page of a new buffer. */
  int host_alloc_zeroed;
  /* A query that finds work pending yields and serves host kernels itself:
   * a caller polling it need not sleep between queries. */
  int query_yields;
  /* The bytes of the workspace a cuBLAS handle gets; 0: cuBLAS's
   * recommendation for the device. */
  size_t blas_workspace;

  /* ---- calls ---- */
  /* What the backend knows of the fault that ended device `ordinal`'s
   * context (a kernel it ran: which, where, which thread), into buf; 0 when
   * it knows something, -1 when not; *where says where the text names the
   * memory and the launch. */
  int (*fault_detail)(int ordinal, char *buf, size_t len, gld_fault_where *where);
  /* Why the calling thread's last cuModuleLoadData failed, in words ("" when
   * the backend has nothing to add to the result). */
  const char *(*load_error)(void);
  /* cuModuleLoadData for the built-in kernels' module, whose kernels all
   * get the backend's own implementations (func_set_builtin): the backend
   * need not be able to run the module's code. */
  CUresult (*load_builtins)(CUmodule *m, const void *image);
  /* Queries this thread makes while on (1) are quiet: gpulua's own, for
   * display and bookkeeping, not the script's; they move no virtual clock.
   * Returns the previous setting. Use gld_drv_quiet, which is harmless where
   * this is NULL. */
  int (*quiet)(int on);
  /* Give a function (from cuModuleGetFunction) its host implementation, run
   * on the stream's worker, or on the main thread when on_main is set.
   * skipped (may be NULL) runs where fn would, for a launch that a fault on
   * its context skips: it releases what the launch's parameters hold.
   * sizes: the bytes of each parameter, to copy them at launch. args (may
   * be NULL) describes a launch's parameters: where it is given, a backend
   * that can run both the device code and fn (the sim's
   * GPULUA_SIM_KERNELS=compare) runs both and compares what they write. */
  CUresult (*func_set_host)(CUfunction f, gld_host_kernel_fn fn, gld_host_kernel_fn skipped, void *user, int on_main,
                            int nparams, const size_t *sizes, gld_host_args_fn args);
  /* The thread that runs on_main host implementations (the Lua thread). */
  void (*set_main_thread)(void);
  /* Block the calling thread until ready(user) is non-zero or ms
   * milliseconds passed, letting the device go on meanwhile (its work
   * started, on_main host implementations run on this thread): a host
   * function (cuLaunchHostFunc) that makes ready true ends the wait. NULL:
   * the device goes on by itself, and the caller waits as it likes. */
  void (*host_wait)(int (*ready)(void *user), void *user, int ms);
  /* Give a built-in kernel's function (kernels/builtins.cu: `kernel` for the
   * dtype named `dtype`, "f32") the backend's own host implementation;
   * CUDA_ERROR_NOT_FOUND when it has none. */
  CUresult (*func_set_builtin)(CUfunction f, const char *kernel, const char *dtype, int nparams,
                               const size_t *sizes);
  /* The pinned host memory the backend allows: fills avail and total and
   * returns 1, or returns 0 when it sets no limit of its own. */
  int (*host_memory)(size_t *avail, size_t *total);
  /* The backend's own cuBLAS and NCCL, used instead of loading the
   * libraries: fill t. Its NCCL's communicators are between the devices of
   * one process (no NCCL id across processes). */
  void (*cublas_table)(struct gld_cublas *t);
  void (*nccl_table)(struct gld_nccl *t);

  /* cuLaunchKernel with the kernel's cost for a timing model (ignored
   * without one): the bytes it moves (at the model's memory rate) and
   * microseconds of its own; tag: the upper layer's name for the launch,
   * which a fault in it reports (fault_detail), -1 for none. */
  CUresult (*launch_costed)(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                            unsigned bz, unsigned shared, CUstream s, void **params, void **extra,
                            double mem_bytes, double us, int tag);

  /* ---- the timing model: filled only while one is in use ---- */
  /* The name of the model (its file's "name"). */
  const char *(*model_name)(void);
  /* The virtual time of an event's last record, in seconds from the model's
   * start (it must have completed); 0, or -1 when there is no such time. */
  int (*model_event_time)(CUevent e, double *seconds);
  /* The host's virtual clock, in seconds from the model's start. */
  double (*model_host_time)(void);
} gld_driver_ext;

extern gld_driver_ext gld_drv_ext; /* the chosen backend's extensions */

/* gld_drv_ext.quiet where the backend has it: the previous setting, else 0. */
static inline int gld_drv_quiet(int on) { return gld_drv_ext.quiet ? gld_drv_ext.quiet(on) : 0; }

/* Fill x with the sim's extensions (after gld_driver_sim_load, and after
 * gld_driver_sim_model chose the timing model). */
void gld_driver_sim_load_ext(gld_driver_ext *x);

#endif
