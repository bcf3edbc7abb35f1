/*
 * module_consts.c -- which of a module's variables are __constant__ (a
 * kernel only reads them: launches on two streams that read one do not
 * conflict), found in the image the driver loads: a PTX text's .const
 * declarations, or a CUBIN's symbols in its constant banks.
 */
#include "module.h"

#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

/* The names of the variables a PTX text declares .const at module scope. */
static void ptx_consts(const char *ptx, size_t n, gl_buf *b) {
  int depth = 0;
  for (const char *line = ptx; line < ptx + n && *line;) {
    const char *end = memchr(line, '\n', (size_t)(ptx + n - line));
    size_t len = end ? (size_t)(end - line) : strnlen(line, (size_t)(ptx + n - line));
    const char *p = line;
    while (p < line + len && (*p == ' ' || *p == '\t')) p++;
    if (depth == 0) {
      for (;;) { /* the linking directives before the state space */
        size_t w = strncmp(p, ".visible ", 9) == 0 ? 9 : strncmp(p, ".extern ", 8) == 0 ? 8
                 : strncmp(p, ".weak ", 6) == 0 ? 6 : 0;
        if (!w || p + w > line + len) break;
        p += w;
      }
      if (p + 7 <= line + len && strncmp(p, ".const ", 7) == 0) { /* .const [.align N] .type name[...] [= ...]; */
        for (p += 7; p < line + len;) {
          while (p < line + len && *p == ' ') p++;
          const char *t = p;
          while (p < line + len && *p != ' ' && *p != '[' && *p != '=' && *p != ';') p++;
          if (t == p) break;
          if (*t == '.' || (*t >= '0' && *t <= '9')) continue; /* a directive, a type, an alignment */
          gl_buf_printf(b, "%.*s%c", (int)(p - t), t, 0);
          break;
        }
      }
    }
    for (const char *c = line; c < line + len && *c != '/'; c++) depth += *c == '{' ? 1 : *c == '}' ? -1 : 0;
    line += len + (end != NULL);
  }
}

/* Whether [off, off + size) lies inside an image of n bytes. */
static int inside(uint64_t off, uint64_t size, size_t n) { return off <= n && size <= n - off; }

/* The data objects of a 64-bit little-endian CUBIN that live in a section
 * named .nv.constant* (user __constant__ variables are in bank 3; each
 * kernel's parameters, bank 0, are sections, not objects). 0, or -1 for an
 * image this reader does not follow (then no variable is known constant). */
static int cubin_consts(const unsigned char *img, size_t n, gl_buf *b) {
  Elf64_Ehdr eh;
  if (n < sizeof eh) return -1;
  memcpy(&eh, img, sizeof eh);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_shentsize != sizeof(Elf64_Shdr) ||
      !inside(eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr), n) || eh.e_shstrndx >= eh.e_shnum)
    return -1;
  Elf64_Shdr names, sh;
  memcpy(&names, img + eh.e_shoff + (size_t)eh.e_shstrndx * sizeof sh, sizeof sh);
  if (!inside(names.sh_offset, names.sh_size, n)) return -1;
  for (unsigned i = 0; i < eh.e_shnum; i++) {
    memcpy(&sh, img + eh.e_shoff + (size_t)i * sizeof sh, sizeof sh);
    if (sh.sh_type != SHT_SYMTAB) continue;
    Elf64_Shdr strs;
    if (sh.sh_link >= eh.e_shnum || sh.sh_entsize != sizeof(Elf64_Sym) || !inside(sh.sh_offset, sh.sh_size, n)) return -1;
    memcpy(&strs, img + eh.e_shoff + (size_t)sh.sh_link * sizeof strs, sizeof strs);
    if (!inside(strs.sh_offset, strs.sh_size, n)) return -1;
    for (uint64_t k = 0; k < sh.sh_size / sizeof(Elf64_Sym); k++) {
      Elf64_Sym sym;
      memcpy(&sym, img + sh.sh_offset + k * sizeof sym, sizeof sym);
      if (ELF64_ST_TYPE(sym.st_info) != STT_OBJECT || sym.st_shndx == SHN_UNDEF || sym.st_shndx >= eh.e_shnum ||
          sym.st_name >= strs.sh_size)
        continue;
      Elf64_Shdr home;
      memcpy(&home, img + eh.e_shoff + (size_t)sym.st_shndx * sizeof home, sizeof home);
      const char *sec = (const char *)img + names.sh_offset + home.sh_name;
      size_t room = home.sh_name < names.sh_size ? (size_t)(names.sh_size - home.sh_name) : 0;
      if (strnlen(sec, room) == room || strncmp(sec, ".nv.constant", 12) != 0) continue;
      const char *name = (const char *)img + strs.sh_offset + sym.st_name;
      size_t len = strnlen(name, (size_t)(strs.sh_size - sym.st_name));
      if (len == 0 || len == strs.sh_size - sym.st_name) continue; /* unnamed, or not ended inside its table */
      gl_buf_printf(b, "%.*s%c", (int)len, name, 0);
    }
  }
  return 0;
}

char *gl_module_const_names(const void *image, size_t n) {
  const unsigned char *p = image;
  gl_buf b = GL_BUF_INIT;
  if (n >= 4 && memcmp(p, ELFMAG, SELFMAG) == 0) {
    if (cubin_consts(p, n, &b) != 0) {
      gl_buf_free(&b);
      return NULL;
    }
  } else if (n >= 4 && p[0] == 0x50 && p[1] == 0xed && p[2] == 0x55 && p[3] == 0xba) {
    return NULL; /* a fatbin: its CUBINs may be compressed */
  } else {
    ptx_consts(image, n, &b);
  }
  gl_buf_printf(&b, "%c", 0);
  char *names = malloc(b.n);
  if (names && b.s) memcpy(names, b.s, b.n);
  gl_buf_free(&b);
  return names;
}
