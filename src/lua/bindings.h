/*
 * bindings.h -- what the Lua bindings (src/lua) share: the registration of
 * object types (the types and their functions: surface.h), checking and
 * pushing each type, the options reader, script locations, and raising the
 * core's errors.
 *
 * The bindings are thin: each reads its Lua arguments at the edge (with the
 * argument's number and the function's name in the message), calls the core
 * (src/core, which knows nothing of Lua) and raises its error at the
 * script line that made the call. Every misuse raises; none returns nil and
 * an error.
 *
 * Ownership: each userdata holds the core object it stands for (a slice, a
 * host buffer, an event: in the userdata's memory) or one reference to it (a
 * stream, a module, a kernel, the runtime). Closeable handles (streams,
 * slices, host buffers) have one release function behind their method,
 * __close and __gc (gll_type.release); a finalizer never raises and never
 * blocks.
 */
#ifndef GPULUA_LUA_BINDINGS_H
#define GPULUA_LUA_BINDINGS_H

#include <lauxlib.h>
#include <lua.h>
#include <stdint.h>
#include <string.h>

#include "after.h"
#include "device.h"
#include "dtype.h"
#include "error.h"
#include "event.h"
#include "hostmem.h"
#include "memory.h"
#include "module.h"
#include "runtime.h"
#include "site.h"
#include "stream.h"
#include "surface.h"

/* ---- types (l_types.c) ------------------------------------------------- */

/* Inside a type's `field` function: the names of its methods, sorted, as a
 * string pushed onto the stack ("fill, free, read_from, totable, ..."), for messages. */
const char *gll_push_methods(lua_State *L);
/* The names of t's fields (gll_type.fields), in order, as a string pushed
 * onto the stack ("dtype, bytes, pinned"; "none"), for messages. */
const char *gll_push_fields(lua_State *L, const gll_type *t);
/* Make the metatables of the GL_NTYPES types (surface.h's gll_types) and
 * fill them; in a state that has them, publish the methods again
 * (package.loaded). */
void gll_register_all(lua_State *L, const gll_type *const *types);
/* In a finalizer (the object at 1) of a runtime with a capture running: the
 * object is kept until the capture ends, returns 1 (the finalizer then does
 * nothing); else 0. gll_release_deferred, after a capture's end, runs the
 * kept objects' finalizers; the stack is left as it was (l_types.c). */
int gll_gc_defer(lua_State *L, const gl_runtime *rt);
void gll_release_deferred(lua_State *L);
/* lua_newuserdatauv + luaL_setmetatable for an object of type t (for an
 * own_methods type, a metatable of its own, a copy of the type's): the block
 * starts with a tag word naming t (and this block), the object follows it;
 * returns the object, zeroed. gll_testudata and gll_checkudata (luaL_testudata,
 * luaL_checkudata) check that tag: a launch checks each argument's type
 * with two API calls and a compare, and no other userdata passes (the tag
 * mixes the block's address and a per-process random key). */
void *gll_newudata(lua_State *L, size_t size, int nuvalue, const gll_type *t);
void *gll_checkudata(lua_State *L, int idx, const gll_type *t);
/* The tag: one maximally aligned unit before the object, holding the block's
 * address ^ the type's ^ a key drawn once per process (l_types.c). */
#define GL_TAG_SIZE sizeof(union { uintptr_t tag; LUAI_MAXALIGN; })
extern uintptr_t gll_tag_key;
static inline void *gll_testudata(lua_State *L, int idx, const gll_type *t) {
  unsigned char *block = lua_touserdata(L, idx);
  if (!block || lua_rawlen(L, idx) < GL_TAG_SIZE) return NULL; /* a light userdata's length is 0 */
  uintptr_t tag;
  memcpy(&tag, block, sizeof tag);
  return tag == ((uintptr_t)block ^ (uintptr_t)t ^ gll_tag_key) ? block + GL_TAG_SIZE : NULL;
}
/* ---- releases (l_release.c) --------------------------------------------- */

/* How a handle is released: its finalizer ran (__gc: never raises, an error
 * is kept on the device, device.h), its method was called (x:free(),
 * s:close(): misuse is an error), or a <close> variable went out of scope
 * (like the method, but quiet after a release). */
typedef enum { GL_RELEASE_GC, GL_RELEASE_METHOD, GL_RELEASE_CLOSE } gll_release_how;
/* In a type's release function (gll_type.release): which of its three uses called it. */
#define gll_release_how(L) ((gll_release_how)lua_tointeger((L), lua_upvalueindex(1)))

/* Where a type's method and <close> may run (gll_release_ops.allowed). */
enum { GL_RELEASE_IN_CAPTURE = 1, GL_RELEASE_IN_HOST_KERNEL = 2 };

/* What a type's release needs of the type; the checks common to every type
 * are gll_release's. */
typedef struct gll_release_ops {
  const gll_type *type;
  const char *call;       /* the method, in messages: "x:free" */
  const char *collected;  /* the method after the finalizer: "the slice is freed already" */
  const char *block;      /* a <close> variable's release, refused in a capture: "freeing a slice (<close>)" */
  int allowed;            /* GL_RELEASE_IN_*: where the method and <close> are not refused */
  gl_runtime *(*held)(void *o);            /* the runtime of what o holds; NULL: nothing (collected) */
  int (*released)(lua_State *L, void *o);  /* released by its method or a <close>: pushes what to say
                                              ("stream 'a' of device 0 is already closed (at ...)"), 1;
                                              also asked when o holds nothing */
  int (*close)(lua_State *L, void *o, int block); /* the method's or (block) a <close>'s release: may raise */
  void (*collect)(lua_State *L, void *o);  /* the finalizer's: never raises, never blocks */
} gll_release_ops;

/* The one prologue of every type's __gc, __close and method (x:free(),
 * s:close(), ...). The finalizer: nothing when o holds nothing; kept until
 * a running capture ends (gll_gc_defer); else the type's collect. The method
 * and <close>: a released handle (by the method, a <close> or the
 * finalizer) is an error for the method naming the object and where it was
 * released, and nothing for a <close>; then the refusals inside a host
 * kernel and a capture; then the type's close. */
int gll_release(lua_State *L, const gll_release_ops *t, gll_release_how how);

/* ---- arguments and errors (l_args.c) ------------------------------------ */

/* Inside a sim host kernel only its own argument views may be touched: any
 * other gpulua call raises (in the host kernel, which then fails like a
 * faulting kernel), naming the call: prefix ("dev:", "gpu.") and the called
 * function's name. The rule holds for every runtime of the process (another
 * Lua state's gpulua called from inside the kernel), since the kernel holds
 * its device until it returns (gl_in_host_kernel, runtime.h). */
#define GL_NOT_IN_HOST_KERNEL(L, prefix)                                     \
  do {                                                                       \
    if (gl_in_host_kernel()) gll_refuse_in_host_kernel((L), (prefix), NULL); \
  } while (0)
int gll_refuse_in_host_kernel(lua_State *L, const char *prefix, const char *what);

/* The calling script's location, for the core (site.h). */
int gll_lua_loc(gl_runtime *rt, void *L);
/* The same from stack level `first` up (1: the caller of the running C
 * function, as luaL_where counts): for gpulua's own Lua modules, whose
 * calls are located at their caller's line (l_internal.c). */
int gll_lua_loc_from(gl_runtime *rt, lua_State *L, int first);
#define GL_SITE(L) {gll_lua_loc, (L), GL_LOC_UNRESOLVED}
/* Raise the runtime's error at the calling script line. */
int gll_raise(lua_State *L, gl_runtime *rt);
void gll_push_error(lua_State *L, gl_runtime *rt); /* gll_raise's message, pushed */
void gll_push_error_at(lua_State *L, gl_runtime *rt, int level); /* ... positioned at stack level `level` */
/* During a capture (graph.h) a call that cannot be captured (a host wait,
 * an allocation, a free, a close) raises, naming itself and the graph. */
#define GL_NOT_IN_CAPTURE(L, rt, call)                                   \
  do {                                                                   \
    if ((rt)->capture) gll_refuse_in_capture((L), (rt), (call));          \
  } while (0)
int gll_refuse_in_capture(lua_State *L, gl_runtime *rt, const char *call);
/* Check the options table at idx (none or nil: none; returns 0 then, else
 * 1): every key must be one of `keys` (NULL-terminated); an unknown key is
 * an error naming it and the accepted ones. */
int gll_check_options(lua_State *L, int idx, const char *fname, const char *const keys[]);
/* The option `name` of the options table at idx (none, nil or no name:
 * NULL): a string of 1 to max characters, else an error (prefixed by
 * "fname: " when fname is given). The string stays the table's. */
const char *gll_opt_name(lua_State *L, int idx, const char *fname, int max);
/* What the value at idx is, for "got X": "number 5", a gpulua object's type
 * name ("gpulua.Slice"), else the Lua type name. */
const char *gll_given(lua_State *L, int idx);
/* The (offset, count) arguments 2 and 3 of a view of `total` elements:
 * 0 <= offset <= total, count defaults to the rest and must fit. `what`
 * names the viewed object ("slice", "buffer"). */
void gll_check_view(lua_State *L, size_t total, const char *what, size_t *off, size_t *cnt);

/* ---- safe points (l_after.c) -------------------------------------------- */

/* Run the s:after callbacks whose points the device reached, in the order
 * reached, and make ready the tasks whose awaits it reached; an error in a
 * callback is raised here, naming where it was queued. Nothing inside a sim
 * host kernel, during a capture, or inside a callback. */
void gll_after_run(lua_State *L);
static inline void gll_safe_point(lua_State *L) {
  if (atomic_load_explicit(&gl_after_reached_anywhere, memory_order_relaxed) > 0) gll_after_run(L);
}
/* luaL_setfuncs(L, l, 0) with each function a safe point first. */
void gll_setfuncs_safe(lua_State *L, const luaL_Reg *l);

/* ---- the runtime and the gpu table (l_gpu.c) --------------------------- */

gl_runtime *gll_rt(lua_State *L);
/* Device `ordinal`, opened at first use (errors raised). */
gl_device *gll_open_device(lua_State *L, int ordinal);
/* Whether a full garbage collection may run now (out-of-memory retries):
 * not inside a sim host kernel, nor while the script stopped the collector. */
int gll_can_collect(lua_State *L);

/* ---- per type ----------------------------------------------------------- */

/* l_comm_job.c: gpu.comm{} with options at 1, this process's rank of its
 * launcher's job; pushes comm.devices (errors raised). */
struct gl_comm *gll_comm_job_open(lua_State *L, int *local_rank);
/* opts.streams (a list, one per rank of this process, checked) into out, else
 * each rank's device's main stream (l_comm.c). */
void gll_comm_stream_list(lua_State *L, int opts, const char *what, struct gl_comm *c, struct gl_stream **out);

gl_device *gll_check_device(lua_State *L, int idx);     /* l_device.c: not shut down */
void gll_push_device(lua_State *L, gl_device *dev);     /* the one userdata per device */

gl_stream *gll_check_stream(lua_State *L, int idx);     /* l_stream.c: open, device healthy */
/* opts.stream or dev.main; an error names the call `fname` ("x:read") */
gl_stream *gll_opt_stream(lua_State *L, int opts_idx, gl_device *dev, const char *fname);
void gll_push_stream(lua_State *L, gl_stream *s);       /* a new userdata holding a reference */

static inline gl_slice *gll_test_slice(lua_State *L, int idx) { return gll_testudata(L, idx, &gll_slice_type); }
gl_slice *gll_check_slice(lua_State *L, int idx);       /* alive */
void gll_check_slice_alive(lua_State *L, gl_slice *x, int arg);

gl_hostbuf *gll_test_hostbuf(lua_State *L, int idx);
gl_hostbuf *gll_check_hostbuf(lua_State *L, int idx);   /* usable */
/* A new host buffer userdata (zero: its contents read as zeros). */
gl_hostbuf *gll_push_hostbuf(lua_State *L, gl_dtype dt, size_t count, int pinned, int zero);

/* l_internal.c: package.preload["gpulua.internal"], the C helpers of gpulua's own Lua modules */
void gll_internal_functions(lua_State *L);

/* ---- dtypes (l_dtype.c) -------------------------------------------------- */
gl_dtype gll_check_dtype(lua_State *L, int arg);        /* a dtype name, or an error listing them */
void gll_dtype_push(lua_State *L, gl_dtype dt, const void *p);
/* The Lua value at idx as one element at out: NULL, or why it does not fit. */
const char *gll_dtype_encode(lua_State *L, int idx, gl_dtype dt, void *out);

#endif
