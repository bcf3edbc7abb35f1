/*
 * sim_internal.h -- what the files of the sim backend share.
 *
 * The sim implements the driver table in software: GPULUA_SIM_DEVICES virtual
 * devices (default 2) whose memory is host memory. Each stream is a FIFO of
 * operations executed in order by its own worker thread, so work on different
 * streams really runs concurrently and unordered work really races. Events
 * complete when their stream reaches them; waits block the waiting stream's
 * worker until then.
 *
 * One mutex guards all sim state and one condition variable is broadcast
 * whenever anything completes or is queued: the number of threads is small
 * and this keeps the waiting logic obviously free of lost wake-ups.
 *
 * The files: sim_device.c (configuration, devices, contexts, pools, error
 * strings, the table), sim_stream.c (workers, streams, events, waiting),
 * sim_memory.c (allocations, pinned memory, copies, memsets), sim_memmap.c
 * (the map of what a kernel may address, for memory checks), sim_module.c
 * (modules, functions, launches), sim_compare.c (PTX and host implementations
 * compared), sim_modvars.c (module variables), sim_ptx.c (reading PTX, on its own),
 * sim_model.c (the timing model) and sim_model_file.c (its file).
 */
#ifndef GPULUA_SIM_INTERNAL_H
#define GPULUA_SIM_INTERNAL_H

#include "driver.h"
#include "sim.h"
#include "sim_memmap.h"
#include "sim_model.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define SIM_MAX_DEVICES 64
#define SIM_ALIGN 256

struct CUctx_st {
  int ordinal;
  char fault[512];             /* what the kernel that faulted said (a PTX run's fault) */
  gld_fault_where fault_where; /* ... and where it names the memory and the launch */
  int retained;
  struct CUstream_st *streams; /* live streams of this context */
  CUresult sticky;             /* a fault on any of its streams: as CUDA's, every later call
                                  on the context returns it and its queued work is skipped */
};

typedef struct sim_device {
  char name[64];
  size_t total;
  size_t used;
  struct CUctx_st ctx;
  unsigned char peer[SIM_MAX_DEVICES]; /* peer access enabled from this ctx */
} sim_device;

/* One cuEventRecord call: what a wait queued after it captures. Records of
 * one event may complete out of order (on different streams), so each has
 * its own completion. */
typedef struct sim_mark {
  int refs;            /* the event (while it is the latest) + queued ops */
  int done;
  double t_ms;         /* host clock when the stream reached it */
  struct sim_mnode *mn; /* its node in the timing model (a reference), or NULL */
} sim_mark;

struct CUevent_st {
  unsigned flags;
  sim_mark *latest;    /* the most recent record, NULL before the first */
  struct CUctx_st *ctx; /* the context of the stream it was last recorded on */
  struct CUgraph_st *cap; /* last recorded inside this capture (a dependency, not a mark) */
  struct CUstream_st *cap_src;
  uint64_t cap_ops;       /* the nodes cap_src had captured then */
};

enum sim_op_kind {
  OP_COPY,    /* memcpy, any direction */
  OP_SET8,
  OP_SET16,
  OP_SET32,
  OP_SET2D32,
  OP_RECORD,
  OP_WAIT,
  OP_FREE,
  OP_HOSTFN,
  OP_SIMFN,
  OP_KERNEL
};

typedef struct sim_op {
  enum sim_op_kind kind;
  void *dst;
  const void *src;
  size_t n, pitch, height;
  unsigned value;
  sim_mark *mark;      /* OP_RECORD: completes it; OP_WAIT: waits for it */
  CUhostFn hostfn;
  gld_sim_fn simfn;
  void *user;
  struct CUfunc_st *func; /* OP_KERNEL */
  gld_sim_launch *launch;
  size_t launch_bytes; /* the launch record's size, for copies (graphs) */
  sim_mwork mw;        /* its work for the timing model (sim_model.h) */
} sim_op;

struct CUstream_st {
  struct CUctx_st *ctx;
  struct CUstream_st *next_in_ctx;
  int priority;
  sim_op *ring;        /* its queue: operation seq in ring[seq % cap] (sim_stream.c) */
  size_t cap;
  uint64_t enq, done;  /* operations queued, and finished, ever: done..enq are pending */
  uint64_t want;       /* a host synchronize waits for done to reach it (0: none) */
  int idle;            /* the worker sleeps on `work` until kicked */
  int blocked;         /* the worker waits for others (a record, a collective's ranks) */
  int host_blocked;    /* the host waits for room in the ring */
  int destroying;
  CUresult error; /* the error of a failed operation on this stream (its context's sticky too) */
  pthread_cond_t work; /* the worker's own: work was queued, or the stream is being destroyed */
  struct CUgraph_st *capture; /* the graph its work goes into while capturing (sim_graph.c) */
  int cap_origin;      /* it began that capture (else it joined through an event) */
  uint64_t cap_ops;    /* nodes it captured */
  int cap_rejoined;    /* a joined stream: the capture's other streams wait for all it captured */
  struct sim_mstream *ms; /* its timing-model state (a model is in use), or NULL */
};

typedef struct sim_block { /* header in front of every sim allocation */
  size_t bytes;
  int ordinal;
  void *base;           /* pinned host memory: what calloc or mmap returned */
  size_t mapped;        /* the length mmap'ed, or 0 */
} sim_block;

/* What a launch runs (GPULUA_SIM_KERNELS): the host implementation given
 * with gld_sim_func_set_host, the kernel's PTX, or both compared. */
typedef enum { SIM_KERNELS_HOST, SIM_KERNELS_PTX, SIM_KERNELS_COMPARE } sim_kernel_mode;

typedef struct sim_state {
  pthread_mutex_t mu;
  pthread_cond_t cv;    /* progress: an operation finished, a request ran (sim_wait_locked) */
  int waiters;          /* threads waiting on cv: progress wakes them only when there are any */
  int initialized;
  int ndev;
  sim_device dev[SIM_MAX_DEVICES];
  unsigned delay_us;
  long nccl_fault_at; /* GPULUA_SIM_NCCL_FAULT: the collective call that fails (0: none) */
  int nccl_fault_async; /* ... asynchronously (its communicator reports an error after it) */
  size_t host_total, host_used; /* pinned host memory: the limit (0: none), in use */
  sim_kernel_mode kernels; /* GPULUA_SIM_KERNELS, read at cuInit */
  int schedule_random;     /* GPULUA_SIM_SCHEDULE, read at cuInit: random:SEED */
  uint64_t schedule_seed;
  int racecheck;           /* GPULUA_SIM_RACECHECK (1: on, the default), read at cuInit */
  int builtins_ptx;        /* GPULUA_SIM_BUILTINS=ptx (0: c, the default), read at cuInit */
} sim_state;

extern sim_state sim_S; /* sim_device.c */

/* GPULUA_SIM_KERNELS as cuInit read it (sim_device.c). */
sim_kernel_mode sim_kernels(void);
/* GPULUA_SIM_RACECHECK as cuInit read it: 1 on, 0 off (sim_device.c). */
int sim_racecheck(void);
/* GPULUA_SIM_BUILTINS as cuInit read it: 1 ptx (the built-ins run their
 * PTX), 0 c (their C implementations); sim_parse_builtins reads a value
 * (-1: neither). sim_device.c. */
int sim_builtins_ptx(void);
int sim_parse_builtins(const char *s);

/* GPULUA_SIM_SCHEDULE as cuInit read it (sim_device.c): 1 with the seed
 * for random:SEED, 0 for fixed. */
int sim_schedule(uint64_t *seed);

/* The context current on this thread (cuCtxSetCurrent); sim_device.c. */
extern _Thread_local struct CUctx_st *sim_cur_ctx;

#define NEED_INIT() do { if (!sim_S.initialized) return CUDA_ERROR_NOT_INITIALIZED; } while (0)
#define NEED_DEV(d) do { NEED_INIT(); if ((d) < 0 || (d) >= sim_S.ndev) return CUDA_ERROR_INVALID_DEVICE; } while (0)
#define NEED_CTX() do { NEED_INIT(); if (!sim_cur_ctx) return CUDA_ERROR_INVALID_CONTEXT; } while (0)

/* The context's fault, if any (read under the lock); sim_stream.c. */
CUresult sim_ctx_sticky(struct CUctx_st *ctx);
#define NEED_HEALTHY(ctx) do { CUresult f_ = sim_ctx_sticky(ctx); if (f_ != CUDA_SUCCESS) return f_; } while (0)

/* Host kernels that must run on the main (Lua) thread: a worker that reaches
 * one queues a request and waits; the main thread runs requests whenever it
 * waits on the sim (a synchronize) or queries it (a stream or event query). */
typedef struct main_req {
  struct main_req *next;
  gld_sim_kernel_fn fn;
  void *user;
  const gld_sim_launch *launch;
  int done, failed;
} main_req;

/* The main thread, as gld_sim_set_main_thread (sim_module.c) sets it, and the
 * tail of the queue of requests, where sim_run_kernel appends; defined in
 * sim_stream.c, which runs them. Guarded by sim_S.mu. */
extern pthread_t sim_main_thread;
extern int sim_main_thread_set;
extern main_req **sim_main_tail;

/* A module and a function of it (sim_module.c). */
struct CUmod_st {
  char *image;
  size_t len;
  int is_ptx;
  int ordinal;
  void *prog;           /* GPULUA_SIM_KERNELS=ptx or compare: the module decoded (sim_ptx_module, ptx_ir.h) */
  struct sim_var *vars; /* its .global and .const variables (sim_modvars.c) */
  int nvars;
  unsigned char *vmem;  /* their memory */
};

/* A PTX module's variables: read, laid out, initialised and put in the
 * memory map at load; let go at unload (after a failed load too).
 * sim_modvars.c. */
CUresult sim_vars_load(struct CUmod_st *m);
void sim_vars_free(struct CUmod_st *m);

struct CUfunc_st {
  struct CUfunc_st *next; /* functions of the same module, freed with it */
  struct CUmod_st *mod;
  char name[256];
  gld_sim_kernel_fn host;
  gld_sim_kernel_fn skipped; /* called (where `host` is) for a launch a fault skips: it releases what the launch holds */
  int ptx_index;  /* its function in the module's prog, or -1 */
  int builtin;    /* a built-in kernel, which keeps its C implementation (but under GPULUA_SIM_BUILTINS=ptx) */
  void *user;
  int on_main;
  gld_host_args_fn args; /* what a launch's parameters are (compare), or NULL */
  int nparams;
  size_t sizes[GL_SIM_MAX_PARAMS];
  int ptx_nparams;        /* parameters read from the PTX entry, -1 unknown */
  int max_threads;        /* per block: 1024, or the entry's .maxntid (__launch_bounds__) */
  size_t ptx_offset[GL_SIM_MAX_PARAMS], ptx_size[GL_SIM_MAX_PARAMS];
};

/* Wait for progress (sim_S.mu held), and announce it: idle workers wait on
 * their stream's own condition, so that queueing wakes one thread, and
 * finishing an operation wakes only threads that wait for progress. */
void sim_wait_locked(void);
void sim_progress_locked(void);

/* Queue `op` (a template copied into the stream's ring) on stream `st`;
 * sim_stream.c. sim_enqueue_locked appends op as it is, with sim_S.mu held
 * (it may wait for room, releasing the lock; a graph's replay). */
CUresult sim_enqueue(struct CUstream_st *st, const sim_op *tmpl);
CUresult sim_enqueue_locked(struct CUstream_st *st, const sim_op *op);
/* Wake every stream's worker that has queued work (sim_S.mu held). */
void sim_kick_all_locked(void);

/* What sim_event.c shares of sim_stream.c (sim_S.mu held where _locked):
 * queue a record or a wait of event ev (else as sim_enqueue); drop a
 * reference to a mark; on the main thread, run the host kernels' requests
 * (1 when one ran), or wait for progress while serving them; and whether
 * this thread's queries are quiet (gld_sim_quiet). */
CUresult sim_enqueue_ev(struct CUstream_st *st, const sim_op *tmpl, struct CUevent_st *ev);
void sim_mark_unref_locked(sim_mark *m);
int sim_service_locked(void);
void sim_host_wait_locked(void);
int sim_quiet_now(void);

/* Stream capture (sim_graph.c), with sim_S.mu held: op (a node of its own,
 * which the caller frees after) on stream st that is capturing, or a wait
 * on an event recorded in a capture; the graph takes op's launch record on
 * success. And the end of every capture on a stream (invalidated: a sync or
 * an allocation there). */
CUresult sim_capture_locked(struct CUstream_st *st, sim_op *op, struct CUevent_st *ev);
void sim_capture_invalidate_locked(struct CUstream_st *st);
/* A stream destroyed while capturing: a capture it began is discarded (for
 * every stream in it), one it joined is left. */
void sim_capture_stream_gone_locked(struct CUstream_st *st);

/* Queue a call of f, a host function of the sim's own (its cuBLAS, its NCCL)
 * taking one parameter of `bytes`, on st with args copied now: an OP_KERNEL
 * of one thread, so captures and replays take it like any launch, moving
 * mem_bytes for the timing model.
 * CUDA_ERROR_OUT_OF_MEMORY when the record cannot be made, else sim_enqueue's
 * result. sim_module.c. */
CUresult sim_enqueue_host_call(struct CUfunc_st *f, const void *args, size_t bytes, CUstream st, double mem_bytes);

/* Run an OP_KERNEL on the calling worker, or on the main thread for an
 * on_main function; non-zero when it failed (CUDA_ERROR_ASSERT when an assert
 * of its PTX failed). With skip, the function's `skipped` instead (a fault
 * skips the launch), where it has one. sim_module.c. */
int sim_run_kernel(sim_op *op, int skip);

/* A launch of the function's PTX on the calling worker: 0, or the CUresult
 * of its fault, kept on the context (sim_module.c). */
int sim_run_ptx(sim_op *op);
/* fn(user, l) on the calling worker, or on the main thread when on_main (a
 * request it serves): its result. Called with sim_S.mu held, which it
 * releases. sim_module.c. */
int sim_call_host_unlock(gld_sim_kernel_fn fn, void *user, int on_main, const gld_sim_launch *l);

/* A function's host implementation, as a launch read it (under the lock). */
typedef struct sim_host_impl {
  gld_sim_kernel_fn fn, skipped;
  void *user;
  int on_main;
  gld_host_args_fn args;
} sim_host_impl;

/* GPULUA_SIM_KERNELS=compare: run op's PTX on the memory and h on copies of
 * what the kernel may write, then compare; 0, or the CUresult of a fault
 * (the first differing element is one). sim_compare.c. */
int sim_compare_run(sim_op *op, const sim_host_impl *h);
/* The first element where an argument's two versions differ (the bits;
 * two NaNs agree): 1 with its index, else 0. */
int sim_compare_first(const gld_host_arg *a, const void *ptx, const void *host, size_t *index);
/* An element's value as text: integers in decimal, floats as the shortest
 * text that reads back as the same element ("34.0", "0.1", "nan", "-inf"). */
void sim_compare_format(char kind, size_t size, const void *elem, char *buf, size_t len);

/* The workers' lives (sim_workers.c). Register the fork and exit handlers,
 * once per process (before the first worker starts). Start st's worker, a
 * joinable thread running `run` (pthread_create's result). A stream's
 * destroy counts its worker as draining, once; the worker, ending (sim_S.mu
 * held), moves from draining to the ended. Join the ended workers (sim_S.mu
 * not held); exit waits a bounded time for the draining first. */
void sim_install_process_handlers(void);
int sim_worker_start(struct CUstream_st *st, void *(*run)(void *));
void sim_worker_draining_locked(void);
void sim_worker_ended_locked(void);
void sim_workers_reap(void);

/* The driver calls the other files implement, for gld_driver_sim_load. */

/* sim_stream.c */
CUresult sim_cuStreamCreateWithPriority(CUstream *ph, unsigned flags, int priority);
CUresult sim_cuStreamDestroy(CUstream st);
CUresult sim_cuStreamWaitEvent(CUstream st, CUevent ev, unsigned flags);
CUresult sim_cuStreamSynchronize(CUstream st);
CUresult sim_cuStreamQuery(CUstream st);
CUresult sim_cuCtxSynchronize(void);
CUresult sim_cuEventCreate(CUevent *ph, unsigned flags);
CUresult sim_cuEventDestroy(CUevent e);
CUresult sim_cuEventRecord(CUevent e, CUstream st);
CUresult sim_cuEventSynchronize(CUevent e);
CUresult sim_cuEventQuery(CUevent e);
CUresult sim_cuEventElapsedTime(float *ms, CUevent a, CUevent b);

/* sim_memory.c */
CUresult sim_cuMemGetInfo(size_t *free_, size_t *total);
CUresult sim_cuMemAllocAsync(CUdeviceptr *dptr, size_t bytes, CUstream st);
CUresult sim_cuMemFreeAsync(CUdeviceptr p, CUstream st);
CUresult sim_cuMemHostAlloc(void **pp, size_t bytes, unsigned flags);
CUresult sim_cuMemFreeHost(void *p);
CUresult sim_cuMemHostRegister(void *p, size_t bytes, unsigned flags);
CUresult sim_cuMemHostUnregister(void *p);
CUresult sim_cuMemcpyHtoDAsync(CUdeviceptr d, const void *h, size_t n, CUstream st);
CUresult sim_cuMemcpyDtoHAsync(void *h, CUdeviceptr d, size_t n, CUstream st);
CUresult sim_cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st);
CUresult sim_cuMemcpyPeerAsync(CUdeviceptr d, CUcontext dctx, CUdeviceptr s, CUcontext sctx, size_t n,
                               CUstream st);
CUresult sim_cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream st);
CUresult sim_cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream st);
CUresult sim_cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream st);
CUresult sim_cuMemsetD2D32Async(CUdeviceptr d, size_t pitch, unsigned v, size_t w, size_t h, CUstream st);
CUresult sim_cuLaunchHostFunc(CUstream st, CUhostFn fn, void *user);
/* driver_ext.h's host_wait (sim_stream.c). */
void sim_host_wait(int (*ready)(void *user), void *user, int ms);

/* sim_module.c */
CUresult sim_cuModuleLoadData(CUmodule *m, const void *image);
CUresult sim_cuModuleUnload(CUmodule m);
CUresult sim_cuModuleGetFunction(CUfunction *pf, CUmodule m, const char *name);
CUresult sim_cuModuleGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUmodule m, const char *name); /* sim_modvars.c */
CUresult sim_cuFuncGetAttribute(int *pi, CUfunction_attribute a, CUfunction f);
CUresult sim_cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size);
CUresult sim_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                            unsigned bz, unsigned shared, CUstream st, void **params, void **extra);

/* sim_graph.c */
CUresult sim_cuStreamBeginCapture(CUstream st, CUstreamCaptureMode mode);
CUresult sim_cuStreamEndCapture(CUstream st, CUgraph *out);
CUresult sim_cuStreamIsCapturing(CUstream st, CUstreamCaptureStatus *status);
CUresult sim_cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *n);
CUresult sim_cuGraphInstantiateWithFlags(CUgraphExec *out, CUgraph g, unsigned long long flags);
CUresult sim_cuGraphUpload(CUgraphExec x, CUstream st);
CUresult sim_cuGraphLaunch(CUgraphExec x, CUstream st);
CUresult sim_cuGraphExecUpdate(CUgraphExec x, CUgraph g, CUgraphExecUpdateResultInfo *info);
CUresult sim_cuGraphExecDestroy(CUgraphExec x);
CUresult sim_cuGraphDestroy(CUgraph g);

#endif
