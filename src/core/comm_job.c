/*
 * comm_job.c -- a job's rank, size and local rank from the launcher's
 * environment, and the store's address (see comm_job.h).
 */
#include "comm_job.h"
#include "comm_check.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "nccl_table.h"
#include "runtime.h"
#include "store.h"

typedef struct launcher {
  const char *name, *rank, *size, *local;
} launcher;

/* the documented order: the first with its rank or size set wins */
static const launcher launchers[] = {
  {"gpulua", "GPULUA_RANK", "GPULUA_SIZE", "GPULUA_LOCAL_RANK"},
  {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
  {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
  {"MPICH", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
  {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
};
#define NLAUNCHERS (int)(sizeof launchers / sizeof launchers[0])

static const char *env_get(gl_job_env env, void *ud, const char *name) {
  const char *v = env ? env(name, ud) : getenv(name);
  return v && v[0] ? v : NULL;
}

/* a whole number from lo to hi, all of v (spaces around it allowed) */
static int whole(const char *v, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  while (*end == ' ' || *end == '\t' || *end == '\n') end++;
  if (end == v || *end || errno || x < lo || x > hi) return -1;
  *out = x;
  return 0;
}

int gl_job_find(gl_job_env env, void *ud, gl_job *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  for (int i = 0; i < NLAUNCHERS; i++) {
    const launcher *l = &launchers[i];
    const char *r = env_get(env, ud, l->rank), *s = env_get(env, ud, l->size), *lr = env_get(env, ud, l->local);
    if (!r && !s) continue;
    if (!r || !s) {
      snprintf(err, errlen, "%s is set (%s's variables) but %s is not: both are needed", r ? l->rank : l->size,
               l->name, r ? l->size : l->rank);
      return -1;
    }
    long size, rank, local;
    if (whole(s, 1, GL_JOB_MAX_SIZE, &size) != 0) {
      snprintf(err, errlen, "%s = '%.64s' (%s's job size) is not a whole number from 1 to %d", l->size, s, l->name,
               GL_JOB_MAX_SIZE);
      return -1;
    }
    if (whole(r, 0, LONG_MAX, &rank) != 0 || rank >= size) {
      snprintf(err, errlen, "%s = '%.64s' (%s's rank) is not a whole number from 0 to %s - 1 = %ld", l->rank, r,
               l->name, l->size, size - 1);
      return -1;
    }
    local = rank; /* no local rank given: as if every rank were on this machine */
    if (lr && whole(lr, 0, size - 1, &local) != 0) {
      snprintf(err, errlen, "%s = '%.64s' (%s's local rank) is not a whole number from 0 to %s - 1 = %ld", l->local,
               lr, l->name, l->size, size - 1);
      return -1;
    }
    *out = (gl_job){(int)rank, (int)size, (int)local, l->name, l->rank, l->size, lr ? l->local : NULL};
    return 0;
  }
  size_t n = (size_t)snprintf(err, errlen, "no launcher's environment found: none of");
  for (int i = 0; i < NLAUNCHERS && n < errlen; i++)
    n += (size_t)snprintf(err + n, errlen - n, "%s %s/%s/%s", i ? "," : "", launchers[i].rank, launchers[i].size,
                          launchers[i].local);
  if (n < errlen)
    snprintf(err + n, errlen - n, " is set (run under srun, mpirun or torchrun, or set GPULUA_RANK and GPULUA_SIZE)");
  return -1;
}

/* "host:port" or "[host]:port" */
static int split(const char *a, char *host, size_t hostlen, int *port) {
  const char *colon;
  size_t hl;
  const char *h = a;
  if (a[0] == '[') {
    const char *close = strchr(a, ']');
    if (!close || close[1] != ':') return -1;
    h = a + 1;
    hl = (size_t)(close - h);
    colon = close + 1;
  } else {
    colon = strrchr(a, ':');
    if (!colon || memchr(a, ':', (size_t)(colon - a))) return -1; /* a bare v6 address needs its brackets */
    hl = (size_t)(colon - a);
  }
  long p;
  if (hl == 0 || hl >= hostlen || whole(colon + 1, 1, 65535, &p) != 0) return -1;
  memcpy(host, h, hl);
  host[hl] = '\0';
  *port = (int)p;
  return 0;
}

int gl_job_store_addr(gl_job_env env, void *ud, const char *given, char *host, size_t hostlen, int *port,
                      const char **from, char *err, size_t errlen) {
  const char *a = given, *src = "option 'store'";
  if (!a && (a = env_get(env, ud, "GPULUA_STORE"))) src = "GPULUA_STORE";
  if (a) {
    *from = src;
    if (split(a, host, hostlen, port) == 0) return 1;
    snprintf(err, errlen, "%s = '%.200s' is not an address 'host:port' (port 1 to 65535; '[v6 address]:port')", src, a);
    return -1;
  }
  const char *h = env_get(env, ud, "MASTER_ADDR"), *p = env_get(env, ud, "MASTER_PORT");
  if (!h && !p) return 0;
  *from = "MASTER_ADDR and MASTER_PORT";
  long pn;
  if (!h || !p) {
    snprintf(err, errlen, "%s is set but %s is not: both are needed", h ? "MASTER_ADDR" : "MASTER_PORT",
             h ? "MASTER_PORT" : "MASTER_ADDR");
    return -1;
  }
  if (whole(p, 1, 65535, &pn) != 0) {
    snprintf(err, errlen, "MASTER_PORT = '%.64s' is not a port (a whole number from 1 to 65535)", p);
    return -1;
  }
  size_t hl = strlen(h);
  if (h[0] == '[' && hl > 2 && h[hl - 1] == ']') h++, hl -= 2; /* [v6] */
  if (hl >= hostlen) {
    snprintf(err, errlen, "MASTER_ADDR = '%.64s...' is too long", h);
    return -1;
  }
  memcpy(host, h, hl);
  host[hl] = '\0';
  *port = (int)pn;
  return 1;
}

/* ---- meeting ------------------------------------------------------------ */

static const char *job_vars(const gl_job *j, char *buf, size_t n) {
  snprintf(buf, n, "%s's %s/%s", j->launcher, j->rank_var, j->size_var);
  return buf;
}

int gl_comm_new_job(gl_runtime *rt, const gl_job_req *q, gl_comm **out) {
  const gl_job *j = &q->job;
  char vars[160], err[600], host[256];
  if (j->size == 1) { /* a job of one: nothing to meet */
    if (gl_comm_new_local(rt, q->call, 1, (gl_device **)&q->dev, q->site, out) != 0) return -1;
    return 0;
  }
  if (q->id_file) return gl_comm_new_rank(rt, q->call, j->rank, j->size, q->id_file, q->timeout_s, q->dev, q->site, out);
  int port;
  const char *from = NULL;
  int found = gl_job_store_addr(NULL, NULL, q->store, host, sizeof host, &port, &from, err, sizeof err);
  if (found < 0) return gl_fail(rt, "%s: %s", q->call, err);
  if (found == 0)
    return gl_fail(rt, "%s: rank %d of %d (from %s) needs the job's store: set MASTER_ADDR and MASTER_PORT (rank 0's "
                       "address and a free port) or GPULUA_STORE=host:port, or give store = 'host:port' or id_file",
                   q->call, j->rank, j->size, job_vars(j, vars, sizeof vars));
  const char *why = gld_nccl_load();
  if (why) return gl_fail(rt, "%s: %s", q->call, why);
  gld_ncclUniqueId id;
  memset(&id, 0, sizeof id);
  gl_store *s = NULL;
  gl_set_ctx(q->dev);
  if (j->rank == 0) {
    gld_ncclResult r = gld_nc.ncclGetUniqueId(&id); /* the sim's: a hub of this process (TCP) */
    if (r != GL_NCCL_SUCCESS)
      return gl_fail(rt, "%s: ncclGetUniqueId failed: %s", q->call,
                     gld_nc.ncclGetErrorString ? gld_nc.ncclGetErrorString(r) : "?");
    if (gl_store_listen(host, port, j->size, q->timeout_s, &s, NULL, err, sizeof err) != 0 ||
        gl_store_serve(s, &id, sizeof id, err, sizeof err) != 0) {
      gl_store_close(s);
      return gl_fail(rt, "%s: rank 0 of %d (store from %s): %s", q->call, j->size, from, err);
    }
  } else if (gl_store_connect(host, port, j->rank, j->size, q->timeout_s, &s, &id, sizeof id, err, sizeof err) != 0) {
    return gl_fail(rt, "%s: %s (store from %s)", q->call, err, from);
  }
  if (gl_comm_init_rank(rt, q->call, j->rank, j->size, &id, q->dev, out) != 0) {
    gl_store_close(s);
    return -1;
  }
  (*out)->store = s;
  if (rt->policy == GL_POLICY_STRICT && gl_comm_check_start(*out, s, q->timeout_s, err, sizeof err) != 0)
    return gl_fail(rt, "%s: rank %d of %d: %s", q->call, j->rank, j->size, err); /* the comm is freed at teardown */
  return 0;
}
