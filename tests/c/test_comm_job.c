/*
 * test_comm_job.c -- a job's rank from each launcher's environment
 * (comm_job.c) and the job's store over TCP on 127.0.0.1 (store.c): ranks in
 * threads meeting, the id handed over, barriers, garbage and another job's
 * connection dropped, timeouts naming the address and the missing ranks.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "comm_job.h"
#include "store.h"

/* ---- the environment, as a list of NAME=value ------------------------- */

static const char *table_env(const char *name, void *ud) {
  size_t n = strlen(name);
  for (const char *const *e = ud; *e; e++)
    if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
  return NULL;
}

static int find(const char *const *env, gl_job *j, char *err) {
  return gl_job_find(table_env, (void *)env, j, err, 600);
}

static void test_find(void) {
  gl_job j;
  char err[600];
  const char *none[] = {NULL};
  CHECK(find(none, &j, err) == -1 && strstr(err, "GPULUA_RANK") && strstr(err, "WORLD_SIZE") &&
            strstr(err, "OMPI_COMM_WORLD_RANK") && strstr(err, "PMI_RANK") && strstr(err, "SLURM_PROCID"),
        "no launcher: %s", err);
  struct {
    const char *env[5];
    int rank, size, local;
    const char *launcher;
  } ok[] = {
    {{"GPULUA_RANK=1", "GPULUA_SIZE=4", "GPULUA_LOCAL_RANK=1", "RANK=0", NULL}, 1, 4, 1, "gpulua"},
    {{"RANK=3", "WORLD_SIZE=8", "LOCAL_RANK=3", "SLURM_PROCID=0", NULL}, 3, 8, 3, "torchrun"},
    {{"OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_SIZE=6", "OMPI_COMM_WORLD_LOCAL_RANK=1", NULL}, 5, 6, 1, "Open MPI"},
    {{"PMI_RANK=2", "PMI_SIZE=3", NULL}, 2, 3, 2, "MPICH"}, /* no MPI_LOCALRANKID: the rank */
    {{"PMI_RANK=2", "PMI_SIZE=3", "MPI_LOCALRANKID=0", NULL}, 2, 3, 0, "MPICH"},
    {{"SLURM_PROCID=7", "SLURM_NTASKS=16", "SLURM_LOCALID=3", NULL}, 7, 16, 3, "Slurm"},
    {{"SLURM_PROCID=0", "SLURM_NTASKS=1", NULL}, 0, 1, 0, "Slurm"},
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    int rc = find(ok[i].env, &j, err);
    CHECK(rc == 0 && j.rank == ok[i].rank && j.size == ok[i].size && j.local_rank == ok[i].local &&
              strcmp(j.launcher, ok[i].launcher) == 0,
          "case %zu: rc %d rank %d size %d local %d %s (%s)", i, rc, j.rank, j.size, j.local_rank,
          rc == 0 ? j.launcher : "", rc ? err : "");
  }
  struct {
    const char *env[4];
    const char *words[3];
  } bad[] = {
    {{"RANK=x", "WORLD_SIZE=2", NULL}, {"RANK = 'x'", "torchrun", NULL}},
    {{"RANK=2", "WORLD_SIZE=2", NULL}, {"RANK = '2'", "WORLD_SIZE - 1 = 1", NULL}},
    {{"RANK=-1", "WORLD_SIZE=2", NULL}, {"RANK = '-1'", NULL, NULL}},
    {{"RANK=0", "WORLD_SIZE=0", NULL}, {"WORLD_SIZE = '0'", NULL, NULL}},
    {{"RANK=0", "WORLD_SIZE=2x", NULL}, {"WORLD_SIZE = '2x'", NULL, NULL}},
    {{"RANK=0", NULL, NULL}, {"RANK is set", "WORLD_SIZE is not", NULL}},
    {{"SLURM_NTASKS=4", NULL, NULL}, {"SLURM_NTASKS is set", "SLURM_PROCID is not", NULL}},
    {{"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_LOCAL_RANK=9", NULL},
     {"OMPI_COMM_WORLD_LOCAL_RANK = '9'", "local rank", NULL}},
    {{"GPULUA_RANK=99999999999999999999", "GPULUA_SIZE=2", NULL}, {"GPULUA_RANK = '9999", NULL, NULL}},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = '\0';
    int rc = find(bad[i].env, &j, err);
    int named = 1;
    for (int w = 0; w < 3 && bad[i].words[w]; w++) named &= strstr(err, bad[i].words[w]) != NULL;
    CHECK(rc == -1 && named, "bad case %zu: rc %d: %s", i, rc, err);
  }
}

static void test_addr(void) {
  char host[256], err[600];
  int port = 0;
  const char *from = NULL;
  const char *e1[] = {"MASTER_ADDR=node7", "MASTER_PORT=29500", NULL};
  CHECK(gl_job_store_addr(table_env, e1, NULL, host, sizeof host, &port, &from, err, sizeof err) == 1 &&
            strcmp(host, "node7") == 0 && port == 29500,
        "MASTER_ADDR: %s %d", host, port);
  const char *e2[] = {"GPULUA_STORE=10.0.0.1:1234", "MASTER_ADDR=node7", "MASTER_PORT=29500", NULL};
  CHECK(gl_job_store_addr(table_env, e2, NULL, host, sizeof host, &port, &from, err, sizeof err) == 1 &&
            strcmp(host, "10.0.0.1") == 0 && port == 1234 && strcmp(from, "GPULUA_STORE") == 0,
        "GPULUA_STORE wins: %s %d", host, port);
  CHECK(gl_job_store_addr(table_env, e2, "[::1]:99", host, sizeof host, &port, &from, err, sizeof err) == 1 &&
            strcmp(host, "::1") == 0 && port == 99,
        "the option wins, v6: %s %d", host, port);
  const char *none[] = {NULL};
  CHECK(gl_job_store_addr(table_env, none, NULL, host, sizeof host, &port, &from, err, sizeof err) == 0, "none");
  const char *badport[] = {"MASTER_ADDR=a", "MASTER_PORT=70000", NULL};
  CHECK(gl_job_store_addr(table_env, badport, NULL, host, sizeof host, &port, &from, err, sizeof err) == -1 &&
            strstr(err, "MASTER_PORT = '70000'"),
        "bad port: %s", err);
  const char *half[] = {"MASTER_ADDR=a", NULL};
  CHECK(gl_job_store_addr(table_env, half, NULL, host, sizeof host, &port, &from, err, sizeof err) == -1 &&
            strstr(err, "MASTER_PORT is not"),
        "half: %s", err);
  const char *bads[] = {"nohost", ":12", "h:", "h:0", "a:b:1", "[::1]1"};
  for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++)
    CHECK(gl_job_store_addr(table_env, none, bads[i], host, sizeof host, &port, &from, err, sizeof err) == -1 &&
              strstr(err, "option 'store'") && strstr(err, bads[i]),
          "'%s': %s", bads[i], err);
}

/* ---- the parser --------------------------------------------------------- */

static void test_parse(void) {
  uint8_t b[GL_STORE_HEADER + GL_STORE_MAX_PAYLOAD];
  gl_store_msg m;
  const char *why = NULL;
  size_t n = gl_store_format(b, GL_STORE_BARRIER, 4, 3, "12345678", 8);
  for (size_t k = 0; k < n; k++) CHECK(gl_store_parse(b, k, 4, &m, &why) == 0, "a part (%zu) needs more", k);
  CHECK(gl_store_parse(b, n, 4, &m, &why) == (long)n && m.type == GL_STORE_BARRIER && m.rank == 3 && m.len == 8,
        "a whole message");
  CHECK(gl_store_parse(b, n, 5, &m, &why) == -1 && strstr(why, "another job"), "another job's");
  CHECK(gl_store_parse((const uint8_t *)"GET / HTTP/1.1\r\n", 16, 4, &m, &why) == -1 && strstr(why, "magic"), "http");
  CHECK(gl_store_parse((const uint8_t *)"X", 1, 4, &m, &why) == -1, "one wrong byte is enough");
  gl_store_format(b, GL_STORE_HELLO, 4, 4, NULL, 0);
  CHECK(gl_store_parse(b, GL_STORE_HEADER, 4, &m, &why) == -1 && strstr(why, "outside"), "rank >= size");
  gl_store_format(b, GL_STORE_ID, 4, 0, NULL, 0);
  b[16] = 0xff, b[17] = 0xff; /* len 65535 */
  CHECK(gl_store_parse(b, GL_STORE_HEADER, 4, &m, &why) == -1 && strstr(why, "longer"), "too long");
  gl_store_format(b, GL_STORE_HELLO, 4, 1, NULL, 0);
  b[5] = 9;
  CHECK(gl_store_parse(b, GL_STORE_HEADER, 4, &m, &why) == -1 && strstr(why, "type"), "unknown type");
}

/* ---- ranks in threads on 127.0.0.1 ------------------------------------ */

#define SIZE 3
static int the_port;

typedef struct rank_run {
  int rank, size, barriers, rc;
  double timeout;
  uint8_t id[128];
  char err[600];
} rank_run;

static void *rank_main(void *p) {
  rank_run *r = p;
  gl_store *s = NULL;
  r->rc = gl_store_connect("127.0.0.1", the_port, r->rank, r->size, r->timeout, &s, r->id, sizeof r->id, r->err,
                           sizeof r->err);
  for (int b = 0; r->rc == 0 && b < r->barriers; b++) r->rc = gl_store_barrier(s, r->err, sizeof r->err);
  gl_store_close(s);
  return NULL;
}

/* a stranger: connects, sends `what` (n bytes), waits for the store to drop it */
typedef struct stranger {
  const void *what;
  size_t n;
  int dropped;
  sem_t sent;
} stranger;

static void *stranger_main(void *p) {
  stranger *g = p;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)the_port)};
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  int ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0 && send(fd, g->what, g->n, MSG_NOSIGNAL) == (ssize_t)g->n;
  sem_post(&g->sent);
  if (ok) {
    char c;
    g->dropped = recv(fd, &c, 1, 0) == 0; /* closed without an answer */
  }
  close(fd);
  return NULL;
}

static void test_meet(void) {
  gl_store *s = NULL;
  char err[600];
  CHECK(gl_store_listen("127.0.0.1", 0, SIZE, 60, &s, &the_port, err, sizeof err) == 0, "listen: %s", err);
  if (!s) return;
  uint8_t id[128];
  for (int i = 0; i < 128; i++) id[i] = (uint8_t)(i * 7 + 1);
  /* strangers first: garbage, another job's hello; the store drops them and serves the job */
  uint8_t other[GL_STORE_HEADER];
  gl_store_format(other, GL_STORE_HELLO, SIZE + 1, 1, NULL, 0);
  stranger g1 = {.what = "garbage that is not a message", .n = 29}, g2 = {.what = other, .n = sizeof other};
  sem_init(&g1.sent, 0, 0);
  sem_init(&g2.sent, 0, 0);
  pthread_t tg1, tg2, t[SIZE];
  pthread_create(&tg1, NULL, stranger_main, &g1);
  pthread_create(&tg2, NULL, stranger_main, &g2);
  /* sent before any rank connects: the store accepts them first, and reads them while it waits */
  sem_wait(&g1.sent);
  sem_wait(&g2.sent);
  rank_run runs[SIZE];
  for (int r = 1; r < SIZE; r++) {
    runs[r] = (rank_run){.rank = r, .size = SIZE, .barriers = 2, .timeout = 60};
    pthread_create(&t[r], NULL, rank_main, &runs[r]);
  }
  int rc = gl_store_serve(s, id, sizeof id, err, sizeof err);
  CHECK(rc == 0, "serve: %s", err);
  for (int b = 0; rc == 0 && b < 2; b++) CHECK(gl_store_barrier(s, err, sizeof err) == 0, "barrier %d: %s", b, err);
  for (int r = 1; r < SIZE; r++) {
    pthread_join(t[r], NULL);
    CHECK(runs[r].rc == 0 && memcmp(runs[r].id, id, sizeof id) == 0, "rank %d: %s", r, runs[r].err);
  }
  pthread_join(tg1, NULL);
  pthread_join(tg2, NULL);
  CHECK(g1.dropped && g2.dropped, "the strangers were dropped: %d %d", g1.dropped, g2.dropped);
  gl_store_close(s);
}

static void test_timeouts(void) {
  char err[600];
  gl_store *s = NULL;
  /* rank 0 waits for ranks that never come: it names them */
  CHECK(gl_store_listen("127.0.0.1", 0, 4, 0.3, &s, &the_port, err, sizeof err) == 0, "listen: %s", err);
  rank_run one = {.rank = 2, .size = 4, .barriers = 0, .timeout = 60};
  pthread_t t;
  pthread_create(&t, NULL, rank_main, &one);
  uint8_t id[128] = {0};
  CHECK(gl_store_serve(s, id, sizeof id, err, sizeof err) == -1 && strstr(err, "ranks 1 and 3 of 4") &&
            strstr(err, "127.0.0.1:"),
        "missing ranks: %s", err);
  pthread_join(t, NULL);
  CHECK(one.rc == 0, "rank 2 joined: %s", one.err);
  gl_store_close(s);
  /* a rank whose store is not there: the address and what failed */
  rank_run lost = {.rank = 1, .size = 2, .timeout = 0.3};
  rank_main(&lost); /* the_port: closed just now */
  char want[64];
  snprintf(want, sizeof want, "the store at 127.0.0.1:%d", the_port);
  CHECK(lost.rc == -1 && strstr(lost.err, want) && strstr(lost.err, "refused"), "no store: %s", lost.err);
  /* an address that is not this machine's */
  CHECK(gl_store_listen("192.0.2.1", 0, 2, 1, &s, NULL, err, sizeof err) == -1 && strstr(err, "192.0.2.1"),
        "not ours: %s", err);
}

int main(void) {
  test_find();
  test_addr();
  test_parse();
  test_meet();
  test_timeouts();
  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures != 0;
}
