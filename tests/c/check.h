/*
 * check.h -- the CHECK of the C tests that count their checks (test_core,
 * test_lifetimes): a failed check is reported with its condition and a
 * message, and counted; main prints "N passed, N failed".
 */
#ifndef GPULUA_TEST_CHECK_H
#define GPULUA_TEST_CHECK_H

#include <stdio.h>

static int failures, checks;

#define CHECK(cond, ...)                                                         \
  do {                                                                           \
    checks++;                                                                    \
    if (!(cond)) {                                                               \
      failures++;                                                                \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);   \
      fprintf(stderr, __VA_ARGS__);                                              \
      fputc('\n', stderr);                                                       \
    }                                                                            \
  } while (0)

#endif
