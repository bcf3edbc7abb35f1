/*
 * gpulua.h -- the public C interface of the gpulua library.
 *
 * The library is linked into the `gpulua` host and into the Lua C module
 * `gpulua.so`; both call luaopen_gpulua.
 */
#ifndef GPULUA_H
#define GPULUA_H

#include <stddef.h>

#include <lua.h>

#define GPULUA_VERSION "0.1.0"

/* Open the module: returns the `gpu` table (one per Lua state; a second call
 * returns the same table). Raises a Lua error when the backend asked for
 * cannot be used. */
int luaopen_gpulua(lua_State *L);

/* Options the host sets from its command line before luaopen_gpulua.
 * name: "backend" ("cuda" | "sim"), "policy" ("strict" | "auto" | "off"),
 *       "trace" (a file name), "timeline" ("0" none, "1" the text timeline
 *       on stderr at exit, any other value the file the SVG timeline is
 *       written to at exit).
 * A command-line option wins over the environment variable of the same
 * meaning (GPULUA_BACKEND, GPULUA_POLICY, GPULUA_TRACE, GPULUA_TIMELINE).
 * Returns 0 when accepted, -1 when the name or value is not valid. */
int gpulua_set_option(const char *name, const char *value);

/* The backend luaopen_gpulua would choose, from the options set so far and
 * the environment, without choosing it: "cuda" or "sim", with why in `why`
 * (the option or variable naming it, the number of CUDA devices, or why
 * there is no usable CUDA device); NULL when that choice would fail, with
 * the reason. Unless sim is named, the CUDA driver is loaded and asked for
 * its devices; nothing else starts. */
const char *gpulua_backend_probe(char *why, size_t whylen);

/* Start recording the GPU work of the gpulua opened in L, for gpu.timeline()
 * (no file, nothing written at exit), unless something records already
 * (--trace, --timeline, gpu.trace). The REPL calls it at its start.
 * 0, or -1 with the error message pushed on L. */
int gpulua_record(lua_State *L);

/* For completion in an interactive loop: when the value at idx is a gpulua
 * object (a device, a stream, a slice, ...), pushes a table from the name of
 * each of its fields and methods to "field" or "method" and returns 1; else
 * pushes nothing and returns 0. Runs no Lua code. */
int gpulua_object_names(lua_State *L, int idx);

/* For an interrupt (SIGINT) handler, and safe in one: sets the hook f (with
 * mask and count, as lua_sethook) on the Lua thread that runs a sim host
 * kernel (k:host) now, if one does. A host kernel runs on a thread of its own
 * while the script waits for its stream, so the hook lua.c's handler sets
 * on the main state would only act once the kernel returned. A hook that
 * raises makes the kernel fail as a faulting kernel does: the launch fails
 * and its device is poisoned. */
void gpulua_sethook_host_kernel(lua_Hook f, int mask, int count);

#endif
