/*
 * module.h -- loaded modules and their kernels, and each device's built-in
 * kernels (builtins.h: the library's table).
 *
 * Ownership: a module is reference counted by its handle (a Lua userdata)
 * and its kernels. At the last reference it is unloaded once every launch of
 * its kernels is known to have finished: a finalizer never waits, so a
 * module whose launches are still queued goes on the runtime's retire list
 * (retire.h), and once the accesses recorded on its variables' memory have
 * finished (each slice of a variable holds a reference). A kernel is reference
 * counted by its handle; a device owns its built-in kernels and their
 * module, released with the device.
 */
#ifndef GPULUA_CORE_MODULE_H
#define GPULUA_CORE_MODULE_H

#include "builtins.h"
#include "checker.h"
#include "driver.h"
#include "dtype.h"
#include "retire.h"
#include "signature.h"
#include "types.h"

#define GL_KERNEL_NAME_MAX 127

struct gl_module {
  int refs;
  gl_device *dev;
  CUmodule mod;
  char *name;           /* the source's name or path */
  int permanent;        /* a device's built-ins: released with the device */
  gl_accesses uses;     /* the streams and positions of its launches (queue.c) */
  gl_retiree retire;    /* on the runtime's retire list */
  gl_alloc *vars;       /* its variables that m:global reached (memory.h), freed with it */
  int binary;           /* a CUBIN or fatbin, whose code a backend that reads PTX alone cannot run */
  char *consts;         /* its image's __constant__ variables, each name ended by '\0', then "" (NULL: not known) */
};

struct gl_kernel {
  int refs;
  gl_module *m;          /* a reference */
  gl_device *dev;
  CUfunction f;
  char name[GL_KERNEL_NAME_MAX + 1];
  int name_id;           /* name, interned (for fault messages) */
  int max_threads;       /* per block for this function (registers, __launch_bounds__); 0: unknown */
  int regs;              /* registers per thread; 0: unknown */
  uint64_t cfg_ok;       /* the id of the last prepared configuration that passed its limits (launch.c) */
  gl_signature sig;
  const gl_builtin *builtin; /* a variant of a built-in, or NULL */
  int nhidden;           /* parameters after the signature's, which gpulua passes (a reduction's scratch) */
  /* the launch's parameter buffer (one slot per parameter, plus one for a
   * sim host kernel's record): written at each launch, copied by the driver */
  unsigned char argbuf[(GL_MAX_PARAMS + 1) * 8];
  void *params[GL_MAX_PARAMS + 1];
};

/* Load an image (CUBIN, fatbin, or PTX with a NUL) on dev. `what` and
 * `name` name it in messages ("gpu.load", the path). */
int gl_module_load(gl_device *dev, const void *image, size_t len, const char *what, const char *name,
                   gl_module **out);
/* The names of the variables an image (PTX text, or CUBIN) holds in constant
 * memory, each ended by '\0', then ""; NULL where not known (a fatbin, an
 * image this reader does not follow) or out of memory (module_consts.c). */
char *gl_module_const_names(const void *image, size_t len);
void gl_module_ref(gl_module *m);
void gl_module_unref(gl_module *m);
/* m:kernel(name, signature): the kernel, checked against the driver's
 * parameter info where it offers it. `call`: the call's name as the caller
 * wrote it ("m:kernel"), which the errors begin with. */
int gl_kernel_new(gl_module *m, const char *name, const gl_signature *sig, gl_kernel **out, const char *call,
                  gl_site *site);
void gl_kernel_unref(gl_kernel *k);
/* m:global(name, dtype): x (zeroed) becomes a slice of dtype over the whole
 * of m's variable `name` (a __device__ or __constant__ variable: the
 * driver's cuModuleGetGlobal). Its memory is the module's (memory.h); two
 * slices of one variable share its records. Errors begin with `call`: no
 * such variable, a size that is not a whole number of the dtype's elements. */
int gl_module_global(gl_module *m, const char *name, gl_dtype dt, const char *call, gl_site *site, gl_slice *x);

/* The built-in `b` for dtype dt on dev (compiled and loaded at first use,
 * then cached on the device). Its errors are named as the runtime's
 * built-in kernels (rt->names.builtins, names.h). */
int gl_builtin_kernel(gl_device *dev, const gl_builtin *b, gl_dtype dt, gl_kernel **out);
/* `b`'s signature with T spelled as dt. */
int gl_builtin_signature(gl_runtime *rt, const gl_builtin *b, gl_dtype dt, gl_signature *sig);
void gl_builtins_release(gl_device *dev);

#endif
