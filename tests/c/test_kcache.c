/*
 * test_kcache.c -- the on-disk kernel cache: keys, round trips, corrupt and
 * truncated entries, concurrent writers, an unwritable folder, and the trust
 * rule: a folder or entry that is not the user's, or that others may write,
 * is refused with one warning.
 * Each case runs in a child process, since the cache folder is read once per
 * process (GPULUA_CACHE_DIR).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kcache.h"

static int failures;
#define CHECK(c)                                                        \
  do {                                                                  \
    if (!(c)) {                                                         \
      failures++;                                                       \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
    }                                                                   \
  } while (0)

static char base[256];

static gl_kcache_key key_of(const char *src, const char *opt) {
  const char *opts[] = {opt};
  return gl_kcache_make_key(src, strlen(src), opts, 1, "sm_90", "nvrtc 13.0", GL_KCACHE_CUBIN);
}

static int count_entries(const char *dir, int *tmps) {
  DIR *d = opendir(dir);
  int n = 0;
  *tmps = 0;
  if (!d) return -1;
  for (struct dirent *e; (e = readdir(d));) {
    if (strstr(e->d_name, ".tmp.")) (*tmps)++;
    else if (strstr(e->d_name, ".bin")) n++;
  }
  closedir(d);
  return n;
}

static void use_dir(const char *name) {
  char dir[300];
  snprintf(dir, sizeof dir, "%s/%s", base, name);
  setenv("GPULUA_CACHE_DIR", dir, 1);
}

static void case_keys(void) {
  gl_kcache_key a = key_of("kernel", "-O3"), b = key_of("kernel", "-O3"), c = key_of("kernel", "-O2");
  gl_kcache_key d = key_of("kernel ", "-O3");
  CHECK(memcmp(a.b, b.b, 16) == 0);
  CHECK(memcmp(a.b, c.b, 16) != 0);
  CHECK(memcmp(a.b, d.b, 16) != 0);
  /* parts are length-prefixed: ("ab", "c") differs from ("a", "bc") */
  const char *o1[] = {"c"}, *o2[] = {"bc"};
  gl_kcache_key e = gl_kcache_make_key("ab", 2, o1, 1, "sm_90", "v", 1);
  gl_kcache_key f = gl_kcache_make_key("a", 1, o2, 1, "sm_90", "v", 1);
  CHECK(memcmp(e.b, f.b, 16) != 0);
  gl_kcache_key g = gl_kcache_make_key("ab", 2, o1, 1, "sm_80", "v", 1);
  gl_kcache_key h = gl_kcache_make_key("ab", 2, o1, 1, "sm_90", "w", 1);
  gl_kcache_key i = gl_kcache_make_key("ab", 2, o1, 1, "sm_90", "v", 2);
  CHECK(memcmp(e.b, g.b, 16) != 0 && memcmp(e.b, h.b, 16) != 0 && memcmp(e.b, i.b, 16) != 0);
}

static void case_round_trip(void) {
  use_dir("rt");
  gl_kcache_key k = key_of("rt", "");
  size_t len;
  int kind;
  CHECK(gl_kcache_get(&k, &len, &kind) == NULL); /* a miss first */
  gl_kcache_put(&k, "payload-bytes", 13, GL_KCACHE_PTX);
  char *p = gl_kcache_get(&k, &len, &kind);
  CHECK(p && len == 13 && kind == GL_KCACHE_PTX && memcmp(p, "payload-bytes", 13) == 0);
  free(p);
  int tmps;
  CHECK(count_entries(gl_kcache_dir(), &tmps) == 1 && tmps == 0);
}

static char *entry_file(char *buf, size_t len) {
  DIR *d = opendir(gl_kcache_dir());
  buf[0] = '\0';
  for (struct dirent *e; d && (e = readdir(d));)
    if (strstr(e->d_name, ".bin")) snprintf(buf, len, "%s/%s", gl_kcache_dir(), e->d_name);
  if (d) closedir(d);
  return buf;
}

static void case_corrupt(void) {
  use_dir("corrupt");
  gl_kcache_key k = key_of("corrupt", "");
  char big[4096];
  for (size_t i = 0; i < sizeof big; i++) big[i] = (char)(i * 7);
  size_t len;
  int kind;
  char path[600];
  /* a flipped byte in the payload */
  gl_kcache_put(&k, big, sizeof big, GL_KCACHE_CUBIN);
  FILE *f = fopen(entry_file(path, sizeof path), "r+b");
  CHECK(f != NULL);
  if (f) {
    fseek(f, 100, SEEK_SET);
    fputc(0x5a ^ fgetc(f), f);
    fclose(f);
  }
  CHECK(gl_kcache_get(&k, &len, &kind) == NULL);
  CHECK(access(path, F_OK) != 0); /* removed, to be replaced */
  /* a truncated entry */
  gl_kcache_put(&k, big, sizeof big, GL_KCACHE_CUBIN);
  CHECK(truncate(entry_file(path, sizeof path), 1000) == 0);
  CHECK(gl_kcache_get(&k, &len, &kind) == NULL);
  /* an empty file and a file of garbage */
  f = fopen(path, "wb");
  if (f) fclose(f);
  CHECK(gl_kcache_get(&k, &len, &kind) == NULL);
  f = fopen(path, "wb");
  if (f) {
    fwrite(big, 1, 200, f);
    fclose(f);
  }
  CHECK(gl_kcache_get(&k, &len, &kind) == NULL);
  /* and a good entry again afterwards */
  gl_kcache_put(&k, big, sizeof big, GL_KCACHE_CUBIN);
  char *p = gl_kcache_get(&k, &len, &kind);
  CHECK(p && len == sizeof big && memcmp(p, big, sizeof big) == 0);
  free(p);
  /* parse rejects an entry of another key */
  gl_kcache_key other = key_of("other", "");
  FILE *g = fopen(entry_file(path, sizeof path), "rb");
  char file[8192];
  size_t n = g ? fread(file, 1, sizeof file, g) : 0;
  if (g) fclose(g);
  const void *pl;
  CHECK(gl_kcache_parse(file, n, &k, &pl, &len, &kind) == 0);
  CHECK(gl_kcache_parse(file, n, &other, &pl, &len, &kind) != 0);
}

static void case_concurrent(void) {
  use_dir("concurrent");
  gl_kcache_key k = key_of("concurrent", "");
  static char blob[1 << 16];
  for (size_t i = 0; i < sizeof blob; i++) blob[i] = (char)(i ^ (i >> 8));
  pid_t kids[6];
  for (int i = 0; i < 6; i++) {
    kids[i] = fork();
    if (kids[i] == 0) {
      for (int j = 0; j < 40; j++) {
        gl_kcache_put(&k, blob, sizeof blob, GL_KCACHE_CUBIN);
        size_t len;
        int kind;
        char *p = gl_kcache_get(&k, &len, &kind);
        /* a reader sees a whole entry or none, never a torn one */
        if (p && (len != sizeof blob || memcmp(p, blob, len) != 0)) _exit(3);
        free(p);
      }
      _exit(0);
    }
  }
  for (int i = 0; i < 6; i++) {
    int st;
    waitpid(kids[i], &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  int tmps;
  CHECK(count_entries(gl_kcache_dir(), &tmps) == 1 && tmps == 0);
}

static void case_unwritable(void) {
  /* a folder under a regular file cannot be created: only a warning */
  char file[300];
  snprintf(file, sizeof file, "%s/plainfile", base);
  FILE *f = fopen(file, "w");
  if (f) fclose(f);
  char dir[400];
  snprintf(dir, sizeof dir, "%s/sub", file);
  setenv("GPULUA_CACHE_DIR", dir, 1);
  gl_kcache_key k = key_of("unwritable", "");
  gl_kcache_put(&k, "x", 1, GL_KCACHE_PTX); /* warns once */
  gl_kcache_put(&k, "x", 1, GL_KCACHE_PTX); /* silent */
  size_t len;
  int kind;
  CHECK(gl_kcache_get(&k, &len, &kind) == NULL);
}

/* The folder is made 0700 and each entry written 0600, whatever the umask. */
static void case_modes(void) {
  use_dir("modes/sub");
  umask(0);
  gl_kcache_key k = key_of("modes", "");
  gl_kcache_put(&k, "x", 1, GL_KCACHE_PTX);
  struct stat st;
  CHECK(stat(gl_kcache_dir(), &st) == 0 && (st.st_mode & 07777) == 0700);
  char parent[300];
  snprintf(parent, sizeof parent, "%s/modes", base);
  CHECK(stat(parent, &st) == 0 && (st.st_mode & 07777) == 0700);
  char path[600];
  CHECK(stat(entry_file(path, sizeof path), &st) == 0 && (st.st_mode & 07777) == 0600);
  size_t len;
  int kind;
  char *p = gl_kcache_get(&k, &len, &kind);
  CHECK(p && len == 1);
  free(p);
}

/* A folder that others may write (one planted in /tmp, say) is refused: no
 * entry in it is read, none is written. */
static void refused_dir(const char *name, mode_t mode) {
  char dir[300];
  snprintf(dir, sizeof dir, "%s/%s", base, name);
  CHECK(mkdir(dir, 0700) == 0 && chmod(dir, mode) == 0);
  setenv("GPULUA_CACHE_DIR", dir, 1);
  gl_kcache_key k = key_of(name, "");
  size_t len;
  int kind;
  CHECK(gl_kcache_get(&k, &len, &kind) == NULL); /* warns once */
  gl_kcache_put(&k, "x", 1, GL_KCACHE_PTX);      /* silent, and writes nothing */
  int tmps;
  CHECK(count_entries(dir, &tmps) == 0 && tmps == 0);
}

static void case_dir_world_writable(void) { refused_dir("world", 0777); }
static void case_dir_group_writable(void) { refused_dir("group", 0770); }

/* An entry others may write is refused, even in a good folder. */
static void case_entry_writable(void) {
  use_dir("entry");
  gl_kcache_key k = key_of("entry", "");
  gl_kcache_put(&k, "payload", 7, GL_KCACHE_PTX);
  char path[600];
  CHECK(chmod(entry_file(path, sizeof path), 0666) == 0);
  size_t len;
  int kind;
  CHECK(gl_kcache_get(&k, &len, &kind) == NULL); /* warns once */
  CHECK(gl_kcache_get(&k, &len, &kind) == NULL); /* silent */
}

/* An entry that is a link is refused (the cache never makes one). */
static void case_entry_link(void) {
  use_dir("link");
  gl_kcache_key k = key_of("link", ""), other = key_of("link-other", "");
  gl_kcache_put(&other, "payload", 7, GL_KCACHE_PTX);
  char target[600], path[600];
  entry_file(target, sizeof target);
  gl_kcache_put(&k, "payload", 7, GL_KCACHE_PTX);
  /* the entry of k: the newer of the two files; replace it with a link to the other */
  DIR *d = opendir(gl_kcache_dir());
  path[0] = '\0';
  for (struct dirent *e; d && (e = readdir(d));) {
    char full[600];
    snprintf(full, sizeof full, "%s/%s", gl_kcache_dir(), e->d_name);
    if (strstr(e->d_name, ".bin") && strcmp(full, target) != 0) snprintf(path, sizeof path, "%s", full);
  }
  if (d) closedir(d);
  size_t len;
  int kind;
  char *p = gl_kcache_get(&k, &len, &kind);
  CHECK(p != NULL); /* a hit before */
  free(p);
  CHECK(unlink(path) == 0 && symlink(target, path) == 0);
  CHECK(gl_kcache_get(&k, &len, &kind) == NULL);
}

/* The user of another uid that runs as root in CI: chown to nobody. */
#define OTHER_UID 65534

static int need_root(const char *what) {
  if (geteuid() == 0) return 1;
  fprintf(stderr, "skipped: %s needs root (to chown to uid %d)\n", what, OTHER_UID);
  return 0;
}

/* A folder owned by another user is refused, whatever its mode. */
static void case_dir_other_owner(void) {
  char dir[300];
  snprintf(dir, sizeof dir, "%s/owner", base);
  CHECK(mkdir(dir, 0700) == 0);
  CHECK(chown(dir, OTHER_UID, OTHER_UID) == 0);
  setenv("GPULUA_CACHE_DIR", dir, 1);
  gl_kcache_key k = key_of("owner", "");
  gl_kcache_put(&k, "x", 1, GL_KCACHE_PTX); /* warns once */
  size_t len;
  int kind;
  CHECK(gl_kcache_get(&k, &len, &kind) == NULL);
  int tmps;
  CHECK(count_entries(dir, &tmps) == 0 && tmps == 0);
}

/* An entry owned by another user is refused, even at 0600. */
static void case_entry_other_owner(void) {
  use_dir("entry-owner");
  gl_kcache_key k = key_of("entry-owner", "");
  gl_kcache_put(&k, "payload", 7, GL_KCACHE_PTX);
  char path[600];
  CHECK(chown(entry_file(path, sizeof path), OTHER_UID, OTHER_UID) == 0);
  size_t len;
  int kind;
  CHECK(gl_kcache_get(&k, &len, &kind) == NULL);
}

/* A link to the folder is followed when it is the user's; one owned by
 * another user is refused (lchown: only root can make one here). */
static void case_dir_link(void) {
  char dir[300], link[300];
  snprintf(dir, sizeof dir, "%s/real", base);
  snprintf(link, sizeof link, "%s/via-link", base);
  CHECK(mkdir(dir, 0700) == 0 && symlink(dir, link) == 0);
  CHECK(lchown(link, OTHER_UID, OTHER_UID) == 0);
  setenv("GPULUA_CACHE_DIR", link, 1);
  gl_kcache_key k = key_of("dir-link", "");
  gl_kcache_put(&k, "x", 1, GL_KCACHE_PTX); /* warns once */
  int tmps;
  CHECK(count_entries(dir, &tmps) == 0 && tmps == 0);
}

static void case_dir_own_link(void) {
  char dir[300], link[300];
  snprintf(dir, sizeof dir, "%s/real-own", base);
  snprintf(link, sizeof link, "%s/own-link", base);
  CHECK(mkdir(dir, 0700) == 0 && symlink(dir, link) == 0);
  setenv("GPULUA_CACHE_DIR", link, 1);
  gl_kcache_key k = key_of("own-link", "");
  gl_kcache_put(&k, "x", 1, GL_KCACHE_PTX);
  size_t len;
  int kind;
  char *p = gl_kcache_get(&k, &len, &kind);
  CHECK(p && len == 1);
  free(p);
}

static int run_case(const char *name, void (*fn)(void), const char *expect_stderr) {
  char errfile[300];
  snprintf(errfile, sizeof errfile, "%s/%s.stderr", base, name);
  pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(errfile, "w", stderr)) _exit(4);
    fn();
    fflush(stderr);
    _exit(failures ? 1 : 0);
  }
  int st;
  waitpid(pid, &st, 0);
  int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
  FILE *f = fopen(errfile, "r");
  char text[4096] = "";
  size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
  text[n] = '\0';
  if (f) fclose(f);
  if (expect_stderr) {
    const char *first = strstr(text, expect_stderr);
    if (!first || strstr(first + 1, expect_stderr)) {
      ok = 0;
      fprintf(stderr, "%s: expected exactly one warning containing '%s'\n", name, expect_stderr);
    }
  }
  if (!ok) fprintf(stderr, "FAILED %s:\n%s", name, text);
  return ok;
}

int main(void) {
  snprintf(base, sizeof base, "/tmp/gpulua-kcache-test-%ld", (long)getpid());
  mkdir(base, 0755);
  struct { const char *name; void (*fn)(void); const char *warn; } cases[] = {
    {"keys", case_keys, NULL},
    {"round_trip", case_round_trip, NULL},
    {"corrupt", case_corrupt, NULL},
    {"concurrent", case_concurrent, NULL},
    {"unwritable", case_unwritable, "kernel cache disabled"},
    {"modes", case_modes, NULL},
    {"dir_world_writable", case_dir_world_writable, "is writable by group or others: uid"},
    {"dir_group_writable", case_dir_group_writable, "is writable by group or others: uid"},
    {"entry_writable", case_entry_writable, "is writable by group or others: uid"},
    {"entry_link", case_entry_link, "is not a regular file"},
    {"dir_own_link", case_dir_own_link, NULL},
  };
  struct { const char *name; void (*fn)(void); const char *warn; } root_cases[] = {
    {"dir_other_owner", case_dir_other_owner, "is owned by another user: uid 65534"},
    {"entry_other_owner", case_entry_other_owner, "is owned by another user: uid 65534"},
    {"dir_link", case_dir_link, "is a link owned by another user"},
  };
  int passed = 0, failed = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (run_case(cases[i].name, cases[i].fn, cases[i].warn)) passed++;
    else failed++;
  }
  for (size_t i = 0; i < sizeof root_cases / sizeof root_cases[0]; i++) {
    if (!need_root(root_cases[i].name)) continue;
    if (run_case(root_cases[i].name, root_cases[i].fn, root_cases[i].warn)) passed++;
    else failed++;
  }
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", base);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
