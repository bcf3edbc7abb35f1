/*
 * kcache.c -- the on-disk cache of compiled kernels.
 *
 * Key: XXH3-128 (Debian's xxHash, inlined) over the source, the options (with
 * compile.c's -I for the toolkit's headers: their folder's path, not their
 * contents), the target architecture, the NVRTC version and the output kind. Entry file
 * <dir>/<key hex>.bin: a header (magic, format, kind, length, XXH3-128 of the
 * payload, the key) then the payload. A short, corrupt or mismatched entry is
 * treated as a miss (and replaced). Writes go to a temporary file in the same
 * folder and are renamed into place, so concurrent processes never see half
 * an entry. A cache folder that cannot be written costs speed, never an error:
 * one warning on stderr, then the cache is off for the process.
 *
 * Entries are code loaded into the user's context and their keys are
 * computable by anyone, so the cache trusts only what the user alone could
 * have written, as ssh treats its files: the folder (made 0700) and each entry
 * (written 0600) must be the user's and writable by no group or other user. A
 * folder or entry that is not is refused the same way as an unwritable one.
 */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "kcache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ENTRY_MAGIC "GLKC"
#define ENTRY_FORMAT 1u

typedef struct {
  char magic[4];
  uint32_t format;
  uint32_t kind;
  uint32_t reserved;
  uint64_t len;
  unsigned char payload_hash[16];
  unsigned char key[16];
} entry_header;

static int disabled;
static char dir[1024];

static int dir_trusted; /* the folder passed trusted() in this process */

static void warn_once(const char *what, const char *path) {
  if (disabled) return;
  disabled = 1;
  fprintf(stderr, "gpulua: warning: kernel cache disabled (%s %s: %s); kernels will be recompiled\n", what,
          path, strerror(errno));
}

static int mkdir_p(const char *path) {
  char tmp[1024];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++) {
    if (*p == '/') {
      *p = '\0';
      if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return -1;
      *p = '/';
    }
  }
  if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return -1;
  return 0;
}

/* Warns once that the cache is off because `path` (st) is `why`. */
static void refuse(const char *path, const struct stat *st, const char *why) {
  if (!disabled)
    fprintf(stderr,
            "gpulua: warning: kernel cache disabled (%s is %s: uid %ld, mode %04o; it must be yours and "
            "writable only by you); kernels will be recompiled\n",
            path, why, (long)st->st_uid, (unsigned)(st->st_mode & 07777));
  disabled = 1;
}

/* 1 when st (of `path`, a folder or an entry) is the user's and writable by
 * no one else; else refused (warned once, cache off). */
static int trusted(const struct stat *st, const char *path, int want_dir) {
  const char *why = NULL;
  if (want_dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode)) why = want_dir ? "not a folder" : "not a regular file";
  else if (st->st_uid != geteuid()) why = "owned by another user";
  else if (st->st_mode & (S_IWGRP | S_IWOTH)) why = "writable by group or others";
  if (!why) return 1;
  refuse(path, st, why);
  return 0;
}

/* The folder, checked once: 1 when it is there and trusted; 0 when it is not
 * there (a miss, no warning); -1 when refused (warned, cache off). A link is
 * followed only when it is the user's or root's. */
static int dir_ready(void) {
  if (dir_trusted) return 1;
  const char *d = gl_kcache_dir();
  struct stat st;
  if (lstat(d, &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return 0;
    warn_once("cannot open", d);
    return -1;
  }
  if (S_ISLNK(st.st_mode)) {
    if (st.st_uid != geteuid() && st.st_uid != 0) {
      refuse(d, &st, "a link owned by another user");
      return -1;
    }
    if (stat(d, &st) != 0) return 0; /* a dangling link: a miss */
  }
  if (!trusted(&st, d, 1)) return -1;
  dir_trusted = 1;
  return 1;
}

const char *gl_kcache_dir(void) {
  if (dir[0]) return dir;
  const char *e = getenv("GPULUA_CACHE_DIR");
  if (e && *e) snprintf(dir, sizeof dir, "%s", e);
  else if ((e = getenv("XDG_CACHE_HOME")) && *e) snprintf(dir, sizeof dir, "%s/gpulua", e);
  else if ((e = getenv("HOME")) && *e) snprintf(dir, sizeof dir, "%s/.cache/gpulua", e);
  else snprintf(dir, sizeof dir, "/tmp/gpulua-cache-%ld", (long)getuid());
  return dir;
}

static void hash_part(XXH3_state_t *st, const void *p, size_t n) {
  uint64_t len = n; /* length-prefixed, so parts cannot run into each other */
  XXH3_128bits_update(st, &len, sizeof len);
  if (n) XXH3_128bits_update(st, p, n);
}

gl_kcache_key gl_kcache_make_key(const char *source, size_t source_len, const char *const *opts, int nopts,
                                 const char *arch, const char *compiler_version, int kind) {
  XXH3_state_t st;
  XXH3_128bits_reset(&st);
  hash_part(&st, "gpulua kernel cache 1", 21);
  hash_part(&st, source, source_len);
  for (int i = 0; i < nopts; i++) hash_part(&st, opts[i], strlen(opts[i]));
  hash_part(&st, arch, strlen(arch));
  hash_part(&st, compiler_version, strlen(compiler_version));
  uint32_t k = (uint32_t)kind;
  hash_part(&st, &k, sizeof k);
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits_digest(&st));
  gl_kcache_key key;
  memcpy(key.b, c.digest, 16);
  return key;
}

static void entry_path(const gl_kcache_key *k, char *buf, size_t len) {
  char hex[33];
  for (int i = 0; i < 16; i++) snprintf(hex + 2 * i, 3, "%02x", k->b[i]);
  snprintf(buf, len, "%s/%s.bin", gl_kcache_dir(), hex);
}

static void payload_hash(const void *data, size_t len, unsigned char out[16]) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(data, len));
  memcpy(out, c.digest, 16);
}

int gl_kcache_parse(const void *file, size_t file_len, const gl_kcache_key *k, const void **payload,
                    size_t *len, int *kind) {
  entry_header h;
  if (file_len < sizeof h) return -1;
  memcpy(&h, file, sizeof h);
  if (memcmp(h.magic, ENTRY_MAGIC, 4) != 0 || h.format != ENTRY_FORMAT) return -1;
  if (h.len != file_len - sizeof h) return -1;
  if (k && memcmp(h.key, k->b, 16) != 0) return -1;
  unsigned char ph[16];
  payload_hash((const char *)file + sizeof h, (size_t)h.len, ph);
  if (memcmp(ph, h.payload_hash, 16) != 0) return -1;
  *payload = (const char *)file + sizeof h;
  *len = (size_t)h.len;
  *kind = (int)h.kind;
  return 0;
}

void *gl_kcache_get(const gl_kcache_key *k, size_t *len, int *kind) {
  if (disabled || dir_ready() != 1) return NULL;
  char path[1200];
  entry_path(k, path, sizeof path);
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP) { /* a link in the user's own folder: refused like an entry not theirs */
      struct stat st;
      if (lstat(path, &st) == 0) trusted(&st, path, 0);
    }
    return NULL;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !trusted(&st, path, 0)) {
    close(fd);
    return NULL;
  }
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    close(fd);
    return NULL;
  }
  void *buf = NULL;
  long size = -1;
  if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
  if (size > 0 && size < (1L << 30) && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)size)) &&
      fread(buf, 1, (size_t)size, f) == (size_t)size) {
    fclose(f);
    const void *payload;
    if (gl_kcache_parse(buf, (size_t)size, k, &payload, len, kind) == 0) {
      memmove(buf, payload, *len); /* hand back the payload alone */
      return buf;
    }
    free(buf);
    unlink(path); /* corrupt or truncated: recompile and replace */
    return NULL;
  }
  fclose(f);
  free(buf);
  return NULL;
}

void gl_kcache_put(const gl_kcache_key *k, const void *data, size_t len, int kind) {
  if (disabled) return;
  const char *d = gl_kcache_dir();
  if (mkdir_p(d) != 0) {
    warn_once("cannot create", d);
    return;
  }
  if (dir_ready() != 1) return;
  char path[1200], tmp[1300];
  entry_path(k, path, sizeof path);
  snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    warn_once("cannot write in", d);
    return;
  }
  entry_header h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, ENTRY_MAGIC, 4);
  h.format = ENTRY_FORMAT;
  h.kind = (uint32_t)kind;
  h.len = len;
  payload_hash(data, len, h.payload_hash);
  memcpy(h.key, k->b, 16);
  int ok = write(fd, &h, sizeof h) == (ssize_t)sizeof h;
  const char *p = data;
  size_t left = len;
  while (ok && left) {
    ssize_t n = write(fd, p, left);
    if (n <= 0) ok = 0;
    else {
      p += n;
      left -= (size_t)n;
    }
  }
  if (fchmod(fd, 0600) != 0) ok = 0; /* mkstemp's mode already; said, not assumed */
  if (close(fd) != 0) ok = 0;
  if (!ok || rename(tmp, path) != 0) {
    unlink(tmp);
    warn_once("cannot write", tmp);
  }
}
