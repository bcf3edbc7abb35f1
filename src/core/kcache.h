/*
 * kcache.h -- the on-disk cache of compiled kernels (see kcache.c).
 */
#ifndef GPULUA_KCACHE_H
#define GPULUA_KCACHE_H

#include <stddef.h>

typedef struct {
  unsigned char b[16];
} gl_kcache_key;

enum { GL_KCACHE_CUBIN = 1, GL_KCACHE_PTX = 2 };

/* The folder: GPULUA_CACHE_DIR, else $XDG_CACHE_HOME/gpulua, else ~/.cache/gpulua,
 * else /tmp/gpulua-cache-UID. It is used only when it is the user's and writable
 * by no one else (kcache.c). */
const char *gl_kcache_dir(void);

gl_kcache_key gl_kcache_make_key(const char *source, size_t source_len, const char *const *opts, int nopts,
                                 const char *arch, const char *compiler_version, int kind);

/* A malloc'd copy of the entry's payload, or NULL on a miss (a corrupt entry
 * is removed and counts as a miss). */
void *gl_kcache_get(const gl_kcache_key *k, size_t *len, int *kind);

/* Store an entry atomically; failures only warn (once). */
void gl_kcache_put(const gl_kcache_key *k, const void *data, size_t len, int kind);

/* Validate an entry file's bytes (exposed for tests and the fuzzer). 0 when
 * valid; then *payload points into `file`. `k` may be NULL to skip the key. */
int gl_kcache_parse(const void *file, size_t file_len, const gl_kcache_key *k, const void **payload,
                    size_t *len, int *kind);

#endif
