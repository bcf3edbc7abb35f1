/*
 * ptx_harness.h -- what the interpreter's tests share: reading a fixture
 * (tests/ptx/NAME.ptx, as NVRTC produced it from NAME.cu), a memory check
 * that knows the test's buffers by name, and one call to launch a kernel.
 */
#ifndef GPULUA_TEST_PTX_HARNESS_H
#define GPULUA_TEST_PTX_HARNESS_H

#include "check.h"
#include "sim/ptx_ir.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the folder of the fixtures: test_ptx.c sets it from its argument */
extern const char *fixture_dir;
/* launches run without racecheck while set (test_ptx.c) */
extern int no_racecheck;

static inline char *read_fixture(const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.ptx", fixture_dir, name);
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(2);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (!s || fread(s, 1, (size_t)n, f) != (size_t)n) exit(2);
  s[n] = 0;
  fclose(f);
  return s;
}

static inline sim_ptx_module *load_fixture(const char *name) {
  char err[512];
  char *text = read_fixture(name);
  sim_ptx_module *m = sim_ptx_load(text, err, sizeof err);
  free(text);
  if (!m) {
    fprintf(stderr, "%s.ptx: %s\n", name, err);
    exit(2);
  }
  return m;
}

/* The buffers a launch may touch, by name. */
typedef struct {
  const char *name;
  const void *p;
  size_t bytes;
} buffer;
typedef struct {
  buffer b[12];
  int n;
  long checks;
} registry;

static inline int check_access(void *user, uint64_t addr, size_t bytes, int write, char *why, size_t whylen) {
  registry *r = user;
  (void)write;
  r->checks++;
  for (int i = 0; i < r->n; i++) {
    uint64_t lo = (uint64_t)(uintptr_t)r->b[i].p, hi = lo + r->b[i].bytes;
    if (addr >= lo && addr + bytes <= hi) return 0;
  }
  for (int i = 0; i < r->n; i++) {
    uint64_t lo = (uint64_t)(uintptr_t)r->b[i].p, hi = lo + r->b[i].bytes;
    if (addr >= lo && addr < hi + 4096) {
      snprintf(why, whylen, "%llu bytes past the end of buffer '%s' of %zu bytes",
               (unsigned long long)(addr - hi), r->b[i].name, r->b[i].bytes);
      return 1;
    }
  }
  return 1;
}

static inline void add_buffer(registry *r, const char *name, const void *p, size_t bytes) {
  r->b[r->n++] = (buffer){.name = name, .p = p, .bytes = bytes};
}

/* Launches `kernel` of m: 0, or -1 with the message in err. */
static inline int launch(const sim_ptx_module *m, const char *kernel, unsigned gx, unsigned gy, unsigned bx, unsigned by,
                  size_t shared, void **params, registry *r, char *err, size_t errlen, uint64_t *insns) {
  int k = sim_ptx_find(m, kernel);
  if (k < 0) {
    snprintf(err, errlen, "no kernel %s", kernel);
    return -1;
  }
  sim_ptx_launch l = {.grid = {gx, gy, 1}, .block = {bx, by, 1}, .shared_bytes = shared, .params = params,
                      .check = check_access, .user = r, .no_racecheck = no_racecheck};
  int rc = sim_ptx_run(m, k, &l, err, errlen);
  if (insns) *insns = l.thread_insns;
  return rc;
}

static uint32_t rng_state = 12345;
static inline uint32_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 17;
  rng_state ^= rng_state << 5;
  return rng_state;
}

#endif
