/*
 * core.h -- the C objects behind gpulua's Lua userdata, and the helpers the
 * binding files share. Backend-agnostic: everything goes through gl_drv.
 *
 * Ownership: C structs that other structs point at (streams, allocations,
 * host memory) are reference counted; a Lua userdata holds one reference.
 * That keeps a view's allocation alive and lets a closed stream's final event
 * order later frees.
 */
#ifndef GPULUA_CORE_H
#define GPULUA_CORE_H

#include <lauxlib.h>
#include <lua.h>
#include <stddef.h>
#include <stdint.h>

#include "driver.h"
#include "dtype.h"

#define GL_WHERE_MAX 160

/* metatable names (registered once, in the registry, under the name and
 * under the name's address: gl_testudata finds them without hashing) */
extern const char gl_device_mt[], gl_stream_mt[], gl_event_mt[], gl_slice_mt[], gl_host_mt[], gl_module_mt[],
    gl_kernel_mt[];
#define GL_DEVICE_MT gl_device_mt
#define GL_STREAM_MT gl_stream_mt
#define GL_EVENT_MT gl_event_mt
#define GL_SLICE_MT gl_slice_mt
#define GL_HOST_MT gl_host_mt
#define GL_MODULE_MT gl_module_mt
#define GL_KERNEL_MT gl_kernel_mt

/* luaL_newmetatable, luaL_testudata, luaL_checkudata and luaL_setmetatable
 * for these names, by the metatable's identity */
int gl_newmetatable(lua_State *L, const char *tname);
void *gl_testudata(lua_State *L, int idx, const char *tname);
void *gl_checkudata(lua_State *L, int idx, const char *tname);
void gl_setmetatable(lua_State *L, const char *tname);
/* A closeable handle (like liolib's files) has one release function for its
 * method (s:close(), x:free(), h:free()), __close and __gc; its upvalue says
 * which called it. gl_set_release installs it under `method` in the methods
 * table on top of the stack and as __gc and __close of the metatable below. */
enum { GL_RELEASE_GC = 0, GL_RELEASE_METHOD = 1, GL_RELEASE_CLOSE = 2 };
void gl_set_release(lua_State *L, lua_CFunction release, const char *method);
#define gl_release_mode(L) ((int)lua_tointeger((L), lua_upvalueindex(1)))
#define GL_RUNTIME_KEY "gpulua.runtime"

typedef enum { GL_POLICY_STRICT, GL_POLICY_AUTO, GL_POLICY_OFF } gl_policy;

extern gl_driver gl_drv;          /* the backend's table, filled once per process */
extern const char *gl_backend_name; /* "cuda" or "sim" once chosen */
extern int gl_is_sim;               /* the backend is sim */
extern int gl_host_kernel_depth;    /* > 0 while a sim host kernel (k:host) runs on the Lua thread */

typedef struct gl_runtime gl_runtime;
typedef struct gl_stream gl_stream;

/* One stream's last read and last write of one byte range (checker.c). */
typedef struct gl_access {
  gl_stream *s;          /* a reference */
  uint64_t lo, hi;       /* bytes [lo, hi) of the memory */
  uint64_t wseq, rseq;   /* positions of the last write / read (0: none) */
  int wloc, rloc;        /* interned script locations */
} gl_access;

typedef struct gl_accesses {
  gl_access *v;
  int n, cap;
} gl_accesses;

typedef struct gl_device {
  gl_runtime *rt;
  int ordinal;
  int opened;
  CUdevice cu;
  CUcontext ctx;
  char name[256];
  size_t memory;
  int cc_major, cc_minor, sms;
  int max_threads_per_block, max_block[3], max_grid[3];
  int max_shared, max_shared_optin;
  int prio_least, prio_greatest;
  int stream_counter;
  gl_stream *main;
  gl_stream *streams;   /* open streams, main included */
  char poison[1024];    /* non-empty once a fault poisoned the device */
  CUevent *event_pool[2]; /* events of collected Event objects, [timing] */
  int npool[2], cappool[2];
} gl_device;

struct gl_stream {
  int refs;
  gl_device *dev;
  CUstream cu;          /* NULL once closed */
  int is_main;
  char name[64];
  uint64_t seq;         /* operations queued so far */
  uint64_t done_seq;    /* operations known to have finished */
  CUevent tail_ev;      /* reused to order other streams after this one */
  CUevent final_ev;     /* recorded when the stream is closed */
  uint64_t last_launch_seq; /* the last kernel launch (0: none), for fault messages: */
  int last_kernel, last_launch_loc; /* its kernel's name and script location (interned; -1: not recorded) */
  char closed_at[GL_WHERE_MAX];
  gl_stream *next_open, **prev_open;
  int id;               /* runtime-wide, for vector clocks */
  uint64_t *clock;      /* clock[t]: position of stream t this one is ordered after */
  int nclock;
};

struct gl_runtime {
  int ndev;
  gl_device *devs;
  gl_policy policy;
  int dead;             /* torn down: finalizers that run later do nothing */
  int devices_ref;      /* registry ref: table ordinal -> device userdata */
  gl_stream **by_id;    /* streams by id (NULL: free id) */
  uint32_t *gen;        /* gen[id]: bumped each time the id is freed */
  int nids, capids;
  unsigned char *peer;  /* peer[b * ndev + a]: kernels on b may use memory of a */
};

typedef struct gl_alloc {
  int refs;             /* handles that point here, released ones included */
  int live;             /* handles not yet freed: the memory goes at zero */
  gl_device *dev;
  CUdeviceptr ptr;
  size_t bytes;
  gl_stream *home;      /* the stream it was allocated on */
  int freed;
  char freed_at[GL_WHERE_MAX];
  gl_accesses acc;      /* recorded accesses, for the checker and for frees */
} gl_alloc;

typedef struct gl_slice { /* userdata */
  gl_alloc *a;
  size_t offset;        /* elements from the start of the allocation */
  size_t count;
  gl_dtype dtype;
  int is_view;
  int released;         /* this handle was freed or closed */
  char released_at[GL_WHERE_MAX];
} gl_slice;

typedef struct gl_hostmem {
  int refs;             /* handles, plus one while on the deferred-free list; a borrowed view's: the borrow list */
  void *ptr;            /* NULL once a borrowed view has expired or the memory is released */
  size_t bytes;
  int pinned;
  int mapped;           /* pageable memory from mmap (large buffers): munmap it */
  int borrowed;         /* a view of (sim) device memory: not ours to free */
  int freed;            /* h:free() on the buffer that allocated it */
  int freed_at;         /* where (a checker location) */
  struct gl_hostmem *next_borrow;
  struct gl_hostbuf *borrower; /* a borrowed view's handle (not a reference), NULL once it is collected */
  gl_accesses acc;      /* copies that read or write it */
} gl_hostmem;

typedef struct gl_hostbuf { /* userdata */
  gl_hostmem *m;        /* NULL once released (free, close or collected) */
  size_t offset, count;
  gl_dtype dtype;
  int is_view;
  int released;         /* by h:free() or <close>, at released_at (a checker location) */
  int expired;          /* a host kernel's view after the call */
  int released_at;
} gl_hostbuf;

typedef struct gl_event { /* userdata */
  CUevent ev;
  gl_stream *s;         /* where it was recorded (reference) */
  uint64_t seq;         /* s's position it marks */
  int timing;
  uint64_t *snap;       /* s's vector clock at the record, s's own position included */
  uint32_t *snap_gen;   /* the generation of each id then: a reused id is not the same stream */
  int nsnap;
} gl_event;

/* ---- errors.c -------------------------------------------------------- */
/* "file:line" of the Lua code that called the running C function. */
void gl_where(lua_State *L, char *buf, size_t len);
/* Raise "<call> failed: NAME: string" when r is not CUDA_SUCCESS; a sticky
 * fault poisons `dev` (may be NULL). */
void gl_check(lua_State *L, gl_device *dev, CUresult r, const char *call);
#define GL_CALL(L, dev, fn, ...) gl_check((L), (dev), gl_drv.fn(__VA_ARGS__), #fn)
const char *gl_error_name(CUresult r);
/* What the value at idx is, for messages: "number 5", a gpulua object's
 * type name ("gpulua.Slice"), else the Lua type name. */
const char *gl_given(lua_State *L, int idx);
/* The (offset, count) arguments 2 and 3 of a view of `total` elements:
 * 0 <= offset <= total, count defaults to the rest and must fit. `what`
 * names the viewed object in messages ("slice", "buffer"). */
void gl_check_view(lua_State *L, size_t total, const char *what, size_t *off, size_t *cnt);
/* Raise the device's poison message if it has one. */
void gl_check_poison(lua_State *L, gl_device *dev);
int gl_push_error(lua_State *L, CUresult r, const char *call);

/* ---- backend.c ------------------------------------------------------- */
void gl_choose_backend(lua_State *L);
int gl_policy_parse(const char *v);      /* -1 when not a policy */
int gl_initial_policy(lua_State *L);
const char *gl_trace_option(void);
int gl_timeline_option(void);

/* ---- runtime.c ------------------------------------------------------- */
gl_runtime *gl_rt(lua_State *L);
void gl_set_ctx(gl_device *dev);                 /* make dev's context current */
gl_device *gl_device_open(lua_State *L, int ordinal); /* lazily initialised */
/* gpu.peer(a, b) was granted: work on b may use memory of a */
int gl_peer_granted(gl_runtime *rt, gl_device *a, gl_device *b);
void gl_push_device(lua_State *L, gl_device *dev);

/* ---- l_device.c ------------------------------------------------------ */
void gl_open_device(lua_State *L);
gl_device *gl_check_device(lua_State *L, int idx);

/* ---- l_stream.c ------------------------------------------------------ */
void gl_open_stream(lua_State *L);
gl_stream *gl_stream_new(lua_State *L, gl_device *dev, const char *name, int priority, int is_main);
void gl_push_stream(lua_State *L, gl_stream *s);  /* new userdata holding a reference */
gl_stream *gl_check_stream(lua_State *L, int idx); /* open stream of a healthy device */
gl_stream *gl_opt_stream(lua_State *L, int opts_idx, gl_device *dev); /* opts.stream or dev.main */
void gl_stream_ref(gl_stream *s);
void gl_stream_unref(gl_stream *s);
void gl_stream_close(lua_State *L, gl_stream *s, const char *where); /* L may be NULL */
/* Make `waiter` wait for all work queued on `s` so far (s open or closed). */
CUresult gl_stream_order_after(gl_stream *waiter, gl_stream *s);
/* The host has seen all work queued on s finish. */
void gl_stream_mark_synced(gl_stream *s);
const char *gl_stream_name(gl_stream *s);

/* ---- l_event.c ------------------------------------------------------- */
void gl_open_event(lua_State *L);
void gl_event_new(lua_State *L, gl_stream *s, int timing); /* pushes the event */
/* The device's pool of CUDA events, [timing]: take one (created when the
 * pool is empty), give it back when done. */
CUresult gl_event_take(gl_device *d, int timing, CUevent *ev);
void gl_event_give(gl_device *d, CUevent ev, int timing);
void gl_event_pool_clear(gl_device *d);

/* ---- l_slice.c ------------------------------------------------------- */
void gl_open_slice(lua_State *L);
gl_slice *gl_test_slice(lua_State *L, int idx);
gl_slice *gl_check_slice(lua_State *L, int idx); /* alive */
void gl_slice_check_alive(lua_State *L, gl_slice *x, int arg);
void gl_slice_describe(gl_slice *x, char *buf, size_t len);
CUdeviceptr gl_slice_ptr(gl_slice *x);
size_t gl_slice_bytes(gl_slice *x);

/* ---- l_hostbuf.c ----------------------------------------------------- */
void gl_open_hostbuf(lua_State *L);
gl_hostbuf *gl_test_hostbuf(lua_State *L, int idx);
gl_hostbuf *gl_check_hostbuf(lua_State *L, int idx);
gl_hostbuf *gl_hostbuf_new(lua_State *L, gl_dtype dt, size_t count, int pinned);
void *gl_hostbuf_ptr(gl_hostbuf *h);
size_t gl_hostbuf_bytes(gl_hostbuf *h);
gl_accesses *gl_hostbuf_accesses(gl_hostbuf *h);
/* Free host memory released while copies were queued on it: what has
 * finished, or (wait) everything, waiting for it. */
void gl_hostbuf_reap(int wait);
uint64_t gl_hostbuf_offset_bytes(gl_hostbuf *h);
void gl_hostbuf_describe(gl_hostbuf *h, char *buf, size_t len);

/* Host views of device memory for sim host kernels: valid only until
 * gl_hostbuf_end_borrows. */
void gl_hostbuf_borrow(lua_State *L, gl_dtype dt, void *ptr, size_t count);
void gl_hostbuf_end_borrows(lua_State *L);

/* ---- l_kernel.c ------------------------------------------------------ */
void gl_open_kernel(lua_State *L);
void gl_kernel_functions(lua_State *L); /* compile, load, kernels into the table on top */
int gl_stream_launch(lua_State *L);    /* s:launch(k, cfg, ...) */
const char *gl_host_kernel_error(void); /* the last sim host kernel's error, or "" */

/* ---- l_copy.c -------------------------------------------------------- */
int gl_stream_copy(lua_State *L);  /* s:copy(dst, src) */
int gl_stream_fill(lua_State *L);  /* s:fill(x, value) */

#endif
