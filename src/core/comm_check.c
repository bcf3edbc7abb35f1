/*
 * comm_check.c -- the check of a job's collectives against a distributed
 * hang (see comm_check.h): the rank's side (publishing, the verdict kept,
 * the NCCL communicator aborted) and rank 0's comparison, one thread per
 * rank on its store connection(s).
 */
#include "comm_check_internal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "device.h"
#include "dtype.h"
#include "nccl_table.h"
#include "runtime.h"
#include "site.h"
#include "store.h"

#define GRACE_S 5.0      /* after a fault: how long a verdict that explains it is waited for */
#define MISMATCH_WAIT_S 1.0 /* a mismatch: how long the ranks not yet there are waited for */

double gl_check_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static void put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> 8 * i);
}
static uint64_t get64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

static int grow(uint8_t **b, size_t *cap, size_t need) {
  if (need <= *cap) return 0;
  size_t n = *cap ? *cap : 4096;
  while (n < need) n *= 2;
  uint8_t *p = realloc(*b, n);
  if (!p) return -1;
  *b = p;
  *cap = n;
  return 0;
}

/* Keep the verdict (the first wins) and abort the NCCL communicator, unless
 * the main thread is in its calls (then it aborts it when it leaves). */
static void local_verdict(gl_comm_check *k, const char *text) {
  gl_comm *c = k->c;
  pthread_mutex_lock(&k->mu);
  if (!k->has_verdict) {
    snprintf(k->verdict, sizeof k->verdict, "%s", text);
    k->has_verdict = 1;
  }
  struct ncclComm *nc = NULL;
  if (!k->in_nccl) nc = c->nc[0], c->nc[0] = NULL;
  pthread_cond_broadcast(&k->cv);
  pthread_mutex_unlock(&k->mu);
  if (nc) {
    gl_set_ctx(c->devs[0]);
    gld_nc.ncclCommAbort(nc); /* its calls not yet complete end: no wait goes on forever */
  }
}

void gl_check_describe(const gl_check_call *r, char *out, size_t n) {
  const char *nl = strchr(r->text, '\n');
  int wl = nl ? (int)(nl - r->text) : (int)strlen(r->text);
  const char *at = nl ? nl + 1 : "?";
  char args[120] = "";
  const char *dt = r->dtype >= 0 && r->dtype < GL_NDTYPES ? gl_dtypes[r->dtype].name : "?";
  if (r->kind == GL_CHECK_SEND || r->kind == GL_CHECK_RECV)
    snprintf(args, sizeof args, " (%llu %s %s rank %d)", (unsigned long long)r->count, dt,
             r->kind == GL_CHECK_SEND ? "to" : "from", r->root);
  else if (r->kind != GL_CHECK_BARRIER) {
    size_t k = (size_t)snprintf(args, sizeof args, " (%llu %s", (unsigned long long)r->count, dt);
    if (r->op >= 0) k += (size_t)snprintf(args + k, sizeof args - k, ", %s", gl_comm_op_name(r->op));
    if (r->root >= 0) k += (size_t)snprintf(args + k, sizeof args - k, ", root %d", r->root);
    snprintf(args + k, sizeof args - k, ")");
  }
  snprintf(out, n, "%.*s%s at %s", wl, r->text, args, at);
}

static int same(const gl_check_call *a, const gl_check_call *b) {
  return a->kind == b->kind && a->dtype == b->dtype && a->count == b->count && a->op == b->op && a->root == b->root;
}

/* "rank 2" or "ranks 0, 1 and 3" (at most 8 named): the ranks with pick(r); returns how many. */
static int ranks_text(gl_comm_check *k, int (*pick)(gl_comm_check *, int, uint64_t), uint64_t seq, char *out,
                       size_t n) {
  int total = 0, named = 0;
  for (int r = 0; r < k->size; r++) total += pick(k, r, seq);
  size_t w = (size_t)snprintf(out, n, "rank%s ", total == 1 ? "" : "s");
  for (int r = 0; r < k->size && w < n; r++) {
    if (!pick(k, r, seq)) continue;
    if (named == 8) {
      snprintf(out + w, n - w, " and %d more", total - named);
      return total;
    }
    w += (size_t)snprintf(out + w, n - w, "%s%d", named == 0 ? "" : named == total - 1 ? " and " : ", ", r);
    named++;
  }
  return total;
}
static int reached(gl_comm_check *k, int r, uint64_t seq) { return k->rs[r].next > seq; }

static void last_of(gl_comm_check *k, int r, char *out, size_t n) {
  if (k->rs[r].next == 0) {
    snprintf(out, n, "none");
    return;
  }
  char d[400];
  gl_check_describe(&k->rs[r].last, d, sizeof d);
  snprintf(out, n, "%s, collective %llu", d, (unsigned long long)k->rs[r].next);
}

void gl_check_decide(gl_comm_check *k, const char *text) {
  k->decided = 1;
  uint8_t msg[GL_STORE_HEADER + GL_STORE_MAX_PAYLOAD];
  size_t len = strlen(text) < GL_CHECK_VERDICT ? strlen(text) : GL_CHECK_VERDICT - 1;
  size_t n = gl_store_format(msg, GL_STORE_VERDICT, k->size, 0, text, (uint32_t)len);
  for (int r = 1; r < k->size; r++) { /* every rank told first: rank 0's abort may wait for them to leave */
    int fd = gl_store_conn_fd(k->s, r);
    double deadline = gl_check_now() + 2;
    for (size_t off = 0; fd >= 0 && off < n && gl_check_now() < deadline;) {
      ssize_t w = send(fd, msg + off, n - off, MSG_NOSIGNAL);
      if (w > 0) off += (size_t)w;
      else if (w < 0 && (errno == EAGAIN || errno == EINTR)) poll(&(struct pollfd){fd, POLLOUT, 0}, 1, 100);
      else break;
    }
  }
  local_verdict(k, text);
}

static gl_check_entry *entry_at(gl_comm_check *k, uint64_t seq) {
  return seq >= k->base && seq - k->base < k->nents - k->head ? &k->ents[k->head + (seq - k->base)] : NULL;
}

/* A rank gone while others wait in a collective it has not reached: the verdict. */
static void check_gone(gl_comm_check *k) {
  for (int r = 0; r < k->size && !k->decided; r++) {
    gl_check_entry *e = k->rs[r].gone ? entry_at(k, k->rs[r].next) : NULL;
    if (!e) continue;
    char d[400], last[500], who[200], text[2400];
    gl_check_describe(&e->r, d, sizeof d);
    last_of(k, r, last, sizeof last);
    int nw = ranks_text(k, reached, e->r.seq, who, sizeof who);
    snprintf(text, sizeof text, "rank %d %s (its last collective: %s), but %s wait%s for it in %s (collective %llu of "
                                "this communicator)",
             r, k->rs[r].gone == 1 ? "ended: its process's connection to the job's store closed"
                                   : "closed the communicator (comm:close, or at its process's end)",
             last, who, nw == 1 ? "s" : "", d, (unsigned long long)e->r.seq + 1);
    gl_check_decide(k, text);
  }
}

static void on_call(gl_comm_check *k, int r, const gl_check_call *x) {
  gl_check_rank *st = &k->rs[r];
  if (k->decided || st->gone) return;
  if (x->kind == GL_CHECK_SEND || x->kind == GL_CHECK_RECV) {
    gl_check_p2p_call(k, r, x);
    return;
  }
  if (x->seq != st->next) return;
  st->last_call = *x, st->has_call = 1;
  st->next++;
  st->last = *x;
  if (k->mismatch) {
    if (x->seq == k->mseq) k->mrec[r] = *x, k->mhas[r] = 1;
    return;
  }
  gl_check_entry *e = entry_at(k, x->seq);
  if (!e) {
    if (x->seq != k->base + (k->nents - k->head)) return; /* cannot be: ranks publish in order */
    if (k->head > 1024 && k->head * 2 > k->nents) {
      memmove(k->ents, k->ents + k->head, (k->nents - k->head) * sizeof *k->ents);
      k->nents -= k->head;
      k->head = 0;
    }
    if (k->nents == k->capents) {
      size_t cap = k->capents ? 2 * k->capents : 64;
      gl_check_entry *p = realloc(k->ents, cap * sizeof *p);
      if (!p) return;
      k->ents = p, k->capents = cap;
    }
    e = &k->ents[k->nents++];
    *e = (gl_check_entry){*x, r, 0, gl_check_now()};
  } else if (!same(&e->r, x)) {
    k->mismatch = 1, k->mseq = x->seq, k->mt0 = gl_check_now();
    for (int q = 0; q < k->size; q++)
      if (q != r && k->rs[q].next > x->seq) k->mrec[q] = e->r, k->mhas[q] = 1; /* they matched the first */
    k->mrec[r] = *x, k->mhas[r] = 1;
    return;
  }
  e->arrived++;
  while (k->head < k->nents && k->ents[k->head].arrived == k->size) k->head++, k->base++;
  if (k->ngone) check_gone(k);
}

static int not_reached(gl_comm_check *k, int r, uint64_t seq) { return k->rs[r].next <= seq; }

/* ranks_text's pick: rank r made the call that rank `group` made */
static int same_call(gl_comm_check *k, int r, uint64_t group) {
  return k->mhas[r] && same(&k->mrec[r], &k->mrec[group]);
}

/* A mismatch: once every rank still there reached it, or after MISMATCH_WAIT_S, the
 * verdict: the largest group of ranks with one call against the next. -1, or the ms left. */
static int check_mismatch(gl_comm_check *k) {
  if (!k->mismatch || k->decided) return -1;
  int missing = 0;
  for (int r = 0; r < k->size; r++) missing += !k->mhas[r] && !k->rs[r].gone;
  double left = k->mt0 + MISMATCH_WAIT_S - gl_check_now();
  if (missing && left > 0) return (int)(left * 1000) + 1;
  int big = -1, nbig = 0, other = -1;
  for (int r = 0; r < k->size; r++) {
    if (!k->mhas[r]) continue;
    int n = 0;
    for (int q = 0; q < k->size; q++) n += k->mhas[q] && same(&k->mrec[q], &k->mrec[r]);
    if (n > nbig) big = r, nbig = n;
  }
  for (int r = 0; r < k->size && other < 0; r++)
    if (k->mhas[r] && !same(&k->mrec[r], &k->mrec[big])) other = r;
  char mine[400], theirs[400], who_m[200], who_t[200], text[2400];
  gl_check_describe(&k->mrec[other], mine, sizeof mine);
  gl_check_describe(&k->mrec[big], theirs, sizeof theirs);
  ranks_text(k, same_call, (uint64_t)other, who_m, sizeof who_m);
  ranks_text(k, same_call, (uint64_t)big, who_t, sizeof who_t);
  snprintf(text, sizeof text, "%s on %s does not match %s on %s (collective %llu of this communicator)", mine, who_m,
           theirs, who_t, (unsigned long long)k->mseq + 1);
  gl_check_decide(k, text);
  return -1;
}

/* The oldest collective not reached by every rank: past the timeout, the
 * verdict; else the milliseconds left (-1: none waits). */
static int check_coll_timeout(gl_comm_check *k) {
  if (k->mismatch) return check_mismatch(k);
  if (k->decided || k->head == k->nents) return -1;
  gl_check_entry *e = &k->ents[k->head];
  double left = e->t0 + k->timeout_s - gl_check_now();
  if (left > 0) return left > 1e6 ? 1000000000 : (int)(left * 1000) + 1;
  char d[400], who[200], text[2400];
  gl_check_describe(&e->r, d, sizeof d);
  ranks_text(k, reached, e->r.seq, who, sizeof who);
  size_t w = (size_t)snprintf(text, sizeof text, "%s (collective %llu of this communicator) did not complete within "
                                                 "%g seconds: %s reached it",
                              d, (unsigned long long)e->r.seq + 1, k->timeout_s, who);
  int named = 0;
  for (int r = 0; r < k->size && w < sizeof text; r++) {
    if (!not_reached(k, r, e->r.seq)) continue;
    if (named++ == 8) {
      snprintf(text + w, sizeof text - w, "; and more");
      break;
    }
    char last[500];
    last_of(k, r, last, sizeof last);
    w += (size_t)snprintf(text + w, sizeof text - w, "; rank %d %s (its last collective: %s)", r,
                          k->rs[r].gone == 1 ? "ended (its process's connection to the job's store closed)"
                          : k->rs[r].gone == 2 ? "closed the communicator"
                                               : "has not reached it",
                          last);
  }
  gl_check_decide(k, text);
  return -1;
}

/* The collectives' and the sends' and recvs': the soonest wait (ms), or -1. */
static int check_timeout(gl_comm_check *k) {
  int a = check_coll_timeout(k), b = k->decided ? -1 : gl_check_p2p_timeout(k);
  return a < 0 ? b : b < 0 || a < b ? a : b;
}

static int parse_call(const gl_store_msg *m, gl_check_call *x) {
  if (m->len < GL_STORE_CALL_FIXED) return -1;
  const uint8_t *p = m->payload;
  x->seq = get64(p);
  x->count = get64(p + 8);
  x->kind = (int)(int32_t)(uint32_t)get64(p + 16);
  x->dtype = (int)(int32_t)(uint32_t)(get64(p + 16) >> 32);
  x->op = (int)(int32_t)(uint32_t)get64(p + 24);
  x->root = (int)(int32_t)(uint32_t)(get64(p + 24) >> 32);
  size_t n = m->len - GL_STORE_CALL_FIXED < GL_CHECK_TEXT - 1 ? m->len - GL_STORE_CALL_FIXED : GL_CHECK_TEXT - 1;
  memcpy(x->text, p + GL_STORE_CALL_FIXED, n);
  x->text[n] = '\0';
  return 0;
}

/* Rank 0: its own published calls (formatted as messages) */
static void feed_own(gl_comm_check *k, const uint8_t *b, size_t n) {
  while (n) {
    gl_store_msg m;
    const char *why;
    long used = gl_store_parse(b, n, k->size, &m, &why);
    if (used <= 0) return;
    gl_check_call x;
    if (m.type == GL_STORE_CALL && parse_call(&m, &x) == 0) on_call(k, 0, &x);
    b += used;
    n -= (size_t)used;
  }
}

/* Rank 0: what rank r sent */
static void read_rank(gl_comm_check *k, int r) {
  for (;;) {
    gl_store_msg m;
    const char *why;
    int got = gl_store_conn_next(k->s, r, &m, &why);
    if (got == 0) return;
    gl_check_call x;
    if (got == 1 && m.type == GL_STORE_CALL && parse_call(&m, &x) == 0) {
      on_call(k, r, &x);
      continue;
    }
    if (got == 1 && m.type != GL_STORE_BYE) continue;
    if (got == -2) fprintf(stderr, "gpulua: the store at %s dropped rank %d's connection: %s\n", gl_store_addr(k->s), r, why);
    k->rs[r].gone = got == 1 ? 2 : 1;
    k->ngone++;
    gl_store_conn_close(k->s, r);
    if (!k->mismatch) check_gone(k);
    gl_check_p2p_gone(k);
    return;
  }
}

/* The other ranks: what rank 0 sent */
static void read_root(gl_comm_check *k) {
  for (;;) {
    gl_store_msg m;
    const char *why;
    int got = gl_store_conn_next(k->s, 0, &m, &why);
    if (got == 0) return;
    if (got == 1 && m.type == GL_STORE_VERDICT) {
      char text[GL_CHECK_VERDICT];
      size_t n = m.len < GL_CHECK_VERDICT - 1 ? m.len : GL_CHECK_VERDICT - 1;
      memcpy(text, m.payload, n);
      text[n] = '\0';
      local_verdict(k, text);
      continue;
    }
    if (got == 1) continue;
    gl_store_conn_close(k->s, 0); /* rank 0 closed (or ended): nothing is checked any more */
    return;
  }
}

/* The other ranks: what is to send, sent as far as the socket takes it (wait: until all is, at most 2 s) */
static void flush(gl_comm_check *k, int wait) {
  int fd = gl_store_conn_fd(k->s, 0);
  size_t off = 0;
  double deadline = gl_check_now() + 2;
  while (fd >= 0 && off < k->nsnd) {
    ssize_t w = send(fd, k->snd + off, k->nsnd - off, MSG_NOSIGNAL);
    if (w > 0) off += (size_t)w;
    else if (w < 0 && errno == EINTR) continue;
    else if (w < 0 && errno == EAGAIN && wait && gl_check_now() < deadline) poll(&(struct pollfd){fd, POLLOUT, 0}, 1, 100);
    else if (w < 0 && errno == EAGAIN) break;
    else {
      gl_store_conn_close(k->s, 0);
      off = k->nsnd;
    }
  }
  if (off > 0 && off < k->nsnd) memmove(k->snd, k->snd + off, k->nsnd - off); /* none sent, or all: no move */
  k->nsnd -= off;
}

static void *check_main(void *arg) {
  gl_comm_check *k = arg;
  int nfd = k->rank == 0 ? k->size : 2;
  struct pollfd *p = calloc((size_t)nfd, sizeof *p);
  uint8_t *mine = NULL;
  size_t capmine = 0;
  for (int stop = 0; !stop && p;) {
    int np = 0, wait_ms = k->rank == 0 ? check_timeout(k) : -1;
    p[np++] = (struct pollfd){k->efd, POLLIN, 0};
    for (int r = k->rank == 0 ? 1 : 0; r < (k->rank == 0 ? k->size : 1); r++) {
      int fd = gl_store_conn_fd(k->s, r);
      if (fd >= 0) p[np++] = (struct pollfd){fd, (short)(POLLIN | (k->rank && k->nsnd ? POLLOUT : 0)), 0};
    }
    if (poll(p, (nfds_t)np, wait_ms) < 0 && errno != EINTR) break;
    uint64_t v;
    if (p[0].revents && read(k->efd, &v, sizeof v) < 0) (void)0;
    pthread_mutex_lock(&k->mu); /* the published calls taken */
    uint8_t *t = mine;
    size_t tc = capmine, got = k->nout;
    mine = k->out, capmine = k->capout;
    k->out = t, k->capout = tc, k->nout = 0;
    k->wake_pending = 0;
    stop = k->stop;
    pthread_mutex_unlock(&k->mu);
    if (k->rank == 0) {
      feed_own(k, mine, got);
      for (int r = 1; r < k->size; r++)
        if (gl_store_conn_fd(k->s, r) >= 0) read_rank(k, r);
      check_timeout(k);
      continue;
    }
    if (got && grow(&k->snd, &k->capsnd, k->nsnd + got) == 0) {
      memcpy(k->snd + k->nsnd, mine, got);
      k->nsnd += got;
    }
    if (stop && grow(&k->snd, &k->capsnd, k->nsnd + GL_STORE_HEADER + 8) == 0) {
      uint8_t n[8];
      put64(n, k->seq);
      k->nsnd += gl_store_format(k->snd + k->nsnd, GL_STORE_BYE, k->size, k->rank, n, 8);
    }
    flush(k, stop);
    if (gl_store_conn_fd(k->s, 0) >= 0) read_root(k);
  }
  free(mine);
  free(p);
  return NULL;
}

int gl_comm_check_start(gl_comm *c, gl_store *s, double timeout_s, char *err, size_t errlen) {
  gl_comm_check *k = calloc(1, sizeof *k);
  if (!k) return snprintf(err, errlen, "out of memory"), -1;
  k->c = c, k->s = s, k->rank = gl_store_rank(s), k->size = gl_store_size(s), k->timeout_s = timeout_s;
  k->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (k->rank == 0) {
    k->rs = calloc((size_t)k->size, sizeof *k->rs);
    k->mrec = calloc((size_t)k->size, sizeof *k->mrec);
    k->mhas = calloc((size_t)k->size, 1);
    if (!k->mrec || !k->mhas) free(k->rs), k->rs = NULL;
  }
  k->p2p_seq = calloc(2 * (size_t)k->size, sizeof *k->p2p_seq);
  for (int r = 0; r < (k->rank == 0 ? k->size : 1); r++)
    if (r != 0 || k->rank != 0) gl_store_conn_fd(s, r); /* non-blocking from now on */
  if (k->efd < 0 || (k->rank == 0 && !k->rs) || !k->p2p_seq) {
    if (k->efd >= 0) close(k->efd);
    free(k->rs), free(k->mrec), free(k->mhas), free(k->p2p_seq);
    free(k);
    return snprintf(err, errlen, "cannot start the check of its collectives: %s", strerror(errno)), -1;
  }
  pthread_mutex_init(&k->mu, NULL);
  pthread_cond_init(&k->cv, NULL);
  int e = pthread_create(&k->th, NULL, check_main, k);
  if (e != 0) {
    pthread_mutex_destroy(&k->mu);
    pthread_cond_destroy(&k->cv);
    close(k->efd);
    free(k->rs), free(k->mrec), free(k->mhas), free(k->p2p_seq);
    free(k);
    return snprintf(err, errlen, "cannot start the check of its collectives: %s", strerror(e)), -1;
  }
  c->check = k;
  return 0;
}

void gl_check_enqueue(gl_comm_check *k, const gl_check_call *x, const char *what, int loc) {
  uint8_t msg[GL_STORE_HEADER + GL_STORE_CALL_FIXED + GL_CHECK_TEXT], p[GL_STORE_CALL_FIXED + GL_CHECK_TEXT];
  put64(p, x->seq);
  put64(p + 8, x->count);
  put64(p + 16, (uint64_t)(uint32_t)x->kind | (uint64_t)(uint32_t)x->dtype << 32);
  put64(p + 24, (uint64_t)(uint32_t)x->op | (uint64_t)(uint32_t)x->root << 32);
  int n = snprintf((char *)p + GL_STORE_CALL_FIXED, GL_CHECK_TEXT, "%s\n%s", what, gl_loc_text(k->c->rt, loc));
  if (n > GL_CHECK_TEXT - 1) n = GL_CHECK_TEXT - 1;
  size_t len = gl_store_format(msg, GL_STORE_CALL, k->size, k->rank, p, GL_STORE_CALL_FIXED + (uint32_t)n);
  pthread_mutex_lock(&k->mu);
  int wake = 0;
  if (grow(&k->out, &k->capout, k->nout + len) == 0) {
    memcpy(k->out + k->nout, msg, len);
    k->nout += len;
    wake = !k->wake_pending;
    k->wake_pending = 1;
  }
  pthread_mutex_unlock(&k->mu);
  uint64_t one = 1;
  if (wake && write(k->efd, &one, sizeof one) < 0) (void)0;
}

void gl_comm_check_publish(gl_comm *c, int kind, int dtype, size_t count, int op, int root, const char *what,
                           gl_site *site) {
  gl_comm_check *k = c->check;
  gl_check_call x = {.seq = k->seq++, .count = count, .kind = kind, .dtype = dtype, .op = op, .root = root};
  gl_check_enqueue(k, &x, what, gl_site_loc(c->rt, site));
}

int gl_comm_check_enter(gl_comm *c, const char *what) {
  gl_comm_check *k = c->check;
  pthread_mutex_lock(&k->mu);
  int v = k->has_verdict;
  if (!v) k->in_nccl = 1;
  pthread_mutex_unlock(&k->mu);
  if (!v) return 0;
  gl_comm_check_failed(c);
  return gl_fail(c->rt, "%s: %s", what, gl_buf_str(&c->poison));
}

void gl_comm_check_leave(gl_comm *c) {
  gl_comm_check *k = c->check;
  pthread_mutex_lock(&k->mu);
  k->in_nccl = 0;
  struct ncclComm *nc = NULL;
  if (k->has_verdict) nc = c->nc[0], c->nc[0] = NULL; /* came meanwhile: aborted here */
  pthread_mutex_unlock(&k->mu);
  if (nc) {
    gl_set_ctx(c->devs[0]);
    gld_nc.ncclCommAbort(nc);
  }
}

int gl_comm_check_failed(gl_comm *c) {
  gl_comm_check *k = c->check;
  if (!k) return 0;
  if (k->applied) return 1;
  pthread_mutex_lock(&k->mu);
  int v = k->has_verdict;
  pthread_mutex_unlock(&k->mu);
  if (!v) return 0;
  k->applied = 1;
  gl_buf_free(&c->poison);
  gl_buf_printf(&c->poison, "%s", k->verdict); /* written once, before has_verdict */
  gl_device *d = c->devs[0];
  if (!gl_device_poisoned(d)) gl_buf_printf(&d->poison, "%s", k->verdict);
  c->inflight = 0;
  return 1;
}

int gl_comm_check_await(gl_comm *c) {
  gl_comm_check *k = c->check;
  if (!k) return 0;
  double wait = k->timeout_s < GRACE_S ? k->timeout_s : GRACE_S;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += (time_t)wait;
  until.tv_nsec += (long)((wait - (double)(time_t)wait) * 1e9);
  if (until.tv_nsec >= 1000000000) until.tv_sec++, until.tv_nsec -= 1000000000;
  pthread_mutex_lock(&k->mu);
  while (!k->has_verdict && !k->stop)
    if (pthread_cond_timedwait(&k->cv, &k->mu, &until) == ETIMEDOUT) break;
  pthread_mutex_unlock(&k->mu);
  return gl_comm_check_failed(c);
}

void gl_comm_check_stop(gl_comm *c) {
  gl_comm_check *k = c->check;
  if (!k) return;
  pthread_mutex_lock(&k->mu);
  k->stop = 1;
  pthread_mutex_unlock(&k->mu);
  uint64_t one = 1;
  if (write(k->efd, &one, sizeof one) < 0) (void)0;
  pthread_join(k->th, NULL);
  gl_comm_check_failed(c); /* a verdict not yet seen: c and its device poisoned with it */
  c->check = NULL; /* the thread aborted c->nc[0] (NULL now) or left it */
  close(k->efd);
  pthread_mutex_destroy(&k->mu);
  pthread_cond_destroy(&k->cv);
  free(k->out);
  free(k->snd);
  free(k->rs);
  free(k->mrec);
  free(k->mhas);
  free(k->ents);
  free(k->posts);
  free(k->p2p_seq);
  free(k);
}
