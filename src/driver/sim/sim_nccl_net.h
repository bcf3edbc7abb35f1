/*
 * sim_nccl_net.h -- the wire of the sim's communicators between processes
 * (sim_nccl_net.c, a rank; sim_nccl_hub.c, the hub in rank 0's process).
 *
 * The unique id (128 bytes): "GLSIMNET", the hub's port (2 bytes, big
 * endian), a random token (16 bytes), the hub's numeric address (text).
 * Every message: a header of ten u64 (the host's byte order: the ranks of
 * a sim job share a host, or hosts of one byte order), then `len` bytes.
 * A connection's first message is a hello with the token; one whose first
 * message is anything else is dropped, and nothing else happens.
 */
#ifndef GPULUA_SIM_NCCL_NET_H
#define GPULUA_SIM_NCCL_NET_H

#include <stddef.h>
#include <stdint.h>

#include "sim_nccl.h"

#define SIM_NET_MAGIC 0x54454e4d49534c47ull /* "GLSIMNET" */
#define SIM_NET_TOKEN 16
#define SIM_NET_TEXT 400 /* a failure's text, at most */

enum {
  SIM_NET_HELLO = 1, /* rank -> hub: count = the job's size, root = the rank, the token as payload */
  SIM_NET_COLL,      /* a collective's part: seq, kind, type, op, root, count; the send buffer as payload */
  SIM_NET_SEND,      /* a send: seq (between the two ranks), root = the peer; the data as payload */
  SIM_NET_RECV,      /* a recv: seq, root = the peer, count = the bytes it takes */
  SIM_NET_FAIL,      /* rank -> hub: this rank cannot go on (text); hub -> rank: the communicator failed (text) */
  SIM_NET_BYE,       /* rank -> hub: the rank's communicator is destroyed */
  SIM_NET_RESULT,    /* hub -> rank: the part `tag` complete; its result as payload */
  SIM_NET_READY,     /* hub -> rank: every rank has joined (ncclCommInitRank returns) */
};
/* How long ncclCommInitRank waits for the job's other ranks to join. */
#define SIM_NET_JOIN_S 300

typedef struct sim_net_msg {
  uint64_t magic, type, tag, seq, kind, dtype, op, root, count, len;
} sim_net_msg;

typedef struct sim_net_id {
  char magic[8];
  uint8_t port[2];
  uint8_t token[SIM_NET_TOKEN];
  char addr[GL_NCCL_UNIQUE_ID_BYTES - 26];
} sim_net_id;

int sim_net_send_all(int fd, const void *p, size_t n);
/* Exactly n bytes (blocking): 0, or -1 at the end of the stream or an error. */
int sim_net_recv_all(int fd, void *p, size_t n);

/* The bytes of a collective part's send buffer, and of its result for rank r. */
size_t sim_net_in_bytes(int kind, size_t count, int type, int n);
size_t sim_net_out_bytes(int kind, size_t count, int type, int n, int root, int r);

typedef struct sim_net_hub sim_net_hub;
/* A hub listening on addr (port 0: any) with its thread started; NULL with
 * why set. */
sim_net_hub *sim_net_hub_start(const char *addr, const uint8_t *token, int *port, char *why, size_t whylen);
/* Wait for the hub's thread to end (rank 0 and every rank that joined have
 * left) and free it. */
void sim_net_hub_join(sim_net_hub *h);
/* The hub of this process with this token, or NULL (taken: once). */
sim_net_hub *sim_net_hub_take(const uint8_t *token);

#endif
