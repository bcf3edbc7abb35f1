/*
 * dl_search.h -- what the loaders of the libraries loaded at run time share:
 * opening one and binding its symbols with a reason when that fails (NVRTC,
 * cuBLAS, NCCL), and the search (cuBLAS, NCCL): the path in an environment
 * variable alone when it is set, else each of a list of paths in turn, each
 * tried by the library's own loader.
 */
#ifndef GPULUA_DRIVER_DL_SEARCH_H
#define GPULUA_DRIVER_DL_SEARCH_H

#include <stddef.h>

/* dlopen(path) for a table's loader: the handle, or NULL with dlerror()'s
 * words in why (len bytes). */
void *gld_dl_open(const char *path, char *why, size_t len);

/* dlsym(h, name) for a table's loader: the symbol, or NULL having put
 * "<path> lacks <name>" in why and closed h. */
void *gld_dl_need(void *h, const char *path, const char *name, char *why, size_t len);

/* Load the library at path into its table: 1, or 0 with the reason in why. */
typedef int (*gld_dl_try)(const char *path, char *why, size_t len);

/* NULL when a path loaded; else out holds "<what> could not be loaded: ..."
 * naming $env_name and why (when it is set), or `tried` (the paths in
 * words) and the first path's reason, and is returned. */
const char *gld_dl_search(const char *what, const char *env_name, const char *const *paths, size_t npaths,
                         const char *tried, gld_dl_try try_load, char *out, size_t outlen);

#endif
