/*
 * runtime.h -- one runtime per Lua state (or per C user of the core): the
 * devices, the policy, the stream ids of the vector clocks, the interned
 * locations, the trace, the objects waiting to be released, the last
 * error. Everything the core keeps lives here, never in process globals, so
 * two runtimes in one process are independent. (Process-wide by nature: the
 * driver table and the chosen backend, driver.h; the options the host sets
 * before any runtime exists, options.h; the list of live runtimes that exit()
 * tears down.)
 *
 * Ownership: the runtime owns its devices; a device owns its open streams,
 * its event pool and its built-in kernels; streams, allocations, host memory
 * and modules are reference counted (see each header); teardown drains every
 * device and releases what is left.
 */
#ifndef GPULUA_CORE_RUNTIME_H
#define GPULUA_CORE_RUNTIME_H

#include <stdatomic.h>

#include "error.h"
#include "names.h"
#include "site.h"
#include "types.h"

struct gl_runtime {
  int ndev;
  gl_device *devs;
  gl_policy policy;
  int dead;              /* torn down: later releases only free memory */
  int abandoned;         /* torn down inside a sim host kernel: left as it was (runtime.c) */
  gl_stream **by_id;     /* streams by clock id (NULL: free id), clock.c */
  uint32_t *gen;         /* gen[id]: bumped each time the id is freed */
  int nids, capids;
  unsigned char *peer;   /* peer[b * ndev + a]: kernels on b may use memory of a */
  gl_locations locs;
  gl_error err;
  gl_names names;        /* the calls that messages refer to (names.h) */
  gl_trace *trace;       /* NULL unless tracing */
  struct gl_retiree *retired; /* released once their fences pass (retire.h) */
  gl_hostmem *borrows;   /* host views of device memory lent to a sim host kernel */
  struct gl_graph *capture;    /* the graph being captured (graph.h), or NULL */
  unsigned captures;           /* captures begun so far: each one's id */
  struct gl_graph *graphs;     /* graphs not yet closed (graph.c) */
  struct gl_comm *comms;       /* live NCCL communicators (comm.c) */
  struct gl_afters *after;     /* points on streams the host hears of (after.h), from the first */
  size_t pinned_held;    /* bytes of pinned host memory held */
  uint64_t configs;      /* gpu.config objects made so far: each one's id */
  gl_buf host_kernel_error; /* the last sim host kernel's error, until a fault of its device takes it */
  int host_kernel_error_dev; /* ... that device's ordinal */
  gl_runtime *next_live; /* the process's list of live runtimes (for exit) */
};

/* A runtime on the chosen backend (options.h: gl_backend_choose first),
 * with its policy from the options and gl_names_c as its vocabulary. NULL
 * with the reason in why. */
gl_runtime *gl_runtime_new(gl_buf *why);
/* Drain every device, destroy what is left, release the contexts. Also run
 * at exit() for runtimes still live (os.exit without closing the state).
 * Inside a sim host kernel (the process exits from inside one) nothing can
 * be drained: the runtime is only marked dead and kept, unfreed, until the
 * process ends. Idempotent. */
void gl_runtime_teardown(gl_runtime *rt);
/* Teardown, then free the runtime. */
void gl_runtime_free(gl_runtime *rt);

/* Sim host kernels running now, of any runtime: on the calling thread, and
 * in the whole process (a cheap first test). A host kernel holds its
 * stream, and so its device, until it returns: from inside it no runtime
 * of the process may wait for device work, nor queue, allocate or release
 * (l_hostkernel.c refuses every gpulua call there). Process-wide by nature,
 * like the list of live runtimes. */
extern _Atomic int gl_host_kernels_anywhere;
extern _Thread_local int gl_host_kernels_here;
void gl_host_kernel_enter(void);
void gl_host_kernel_leave(void);
/* Does the calling thread run a sim host kernel now? */
static inline int gl_in_host_kernel(void) {
  return atomic_load_explicit(&gl_host_kernels_anywhere, memory_order_relaxed) > 0 && gl_host_kernels_here > 0;
}

/* Is gpu.peer(a, b) granted: may work on b use memory of a? */
int gl_peer_granted(const gl_runtime *rt, const gl_device *a, const gl_device *b);

#endif
