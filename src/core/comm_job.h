/*
 * comm_job.h -- finding this process's place in a job of many processes
 * (gpu.comm{}): its rank, the job's size and its local rank, read from the
 * environment its launcher set, and where the job's store is.
 */
#ifndef GPULUA_CORE_COMM_JOB_H
#define GPULUA_CORE_COMM_JOB_H

#include <stddef.h>

#include "comm.h"
#include "types.h"

#define GL_JOB_MAX_SIZE (1 << 20) /* ranks of one job */

/* How a variable is read: getenv, or a table in a test. */
typedef const char *(*gl_job_env)(const char *name, void *ud);

typedef struct gl_job {
  int rank, size, local_rank;
  const char *launcher;                       /* "gpulua", "torchrun", "Open MPI", "MPICH", "Slurm" */
  const char *rank_var, *size_var, *local_var; /* the variables read (local_var NULL: none was set) */
} gl_job;

/* The first launcher of the documented order whose rank or size variable is
 * set. 0; or -1 with a message in err: no launcher (listing every variable
 * looked for), or a variable that is missing, not a whole number, or out of
 * range (naming it and its value). env NULL: getenv. */
int gl_job_find(gl_job_env env, void *ud, gl_job *out, char *err, size_t errlen);

/* The store's address: `given` (the store = option) if not NULL, else
 * GPULUA_STORE, else MASTER_ADDR and MASTER_PORT. "host:port" split into
 * host and port ("[v6addr]:port" too). 1 found, 0 none of them set, -1 a
 * malformed one (a message in err naming where it came from). */
int gl_job_store_addr(gl_job_env env, void *ud, const char *given, char *host, size_t hostlen, int *port,
                      const char **from, char *err, size_t errlen);

/* gpu.comm{}: this process's rank of `job`, on dev. One rank: a
 * communicator of one. Several: rank 0 serves the store at `store` (the
 * option; else GPULUA_STORE or MASTER_ADDR:MASTER_PORT), hands out a new
 * NCCL unique id and every rank joins with it; or they meet through id_file
 * (gl_comm_new_rank). Every wait ends after timeout_s with an error. On sim,
 * several ranks meet and then fail: its NCCL is within one process. */
typedef struct gl_job_req {
  const char *call;
  gl_job job;
  const char *store, *id_file; /* the options, or NULL */
  double timeout_s;
  gl_device *dev;
  gl_site *site;
} gl_job_req;
int gl_comm_new_job(gl_runtime *rt, const gl_job_req *r, gl_comm **out);

#endif
