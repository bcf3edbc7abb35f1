/*
 * ptx_printf.c -- the device runtime's calls that NVRTC's PTX declares
 * .extern, run on the host: vprintf and __assertfail.
 *
 * printf(fmt, ...) compiles to vprintf(fmt, args): fmt a generic address
 * (a .global string of the module), args the address of a buffer in the
 * thread's local memory holding the arguments one after another, each at
 * its alignment: 4 bytes for int, unsigned and char (%d %i %u %o %x %X %c
 * without l or ll, and the * of a width or precision), 8 bytes for long,
 * long long, double (a float is promoted), and pointers (%s %p). Each
 * lane's call is formatted here, reading memory through the checked
 * access, and kept in the launch's output whole, lane after lane, in the
 * order the schedule ran the calls; the caller writes it out when the
 * launch ends. A conversion CUDA's printf does not have is a fault naming
 * it. vprintf returns, as CUDA's, the number of arguments it read.
 *
 * assert(e) compiles to __assertfail(message, file, line, function,
 * charsize) when e is false: a fault with CUDA's words ("job.cu:5: void
 * k(int *): Assertion `i < n` failed").
 */

#include "ptx_exec.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* a growing text of one call */
typedef struct {
  char *s;
  size_t len, cap;
  int oom;
} text;

static void put(text *t, const char *s, size_t n) {
  if (t->oom) return;
  if (t->len + n + 1 > t->cap) {
    size_t nc = t->cap ? t->cap : 128;
    while (nc < t->len + n + 1) nc *= 2;
    char *ns = realloc(t->s, nc);
    if (!ns) {
      t->oom = 1;
      return;
    }
    t->s = ns;
    t->cap = nc;
  }
  memcpy(t->s + t->len, s, n);
  t->len += n;
  t->s[t->len] = '\0';
}

static void putf(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(text *t, const char *fmt, ...) {
  char small[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof small) {
    put(t, small, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (!big) {
    t->oom = 1;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  put(t, big, (size_t)n);
  free(big);
}

/* `n` bytes of lane `lane` at generic address `addr` into dst: 0, or -1
 * after the access's fault. */
static int peek(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, int lane, int space, uint64_t addr, size_t n,
                void *dst) {
  const void *p = sim_ptx_access(c, w, in, lane, space, addr, n, 0);
  if (!p) return -1;
  memcpy(dst, p, n);
  return 0;
}

/* The string at addr (at most max bytes of it) appended to t: 0, or -1
 * after a fault (a string that runs off its memory is one). */
static int str(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, int lane, uint64_t addr, size_t max, text *t) {
  for (size_t i = 0; i < max; i++) {
    char ch;
    if (peek(c, w, in, lane, SIM_S_GENERIC, addr + i, 1, &ch)) return -1;
    if (!ch) break;
    put(t, &ch, 1);
  }
  return 0;
}

/* The argument k of the call for lane `lane`: its .param in the caller's frame. */
static int arg(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, int lane, int k, size_t n, void *dst) {
  const uint32_t *args = w->f->vec + in->o[1].reg;
  return peek(c, w, in, lane, SIM_S_LOCAL, w->local + args[k], n, dst);
}

/* The format, quoted with C escapes, cut at 60 characters, for a message. */
static void quote(const char *f, char *out, size_t outlen) {
  size_t o = 0;
  out[o++] = '"';
  for (size_t i = 0; f[i] && o + 8 < outlen; i++) {
    if (i == 60) {
      memcpy(out + o, "...", 3);
      o += 3;
      break;
    }
    unsigned char ch = (unsigned char)f[i];
    if (ch == '\n') out[o++] = '\\', out[o++] = 'n';
    else if (ch == '"' || ch == '\\') out[o++] = '\\', out[o++] = (char)ch;
    else if (ch < 32 || ch > 126) o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", ch);
    else out[o++] = (char)ch;
  }
  out[o++] = '"';
  out[o] = '\0';
}

/* one lane's printf: the format read, then each conversion with its
 * argument. 0 with *nargs set, or -1 after a fault. */
typedef struct {
  sim_ptx_ctx *c;
  sim_ptx_warp *w;
  const sim_ptx_insn *in;
  int lane;
  uint64_t args; /* the argument buffer's generic address, 0 for none */
  size_t off;    /* the next argument's offset in it */
  int nargs;
  const char *fmt;
} fmt_state;

static int bad(fmt_state *s, const char *what, const char *conv, int convlen) {
  char q[100];
  quote(s->fmt, q, sizeof q);
  return sim_ptx_fault(s->c, s->w, s->in, s->lane, "printf format %s: %s '%.*s'", q, what, convlen, conv);
}

/* The next argument, of n bytes (4 or 8), at its alignment. */
static int next(fmt_state *s, size_t n, uint64_t *v, const char *conv, int convlen) {
  if (!s->args) return bad(s, "the call passed no arguments, but the format reads one at", conv, convlen);
  s->off = (s->off + n - 1) / n * n;
  uint64_t x = 0;
  if (peek(s->c, s->w, s->in, s->lane, SIM_S_GENERIC, s->args + s->off, n, &x)) return -1;
  s->off += n;
  s->nargs++;
  *v = x;
  return 0;
}

/* Formats from s->fmt into t. */
static int format(fmt_state *s, text *t) {
  const char *f = s->fmt;
  while (*f) {
    if (*f != '%') {
      const char *e = strchr(f, '%');
      size_t n = e ? (size_t)(e - f) : strlen(f);
      put(t, f, n);
      f += n;
      continue;
    }
    const char *conv = f++;
    if (*f == '%') {
      put(t, "%", 1);
      f++;
      continue;
    }
    char spec[64]; /* the host's format: flags, width and precision as numbers */
    size_t k = 0;
    spec[k++] = '%';
    while (*f && strchr("-+ #0", *f) && k < 8) spec[k++] = *f++;
    int width = -1, prec = -1, left = 0;
    uint64_t v;
    if (*f == '*') {
      if (next(s, 4, &v, conv, (int)(f - conv) + 1)) return -1;
      width = (int32_t)v;
      if (width < 0) left = 1, width = width == INT32_MIN ? INT32_MAX : -width;
      f++;
    } else {
      for (width = 0; *f >= '0' && *f <= '9'; f++) width = width < 100000 ? width * 10 + (*f - '0') : width;
    }
    if (*f == '.') {
      f++;
      if (*f == '*') {
        if (next(s, 4, &v, conv, (int)(f - conv) + 1)) return -1;
        prec = (int32_t)v;
        f++;
      } else {
        for (prec = 0; *f >= '0' && *f <= '9'; f++) prec = prec < 100000 ? prec * 10 + (*f - '0') : prec;
      }
    }
    int size = 0; /* -2 hh, -1 h, 0, 1 l, 2 ll */
    if (f[0] == 'h') size = f[1] == 'h' ? -2 : -1;
    else if (f[0] == 'l') size = f[1] == 'l' ? 2 : 1;
    f += size < 0 ? -size : size;
    char ty = *f;
    int convlen = (int)(f - conv) + (ty ? 1 : 0);
    if (!ty || !strchr("diuoxXcsfFeEgGaAp", ty)) return bad(s, "unsupported conversion", conv, convlen);
    f++;
    if (left) spec[k++] = '-';
    if (width > 0) k += (size_t)snprintf(spec + k, sizeof spec - k, "%d", width);
    if (prec >= 0) k += (size_t)snprintf(spec + k, sizeof spec - k, ".%d", prec);
    int isint = strchr("diuoxXc", ty) != NULL;
    /* %lf is %f, as in C; sizes mean nothing else for the others */
    if ((!isint && size != 0 && !(size == 1 && strchr("fFeEgGaA", ty))) || (ty == 'c' && size != 0))
      return bad(s, "unsupported conversion", conv, convlen);
    if (!isint) size = 0;
    if (next(s, isint && size <= 0 ? 4 : 8, &v, conv, convlen)) return -1;
    if (strchr("di", ty)) {
      long long x = size > 0 ? (long long)v : size == -1 ? (short)v : size == -2 ? (signed char)v : (int32_t)v;
      memcpy(spec + k, "lld", 4);
      putf(t, spec, x);
    } else if (strchr("uoxX", ty)) {
      unsigned long long x = size > 0 ? v : size == -1 ? (unsigned short)v : size == -2 ? (unsigned char)v : (uint32_t)v;
      spec[k++] = 'l', spec[k++] = 'l', spec[k++] = ty, spec[k] = '\0';
      putf(t, spec, x);
    } else if (ty == 'c') {
      spec[k++] = 'c', spec[k] = '\0';
      putf(t, spec, (int)(unsigned char)v);
    } else if (ty == 's' || ty == 'p') {
      text sv = {0};
      if (ty == 'p') putf(&sv, "0x%llx", (unsigned long long)v);
      else if (!v) put(&sv, "(null)", 6);
      else if (str(s->c, s->w, s->in, s->lane, v, prec >= 0 ? (size_t)prec : SIM_PTX_PRINTF_BYTES, &sv)) {
        free(sv.s);
        return -1;
      }
      size_t n = sv.len;
      size_t pad = width > 0 && (size_t)width > n ? (size_t)width - n : 0;
      int minus = left || memchr(spec, '-', k) != NULL;
      for (size_t i = 0; !minus && i < pad; i++) put(t, " ", 1);
      if (sv.s) put(t, sv.s, n);
      for (size_t i = 0; minus && i < pad; i++) put(t, " ", 1);
      free(sv.s);
    } else {
      double x;
      memcpy(&x, &v, 8);
      spec[k++] = ty, spec[k] = '\0';
      putf(t, spec, x);
    }
  }
  return 0;
}

static void keep(sim_ptx_ctx *c, const char *s, size_t n) {
  if (c->out_len + n > SIM_PTX_PRINTF_BYTES) {
    c->out_dropped++;
    return;
  }
  if (c->out_len + n > c->out_cap) {
    size_t nc = c->out_cap ? c->out_cap : 4096;
    while (nc < c->out_len + n) nc *= 2;
    char *ns = realloc(c->out, nc);
    if (!ns) {
      c->out_dropped++;
      return;
    }
    c->out = ns;
    c->out_cap = nc;
  }
  memcpy(c->out + c->out_len, s, n);
  c->out_len += n;
}

static int vprintf_lane(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, int lane) {
  uint64_t fp = 0, ap = 0;
  if (arg(c, w, in, lane, 0, 8, &fp) || arg(c, w, in, lane, 1, 8, &ap)) return -1;
  int32_t ret = -1; /* CUDA's for a NULL format */
  if (fp) {
    text fmt = {0}, out = {0};
    if (str(c, w, in, lane, fp, SIM_PTX_PRINTF_BYTES, &fmt)) {
      free(fmt.s);
      return -1;
    }
    fmt_state s = {.c = c, .w = w, .in = in, .lane = lane, .args = ap, .fmt = fmt.s ? fmt.s : ""};
    int r = format(&s, &out);
    if (r == 0 && (fmt.oom || out.oom)) r = sim_ptx_fault(c, w, in, lane, "out of memory formatting printf's output");
    if (r == 0) keep(c, out.s ? out.s : "", out.len);
    free(fmt.s);
    free(out.s);
    if (r) return -1;
    ret = s.nargs;
  }
  const uint32_t *rets = w->f->vec + in->o[0].reg;
  void *p = sim_ptx_access(c, w, in, lane, SIM_S_LOCAL, w->local + rets[0], 4, 1);
  if (!p) return -1;
  memcpy(p, &ret, 4);
  return 0;
}

static int assertfail(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, int lane) {
  uint64_t msg = 0, file = 0, fn = 0;
  uint32_t line = 0;
  if (arg(c, w, in, lane, 0, 8, &msg) || arg(c, w, in, lane, 1, 8, &file) || arg(c, w, in, lane, 2, 4, &line) ||
      arg(c, w, in, lane, 3, 8, &fn))
    return -1;
  text t = {0};
  int r = 0;
  if (file) {
    r = str(c, w, in, lane, file, 200, &t);
    if (!r) putf(&t, ":%u: ", line);
  }
  if (!r && fn) {
    r = str(c, w, in, lane, fn, 200, &t);
    put(&t, ": ", 2);
  }
  put(&t, "Assertion `", 11);
  if (!r && msg) r = str(c, w, in, lane, msg, 200, &t);
  if (!r) {
    sim_ptx_fault(c, w, in, lane, "%s` failed", t.s ? t.s : "");
    c->l->asserted = 1;
  }
  free(t.s);
  return -1;
}

int sim_ptx_libcall(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m) {
  if (in->mode == SIM_CALL_ASSERT) return assertfail(c, w, in, __builtin_ctz(m));
  SIM_LANES(m) if (vprintf_lane(c, w, in, l)) return -1;
  return 0;
}

void sim_ptx_printed(sim_ptx_ctx *c, sim_ptx_launch *l) {
  if (c->out_dropped) {
    char note[200];
    int n = snprintf(note, sizeof note,
                     "[%llu printf calls of kernel '%s' dropped: a launch keeps %u bytes of printf output]\n",
                     c->out_dropped, c->kernel->name, SIM_PTX_PRINTF_BYTES);
    char *ns = realloc(c->out, c->out_len + (size_t)n);
    if (ns) {
      memcpy(ns + c->out_len, note, (size_t)n);
      c->out = ns;
      c->out_len += (size_t)n;
    }
  }
  l->printed = c->out;
  l->printed_len = c->out_len;
  c->out = NULL;
}
