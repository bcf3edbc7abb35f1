/*
 * test_nvrtc_include.c -- gld_nvrtc_include_dir: where gpu.compile finds the
 * toolkit's headers for NVRTC's programs, on toolkit layouts made of empty
 * files in a temporary folder: lib64/ beside include/, a lib64 link to
 * targets/<arch>/lib, Debian's multiarch, pip's CUDA 12 wheels, a folder
 * without the headers, CUDA_HOME and CUDA_PATH, and paths too long.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "nvrtc_table.h"

static char base[512]; /* a short folder under /tmp */

/* base/rel, made with its parent folders; a file when rel names one (has a
 * dot in its last part), else a folder. Returns the path (static). */
static const char *make(const char *rel) {
  static char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/%s", base, rel);
  for (char *s = p + strlen(base) + 1; *s; s++)
    if (*s == '/') {
      *s = '\0';
      mkdir(p, 0755);
      *s = '/';
    }
  const char *last = strrchr(p, '/');
  if (strchr(last, '.')) {
    FILE *f = fopen(p, "w");
    if (f) fclose(f);
  } else {
    mkdir(p, 0755);
  }
  return p;
}

static const char *at(const char *rel) {
  static char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/%s", base, rel);
  return p;
}

/* gld_nvrtc_include_dir(base/lib, home, path) finds base/want (NULL: none), from `from` */
static void expect(const char *lib, const char *home, const char *path, const char *want, const char *from) {
  char libp[PATH_MAX], homep[PATH_MAX], pathp[PATH_MAX], out[PATH_MAX], wantp[PATH_MAX];
  snprintf(libp, sizeof libp, "%s/%s", base, lib ? lib : "");
  snprintf(homep, sizeof homep, "%s/%s", base, home ? home : "");
  snprintf(pathp, sizeof pathp, "%s/%s", base, path ? path : "");
  const char *got = gld_nvrtc_include_dir(lib ? libp : NULL, home ? homep : NULL, path ? pathp : NULL, out, sizeof out);
  if (!want) {
    CHECK(got == NULL && out[0] == '\0', "lib %s: expected none, got %s (%s)", lib ? lib : "(none)", out,
          got ? got : "NULL");
    return;
  }
  snprintf(wantp, sizeof wantp, "%s/%s", base, want);
  CHECK(got != NULL && strcmp(got, from) == 0, "lib %s: expected it %s, got %s", lib ? lib : "(none)", from,
        got ? got : "NULL");
  CHECK(strcmp(out, wantp) == 0, "lib %s: expected %s, got %s", lib ? lib : "(none)", wantp, out);
}

int main(void) {
  char tmpl[] = "/tmp/gpulua-nvrtc-include-XXXXXX", real[PATH_MAX];
  if (!mkdtemp(tmpl) || !realpath(tmpl, real) || strlen(real) >= sizeof base) {
    perror("mkdtemp");
    return 1;
  }
  memcpy(base, real, strlen(real) + 1);
  /* /usr/local/cuda: lib64/ and include/ side by side */
  make("cuda/lib64/libnvrtc.so.13");
  make("cuda/include/cuda_fp16.h");
  expect("cuda/lib64/libnvrtc.so.13", NULL, NULL, "cuda/include", "beside NVRTC");
  /* a user's CUDA_HOME does not win over the headers beside NVRTC */
  make("other/include/cuda_runtime.h");
  expect("cuda/lib64/libnvrtc.so.13", "other", NULL, "cuda/include", "beside NVRTC");

  /* the runfile's layout: lib64 -> targets/x86_64-linux/lib, whose ../include
   * is targets/x86_64-linux/include (cuda_runtime.h alone is enough) */
  make("tk/targets/x86_64-linux/lib/libnvrtc.so.12");
  make("tk/targets/x86_64-linux/include/cuda_runtime.h");
  CHECK(symlink("targets/x86_64-linux/lib", at("tk/lib64")) == 0, "symlink");
  expect("tk/lib64/libnvrtc.so.12", NULL, NULL, "tk/targets/x86_64-linux/include", "beside NVRTC");
  expect("tk/targets/x86_64-linux/lib/libnvrtc.so.12", NULL, NULL, "tk/targets/x86_64-linux/include",
         "beside NVRTC");

  /* Debian's multiarch: usr/lib/x86_64-linux-gnu -> usr/include */
  make("usr/lib/x86_64-linux-gnu/libnvrtc.so.12");
  make("usr/include/cuda_fp16.h");
  expect("usr/lib/x86_64-linux-gnu/libnvrtc.so.12", NULL, NULL, "usr/include", "beside NVRTC");

  /* pip's CUDA 12 wheels: nvidia/cuda_nvrtc/lib -> nvidia/cuda_runtime/include;
   * CUDA 13's: nvidia/cu13/lib beside nvidia/cu13/include */
  make("site/nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
  make("site/nvidia/cuda_nvrtc/include/nvrtc.h");
  make("site/nvidia/cuda_runtime/include/cuda_fp16.h");
  expect("site/nvidia/cuda_nvrtc/lib/libnvrtc.so.12", NULL, NULL, "site/nvidia/cuda_runtime/include",
         "beside NVRTC");
  make("site/nvidia/cu13/lib/libnvrtc.so.13");
  make("site/nvidia/cu13/include/cuda_fp16.h");
  expect("site/nvidia/cu13/lib/libnvrtc.so.13", NULL, NULL, "site/nvidia/cu13/include", "beside NVRTC");

  /* no headers beside the library (an include/ without them does not count):
   * CUDA_HOME, else CUDA_PATH, else none */
  make("bare/lib/libnvrtc.so.13");
  make("bare/include/nvrtc.h");
  expect("bare/lib/libnvrtc.so.13", NULL, NULL, NULL, NULL);
  expect("bare/lib/libnvrtc.so.13", "other", NULL, "other/include", "CUDA_HOME");
  expect("bare/lib/libnvrtc.so.13", "nowhere", "other", "other/include", "CUDA_PATH");
  expect("bare/lib/libnvrtc.so.13", "bare", "cuda", "cuda/include", "CUDA_PATH");
  expect("bare/lib/libnvrtc.so.13", "nowhere", "nowhere", NULL, NULL);
  /* a library named without a folder (found on the loader's path, but not
   * said where): only the environment */
  char out[PATH_MAX];
  CHECK(gld_nvrtc_include_dir("libnvrtc.so", NULL, NULL, out, sizeof out) == NULL && !out[0], "bare name");
  CHECK(gld_nvrtc_include_dir(NULL, NULL, NULL, out, sizeof out) == NULL && !out[0], "no library");
  CHECK(gld_nvrtc_include_dir("", "", "", out, sizeof out) == NULL && !out[0], "empty strings");

  /* too long: a folder that does not fit out, a library path over PATH_MAX */
  char small[8] = "x";
  CHECK(gld_nvrtc_include_dir(at("cuda/lib64/libnvrtc.so.13"), NULL, NULL, small, sizeof small) == NULL &&
            small[0] == '\0',
        "a folder longer than out is not returned cut");
  char *huge = malloc(PATH_MAX + 100);
  if (huge) {
    memset(huge, 'a', PATH_MAX + 99);
    huge[0] = '/';
    huge[PATH_MAX + 50] = '/';
    huge[PATH_MAX + 99] = '\0';
    CHECK(gld_nvrtc_include_dir(huge, huge, huge, out, sizeof out) == NULL && !out[0], "paths over PATH_MAX");
    free(huge);
  }

  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", base);
  printf("nvrtc include folders: %d passed, %d failed\n", checks - failures, failures);
  return failures ? 1 : 0;
}
