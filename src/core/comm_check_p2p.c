/*
 * comm_check_p2p.c -- the check of a job's sends and recvs (comm_check.h):
 * each rank numbers its sends to each peer and its recvs from each peer
 * (apart from its collectives, whose numbering they leave alone) and
 * publishes them with the collectives; rank 0 pairs the k-th send from a to
 * b with the k-th recv of b from a, in whichever order they come. A pair
 * whose dtype or count differ, a call whose partner does not come within
 * the timeout, or whose partner's rank is gone, is the verdict.
 */
#include "comm_check_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gl_comm_check_publish_p2p(gl_comm *c, int is_send, int peer, int dtype, size_t count, const char *what, int loc) {
  gl_comm_check *k = c->check;
  gl_check_call x = {.seq = k->p2p_seq[2 * (size_t)peer + (is_send != 0)]++, .count = count,
                     .kind = is_send ? GL_CHECK_SEND : GL_CHECK_RECV, .dtype = dtype, .op = -1, .root = peer};
  gl_check_enqueue(k, &x, what, loc);
}

/* "send 1 from rank 0 to rank 1", "recv 1 on rank 1 from rank 0" (counted from 1) */
static void pair_text(const gl_check_post *p, char *out, size_t n) {
  snprintf(out, n, p->x.kind == GL_CHECK_SEND ? "send %llu from rank %d to rank %d" : "recv %llu on rank %d from rank %d",
           (unsigned long long)p->x.seq + 1, p->rank, p->x.root);
}

static void last_call(gl_comm_check *k, int r, char *out, size_t n) {
  if (k->rs[r].has_call) gl_check_describe(&k->rs[r].last_call, out, n);
  else snprintf(out, n, "none");
}

void gl_check_p2p_call(gl_comm_check *k, int r, const gl_check_call *x) {
  if (x->root < 0 || x->root >= k->size) return; /* cannot be: a rank checks its peers */
  k->rs[r].last_call = *x, k->rs[r].has_call = 1;
  int want = x->kind == GL_CHECK_SEND ? GL_CHECK_RECV : GL_CHECK_SEND;
  for (size_t i = 0; i < k->nposts; i++) {
    gl_check_post *q = &k->posts[i];
    if (q->rank != x->root || q->x.root != r || q->x.kind != want || q->x.seq != x->seq) continue;
    gl_check_post mine = {*x, r, 0};
    const gl_check_post *snd = want == GL_CHECK_RECV ? &mine : q, *rcv = want == GL_CHECK_RECV ? q : &mine;
    if (snd->x.dtype != rcv->x.dtype || snd->x.count != rcv->x.count) {
      char a[400], b[400], pair[100], text[1200];
      gl_check_describe(&snd->x, a, sizeof a);
      gl_check_describe(&rcv->x, b, sizeof b);
      pair_text(snd, pair, sizeof pair);
      snprintf(text, sizeof text, "%s on rank %d does not match %s on rank %d (%s)", a, snd->rank, b, rcv->rank, pair);
      gl_check_decide(k, text);
      return;
    }
    memmove(q, q + 1, (k->nposts - i - 1) * sizeof *q); /* the oldest stay first */
    k->nposts--;
    return;
  }
  if (k->nposts == k->capposts) {
    size_t cap = k->capposts ? 2 * k->capposts : 64;
    gl_check_post *p = realloc(k->posts, cap * sizeof *p);
    if (!p) return;
    k->posts = p, k->capposts = cap;
  }
  k->posts[k->nposts++] = (gl_check_post){*x, r, gl_check_now()};
  if (k->ngone) gl_check_p2p_gone(k);
}

int gl_check_p2p_timeout(gl_comm_check *k) {
  if (k->decided || k->nposts == 0) return -1;
  const gl_check_post *p = &k->posts[0];
  double left = p->t0 + k->timeout_s - gl_check_now();
  if (left > 0) return left > 1e6 ? 1000000000 : (int)(left * 1000) + 1;
  char d[400], pair[100], last[400], text[1200];
  gl_check_describe(&p->x, d, sizeof d);
  pair_text(p, pair, sizeof pair);
  last_call(k, p->x.root, last, sizeof last);
  snprintf(text, sizeof text, "%s on rank %d (%s) did not complete within %g seconds: rank %d has not made its "
                              "matching %s (its last call: %s)",
           d, p->rank, pair, k->timeout_s, p->x.root, p->x.kind == GL_CHECK_SEND ? "comm:recv" : "comm:send", last);
  gl_check_decide(k, text);
  return -1;
}

void gl_check_p2p_gone(gl_comm_check *k) {
  for (size_t i = 0; i < k->nposts && !k->decided; i++) {
    const gl_check_post *p = &k->posts[i];
    int peer = p->x.root;
    if (!k->rs[peer].gone || k->rs[p->rank].gone) continue; /* its partner may still come; or no one waits */
    char d[400], pair[100], last[400], text[1400];
    gl_check_describe(&p->x, d, sizeof d);
    pair_text(p, pair, sizeof pair);
    last_call(k, peer, last, sizeof last);
    snprintf(text, sizeof text, "rank %d %s (its last call: %s), but rank %d waits for it in %s (%s)", peer,
             k->rs[peer].gone == 1 ? "ended: its process's connection to the job's store closed"
                                   : "closed the communicator (comm:close, or at its process's end)",
             last, p->rank, d, pair);
    gl_check_decide(k, text);
  }
}
