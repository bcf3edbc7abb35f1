/*
 * store.h -- the job's store: rank 0 listens on one address, the other ranks
 * connect to it; rank 0 hands every rank a payload (the NCCL unique id) and
 * serves barriers. Messages are length-prefixed, each with the job's key
 * (the protocol's magic and version, and the job's size): a connection that
 * sends anything else (another program, another job) is dropped with one
 * line on stderr, and nothing else happens.
 *
 * A message: 20 bytes of header, then `len` bytes of payload:
 *   "GLST", version (1), type, two zero bytes, size, rank, len (u32, little-endian).
 */
#ifndef GPULUA_CORE_STORE_H
#define GPULUA_CORE_STORE_H

#include <stddef.h>
#include <stdint.h>

#define GL_STORE_HEADER 20
#define GL_STORE_MAX_PAYLOAD 1024

/* CALL: a rank's collective for the check (comm_check.c), rank -> 0;
 * VERDICT: the check failed the communicator (its text), 0 -> rank;
 * BYE: a rank closed its communicator (8-byte count of its collectives). */
enum { GL_STORE_HELLO = 1, GL_STORE_ID, GL_STORE_BARRIER, GL_STORE_RELEASE, GL_STORE_CALL, GL_STORE_VERDICT,
       GL_STORE_BYE };
#define GL_STORE_CALL_FIXED 32 /* a CALL's numbers before its text */

typedef struct gl_store_msg {
  int type, rank;
  uint32_t len;
  const uint8_t *payload; /* into the parsed buffer */
} gl_store_msg;

/* One message at the start of buf (n bytes), of a job of `size` ranks: the
 * bytes it takes (> 0), 0 when more are needed, or -1 when it is malformed
 * or another job's (*why says how; never NULL then). */
long gl_store_parse(const uint8_t *buf, size_t n, int size, gl_store_msg *m, const char **why);
/* A message's bytes into out (GL_STORE_HEADER + len of them). */
size_t gl_store_format(uint8_t *out, int type, int size, int rank, const void *payload, uint32_t len);

typedef struct gl_store gl_store;

/* Rank 0: listen on host:port (port 0: any free one, *bound says which).
 * 0, or -1 with a message in err. */
int gl_store_listen(const char *host, int port, int size, double timeout_s, gl_store **out, int *bound, char *err,
                    size_t errlen);
/* Rank 0: wait until every other rank has said hello, answering each with
 * payload (n bytes). */
int gl_store_serve(gl_store *s, const void *payload, uint32_t n, char *err, size_t errlen);
/* Rank `rank` > 0: connect (retrying until the timeout), say hello and
 * receive rank 0's payload (exactly n bytes) into out. */
int gl_store_connect(const char *host, int port, int rank, int size, double timeout_s, gl_store **out, void *payload,
                     uint32_t n, char *err, size_t errlen);
/* Every rank: return once every rank has called it (at most the timeout). */
int gl_store_barrier(gl_store *s, char *err, size_t errlen);
/* After the meeting, the connections for the check (comm_check.c): rank
 * 0's to rank r (1 .. size - 1), the others' to rank 0 (r = 0). Its fd,
 * -1 once closed; made non-blocking by gl_store_conn_fd. */
int gl_store_conn_fd(gl_store *s, int r);
/* The next message of connection r (after poll said it is readable): 1 one
 * in *m (valid until the next call), 0 none yet, -1 closed, -2 malformed
 * (*why says how). */
int gl_store_conn_next(gl_store *s, int r, gl_store_msg *m, const char **why);
void gl_store_conn_close(gl_store *s, int r);
int gl_store_rank(const gl_store *s);
int gl_store_size(const gl_store *s);
/* The address as given, "host:port". */
const char *gl_store_addr(const gl_store *s);
void gl_store_close(gl_store *s);

#endif
