/*
 * sim_nccl_hub.c -- the hub of a sim communicator between processes
 * (sim_nccl_net.h): a thread of rank 0's process serving one listening
 * socket. Every rank (rank 0's own communicator too) connects and says
 * hello with the id's token; a connection that does not is dropped, and
 * nothing else happens. The i-th collective part of every rank meets the
 * others' i-th here: when all have come, the hub computes it as the
 * in-process clique does (sim_nccl_compute) and sends each rank its result.
 * A send completes when the hub holds its data (as NCCL's small sends do,
 * so a ring of sends then recvs does not deadlock); its recv (the k-th recv
 * of b from a pairs with the k-th send from a to b) completes with it; a
 * pair whose sizes or types differ fails the communicator (NCCL requires
 * them equal). When a rank's connection closes without a goodbye (its
 * process ended), or it says it cannot go on, the communicator fails: every
 * rank's waiting and later parts end with a text naming that rank.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sim_nccl_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_STRANGERS 32 /* connections that have not said hello */

typedef struct part {
  sim_net_msg m;
  uint8_t *data;
} part;

typedef struct hub_meeting {
  struct hub_meeting *next;
  uint64_t seq;
  int arrived;
  part *parts; /* per rank (m.type 0: not come) */
} hub_meeting;

typedef struct hub_post { /* a send or recv waiting for its peer's */
  struct hub_post *next;
  int rank;
  part p;
} hub_post;

typedef struct hub_conn {
  int fd, rank; /* rank -1: not said hello */
  sim_net_msg m;
  size_t have; /* of the header, then of the payload */
  int in_payload;
  uint8_t *data;
} hub_conn;

struct sim_net_hub {
  sim_net_hub *next; /* the process's hubs not yet taken by rank 0's communicator */
  int lfd, n;        /* n: the job's size, from the first hello (0 before) */
  uint8_t token[SIM_NET_TOKEN];
  pthread_t th;
  hub_conn strangers[MAX_STRANGERS];
  hub_conn *ranks; /* per rank */
  int *state;      /* per rank: 0 not come, 1 joined, 2 said goodbye, 3 connection closed or failed */
  int ready;       /* every rank has joined, and was told */
  hub_meeting *meetings;
  hub_post *posts;
  char failed[SIM_NET_TEXT]; /* the communicator failed: why */
};

static pthread_mutex_t hubs_mu = PTHREAD_MUTEX_INITIALIZER;
static sim_net_hub *hubs;

size_t sim_net_in_bytes(int kind, size_t count, int type, int n) {
  size_t es = sim_nccl_type_size(type);
  return kind == C_REDUCE_SCATTER ? count * (size_t)n * es : count * es;
}

size_t sim_net_out_bytes(int kind, size_t count, int type, int n, int root, int r) {
  size_t es = sim_nccl_type_size(type);
  if (kind == C_ALL_GATHER) return count * (size_t)n * es;
  if (kind == C_REDUCE && r != root) return 0;
  return count * es;
}

static void reply(sim_net_hub *h, int r, uint64_t type, uint64_t tag, const void *data, size_t len) {
  if (h->state[r] != 1) return;
  sim_net_msg m = {SIM_NET_MAGIC, type, tag, 0, 0, 0, 0, 0, 0, len};
  if (sim_net_send_all(h->ranks[r].fd, &m, sizeof m) != 0 || (len && sim_net_send_all(h->ranks[r].fd, data, len) != 0))
    h->state[r] = 3; /* its end shows when its connection is read */
}

static void free_part(part *p) {
  free(p->data);
  p->data = NULL;
}

/* The communicator fails (once): every waiting part and every later one
 * ends with why. */
static void fail(sim_net_hub *h, const char *why) {
  if (!h->failed[0]) snprintf(h->failed, sizeof h->failed, "%s", why);
  size_t len = strlen(h->failed);
  if (!h->ready) /* ranks still waiting in ncclCommInitRank: it fails */
    for (int r = 0; r < h->n; r++) reply(h, r, SIM_NET_FAIL, 0, h->failed, len);
  for (hub_meeting *m; (m = h->meetings);) {
    h->meetings = m->next;
    for (int r = 0; r < h->n; r++)
      if (m->parts[r].m.type) {
        reply(h, r, SIM_NET_FAIL, m->parts[r].m.tag, h->failed, len);
        free_part(&m->parts[r]);
      }
    free(m->parts);
    free(m);
  }
  for (hub_post *p; (p = h->posts);) {
    h->posts = p->next;
    reply(h, p->rank, SIM_NET_FAIL, p->p.m.tag, h->failed, len);
    free_part(&p->p);
    free(p);
  }
}

static void gone_text(sim_net_hub *h, int r, char *buf, size_t len) {
  snprintf(buf, len, h->state[r] == 2 ? "rank %d of %d left: its process ended or closed its communicator before "
                                        "the others' call"
                                      : "rank %d of %d: its process ended (its connection to the hub closed)",
           r, h->n);
}

/* Meeting m complete: computed, each rank sent its result. */
static void complete(sim_net_hub *h, hub_meeting *m) {
  const sim_net_msg *a = &m->parts[0].m;
  for (int r = 1; r < h->n; r++) {
    const sim_net_msg *b = &m->parts[r].m;
    if (b->kind != a->kind || b->dtype != a->dtype || b->count != a->count || b->op != a->op || b->root != a->root) {
      char why[200];
      snprintf(why, sizeof why, "collective %llu is not the same call on rank 0 and rank %d",
               (unsigned long long)m->seq, r);
      fail(h, why);
      return;
    }
  }
  coll_args *args = calloc((size_t)h->n, sizeof *args);
  int ok = args != NULL;
  for (int r = 0; ok && r < h->n; r++) {
    size_t out = sim_net_out_bytes((int)a->kind, a->count, (int)a->dtype, h->n, (int)a->root, r);
    args[r] = (coll_args){NULL, m->seq, r, (int)a->kind, (int)a->op, (int)a->root, (int)a->dtype, a->count,
                          m->parts[r].data, malloc(out ? out : 1)};
    ok = args[r].recv != NULL;
  }
  if (ok && sim_nccl_compute(args, h->n) == 0) {
    for (int r = 0; r < h->n; r++)
      reply(h, r, SIM_NET_RESULT, m->parts[r].m.tag, args[r].recv,
            sim_net_out_bytes((int)a->kind, a->count, (int)a->dtype, h->n, (int)a->root, r));
  } else {
    ok = 0;
  }
  for (int r = 0; args && r < h->n; r++) free(args[r].recv);
  free(args);
  hub_meeting **pp = &h->meetings;
  while (*pp != m) pp = &(*pp)->next;
  *pp = m->next;
  for (int r = 0; r < h->n; r++) free_part(&m->parts[r]);
  free(m->parts);
  free(m);
  if (!ok) fail(h, "the hub ran out of host memory");
}

/* What waits on a rank that has gone fails the communicator. */
static void check_gone(sim_net_hub *h) {
  char why[200];
  for (int r = 0; !h->ready && r < h->n; r++)
    if (h->state[r] >= 2) { /* gone before every rank had joined: the others' joining fails */
      gone_text(h, r, why, sizeof why);
      fail(h, why);
      return;
    }
  for (hub_meeting *m = h->meetings; m; m = m->next)
    for (int r = 0; r < h->n; r++)
      if (!m->parts[r].m.type && h->state[r] >= 2) {
        gone_text(h, r, why, sizeof why);
        fail(h, why);
        return;
      }
  for (hub_post *p = h->posts; p; p = p->next) /* a recv whose sender has gone (a send is complete) */
    if (p->p.m.type == SIM_NET_RECV && h->state[p->p.m.root] >= 2) {
      gone_text(h, (int)p->p.m.root, why, sizeof why);
      fail(h, why);
      return;
    }
}

static void on_coll(sim_net_hub *h, int r, part p) {
  hub_meeting *m = h->meetings;
  while (m && m->seq != p.m.seq) m = m->next;
  if (!m) {
    m = calloc(1, sizeof *m);
    if (m && !(m->parts = calloc((size_t)h->n, sizeof *m->parts))) free(m), m = NULL;
    if (!m) {
      free_part(&p);
      fail(h, "the hub ran out of host memory");
      return;
    }
    m->seq = p.m.seq;
    m->next = h->meetings;
    h->meetings = m;
  }
  if (m->parts[r].m.type) { /* the same collective twice: a broken rank */
    free_part(&p);
    fail(h, "a rank sent one collective twice");
    return;
  }
  m->parts[r] = p;
  if (++m->arrived == h->n) complete(h, m);
  else check_gone(h); /* a rank that has gone will never bring its part */
}

static void on_p2p(sim_net_hub *h, int r, part p) {
  int is_send = p.m.type == SIM_NET_SEND, peer = (int)p.m.root;
  if (is_send) reply(h, r, SIM_NET_RESULT, p.m.tag, NULL, 0); /* sent as soon as the hub holds its data */
  for (hub_post **pp = &h->posts; *pp; pp = &(*pp)->next) {
    hub_post *q = *pp;
    if (q->rank == peer && (int)q->p.m.root == r && q->p.m.seq == p.m.seq && (q->p.m.type == SIM_NET_SEND) != is_send) {
      part *s = is_send ? &p : &q->p, *v = is_send ? &q->p : &p;
      if (s->m.len != v->m.count || s->m.dtype != v->m.dtype) { /* NCCL requires both the same: no silent cut */
        char why[SIM_NET_TEXT];
        snprintf(why, sizeof why, "send %llu from rank %d to rank %d is not the same size and type as its recv "
                 "(%llu and %llu bytes)", (unsigned long long)p.m.seq + 1, is_send ? r : peer, is_send ? peer : r,
                 (unsigned long long)s->m.len, (unsigned long long)v->m.count);
        fail(h, why); /* q among the posts fails */
        if (!is_send) reply(h, r, SIM_NET_FAIL, p.m.tag, h->failed, strlen(h->failed));
        free_part(&p);
        return;
      }
      *pp = q->next;
      reply(h, is_send ? peer : r, SIM_NET_RESULT, v->m.tag, s->data, s->m.len);
      free_part(&q->p);
      free(q);
      free_part(&p);
      return;
    }
  }
  hub_post *q = calloc(1, sizeof *q);
  if (!q) {
    free_part(&p);
    fail(h, "the hub ran out of host memory");
    return;
  }
  q->rank = r;
  q->p = p;
  q->next = h->posts;
  h->posts = q;
  check_gone(h);
}

/* A whole message from rank r. 0, or -1 when it is malformed (the rank is
 * treated as failed). */
static int on_message(sim_net_hub *h, int r, part p) {
  const sim_net_msg *m = &p.m;
  char why[SIM_NET_TEXT + 64];
  switch (m->type) {
  case SIM_NET_BYE:
    free_part(&p);
    h->state[r] = 2;
    check_gone(h);
    return 0;
  case SIM_NET_FAIL:
    snprintf(why, sizeof why, "rank %d of %d cannot go on: %.*s", r, h->n, (int)m->len, p.data ? (char *)p.data : "");
    free_part(&p);
    fail(h, why);
    return 0;
  case SIM_NET_COLL:
    if (m->kind > C_REDUCE_SCATTER || !sim_nccl_type_size((int)m->dtype) || m->root >= (uint64_t)h->n || m->op > 4 ||
        m->len != sim_net_in_bytes((int)m->kind, m->count, (int)m->dtype, h->n))
      break;
    if (h->failed[0]) break;
    on_coll(h, r, p);
    return 0;
  case SIM_NET_SEND: case SIM_NET_RECV:
    if (m->root >= (uint64_t)h->n || (m->type == SIM_NET_RECV && m->len)) break;
    if (h->failed[0]) break;
    on_p2p(h, r, p);
    return 0;
  default:
    free_part(&p);
    return -1;
  }
  if (h->failed[0]) { /* a part after the failure ends at once */
    reply(h, r, SIM_NET_FAIL, m->tag, h->failed, strlen(h->failed));
    free_part(&p);
    return 0;
  }
  free_part(&p);
  return -1;
}

static void drop(hub_conn *c) {
  if (c->fd >= 0) close(c->fd);
  free(c->data);
  memset(c, 0, sizeof *c);
  c->fd = -1;
  c->rank = -1;
}

/* A stranger's hello: it becomes its rank's connection, or is dropped. */
static void on_hello(sim_net_hub *h, hub_conn *c) {
  const sim_net_msg *m = &c->m;
  int ok = m->len == SIM_NET_TOKEN && memcmp(c->data, h->token, SIM_NET_TOKEN) == 0 && m->count >= 1 &&
           m->count <= 4096 && m->root < m->count && (!h->n || m->count == (uint64_t)h->n);
  if (ok && !h->n) {
    h->n = (int)m->count;
    h->ranks = calloc((size_t)h->n, sizeof *h->ranks);
    h->state = calloc((size_t)h->n, sizeof *h->state);
    if (!h->ranks || !h->state) {
      free(h->ranks), free(h->state);
      h->ranks = NULL, h->state = NULL, h->n = 0, ok = 0;
    }
    for (int r = 0; ok && r < h->n; r++) h->ranks[r].fd = -1;
  }
  if (!ok || h->state[m->root] != 0) {
    drop(c);
    return;
  }
  int r = (int)m->root;
  h->ranks[r] = (hub_conn){.fd = c->fd, .rank = r};
  h->state[r] = 1;
  free(c->data);
  memset(c, 0, sizeof *c);
  c->fd = -1;
  c->rank = -1;
  if (h->failed[0]) { /* too late: the communicator failed while this rank was on its way */
    reply(h, r, SIM_NET_FAIL, 0, h->failed, strlen(h->failed));
    return;
  }
  int all = 1;
  for (int k = 0; k < h->n; k++) all &= h->state[k] != 0;
  if (all && !h->ready) { /* every rank has come: their ncclCommInitRank return */
    h->ready = 1;
    for (int k = 0; k < h->n; k++) reply(h, k, SIM_NET_READY, 0, NULL, 0);
  }
  check_gone(h);
}

/* Read what poll says is there. 0, or -1 when the connection ended or sent
 * something malformed. A stranger may send only a hello, and only that much. */
static int on_readable(sim_net_hub *h, hub_conn *c) {
  uint8_t *into = c->in_payload ? c->data : (uint8_t *)&c->m;
  size_t want = c->in_payload ? c->m.len : sizeof c->m;
  ssize_t got = recv(c->fd, into + c->have, want - c->have, MSG_DONTWAIT);
  if (got <= 0) return got < 0 && (errno == EAGAIN || errno == EINTR) ? 0 : -1;
  c->have += (size_t)got;
  if (c->have < want) return 0;
  if (!c->in_payload) {
    if (c->m.magic != SIM_NET_MAGIC) return -1;
    if (c->rank < 0 && (c->m.type != SIM_NET_HELLO || c->m.len != SIM_NET_TOKEN)) return -1;
    if (c->m.type == SIM_NET_HELLO && c->rank >= 0) return -1;
    if (c->m.len > ((uint64_t)1 << 40)) return -1;
    c->in_payload = 1;
    c->have = 0;
    c->data = malloc(c->m.len ? c->m.len : 1);
    if (!c->data) return -1;
    if (c->m.len) return 0;
  }
  part p = {c->m, c->data};
  c->data = NULL;
  c->in_payload = 0;
  c->have = 0;
  if (c->rank < 0) {
    c->data = p.data;
    on_hello(h, c);
    return 0;
  }
  return on_message(h, c->rank, p);
}

static int finished(const sim_net_hub *h) {
  if (!h->n || h->state[0] < 2) return 0;
  for (int r = 0; r < h->n; r++)
    if (h->state[r] == 1) return 0;
  return 1;
}

static void *hub_main(void *arg) {
  sim_net_hub *h = arg;
  struct pollfd *fds = NULL;
  int cap = 0;
  while (!finished(h)) {
    int n = h->n, need = 1 + MAX_STRANGERS + n, k = 0; /* n: the ranks polled (a hello may set h->n below) */
    if (need > cap) {
      struct pollfd *v = realloc(fds, (size_t)need * sizeof *v);
      if (!v) break;
      fds = v, cap = need;
    }
    fds[k++] = (struct pollfd){h->lfd, POLLIN, 0};
    for (int i = 0; i < MAX_STRANGERS; i++) fds[k++] = (struct pollfd){h->strangers[i].fd, POLLIN, 0};
    for (int r = 0; r < n; r++) fds[k++] = (struct pollfd){h->state[r] == 1 ? h->ranks[r].fd : -1, POLLIN, 0};
    if (poll(fds, (nfds_t)k, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents & POLLIN) {
      int fd = accept4(h->lfd, NULL, NULL, SOCK_CLOEXEC), one = 1;
      if (fd >= 0) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* replies go at once (no Nagle) */
      int slot = -1;
      for (int i = 0; fd >= 0 && i < MAX_STRANGERS && slot < 0; i++)
        if (h->strangers[i].fd < 0) slot = i;
      if (slot >= 0) h->strangers[slot] = (hub_conn){.fd = fd, .rank = -1};
      else if (fd >= 0) close(fd); /* too many strangers at once */
    }
    for (int i = 0; i < MAX_STRANGERS; i++)
      if (fds[1 + i].fd >= 0 && fds[1 + i].revents && on_readable(h, &h->strangers[i]) != 0) drop(&h->strangers[i]);
    for (int r = 0; r < n; r++) {
      if (fds[1 + MAX_STRANGERS + r].fd < 0 || !fds[1 + MAX_STRANGERS + r].revents || h->state[r] != 1) continue;
      if (on_readable(h, &h->ranks[r]) != 0) {
        if (h->state[r] == 1) h->state[r] = 3;
        free(h->ranks[r].data);
        h->ranks[r].data = NULL;
        check_gone(h);
      }
    }
  }
  free(fds);
  return NULL;
}

sim_net_hub *sim_net_hub_start(const char *addr, const uint8_t *token, int *port, char *why, size_t whylen) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  socklen_t sl;
  struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
  if (inet_pton(AF_INET, addr, &v4->sin_addr) == 1) v4->sin_family = AF_INET, sl = sizeof *v4;
  else if (inet_pton(AF_INET6, addr, &v6->sin6_addr) == 1) v6->sin6_family = AF_INET6, sl = sizeof *v6;
  else {
    snprintf(why, whylen, "'%s' is not a numeric address", addr);
    return NULL;
  }
  sim_net_hub *h = calloc(1, sizeof *h);
  if (!h) {
    snprintf(why, whylen, "out of host memory");
    return NULL;
  }
  for (int i = 0; i < MAX_STRANGERS; i++) h->strangers[i].fd = -1, h->strangers[i].rank = -1;
  memcpy(h->token, token, SIM_NET_TOKEN);
  h->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (h->lfd < 0 || bind(h->lfd, (struct sockaddr *)&ss, sl) != 0 || listen(h->lfd, 64) != 0 ||
      getsockname(h->lfd, (struct sockaddr *)&ss, &sl) != 0) {
    snprintf(why, whylen, "cannot listen on %s: %s", addr, strerror(errno));
    if (h->lfd >= 0) close(h->lfd);
    free(h);
    return NULL;
  }
  *port = ntohs(ss.ss_family == AF_INET ? v4->sin_port : v6->sin6_port);
  if (pthread_create(&h->th, NULL, hub_main, h) != 0) {
    snprintf(why, whylen, "cannot start the hub's thread");
    close(h->lfd);
    free(h);
    return NULL;
  }
  pthread_mutex_lock(&hubs_mu);
  h->next = hubs;
  hubs = h;
  pthread_mutex_unlock(&hubs_mu);
  return h;
}

sim_net_hub *sim_net_hub_take(const uint8_t *token) {
  pthread_mutex_lock(&hubs_mu);
  sim_net_hub **pp = &hubs;
  while (*pp && memcmp((*pp)->token, token, SIM_NET_TOKEN) != 0) pp = &(*pp)->next;
  sim_net_hub *h = *pp;
  if (h) *pp = h->next;
  pthread_mutex_unlock(&hubs_mu);
  return h;
}

void sim_net_hub_join(sim_net_hub *h) {
  pthread_join(h->th, NULL);
  close(h->lfd);
  for (int i = 0; i < MAX_STRANGERS; i++) drop(&h->strangers[i]);
  for (int r = 0; r < h->n; r++) drop(&h->ranks[r]);
  fail(h, "the hub ended"); /* nothing is waiting now: frees what is left */
  free(h->ranks);
  free(h->state);
  free(h);
}
