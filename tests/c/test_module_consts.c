/*
 * test_module_consts.c -- which of a module's variables are __constant__,
 * read from the image the driver loads (src/core/module_consts.c): a PTX
 * text's .const declarations and a CUBIN's symbols in its constant banks
 * (tests/data/globals_sm90.cubin, from globals.cu by nvcc). A truncated or
 * damaged CUBIN gives "not known" or fewer names, never a read past it.
 *   test_module_consts tests/data/globals_sm90.cubin
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "module.h"

/* names ("a\0b\0\0") as "a,b" */
static const char *joined(const char *names, char *buf, size_t len) {
  buf[0] = '\0';
  if (!names) return "(not known)";
  for (const char *c = names; *c; c += strlen(c) + 1) {
    if (buf[0]) strncat(buf, ",", len - strlen(buf) - 1);
    strncat(buf, c, len - strlen(buf) - 1);
  }
  return buf;
}

static void test_ptx(void) {
  static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                            ".const .align 4 .f32 scale;\n"
                            ".visible .const .align 8 .b8 bias[16] = {0, 0, 0, 0, 0, 0, 248, 63};\n"
                            ".global .align 4 .b8 table[16];\n"
                            ".visible .entry apply(.param .u64 p) {\n .const .f32 inner;\n ret;\n}\n";
  char buf[256];
  char *names = gl_module_const_names(ptx, sizeof ptx);
  CHECK(strcmp(joined(names, buf, sizeof buf), "scale,bias") == 0, "PTX: %s", buf);
  free(names);
}

static void test_cubin(const char *path) {
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL, "cannot open %s", path);
  if (!f) return;
  static unsigned char img[1 << 16];
  size_t n = fread(img, 1, sizeof img, f);
  fclose(f);
  char buf[256];
  char *names = gl_module_const_names(img, n);
  CHECK(strcmp(joined(names, buf, sizeof buf), "scale,bias") == 0, "CUBIN: %s", buf);
  free(names);
  /* every truncation: read within the bytes given (ASan and valgrind watch) */
  for (size_t cut = 0; cut < n; cut++) {
    unsigned char *part = malloc(cut ? cut : 1);
    memcpy(part, img, cut);
    free(gl_module_const_names(part, cut));
    free(part);
  }
  /* damaged offsets and indices: a byte at a time set to 0xff */
  for (size_t at = 0; at < n; at += 7) {
    unsigned char *bad = malloc(n);
    memcpy(bad, img, n);
    bad[at] = 0xff;
    free(gl_module_const_names(bad, n));
    free(bad);
  }
  /* a fatbin is not read: no variable known constant */
  static const unsigned char fatbin[] = {0x50, 0xed, 0x55, 0xba, 1, 0, 0x10, 0};
  CHECK(gl_module_const_names(fatbin, sizeof fatbin) == NULL, "a fatbin's constants are not known");
}

int main(int argc, char **argv) {
  test_ptx();
  test_cubin(argc > 1 ? argv[1] : "tests/data/globals_sm90.cubin");
  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures != 0;
}
