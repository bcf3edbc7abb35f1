/*
 * store.c -- the job's store over TCP (see store.h): the message format and
 * its parser, rank 0's listener and the other ranks' connections.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4 */
#endif
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define VERSION 1
#define MAX_PENDING 64 /* connections that have not said who they are */

/* ---- messages ----------------------------------------------------------- */

static uint32_t get32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i);
}

long gl_store_parse(const uint8_t *buf, size_t n, int size, gl_store_msg *m, const char **why) {
  static const char magic[4] = {'G', 'L', 'S', 'T'};
  /* what has arrived is checked at once: garbage is refused before a whole header */
  for (size_t i = 0; i < n && i < 4; i++)
    if (buf[i] != (uint8_t)magic[i]) return *why = "not a gpulua store message (no GLST magic)", -1;
  if (n > 4 && buf[4] != VERSION) return *why = "a message of another version of the store's protocol", -1;
  if (n < GL_STORE_HEADER) return 0;
  int type = buf[5];
  if (type < GL_STORE_HELLO || type > GL_STORE_BYE || buf[6] || buf[7])
    return *why = "a message of an unknown type", -1;
  uint32_t sz = get32(buf + 8), rank = get32(buf + 12), len = get32(buf + 16);
  if (sz != (uint32_t)size) return *why = "a message of another job (its size differs)", -1;
  if (rank >= sz) return *why = "a message from a rank outside the job", -1;
  if (len > GL_STORE_MAX_PAYLOAD) return *why = "a message longer than the store takes", -1;
  if ((type == GL_STORE_HELLO || type == GL_STORE_RELEASE) && len != 0)
    return *why = "a hello or release message with a payload", -1;
  if ((type == GL_STORE_BARRIER || type == GL_STORE_BYE) && len != 8)
    return *why = "a barrier or bye message without its 8-byte number", -1;
  if (type == GL_STORE_CALL && len < GL_STORE_CALL_FIXED) return *why = "a call message shorter than its numbers", -1;
  if (type == GL_STORE_VERDICT && len == 0) return *why = "a verdict without its text", -1;
  if (n < GL_STORE_HEADER + (size_t)len) return 0;
  *m = (gl_store_msg){type, (int)rank, len, buf + GL_STORE_HEADER};
  return GL_STORE_HEADER + (long)len;
}

size_t gl_store_format(uint8_t *out, int type, int size, int rank, const void *payload, uint32_t len) {
  memcpy(out, "GLST", 4);
  out[4] = VERSION;
  out[5] = (uint8_t)type;
  out[6] = out[7] = 0;
  put32(out + 8, (uint32_t)size);
  put32(out + 12, (uint32_t)rank);
  put32(out + 16, len);
  if (len) memcpy(out + GL_STORE_HEADER, payload, len);
  return GL_STORE_HEADER + len;
}

/* ---- connections -------------------------------------------------------- */

typedef struct conn {
  int fd;
  size_t have;
  long taken; /* gl_store_conn_next: the bytes of the message it returned */
  uint8_t buf[GL_STORE_HEADER + GL_STORE_MAX_PAYLOAD];
  char peer[80];
} conn;

struct gl_store {
  int size, rank;
  double timeout_s;
  char addr[300];
  int listen_fd;     /* rank 0 */
  conn *ranks;       /* rank 0: per rank (fd -1: not joined); others: ranks[0] is the link to rank 0 */
  conn pending[MAX_PENDING];
  int joined;        /* rank 0: ranks that said hello */
  uint64_t barriers; /* barriers passed */
};

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static int ms_left(double deadline) {
  double left = deadline - now_s();
  return left <= 0 ? 0 : left > 1e6 ? 1000000000 : (int)(left * 1000) + 1;
}

static int send_all(int fd, const uint8_t *p, size_t n) {
  while (n) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int send_msg(int fd, int type, int size, int rank, const void *payload, uint32_t len) {
  uint8_t out[GL_STORE_HEADER + GL_STORE_MAX_PAYLOAD];
  return send_all(fd, out, gl_store_format(out, type, size, rank, payload, len));
}

static void conn_close(conn *c) {
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
  c->have = 0;
  c->taken = 0;
}

/* Read what is there into c (after poll said so). 1 a message in m (taken
 * off the buffer by the next read), 0 none yet, -1 the peer closed or failed
 * (*why NULL), -2 malformed (*why says how). */
static int conn_read(conn *c, int size, gl_store_msg *m, long *taken, const char **why) {
  if (*taken) {
    memmove(c->buf, c->buf + *taken, c->have - (size_t)*taken);
    c->have -= (size_t)*taken;
    *taken = 0;
  }
  *why = NULL;
  long k = gl_store_parse(c->buf, c->have, size, m, why);
  if (k == 0) {
    ssize_t r = recv(c->fd, c->buf + c->have, sizeof c->buf - c->have, 0);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) return 0;
    if (r <= 0) return -1;
    c->have += (size_t)r;
    k = gl_store_parse(c->buf, c->have, size, m, why);
  }
  if (k < 0) return -2;
  if (k > 0) *taken = k;
  return k > 0;
}

static void drop(gl_store *s, conn *c, const char *why) {
  fprintf(stderr, "gpulua: the store at %s dropped a connection from %s: %s\n", s->addr, c->peer, why);
  conn_close(c);
}

static void peer_name(const struct sockaddr_storage *sa, socklen_t n, char *out, size_t outlen) {
  char h[NI_MAXHOST], p[NI_MAXSERV];
  if (getnameinfo((const struct sockaddr *)sa, n, h, sizeof h, p, sizeof p, NI_NUMERICHOST | NI_NUMERICSERV) == 0)
    snprintf(out, outlen, "%.64s:%.8s", h, p);
  else
    snprintf(out, outlen, "an unknown address");
}

static gl_store *store_new(const char *host, int port, int size, int rank, double timeout_s) {
  gl_store *s = calloc(1, sizeof *s);
  conn *ranks = calloc(rank == 0 ? (size_t)size : 1, sizeof *ranks);
  if (!s || !ranks) {
    free(s);
    free(ranks);
    return NULL;
  }
  s->ranks = ranks;
  s->size = size;
  s->rank = rank;
  s->timeout_s = timeout_s;
  s->listen_fd = -1;
  for (int i = 0; i < (rank == 0 ? size : 1); i++) s->ranks[i].fd = -1;
  for (int i = 0; i < MAX_PENDING; i++) s->pending[i].fd = -1;
  snprintf(s->addr, sizeof s->addr, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
  return s;
}

const char *gl_store_addr(const gl_store *s) { return s->addr; }
int gl_store_rank(const gl_store *s) { return s->rank; }
int gl_store_size(const gl_store *s) { return s->size; }

static conn *conn_of(gl_store *s, int r) {
  return s->rank == 0 ? (r > 0 && r < s->size ? &s->ranks[r] : NULL) : r == 0 ? &s->ranks[0] : NULL;
}

int gl_store_conn_fd(gl_store *s, int r) {
  conn *c = conn_of(s, r);
  if (!c || c->fd < 0) return -1;
  int fl = fcntl(c->fd, F_GETFL);
  if (fl >= 0 && !(fl & O_NONBLOCK)) fcntl(c->fd, F_SETFL, fl | O_NONBLOCK);
  return c->fd;
}

int gl_store_conn_next(gl_store *s, int r, gl_store_msg *m, const char **why) {
  conn *c = conn_of(s, r);
  if (!c || c->fd < 0) return -1;
  *why = NULL;
  int k = conn_read(c, s->size, m, &c->taken, why);
  return k == -2 && !*why ? -1 : k;
}

void gl_store_conn_close(gl_store *s, int r) {
  conn *c = conn_of(s, r);
  if (c) conn_close(c);
}

void gl_store_close(gl_store *s) {
  if (!s) return;
  if (s->listen_fd >= 0) close(s->listen_fd);
  for (int i = 0; i < (s->rank == 0 ? s->size : 1); i++) conn_close(&s->ranks[i]);
  for (int i = 0; i < MAX_PENDING; i++) conn_close(&s->pending[i]);
  free(s->ranks);
  free(s);
}

/* ---- rank 0 ------------------------------------------------------------- */

int gl_store_listen(const char *host, int port, int size, double timeout_s, gl_store **out, int *bound, char *err,
                    size_t errlen) {
  gl_store *s = store_new(host, port, size, 0, timeout_s);
  if (!s) return snprintf(err, errlen, "out of memory"), -1;
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai = NULL;
  char ps[16];
  snprintf(ps, sizeof ps, "%d", port);
  int g = getaddrinfo(host, ps, &hints, &ai);
  if (g != 0) {
    snprintf(err, errlen, "cannot listen on %s: %s", s->addr, gai_strerror(g));
    gl_store_close(s);
    return -1;
  }
  int e = 0;
  for (struct addrinfo *a = ai; a && s->listen_fd < 0; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol), one = 1;
    if (fd < 0) {
      e = errno;
      continue;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 128) != 0) {
      e = errno;
      close(fd);
      continue;
    }
    s->listen_fd = fd;
  }
  freeaddrinfo(ai);
  if (s->listen_fd < 0) {
    snprintf(err, errlen, "cannot listen on %s: %s%s", s->addr, strerror(e),
             e == EADDRNOTAVAIL ? " (the address must be rank 0's own)" : e == EADDRINUSE ? " (pick another port)" : "");
    gl_store_close(s);
    return -1;
  }
  struct sockaddr_storage sa;
  socklen_t n = sizeof sa;
  if (port == 0 && getsockname(s->listen_fd, (struct sockaddr *)&sa, &n) == 0) { /* any free one: which */
    port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
                                          : ((struct sockaddr_in *)&sa)->sin_port);
    snprintf(s->addr, sizeof s->addr, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
  }
  if (bound) *bound = port;
  *out = s;
  return 0;
}

static void accept_one(gl_store *s) {
  struct sockaddr_storage sa;
  socklen_t n = sizeof sa;
  int fd = accept4(s->listen_fd, (struct sockaddr *)&sa, &n, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) return;
  for (int i = 0; i < MAX_PENDING; i++)
    if (s->pending[i].fd < 0) {
      conn *c = &s->pending[i];
      c->fd = fd;
      c->have = 0;
      peer_name(&sa, n, c->peer, sizeof c->peer);
      return;
    }
  close(fd); /* too many strangers at once */
}

/* A pending connection's message: a hello makes it its rank's; anything else drops it. */
static void greet(gl_store *s, conn *c, const void *payload, uint32_t n) {
  gl_store_msg m;
  long taken = 0;
  const char *why;
  int r = conn_read(c, s->size, &m, &taken, &why);
  if (r == 0) return;
  if (r == -1) return drop(s, c, "it closed before saying which rank it is");
  if (r == -2) return drop(s, c, why);
  if (m.type != GL_STORE_HELLO || m.rank == 0) return drop(s, c, "its first message is not a rank's hello");
  conn *slot = &s->ranks[m.rank];
  if (slot->fd >= 0) return drop(s, c, "its rank has joined already (two processes with one rank?)");
  if (c->have != (size_t)taken) return drop(s, c, "it sent more than its hello");
  if (send_msg(c->fd, GL_STORE_ID, s->size, 0, payload, n) != 0) return drop(s, c, "it could not be answered");
  *slot = *c;
  slot->have = 0;
  c->fd = -1;
  c->have = 0;
  s->joined++;
}

/* The ranks missing (fd < 0, or not flagged in `seen`), as "1, 3 and 4" (at most 8 named). */
static void missing(const gl_store *s, const char *seen, char *out, size_t outlen) {
  size_t k = 0;
  int named = 0, total = 0;
  out[0] = '\0';
  for (int r = 1; r < s->size; r++)
    if (seen ? !seen[r] : s->ranks[r].fd < 0) total++;
  for (int r = 1; r < s->size && k < outlen; r++)
    if (seen ? !seen[r] : s->ranks[r].fd < 0) {
      if (named == 8) {
        k += (size_t)snprintf(out + k, outlen - k, " and %d more", total - named);
        break;
      }
      k += (size_t)snprintf(out + k, outlen - k, "%s%d", named == 0 ? "" : named == total - 1 ? " and " : ", ", r);
      named++;
    }
}

/* One round of poll over the listener, the pending connections and (with
 * `on_rank`) the ranks' connections. */
static int serve_round(gl_store *s, double deadline, const void *payload, uint32_t n,
                       int (*on_rank)(gl_store *, int, void *), void *ud) {
  size_t cap = 1 + MAX_PENDING + (size_t)s->size;
  struct pollfd *p = malloc(cap * sizeof *p);
  int np = 0, *who = malloc(cap * sizeof *who);
  if (!p || !who) {
    free(p);
    free(who);
    errno = ENOMEM;
    return -1;
  }
  p[np] = (struct pollfd){s->listen_fd, POLLIN, 0}, who[np++] = -1;
  for (int i = 0; i < MAX_PENDING; i++)
    if (s->pending[i].fd >= 0) p[np] = (struct pollfd){s->pending[i].fd, POLLIN, 0}, who[np++] = 100000 + i;
  for (int r = 1; on_rank && r < s->size; r++)
    if (s->ranks[r].fd >= 0) p[np] = (struct pollfd){s->ranks[r].fd, POLLIN, 0}, who[np++] = r;
  int k = poll(p, (nfds_t)np, ms_left(deadline)), rc = k < 0 && errno != EINTR ? -1 : 0;
  for (int i = 0; k > 0 && rc == 0 && i < np; i++) {
    if (!p[i].revents) continue;
    if (who[i] < 0) accept_one(s);
    else if (who[i] >= 100000) greet(s, &s->pending[who[i] - 100000], payload, n);
    else rc = on_rank(s, who[i], ud);
  }
  free(p);
  free(who);
  return rc;
}

int gl_store_serve(gl_store *s, const void *payload, uint32_t n, char *err, size_t errlen) {
  double deadline = now_s() + s->timeout_s;
  while (s->joined < s->size - 1) {
    if (now_s() >= deadline) {
      char who[200];
      missing(s, NULL, who, sizeof who);
      snprintf(err, errlen, "the store at %s: rank%s %s of %d did not connect within %g seconds", s->addr,
               s->size - 1 - s->joined == 1 ? "" : "s", who, s->size, s->timeout_s);
      return -1;
    }
    if (serve_round(s, deadline, payload, n, NULL, NULL) != 0)
      return snprintf(err, errlen, "the store at %s: poll failed: %s", s->addr, strerror(errno)), -1;
  }
  return 0;
}

/* ---- barriers ----------------------------------------------------------- */

typedef struct barrier_state {
  char *seen;
  int count;
  char *err;
  size_t errlen;
} barrier_state;

static int barrier_msg(gl_store *s, int r, void *ud) {
  barrier_state *b = ud;
  conn *c = &s->ranks[r];
  gl_store_msg m;
  long taken = 0;
  const char *why;
  int k;
  while ((k = conn_read(c, s->size, &m, &taken, &why)) > 0) {
    uint64_t seq = 0;
    for (int i = 0; i < 8; i++) seq |= (uint64_t)m.payload[i] << 8 * i;
    if (m.type != GL_STORE_BARRIER || m.rank != r || seq != s->barriers || b->seen[r]) {
      snprintf(b->err, b->errlen, "the store at %s: rank %d sent a message out of turn (not barrier %llu)", s->addr,
               r, (unsigned long long)s->barriers);
      return -1;
    }
    b->seen[r] = 1;
    b->count++;
  }
  if (taken) { /* nothing after a barrier is expected before its release */
    c->have -= (size_t)taken;
    memmove(c->buf, c->buf + taken, c->have);
  }
  if (k == -1) snprintf(b->err, b->errlen, "the store at %s: rank %d's connection closed (its process ended?)", s->addr, r);
  if (k == -2) snprintf(b->err, b->errlen, "the store at %s: rank %d sent %s", s->addr, r, why);
  return k < 0 ? -1 : 0;
}

int gl_store_barrier(gl_store *s, char *err, size_t errlen) {
  double deadline = now_s() + s->timeout_s;
  uint8_t seq[8];
  for (int i = 0; i < 8; i++) seq[i] = (uint8_t)(s->barriers >> 8 * i);
  if (s->rank != 0) {
    conn *c = &s->ranks[0];
    if (send_msg(c->fd, GL_STORE_BARRIER, s->size, s->rank, seq, 8) != 0)
      return snprintf(err, errlen, "the store at %s: cannot send a barrier: %s", s->addr, strerror(errno)), -1;
    for (;;) {
      struct pollfd p = {c->fd, POLLIN, 0};
      if (poll(&p, 1, ms_left(deadline)) <= 0) {
        if (now_s() < deadline) continue;
        return snprintf(err, errlen, "the store at %s: barrier %llu not passed within %g seconds (a rank has not "
                                     "reached it)", s->addr, (unsigned long long)s->barriers, s->timeout_s), -1;
      }
      gl_store_msg m;
      long taken = 0;
      const char *why;
      int k = conn_read(c, s->size, &m, &taken, &why);
      if (k == -1) return snprintf(err, errlen, "the store at %s closed the connection (rank 0 ended?)", s->addr), -1;
      if (k == -2 || (k == 1 && m.type != GL_STORE_RELEASE))
        return snprintf(err, errlen, "the store at %s sent %s", s->addr, k == -2 ? why : "a message out of turn"), -1;
      if (k == 1) {
        c->have -= (size_t)taken;
        memmove(c->buf, c->buf + taken, c->have);
        s->barriers++;
        return 0;
      }
    }
  }
  char *seen = calloc((size_t)s->size, 1);
  if (!seen) return snprintf(err, errlen, "out of memory"), -1;
  barrier_state b = {seen, 0, err, errlen};
  err[0] = '\0';
  int rc = 0;
  while (rc == 0 && b.count < s->size - 1) {
    if (now_s() >= deadline) {
      char who[200];
      missing(s, seen, who, sizeof who);
      snprintf(err, errlen, "the store at %s: rank%s %s did not reach barrier %llu within %g seconds", s->addr,
               s->size - 1 - b.count == 1 ? "" : "s", who, (unsigned long long)s->barriers, s->timeout_s);
      rc = -1;
      break;
    }
    if (serve_round(s, deadline, NULL, 0, barrier_msg, &b) != 0) {
      if (!err[0]) snprintf(err, errlen, "the store at %s: poll failed: %s", s->addr, strerror(errno));
      rc = -1;
    }
  }
  free(seen);
  for (int r = 1; rc == 0 && r < s->size; r++)
    if (send_msg(s->ranks[r].fd, GL_STORE_RELEASE, s->size, 0, NULL, 0) != 0) {
      snprintf(err, errlen, "the store at %s: cannot release rank %d: %s", s->addr, r, strerror(errno));
      rc = -1;
    }
  if (rc == 0) s->barriers++;
  return rc;
}

/* ---- the other ranks ---------------------------------------------------- */

static int try_connect(const char *host, int port, int *fd, int *e) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
  char ps[16];
  snprintf(ps, sizeof ps, "%d", port);
  int g = getaddrinfo(host, ps, &hints, &ai);
  if (g != 0) return *e = -g, -1;
  *fd = -1;
  for (struct addrinfo *a = ai; a && *fd < 0; a = a->ai_next) {
    int s = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (s < 0) {
      *e = errno;
      continue;
    }
    if (connect(s, a->ai_addr, a->ai_addrlen) != 0) {
      *e = errno;
      close(s);
      continue;
    }
    *fd = s;
  }
  freeaddrinfo(ai);
  return *fd < 0 ? -1 : 0;
}

int gl_store_connect(const char *host, int port, int rank, int size, double timeout_s, gl_store **out, void *payload,
                     uint32_t n, char *err, size_t errlen) {
  gl_store *s = store_new(host, port, size, rank, timeout_s);
  if (!s) return snprintf(err, errlen, "out of memory"), -1;
  double deadline = now_s() + timeout_s;
  conn *c = &s->ranks[0];
  snprintf(c->peer, sizeof c->peer, "rank 0");
  int e = 0, fd;
  struct timespec nap = {0, 100 * 1000 * 1000};
  while (try_connect(host, port, &fd, &e) != 0) {
    if (now_s() >= deadline) {
      snprintf(err, errlen, "cannot reach the store at %s within %g seconds: %s (is rank 0 running, and the port "
                            "open?)", s->addr, timeout_s, e < 0 ? gai_strerror(-e) : strerror(e));
      gl_store_close(s);
      return -1;
    }
    nanosleep(&nap, NULL);
  }
  c->fd = fd;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const char *what = NULL;
  if (send_msg(fd, GL_STORE_HELLO, size, rank, NULL, 0) != 0) what = strerror(errno);
  while (!what) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, ms_left(deadline)) <= 0) {
      if (now_s() >= deadline) what = "no answer within the timeout (is this rank's job size that of rank 0?)";
      continue;
    }
    gl_store_msg m;
    long taken = 0;
    const char *why;
    int k = conn_read(c, size, &m, &taken, &why);
    if (k == -1) what = "it closed the connection (a store of another job, or a rank of this one twice? see rank 0's log)";
    else if (k == -2) what = why;
    else if (k == 1 && (m.type != GL_STORE_ID || m.len != n)) what = "its first answer is not the job's id";
    else if (k == 1) {
      memcpy(payload, m.payload, n);
      c->have -= (size_t)taken;
      memmove(c->buf, c->buf + taken, c->have);
      *out = s;
      return 0;
    }
  }
  snprintf(err, errlen, "rank %d of %d at the store at %s: %s", rank, size, s->addr, what);
  gl_store_close(s);
  return -1;
}
