/*
 * sim_nccl_net.c -- the sim's communicators between processes, a rank's
 * side (sim_nccl_net.h): ncclGetUniqueId starts a hub (sim_nccl_hub.c) on
 * GPULUA_SIM_NCCL_ADDR (default 127.0.0.1) at a free port and writes its
 * address and a random token into the id; ncclCommInitRank connects to it.
 * A call queues one operation on its rank's stream, as a kernel launch; when
 * the stream reaches it, its worker sends the part (with its data) to the
 * hub and waits for the result, as an NCCL kernel waits on the network. A
 * reader thread per rank takes the hub's answers. When the communicator
 * fails (a rank's process ended, a rank could not go on), every waiting
 * and later call ends with the hub's text: the operation faults its stream
 * with that text and the communicator reports an asynchronous error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sim_nccl_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <time.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct net_wait {
  struct net_wait *next;
  uint64_t tag;
  void *recv;
  size_t cap;
  int done;    /* 1 complete, 3 failed */
  int reading; /* the reader is taking its result in: its worker waits */
  void *got;   /* the result as read, copied into recv by the worker: only the stream's
                  worker touches the device's memory, after its own send read it */
  size_t got_len;
} net_wait;

struct sim_net_rank {
  pthread_mutex_t mu, wmu; /* mu: the waits and the state; wmu: writes to fd */
  pthread_cond_t cv;
  int fd, rank, n, refs, closing;
  int ready; /* the hub said every rank has joined */
  pthread_t reader;
  uint64_t next_tag;
  net_wait *waits;
  char failed[SIM_NET_TEXT];
  char addr[GL_NCCL_UNIQUE_ID_BYTES + 8];
  clique *q;
  sim_net_hub *hub; /* rank 0's, where this process serves it */
};

typedef struct net_op { /* an operation's record: its parts, freed when it ran */
  sim_net_rank *nr;
  int n, ordinal;
  coll_args *parts;
} net_op;

static char remote_text[SIM_NET_TEXT + 96]; /* under sim_S.mu; written once */

const char *sim_net_remote_text(void) {
  pthread_mutex_lock(&sim_S.mu);
  const char *t = remote_text;
  pthread_mutex_unlock(&sim_S.mu);
  return t;
}

int sim_net_parse_addr(const char *s) {
  unsigned char buf[sizeof(struct in6_addr)];
  return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1 ? 0 : -1;
}

int sim_net_send_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

int sim_net_recv_all(int fd, void *p, size_t n) {
  char *c = p;
  while (n) {
    ssize_t r = recv(fd, c, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    c += r;
    n -= (size_t)r;
  }
  return 0;
}

/* The communicator failed (the first why wins): every wait ends. */
static void rank_failed(sim_net_rank *nr, const char *why) {
  pthread_mutex_lock(&nr->mu);
  if (!nr->failed[0]) snprintf(nr->failed, sizeof nr->failed, "%s", why);
  for (net_wait *w = nr->waits; w; w = w->next)
    if (!w->done) w->done = 3;
  pthread_cond_broadcast(&nr->cv);
  pthread_mutex_unlock(&nr->mu);
  pthread_mutex_lock(&sim_S.mu);
  if (nr->q->async == GL_NCCL_SUCCESS) nr->q->async = GL_NCCL_REMOTE_ERROR;
  if (!remote_text[0])
    snprintf(remote_text, sizeof remote_text, "remote process exited or there was a network error: %s", why);
  pthread_mutex_unlock(&sim_S.mu);
}

static int send_msg(sim_net_rank *nr, const sim_net_msg *m, const void *data) {
  pthread_mutex_lock(&nr->wmu);
  int rc = sim_net_send_all(nr->fd, m, sizeof *m);
  if (rc == 0 && m->len) rc = sim_net_send_all(nr->fd, data, m->len);
  pthread_mutex_unlock(&nr->wmu);
  return rc;
}

static void *reader_main(void *arg) {
  sim_net_rank *nr = arg;
  char why[SIM_NET_TEXT + 1];
  for (;;) {
    sim_net_msg m;
    if (sim_net_recv_all(nr->fd, &m, sizeof m) != 0 || m.magic != SIM_NET_MAGIC) break;
    if (m.type == SIM_NET_FAIL) {
      size_t n = m.len < SIM_NET_TEXT ? m.len : SIM_NET_TEXT;
      if (sim_net_recv_all(nr->fd, why, n) != 0) break;
      why[n] = '\0';
      for (uint64_t rest = m.len - n; rest; rest--) /* a longer text than ours: the rest read and left */
        if (sim_net_recv_all(nr->fd, why + n, 1) != 0) break;
      rank_failed(nr, why);
      continue;
    }
    if (m.type == SIM_NET_READY && m.len == 0) {
      pthread_mutex_lock(&nr->mu);
      nr->ready = 1;
      pthread_cond_broadcast(&nr->cv);
      pthread_mutex_unlock(&nr->mu);
      continue;
    }
    if (m.type != SIM_NET_RESULT) break;
    pthread_mutex_lock(&nr->mu);
    net_wait *w = nr->waits;
    while (w && w->tag != m.tag) w = w->next;
    if (w) w->reading = 1; /* its worker waits until the result is in */
    pthread_mutex_unlock(&nr->mu);
    void *got = w && m.len && m.len <= w->cap ? malloc(m.len) : NULL;
    int bad = !w || m.len > w->cap || (m.len && (!got || sim_net_recv_all(nr->fd, got, m.len) != 0));
    pthread_mutex_lock(&nr->mu);
    if (w) w->reading = 0;
    if (w && !bad && !w->done) {
      w->done = 1;
      w->got = got, w->got_len = m.len;
      got = NULL;
    }
    free(got);
    pthread_cond_broadcast(&nr->cv);
    pthread_mutex_unlock(&nr->mu);
    if (bad) break;
  }
  pthread_mutex_lock(&nr->mu);
  int closing = nr->closing;
  pthread_mutex_unlock(&nr->mu);
  if (!closing) {
    snprintf(why, sizeof why, "rank 0 of %d: its process ended (the connection to the communicator's hub at %s, "
                              "which rank 0's process serves, closed)", nr->n, nr->addr);
    rank_failed(nr, why);
  }
  return NULL;
}

/* The operation's parts, on its stream's worker: sent to the hub, then the
 * results waited for. Fails (faulting the stream) when the communicator did. */
static int net_host(void *user, const gld_sim_launch *launch) {
  (void)user;
  net_op o;
  memcpy(&o, launch->params[0], sizeof o);
  sim_net_rank *nr = o.nr;
  net_wait *w = calloc((size_t)o.n, sizeof *w);
  if (!w) {
    rank_failed(nr, "out of host memory");
  } else {
    pthread_mutex_lock(&nr->mu);
    for (int i = 0; i < o.n; i++) {
      const coll_args *a = &o.parts[i];
      w[i].tag = nr->next_tag++;
      w[i].recv = a->recv;
      w[i].cap = a->kind == C_SEND ? 0 : a->kind == C_RECV ? a->count * sim_nccl_type_size(a->type)
                                                          : sim_net_out_bytes(a->kind, a->count, a->type, nr->n,
                                                                              a->root, nr->rank);
      w[i].done = nr->failed[0] ? 3 : 0;
      w[i].next = nr->waits;
      nr->waits = &w[i];
    }
    int skip = nr->failed[0] != 0; /* failed already: nothing to send */
    pthread_mutex_unlock(&nr->mu);
    for (int i = 0; i < o.n && !skip; i++) {
      const coll_args *a = &o.parts[i];
      int type = a->kind == C_SEND ? SIM_NET_SEND : a->kind == C_RECV ? SIM_NET_RECV : SIM_NET_COLL;
      size_t len = type == SIM_NET_SEND ? a->count * sim_nccl_type_size(a->type)
                   : type == SIM_NET_RECV ? 0 : sim_net_in_bytes(a->kind, a->count, a->type, nr->n);
      sim_net_msg m = {SIM_NET_MAGIC, (uint64_t)type, w[i].tag, a->seq, (uint64_t)a->kind, (uint64_t)a->type,
                       (uint64_t)a->op, (uint64_t)a->root, type == SIM_NET_RECV ? w[i].cap : a->count, len};
      if (send_msg(nr, &m, a->send) != 0) {
        char why[200];
        snprintf(why, sizeof why, "rank %d of %d lost its connection to the communicator's hub at %s", nr->rank,
                 nr->n, nr->addr);
        rank_failed(nr, why);
      }
    }
  }
  pthread_mutex_lock(&nr->mu);
  int failed = !w;
  for (int i = 0; w && i < o.n; i++) {
    while (!w[i].done || w[i].reading) pthread_cond_wait(&nr->cv, &nr->mu);
    failed |= w[i].done == 3;
    if (w[i].got) memcpy(w[i].recv, w[i].got, w[i].got_len);
    free(w[i].got);
    w[i].got = NULL;
  }
  for (net_wait **pp = &nr->waits; w && *pp;) {
    if (*pp >= w && *pp < w + o.n) *pp = (*pp)->next;
    else pp = &(*pp)->next;
  }
  char text[SIM_NET_TEXT + 64];
  snprintf(text, sizeof text, "a collective of a job of %d processes (sim) failed: %s", nr->n, nr->failed);
  pthread_mutex_unlock(&nr->mu);
  free(w);
  free(o.parts);
  if (failed) {
    pthread_mutex_lock(&sim_S.mu);
    struct CUctx_st *ctx = &sim_S.dev[o.ordinal].ctx;
    if (!ctx->fault[0]) {
      snprintf(ctx->fault, sizeof ctx->fault, "%s", text);
      ctx->fault_where = (gld_fault_where){.launch_at = SIZE_MAX, .tag = -1};
    }
    pthread_mutex_unlock(&sim_S.mu);
  }
  sim_net_release(nr);
  return failed;
}

/* A part that will never run (its context faulted): no rank waits for it. */
static int net_skipped(void *user, const gld_sim_launch *launch) {
  (void)user;
  net_op o;
  memcpy(&o, launch->params[0], sizeof o);
  ncclComm_t fake = &(struct ncclComm){o.nr->q, o.nr->rank, o.ordinal, o.nr};
  sim_net_fail(fake, "its device faulted before its part of a call ran");
  free(o.parts);
  sim_net_release(o.nr);
  return 0;
}

static struct CUfunc_st net_func = {.name = "nccl call of a job (sim)", .host = net_host, .skipped = net_skipped,
                                    .nparams = 1, .sizes = {sizeof(net_op)}, .ptx_nparams = -1, .max_threads = 1024};

gld_ncclResult sim_net_queue(ncclComm_t c, const coll_args *parts, int n, CUstream st) {
  sim_net_rank *nr = c->net;
  net_op o = {nr, n, c->ordinal, malloc((size_t)n * sizeof *parts)};
  if (!o.parts) {
    sim_net_fail(c, "out of host memory");
    return GL_NCCL_SYSTEM_ERROR;
  }
  memcpy(o.parts, parts, (size_t)n * sizeof *parts);
  pthread_mutex_lock(&nr->mu);
  nr->refs++; /* held by the operation until it ran */
  pthread_mutex_unlock(&nr->mu);
  CUresult r = sim_enqueue_host_call(&net_func, &o, sizeof o, st, 0);
  if (r != CUDA_SUCCESS) {
    free(o.parts);
    sim_net_fail(c, "a call could not be queued on its stream");
    sim_net_release(nr);
    return r == CUDA_ERROR_OUT_OF_MEMORY ? GL_NCCL_SYSTEM_ERROR : GL_NCCL_UNHANDLED_CUDA_ERROR;
  }
  return GL_NCCL_SUCCESS;
}

void sim_net_fail(ncclComm_t c, const char *why) {
  sim_net_rank *nr = c->net;
  char text[SIM_NET_TEXT];
  snprintf(text, sizeof text, "rank %d of %d cannot go on: %s", nr->rank, nr->n, why);
  sim_net_msg m = {SIM_NET_MAGIC, SIM_NET_FAIL, 0, 0, 0, 0, 0, 0, 0, strlen(why)};
  send_msg(nr, &m, why); /* the hub tells the others; where it is gone, so are they */
  rank_failed(nr, text);
}

gld_ncclResult sim_net_unique_id(gld_ncclUniqueId *id) {
  if (!id || !sim_S.initialized) return GL_NCCL_INVALID_ARGUMENT;
  const char *addr = getenv("GPULUA_SIM_NCCL_ADDR");
  if (!addr || !*addr) addr = "127.0.0.1";
  sim_net_id nid;
  memset(&nid, 0, sizeof nid);
  if (strlen(addr) >= sizeof nid.addr || sim_net_parse_addr(addr) != 0) return GL_NCCL_INVALID_USAGE;
  memcpy(nid.magic, "GLSIMNET", 8);
  if (getrandom(nid.token, sizeof nid.token, 0) != (ssize_t)sizeof nid.token) return GL_NCCL_SYSTEM_ERROR;
  snprintf(nid.addr, sizeof nid.addr, "%s", addr);
  char why[200];
  int port = 0;
  if (!sim_net_hub_start(addr, nid.token, &port, why, sizeof why)) {
    fprintf(stderr, "gpulua: sim: ncclGetUniqueId: %s\n", why);
    return GL_NCCL_SYSTEM_ERROR;
  }
  nid.port[0] = (uint8_t)(port >> 8);
  nid.port[1] = (uint8_t)port;
  memset(id, 0, sizeof *id);
  memcpy(id->internal, &nid, sizeof nid);
  return GL_NCCL_SUCCESS;
}

static int connect_to(const char *addr, int port) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  socklen_t sl;
  struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
  if (inet_pton(AF_INET, addr, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET, v4->sin_port = htons((uint16_t)port), sl = sizeof *v4;
  } else if (inet_pton(AF_INET6, addr, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6, v6->sin6_port = htons((uint16_t)port), sl = sizeof *v6;
  } else {
    return -1;
  }
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, (struct sockaddr *)&ss, sl) != 0) {
    close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

gld_ncclResult sim_net_init_rank(ncclComm_t *comm, int n, gld_ncclUniqueId id, int rank) {
  sim_net_id nid;
  memcpy(&nid, id.internal, sizeof nid);
  nid.addr[sizeof nid.addr - 1] = '\0';
  if (n < 1 || n > 4096 || rank < 0 || rank >= n || memcmp(nid.magic, "GLSIMNET", 8) != 0)
    return GL_NCCL_INVALID_ARGUMENT;
  int port = nid.port[0] << 8 | nid.port[1];
  sim_net_rank *nr = calloc(1, sizeof *nr);
  ncclComm_t c = calloc(1, sizeof *c);
  clique *q = sim_nccl_clique_new(n);
  if (!nr || !c || !q) {
    free(nr), free(c);
    if (q) sim_nccl_clique_free(q);
    return GL_NCCL_SYSTEM_ERROR;
  }
  q->refs = 1;
  nr->q = q;
  nr->rank = rank;
  nr->n = n;
  nr->refs = 1;
  snprintf(nr->addr, sizeof nr->addr, "%s:%d", nid.addr, port);
  pthread_mutex_init(&nr->mu, NULL);
  pthread_mutex_init(&nr->wmu, NULL);
  pthread_cond_init(&nr->cv, NULL);
  nr->fd = connect_to(nid.addr, port);
  sim_net_msg m = {SIM_NET_MAGIC, SIM_NET_HELLO, 0, 0, 0, 0, 0, (uint64_t)rank, (uint64_t)n, SIM_NET_TOKEN};
  if (nr->fd < 0 || send_msg(nr, &m, nid.token) != 0 || pthread_create(&nr->reader, NULL, reader_main, nr) != 0) {
    fprintf(stderr, "gpulua: sim: ncclCommInitRank: rank %d of %d cannot reach the communicator's hub at %s: %s\n",
            rank, n, nr->addr, strerror(errno));
    if (nr->fd >= 0) close(nr->fd);
    sim_nccl_clique_free(q);
    free(nr), free(c);
    return GL_NCCL_SYSTEM_ERROR;
  }
  if (rank == 0) nr->hub = sim_net_hub_take(nid.token);
  /* as NCCL's, a collective call: it returns once every rank has joined */
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += SIM_NET_JOIN_S;
  pthread_mutex_lock(&nr->mu);
  int timed_out = 0;
  while (!nr->ready && !nr->failed[0] && !timed_out)
    timed_out = pthread_cond_timedwait(&nr->cv, &nr->mu, &until) == ETIMEDOUT;
  int ready = nr->ready && !nr->failed[0];
  char why[SIM_NET_TEXT];
  snprintf(why, sizeof why, "%s", nr->failed[0] ? nr->failed : "not every rank joined within the limit");
  pthread_mutex_unlock(&nr->mu);
  if (!ready) {
    fprintf(stderr, "gpulua: sim: ncclCommInitRank: rank %d of %d: the communicator's ranks did not all join (%d s at "
                    "most): %s\n", rank, n, SIM_NET_JOIN_S, why);
    c->q = q;
    c->rank = rank;
    c->net = nr;
    sim_net_release(nr);
    free(c);
    return GL_NCCL_REMOTE_ERROR;
  }
  c->q = q;
  c->rank = rank;
  c->ordinal = sim_cur_ctx ? sim_cur_ctx->ordinal : 0;
  c->net = nr;
  *comm = c;
  return GL_NCCL_SUCCESS;
}

void sim_net_release(sim_net_rank *nr) {
  pthread_mutex_lock(&nr->mu);
  int last = --nr->refs == 0;
  if (last) nr->closing = 1;
  pthread_mutex_unlock(&nr->mu);
  if (!last) return;
  sim_net_msg m = {SIM_NET_MAGIC, SIM_NET_BYE, 0, 0, 0, 0, 0, 0, 0, 0};
  send_msg(nr, &m, NULL);
  shutdown(nr->fd, SHUT_RDWR); /* the reader's recv returns */
  pthread_join(nr->reader, NULL);
  close(nr->fd);
  if (nr->hub) sim_net_hub_join(nr->hub); /* until every rank has left */
  pthread_mutex_destroy(&nr->mu);
  pthread_mutex_destroy(&nr->wmu);
  pthread_cond_destroy(&nr->cv);
  sim_nccl_clique_free(nr->q);
  free(nr);
}
