/*
 * dl_search.h -- the search every library loaded at run time shares (cuBLAS,
 * NCCL): the path in an environment variable alone when it is set, else each
 * of a list of paths in turn, each tried by the library's own loader.
 */
#ifndef GPULUA_DRIVER_DL_SEARCH_H
#define GPULUA_DRIVER_DL_SEARCH_H

#include <stddef.h>

/* Load the library at path into its table: 1, or 0 with the reason in why. */
typedef int (*gl_dl_try)(const char *path, char *why, size_t len);

/* NULL when a path loaded; else out holds "<what> could not be loaded: ..."
 * naming $env_name and why (when it is set), or `tried` (the paths in
 * words) and the first path's reason, and is returned. */
const char *gl_dl_search(const char *what, const char *env_name, const char *const *paths, size_t npaths,
                         const char *tried, gl_dl_try try_load, char *out, size_t outlen);

#endif
