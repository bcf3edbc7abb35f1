/*
 * comm.c -- NCCL communicators and collectives (see comm.h): the checks of
 * every rank's slices and stream, one NCCL group over the ranks, and each
 * rank's accesses recorded through the queue's two halves (queue.h).
 */
#include "comm.h"
#include "comm_internal.h"
#include "comm_check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "device.h"
#include "driver_ext.h"
#include "graph.h"
#include "memory.h"
#include "nccl_table.h"
#include "queue.h"
#include "runtime.h"
#include "store.h"
#include "stream.h"
#include "trace.h"

static const char *const op_names[] = {"sum", "prod", "max", "min", "avg"};
static const char *const nccl_calls[] = {"ncclAllReduce", "ncclBroadcast", "ncclReduce", "ncclAllGather",
                                         "ncclReduceScatter"};

const char *gl_comm_op_name(int op) { return op >= 0 && op < 5 ? op_names[op] : "?"; }

int gl_comm_op_parse(const char *name) {
  for (int i = 0; i < 5; i++)
    if (strcmp(name, op_names[i]) == 0) return i;
  return -1;
}

const char *gl_comm_nccl_text(int r) {
  const char *t = gld_nc.ncclGetErrorString ? gld_nc.ncclGetErrorString(r) : NULL;
  return t ? t : "?";
}

int gl_comm_load(gl_runtime *rt, const char *what) {
  const char *why = gld_nccl_load();
  return why ? gl_fail(rt, "%s: %s", what, why) : 0;
}

static gl_comm *comm_alloc(gl_runtime *rt, int n) {
  gl_comm *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->devs = calloc((size_t)n, sizeof *c->devs);
  c->nc = calloc((size_t)n, sizeof *c->nc);
  if (!c->devs || !c->nc) {
    free(c->devs);
    free(c->nc);
    free(c);
    return NULL;
  }
  c->rt = rt;
  c->n = n;
  c->closed_at = GL_LOC_NONE;
  return c;
}

static void comm_link(gl_comm *c) {
  gl_runtime *rt = c->rt;
  c->next_live = rt->comms;
  if (rt->comms) rt->comms->prev_live = &c->next_live;
  c->prev_live = &rt->comms;
  rt->comms = c;
}

static void comm_free(gl_comm *c) {
  for (int i = 0; c->done && i < c->n; i++)
    if (c->done[i]) {
      gl_set_ctx(c->devs[i]);
      gld_drv.cuEventDestroy(c->done[i]);
    }
  free(c->done);
  gl_comm_p2p_drop(c);
  gl_comm_check_stop(c);
  gl_store_close(c->store);
  if (c->prev_live) {
    *c->prev_live = c->next_live;
    if (c->next_live) c->next_live->prev_live = c->prev_live;
  }
  gl_buf_free(&c->poison);
  free(c->devs);
  free(c->nc);
  free(c);
}

/* ncclCommAbort on every rank: their collectives not yet complete end, none waited for */
static void abort_all(gl_comm *c) {
  gl_comm_check_stop(c); /* its thread aborts no more */
  for (int i = 0; i < c->n; i++)
    if (c->nc[i]) {
      gl_set_ctx(c->devs[i]);
      gld_nc.ncclCommAbort(c->nc[i]);
      c->nc[i] = NULL;
    }
}

static void destroy_all(gl_comm *c) {
  gl_comm_check_stop(c);
  for (int i = 0; i < c->n; i++)
    if (c->nc[i]) {
      gl_set_ctx(c->devs[i]);
      gld_nc.ncclCommDestroy(c->nc[i]);
      c->nc[i] = NULL;
    }
}

int gl_comm_new_local(gl_runtime *rt, const char *call, int n, gl_device **devs, gl_site *site, gl_comm **out) {
  (void)site;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < i; j++)
      if (devs[i] == devs[j])
        return gl_fail(rt, "%s: device %d is given twice (one rank per device)", call, devs[i]->ordinal);
  if (gl_comm_load(rt, call) != 0) return -1;
  gl_comm *c = comm_alloc(rt, n);
  int *ords = malloc((size_t)n * sizeof *ords);
  if (!c || !ords) {
    if (c) comm_free(c);
    free(ords);
    return gl_fail_nomem(rt, NULL);
  }
  for (int i = 0; i < n; i++) c->devs[i] = devs[i], ords[i] = devs[i]->ordinal;
  c->size = n;
  gl_set_ctx(devs[0]);
  gld_ncclResult r = gld_nc.ncclCommInitAll(c->nc, n, ords);
  free(ords);
  if (r != GL_NCCL_SUCCESS) {
    comm_free(c);
    return gl_fail(rt, "%s: ncclCommInitAll over %d device%s failed: %s", call, n, n == 1 ? "" : "s", gl_comm_nccl_text(r));
  }
  comm_link(c);
  *out = c;
  return 0;
}

/* rank 0: a new id into id_file, through a temporary file renamed over it */
static int write_id(gl_runtime *rt, const char *call, const char *path, const gld_ncclUniqueId *id) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
    return gl_fail(rt, "%s: id_file path is too long", call);
  FILE *f = fopen(tmp, "wb");
  if (!f) return gl_fail(rt, "%s: cannot write id_file '%s': %s", call, tmp, strerror(errno));
  size_t w = fwrite(id, 1, sizeof *id, f);
  if (fclose(f) != 0 || w != sizeof *id || rename(tmp, path) != 0) {
    int e = errno;
    remove(tmp);
    return gl_fail(rt, "%s: cannot write id_file '%s': %s", call, path, strerror(e));
  }
  return 0;
}

/* the other ranks: wait for a whole id in id_file */
static int read_id(gl_runtime *rt, const char *call, const char *path, double timeout_s, gld_ncclUniqueId *id) {
  struct timespec t0, now, nap = {0, 20 * 1000 * 1000};
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    FILE *f = fopen(path, "rb");
    if (f) {
      size_t got = fread(id, 1, sizeof *id, f);
      fclose(f);
      if (got == sizeof *id) return 0;
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((double)(now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) * 1e-9 > timeout_s)
      return gl_fail(rt, "%s: no NCCL id in id_file '%s' after %g seconds (is rank 0 running?)", call, path,
                     timeout_s);
    nanosleep(&nap, NULL);
  }
}

int gl_comm_new_rank(gl_runtime *rt, const char *call, int rank, int size, const char *id_file, double timeout_s,
                     gl_device *dev, gl_site *site, gl_comm **out) {
  (void)site;
  if (gld_drv_ext.nccl_table) /* the backend's own NCCL: between the devices of one process */
    return gl_fail(rt, "%s: id_file communicators need the cuda backend: the sim's collectives are between "
                       "the devices of one process (%s{devices = ...})",
                   call, call);
  if (gl_comm_load(rt, call) != 0) return -1;
  gld_ncclUniqueId id;
  memset(&id, 0, sizeof id);
  gl_set_ctx(dev);
  if (rank == 0) {
    gld_ncclResult r = gld_nc.ncclGetUniqueId(&id);
    if (r != GL_NCCL_SUCCESS) return gl_fail(rt, "%s: ncclGetUniqueId failed: %s", call, gl_comm_nccl_text(r));
    if (write_id(rt, call, id_file, &id) != 0) return -1;
  } else if (read_id(rt, call, id_file, timeout_s, &id) != 0) {
    return -1;
  }
  return gl_comm_init_rank(rt, call, rank, size, &id, dev, out);
}

int gl_comm_init_rank(gl_runtime *rt, const char *call, int rank, int size, const void *idp, gl_device *dev,
                      gl_comm **out) {
  gld_ncclUniqueId id;
  memcpy(&id, idp, sizeof id);
  gl_set_ctx(dev);
  gl_comm *c = comm_alloc(rt, 1);
  if (!c) return gl_fail_nomem(rt, NULL);
  c->devs[0] = dev;
  c->size = size;
  c->first_rank = rank;
  gld_ncclResult r = gld_nc.ncclCommInitRank(&c->nc[0], size, id, rank);
  if (r != GL_NCCL_SUCCESS) {
    comm_free(c);
    return gl_fail(rt, "%s: rank %d of %d: ncclCommInitRank failed: %s", call, rank, size, gl_comm_nccl_text(r));
  }
  comm_link(c);
  *out = c;
  return 0;
}

/* ---- collectives -------------------------------------------------------- */

int gl_comm_nccl_type(gl_dtype dt) {
  switch (dt) {
  case GL_I8: return GL_NCCL_INT8;
  case GL_U8: return GL_NCCL_UINT8;
  case GL_I32: return GL_NCCL_INT32;
  case GL_U32: return GL_NCCL_UINT32;
  case GL_I64: return GL_NCCL_INT64;
  case GL_U64: return GL_NCCL_UINT64;
  case GL_F16: return GL_NCCL_FLOAT16;
  case GL_BF16: return GL_NCCL_BFLOAT16;
  case GL_F32: return GL_NCCL_FLOAT32;
  case GL_F64: return GL_NCCL_FLOAT64;
  default: return -1;
  }
}

int gl_comm_usable(gl_comm *c, const char *what) {
  gl_runtime *rt = c->rt;
  if (c->closed)
    return gl_fail(rt, "%s: the communicator was closed (at %s)", what, gl_loc_text(rt, c->closed_at));
  if (c->check) gl_comm_check_failed(c);
  if (c->poison.n) return gl_fail(rt, "%s: the communicator is unusable after an earlier error: %s", what, gl_buf_str(&c->poison));
  return gl_comm_p2p_unmatched(c, what);
}

int gl_comm_check_slice(gl_comm *c, const char *what, const char *role, int i, const gl_slice *x) {
  gl_runtime *rt = c->rt;
  int rank = c->first_rank + i;
  gl_buf who = GL_BUF_INIT;
  gl_buf_printf(&who, "%s: %s of rank %d", what, role, rank);
  int rc = gl_slice_check_as(x, gl_buf_str(&who));
  gl_buf_free(&who);
  if (rc == -2) return gl_fail(rt, "%s: %s of rank %d is a released slice", what, role, rank);
  if (rc != 0) return -1;
  if (x->a->dev != c->devs[i])
    return gl_fail(rt, "%s: %s of rank %d is a slice of device %d, but rank %d is on device %d", what, role, rank,
                   x->a->dev->ordinal, rank, c->devs[i]->ordinal);
  return 0;
}

/* Rank i's recv shares no memory with its send, or is in place as NCCL
 * defines it: the same elements (all_reduce, broadcast, reduce), send at the
 * rank's part of recv (all_gather), recv at the rank's part of send
 * (reduce_scatter). NCCL leaves every other overlap undefined. */
static int check_apart(gl_comm *c, const gl_coll_req *k, int i, const char *what) {
  const gl_slice *sx = k->send[i], *rx = k->recv[i];
  if (!gl_ranges_overlap(rx, rx->lo, rx->hi, sx, sx->lo, sx->hi)) return 0;
  int rank = c->first_rank + i;
  char hint[160];
  if (k->kind == GL_COLL_ALL_GATHER) {
    if (sx->lo == rx->lo + (uint64_t)rank * gl_slice_bytes(sx)) return 0;
    snprintf(hint, sizeof hint, "send is rank %d's part of recv, recv:view(%zu, %zu)", rank,
             (size_t)rank * sx->count, sx->count);
  } else if (k->kind == GL_COLL_REDUCE_SCATTER) {
    if (rx->lo == sx->lo + (uint64_t)rank * gl_slice_bytes(rx)) return 0;
    snprintf(hint, sizeof hint, "recv is rank %d's part of send, send:view(%zu, %zu)", rank,
             (size_t)rank * rx->count, rx->count);
  } else {
    if (rx->lo == sx->lo) return 0;
    snprintf(hint, sizeof hint, "recv is send itself: leave recv out");
  }
  gl_buf rb = GL_BUF_INIT, sb = GL_BUF_INIT;
  gl_slice_range(rx, rx->lo, rx->hi, 0, &rb);
  gl_slice_range(sx, sx->lo, sx->hi, 1, &sb);
  gl_fail(c->rt, "%s: recv of rank %d (%s) overlaps send of rank %d (%s): NCCL defines a collective only in place "
                 "(%s) or with recv apart from send",
          what, rank, gl_buf_str(&rb), rank, gl_buf_str(&sb), hint);
  gl_buf_free(&rb);
  gl_buf_free(&sb);
  return -1;
}

/* After a collective of several local ranks: each rank's `done` event
 * recorded after it (created at the first), for gl_comm_settle. */
int gl_comm_mark_inflight(gl_comm *c, gl_stream *const *streams) {
  if (c->n < 2 && !c->check) return 0; /* one rank here, unchecked: its others are in other processes, which NCCL watches */
  if (!c->done && !(c->done = calloc((size_t)c->n, sizeof *c->done))) return gl_fail_nomem(c->rt, NULL);
  for (int i = 0; i < c->n; i++) {
    gl_set_ctx(c->devs[i]);
    CUresult r = c->done[i] ? CUDA_SUCCESS : gld_drv.cuEventCreate(&c->done[i], CU_EVENT_DISABLE_TIMING);
    if (r == CUDA_SUCCESS) r = gld_drv.cuEventRecord(c->done[i], streams[i]->cu);
    if (r != CUDA_SUCCESS) return gl_fail_cu(c->rt, c->devs[i], r, "cuEventRecord", NULL);
  }
  c->inflight = 1;
  return 0;
}

int gl_comm_collective(const gl_coll_req *k) {
  gl_comm *c = k->comm;
  gl_runtime *rt = c->rt;
  gl_site *site = k->site;
  const char *what = k->call;
  if (gl_comm_usable(c, what) != 0) return -1;
  if (rt->capture)
    return gl_fail(rt, "%s: collectives cannot be captured into a graph yet (graph '%s', %s at %s)", what,
                   rt->capture->name, rt->names.capture, gl_loc_text(rt, rt->capture->capture_loc));
  if (k->root < 0 || k->root >= c->size)
    return gl_fail(rt, "%s: root = %d is not a rank of this communicator (0 to %d)", what, k->root, c->size - 1);
  gl_dtype dt = k->send[0]->dtype;
  size_t send_n = k->send[0]->count, recv_n = k->recv[0]->count;
  for (int i = 0; i < c->n; i++) {
    int rank = c->first_rank + i;
    if (gl_comm_check_slice(c, what, "send", i, k->send[i]) || gl_comm_check_slice(c, what, "recv", i, k->recv[i])) return -1;
    gl_stream *s = k->streams[i];
    if (s->dev != c->devs[i])
      return gl_fail(rt, "%s: the stream of rank %d, '%s', is on device %d, but rank %d is on device %d", what, rank,
                     s->name, s->dev->ordinal, rank, c->devs[i]->ordinal);
    if (gl_stream_check(s) != 0) return -1;
    if (k->send[i]->dtype != dt || k->recv[i]->dtype != dt)
      return gl_fail(rt, "%s: every send and recv must have one dtype, got %s (send of rank %d) and %s (%s of rank %d)",
                     what, gl_dtypes[dt].name, c->first_rank, gl_dtypes[k->send[i]->dtype != dt ? k->send[i]->dtype
                                                                                                : k->recv[i]->dtype].name,
                     k->send[i]->dtype != dt ? "send" : "recv", rank);
    if (k->send[i]->count != send_n || k->recv[i]->count != recv_n)
      return gl_fail(rt, "%s: every rank's slices must have the same sizes: rank %d has %zu and %zu, rank %d %zu and %zu",
                     what, c->first_rank, send_n, recv_n, rank, k->send[i]->count, k->recv[i]->count);
  }
  if (gl_comm_nccl_type(dt) < 0)
    return gl_fail(rt, "%s: NCCL has no %s type (it takes i8, u8, i32, u32, i64, u64, f16, bf16, f32 and f64)", what,
                   gl_dtypes[dt].name);
  size_t count = send_n; /* what the NCCL call is given */
  size_t size = (size_t)c->size;
  switch (k->kind) {
  case GL_COLL_ALL_GATHER:
    if (recv_n != size * send_n)
      return gl_fail(rt, "%s: recv must have size x send's elements (%zu x %zu = %zu), got %zu", what, size, send_n,
                     size * send_n, recv_n);
    break;
  case GL_COLL_REDUCE_SCATTER:
    if (send_n != size * recv_n)
      return gl_fail(rt, "%s: send must have size x recv's elements (%zu x %zu = %zu), got %zu", what, size, recv_n,
                     size * recv_n, send_n);
    count = recv_n;
    break;
  default:
    if (recv_n != send_n)
      return gl_fail(rt, "%s: send and recv must have the same number of elements, got %zu and %zu", what, send_n, recv_n);
    break;
  }
  for (int i = 0; i < c->n; i++)
    if (check_apart(c, k, i, what) != 0) return -1;
  /* every rank's operands admitted before anything is queued */
  gl_operand o[GL_MAX_LOCAL_RANKS][2];
  gl_op ops[GL_MAX_LOCAL_RANKS];
  if (c->n > GL_MAX_LOCAL_RANKS) return gl_fail(rt, "%s: more than %d ranks in one process", what, GL_MAX_LOCAL_RANKS);
  if (c->check && gl_comm_check_enter(c, what) != 0) return -1;
  for (int i = 0; i < c->n; i++) {
    gl_slice *sx = k->send[i], *rx = k->recv[i];
    int reads = k->kind != GL_COLL_BROADCAST || c->first_rank + i == k->root || sx != rx;
    int n = 0;
    if (reads) o[i][n++] = (gl_operand){&sx->a->acc, sx->lo, sx->hi, 0, sx, NULL, what, 0, NULL};
    if (k->kind != GL_COLL_REDUCE || c->first_rank + i == k->root)
      o[i][n++] = (gl_operand){&rx->a->acc, rx->lo, rx->hi, 1, rx, NULL, what, 0, NULL};
    ops[i] = (gl_op){.kind = GL_OP_COLL, .name = what, .call = what, .bytes = gl_slice_bytes(rx), .opnd = o[i], .nopnd = n};
    if (gl_queue_admit(k->streams[i], &ops[i], site) != 0) {
      if (c->check) gl_comm_check_leave(c);
      return -1;
    }
  }
  if (c->check) {
    int has_op = k->kind != GL_COLL_BROADCAST && k->kind != GL_COLL_ALL_GATHER;
    int has_root = k->kind == GL_COLL_BROADCAST || k->kind == GL_COLL_REDUCE;
    gl_comm_check_publish(c, (int)k->kind, (int)dt, count, has_op ? k->op : -1, has_root ? k->root : -1, what, site);
  }
  gld_ncclResult r = gld_nc.ncclGroupStart();
  int failed_rank = -1;
  for (int i = 0; i < c->n && r == GL_NCCL_SUCCESS; i++) {
    gl_stream *s = k->streams[i];
    gl_set_ctx(c->devs[i]);
    if (rt->trace) gl_trace_begin(s);
    const void *sp = (const void *)(uintptr_t)gl_slice_ptr(k->send[i]);
    void *rp = (void *)(uintptr_t)gl_slice_ptr(k->recv[i]);
    int t = gl_comm_nccl_type(dt);
    switch (k->kind) {
    case GL_COLL_ALL_REDUCE: r = gld_nc.ncclAllReduce(sp, rp, count, t, k->op, c->nc[i], s->cu); break;
    case GL_COLL_BROADCAST: r = gld_nc.ncclBroadcast(sp, rp, count, t, k->root, c->nc[i], s->cu); break;
    case GL_COLL_REDUCE: r = gld_nc.ncclReduce(sp, rp, count, t, k->op, k->root, c->nc[i], s->cu); break;
    case GL_COLL_ALL_GATHER: r = gld_nc.ncclAllGather(sp, rp, count, t, c->nc[i], s->cu); break;
    default: r = gld_nc.ncclReduceScatter(sp, rp, count, t, k->op, c->nc[i], s->cu); break;
    }
    if (r != GL_NCCL_SUCCESS) failed_rank = c->first_rank + i;
  }
  gld_ncclResult end = gld_nc.ncclGroupEnd();
  for (int i = 0; i < c->n; i++) gl_queue_recorded(k->streams[i], &ops[i], site); /* queued or not: frees wait */
  gld_ncclResult async = GL_NCCL_SUCCESS;
  int async_rank = -1;
  for (int i = 0; i < c->n && r == GL_NCCL_SUCCESS && end == GL_NCCL_SUCCESS; i++)
    if (gld_nc.ncclCommGetAsyncError(c->nc[i], &async) == GL_NCCL_SUCCESS && async != GL_NCCL_SUCCESS &&
        async != GL_NCCL_IN_PROGRESS) {
      async_rank = c->first_rank + i;
      break;
    }
  if (c->check) gl_comm_check_leave(c);
  if (r == GL_NCCL_SUCCESS && end == GL_NCCL_SUCCESS && async_rank < 0) return gl_comm_mark_inflight(c, k->streams);
  gl_buf_free(&c->poison);
  if (r != GL_NCCL_SUCCESS)
    gl_buf_printf(&c->poison, "%s: rank %d (device %d): %s failed: %s", what, failed_rank,
                  c->devs[failed_rank - c->first_rank]->ordinal, nccl_calls[k->kind], gl_comm_nccl_text(r));
  else if (end != GL_NCCL_SUCCESS)
    gl_buf_printf(&c->poison, "%s: ncclGroupEnd failed: %s", what, gl_comm_nccl_text(end));
  else
    gl_buf_printf(&c->poison, "%s: rank %d (device %d): NCCL reports an asynchronous error: %s", what, async_rank,
                  c->devs[async_rank - c->first_rank]->ordinal, gl_comm_nccl_text(async));
  return gl_fail(rt, "%s", gl_buf_str(&c->poison));
}

/* ---- a rank's fault ------------------------------------------------------- */

/* Rank i's device faulted (r, found by `call`): poison it, the communicator
 * and its other ranks' devices, and abort the NCCL communicators. */
static void rank_faulted(gl_comm *c, int i, CUresult r, const char *call, gl_site *site) {
  gl_device *bad = c->devs[i];
  if (!gl_device_poisoned(bad)) gl_device_poison(bad, r, call, site);
  gl_buf_free(&c->poison);
  gl_buf_printf(&c->poison, "rank %d (device %d) faulted, so its collectives cannot complete on the other ranks "
                            "(the communicator was aborted): %s",
                c->first_rank + i, bad->ordinal, gl_buf_str(&bad->poison));
  abort_all(c);
  c->inflight = 0;
  for (int j = 0; j < c->n; j++)
    if (!gl_device_poisoned(c->devs[j]))
      gl_buf_printf(&c->devs[j]->poison, "device %d is poisoned: a collective of its communicator (rank %d here) "
                                         "cannot complete: %s",
                    c->devs[j]->ordinal, c->first_rank + j, gl_buf_str(&c->poison));
}

static int rank_of(const gl_comm *c, const gl_device *d) {
  for (int i = 0; i < c->n; i++)
    if (c->devs[i] == d) return i;
  return -1;
}

void gl_comm_fault(gl_runtime *rt, gl_device *d, CUresult r, const char *call, gl_site *site) {
  for (gl_comm *c = rt->comms; c; c = c->next_live) /* a job's verdict explains it: that is the message */
    if (c->check && c->inflight && rank_of(c, d) >= 0 && gl_comm_check_await(c)) break;
  if (!gl_device_poisoned(d)) gl_device_poison(d, r, call, site);
  for (gl_comm *c = rt->comms; c; c = c->next_live) {
    int mine = c->inflight ? rank_of(c, d) : -1;
    if (mine >= 0) rank_faulted(c, mine, r, call, site);
  }
  gl_set_ctx(d);
}

/* One look at c's ranks: 1 while a collective is still running on one. */
int gl_comm_watch_once(gl_comm *c, gl_site *site) {
  int busy = 0;
  for (int i = 0; i < c->n; i++) {
    gl_set_ctx(c->devs[i]);
    CUresult r = gld_drv.cuEventQuery(c->done[i]);
    if (r == CUDA_ERROR_NOT_READY) busy = 1;
    else if (r != CUDA_SUCCESS && gld_error_is_sticky(r)) {
      gl_fail_cu(c->rt, c->devs[i], r, "cuEventQuery", site); /* gl_comm_fault: c is poisoned, no longer in flight */
      return 0;
    }
  }
  if (!busy) c->inflight = 0;
  return busy;
}

static int has_rank(const gl_comm *c, const gl_device *d) { return !d || rank_of(c, d) >= 0; }

static int settle(gl_runtime *rt, gl_device *d, int wait, gl_site *site) {
  struct timespec nap = {0, 50 * 1000};
  for (gl_comm *c = rt->comms; c; c = c->next_live) {
    if (!c->inflight || !has_rank(c, d)) continue;
    while (gl_comm_watch_once(c, site) && wait) {
      if (c->check && gl_comm_check_failed(c)) break; /* a job's verdict: its device is poisoned with it */
      if (!gld_drv_ext.query_yields || c->check) /* else its queries yield and serve host kernels */
        nanosleep(&nap, NULL);                   /* a job's collectives wait on the network: no spinning */
    }
  }
  return d && gl_device_poisoned(d) ? gl_fail(rt, "%s", gl_buf_str(&d->poison)) : 0;
}

int gl_comm_settle(gl_runtime *rt, gl_device *d, gl_site *site) { return rt->comms ? settle(rt, d, 1, site) : 0; }

int gl_comm_poll(gl_runtime *rt, gl_device *d, gl_site *site) { return rt->comms ? settle(rt, d, 0, site) : 0; }

/* ---- lifetime ----------------------------------------------------------- */

int gl_comm_close(gl_comm *c, const char *call, int loc) {
  if (c->closed)
    return gl_fail(c->rt, "%s: the communicator was closed already (at %s)", call, gl_loc_text(c->rt, c->closed_at));
  c->closed = 1;
  c->closed_at = loc;
  gl_comm_p2p_drop(c);
  settle(c->rt, c->devs[0], 1, NULL); /* a destroy waits for the queued collectives: they must be able to complete */
  if (c->poison.n) abort_all(c);
  else destroy_all(c);
  return 0;
}

void gl_comm_release(gl_comm *c) {
  if (!c->closed) {
    c->closed = 1;
    c->closed_at = gl_intern(c->rt, "garbage collection");
    return; /* destroyed at teardown: a destroy may wait for queued collectives */
  }
  for (int i = 0; i < c->n; i++)
    if (c->nc[i]) return; /* still to be destroyed at teardown */
  comm_free(c);
}

void gl_comm_teardown(gl_runtime *rt) {
  gl_comm_settle(rt, NULL, NULL);
  while (rt->comms) {
    gl_comm *c = rt->comms;
    int doomed = c->poison.n != 0; /* a destroy would wait for collectives that cannot complete */
    for (int i = 0; i < c->n; i++) doomed |= gl_device_poisoned(c->devs[i]);
    if (doomed) abort_all(c);
    for (int i = 0; i < c->n; i++)
      if (c->nc[i]) {
        gl_set_ctx(c->devs[i]);
        gld_drv.cuCtxSynchronize();
      }
    destroy_all(c);
    comm_free(c);
  }
}
