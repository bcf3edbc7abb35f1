/*
 * test_ops_req.c -- gemm and collectives driven through core alone (this
 * test links gpulua_core and gpulua_driver only; on sim, cuBLAS and NCCL are
 * the sim's): a request filled on the stack, one call, and every check it
 * makes in order: devices, dtypes, extents, overlaps, conflicts, the
 * communicator's state and root. Each message begins with the call's name
 * the request gives, here names no script uses, so a message written for
 * one binding shows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "comm.h"
#include "device.h"
#include "memory.h"
#include "nccl_table.h"
#include "options.h"
#include "runtime.h"
#include "stream.h"

#include "check.h"

/* A call site as a binding would give it: here, a fixed text. */
static int site_here(gl_runtime *rt, void *ctx) { return gl_intern(rt, ctx); }
#define SITE(text) {site_here, (void *)(text), GL_LOC_UNRESOLVED}

static gl_slice alloc_or_die(gl_stream *s, gl_dtype dt, size_t n) {
  gl_slice x;
  if (gl_slice_alloc(s, dt, n, 1, NULL, &x) != 0) {
    fprintf(stderr, "gl_slice_alloc: %s\n", gl_error_message(s->dev->rt));
    exit(1);
  }
  return x;
}

/* The bytes of x to or from the host, outside the checker (the test's own setup). */
static void put(gl_stream *s, gl_slice *x, const void *src) {
  gl_set_ctx(s->dev);
  if (gld_drv.cuMemcpyHtoDAsync(gl_slice_ptr(x), src, gl_slice_bytes(x), s->cu) != CUDA_SUCCESS ||
      gld_drv.cuStreamSynchronize(s->cu) != CUDA_SUCCESS) {
    fprintf(stderr, "cuMemcpyHtoDAsync failed\n");
    exit(1);
  }
}
static void get(gl_stream *s, gl_slice *x, void *dst) {
  gl_set_ctx(s->dev);
  if (gld_drv.cuMemcpyDtoHAsync(dst, gl_slice_ptr(x), gl_slice_bytes(x), s->cu) != CUDA_SUCCESS ||
      gld_drv.cuStreamSynchronize(s->cu) != CUDA_SUCCESS) {
    fprintf(stderr, "cuMemcpyDtoHAsync failed\n");
    exit(1);
  }
}

/* rc is -1 and the runtime's message begins with `prefix` and holds `part` */
#define FAILS(rc, rt, prefix, part)                                                                             \
  CHECK((rc) == -1 && strncmp(gl_error_message(rt), prefix, strlen(prefix)) == 0 &&                             \
            strstr(gl_error_message(rt), part) != NULL,                                                        \
        "expected '%s ... %s', got rc %d: %s", prefix, part, (rc), (rc) ? gl_error_message(rt) : "")

/* 2 x 3 times 3 x 2, all ones and twos: C's elements are 3 * 1 * 2 = 6 */
static gl_gemm_req gemm_req(gl_stream *s, gl_site *site, gl_slice *a, gl_slice *b, gl_slice *c) {
  return (gl_gemm_req){.call = "t:matmul", .s = s, .site = site, .a = a, .b = b, .c = c, .m = 2, .n = 2, .k = 3,
                       .lda = -1, .ldb = -1, .ldc = -1, .stride_a = -1, .stride_b = -1, .stride_c = -1,
                       .alpha = 1, .beta = 0};
}

static void test_gemm(gl_runtime *rt, gl_device *d0, gl_device *d1) {
  gl_stream *s = d0->main;
  gl_site site = SITE("test_ops_req.c:gemm");
  gl_slice a = alloc_or_die(s, GL_F32, 6), b = alloc_or_die(s, GL_F32, 6), c = alloc_or_die(s, GL_F32, 4);
  gl_slice far = alloc_or_die(d1->main, GL_F32, 6), ints = alloc_or_die(s, GL_I32, 4);
  gl_slice wide = alloc_or_die(s, GL_F64, 6), big = alloc_or_die(s, GL_F32, 16);
  float ones[6] = {1, 1, 1, 1, 1, 1}, twos[6] = {2, 2, 2, 2, 2, 2}, out[4] = {0};
  put(s, &a, ones);
  put(s, &b, twos);

  /* the product itself */
  gl_gemm_req r = gemm_req(s, &site, &a, &b, &c);
  CHECK(gl_gemm(&r) == 0, "%s", gl_error_message(rt));
  get(s, &c, out);
  CHECK(out[0] == 6 && out[3] == 6, "C = A B: got %g %g", out[0], out[3]);

  /* a slice of another device */
  r = gemm_req(s, &site, &a, &far, &c);
  FAILS(gl_gemm(&r), rt, "t:matmul: b is a slice of device 1", "but stream 'main' is on device 0");
  /* a dtype cuBLAS does not take, then mixed dtypes */
  r = gemm_req(s, &site, &a, &b, &ints);
  FAILS(gl_gemm(&r), rt, "t:matmul: works on f32, f64, f16 and bf16 slices", "got an i32 slice");
  r = gemm_req(s, &site, &wide, &b, &c);
  FAILS(gl_gemm(&r), rt, "t:matmul: a, b and c must have one dtype", "got f64, f32 and f32");
  /* extents that do not fit the slices, a leading dimension below a row's width */
  r = gemm_req(s, &site, &a, &b, &c);
  r.m = 3;
  FAILS(gl_gemm(&r), rt, "t:matmul: a has 6 elements", "3 x 3 with lda = 3 needs 9");
  r = gemm_req(s, &site, &a, &b, &c);
  r.ldb = 1;
  FAILS(gl_gemm(&r), rt, "t:matmul: ldb = 1", "b's rows are 2 elements wide");
  r = gemm_req(s, &site, &a, &b, &c);
  r.n = (int64_t)1 << 32;
  FAILS(gl_gemm(&r), rt, "t:matmul: n = 4294967296 is out of range", "(0 to 2147483647)");
  r = gemm_req(s, &site, &a, &b, &big);
  r.count = 3, r.m = r.n = 2, r.k = 1, r.stride_c = 2;
  FAILS(gl_gemm(&r), rt, "t:matmul: stride_c = 2 makes the 3 matrices of c overlap", "(each takes 4 elements)");
  /* c sharing memory with a: refused */
  gl_slice in_a, in_c;
  gl_slice_view(&big, 0, 6, &in_a);
  gl_slice_view(&big, 4, 4, &in_c);
  r = gemm_req(s, &site, &in_a, &b, &in_c);
  FAILS(gl_gemm(&r), rt, "t:matmul: c (elements 4 to 7 of f32[16] on device 0) overlaps a (elements 0 to 5 of it)",
        "c must not share memory with a or b");
  /* a freed slice */
  gl_slice gone = alloc_or_die(s, GL_F32, 6);
  CHECK(gl_slice_free(&gone, 0, "slice_free", &site) == 0, "%s", gl_error_message(rt));
  r = gemm_req(s, &site, &gone, &b, &c);
  FAILS(gl_gemm(&r), rt, "t:matmul: a: use of a freed slice f32[6] on device 0", "test_ops_req.c:gemm");

  /* a conflict: c written on main, then read as a on another stream unordered */
  gl_stream *other;
  CHECK(gl_stream_new(d0, "other", 0, 0, &other, NULL) == 0, "%s", gl_error_message(rt));
  gl_site later = SITE("test_ops_req.c:other");
  gl_slice d = alloc_or_die(other, GL_F32, 4);
  CHECK(gl_stream_join(other, s, 0, NULL) == 0, "%s", gl_error_message(rt));
  r = gemm_req(other, &later, &a, &b, &d); /* ordered after main: makes other's workspace */
  CHECK(gl_gemm(&r) == 0, "%s", gl_error_message(rt));
  r = gemm_req(s, &site, &a, &b, &c);
  CHECK(gl_gemm(&r) == 0, "%s", gl_error_message(rt));
  uint64_t seq = other->seq;
  r = gemm_req(other, &later, &c, &b, &d);
  r.k = 2;
  FAILS(gl_gemm(&r), rt, "t:matmul a: slice f32[4] on device 0 is read on stream 'other'", "stream 'main'");
  CHECK(strstr(gl_error_message(rt), "test_ops_req.c:gemm") && strstr(gl_error_message(rt), "test_ops_req.c:other"),
        "the conflict names both sites: %s", gl_error_message(rt));
  CHECK(other->seq == seq, "nothing was queued on the refused stream");
  /* a closed stream */
  CHECK(gl_device_sync(d0, NULL) == 0, "%s", gl_error_message(rt));
  CHECK(gl_stream_close(other, GL_LOC_NONE, 1) == 0, "%s", gl_error_message(rt));
  r = gemm_req(other, &later, &a, &b, &c);
  CHECK(gl_gemm(&r) == -1 && strstr(gl_error_message(rt), "is closed"), "a closed stream: %s", gl_error_message(rt));
  gl_stream_unref(other);

  CHECK(gl_device_sync(d0, NULL) == 0, "%s", gl_error_message(rt));
  gl_slice *all[] = {&a, &b, &c, &far, &ints, &wide, &big, &in_a, &in_c, &gone, &d};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) gl_slice_collect(all[i]);
}

static gl_coll_req coll_req(gl_comm *c, gl_coll_kind kind, gl_slice **send, gl_slice **recv, gl_stream **st,
                            gl_site *site) {
  return (gl_coll_req){.call = "t:allreduce", .comm = c, .kind = kind, .op = GL_NCCL_SUM, .root = 0,
                       .send = send, .recv = recv, .streams = st, .site = site};
}

static void test_collectives(gl_runtime *rt, gl_device *d0, gl_device *d1) {
  gl_site site = SITE("test_ops_req.c:coll");
  gl_device *devs[2] = {d0, d1};
  gl_comm *comm = NULL;
  FAILS(gl_comm_new_local(rt, "t:comm", 2, (gl_device *[]){d0, d0}, &site, &comm), rt,
        "t:comm: device 0 is given twice", "(one rank per device)");
  CHECK(gl_comm_new_local(rt, "t:comm", 2, devs, &site, &comm) == 0, "%s", gl_error_message(rt));
  gl_stream *st[2] = {d0->main, d1->main};
  gl_slice x0 = alloc_or_die(d0->main, GL_F32, 4), x1 = alloc_or_die(d1->main, GL_F32, 4);
  gl_slice y0 = alloc_or_die(d0->main, GL_F32, 8), y1 = alloc_or_die(d1->main, GL_F32, 8);
  gl_slice h0 = alloc_or_die(d0->main, GL_I16, 4), h1 = alloc_or_die(d1->main, GL_I16, 4);
  float v0[4] = {1, 2, 3, 4}, v1[4] = {10, 20, 30, 40}, out[4] = {0};
  put(d0->main, &x0, v0);
  put(d1->main, &x1, v1);

  /* in place over both ranks */
  gl_slice *send[2] = {&x0, &x1};
  gl_coll_req r = coll_req(comm, GL_COLL_ALL_REDUCE, send, send, st, &site);
  CHECK(gl_comm_collective(&r) == 0, "%s", gl_error_message(rt));
  get(d1->main, &x1, out);
  CHECK(out[0] == 11 && out[3] == 44, "the sum on rank 1: %g %g", out[0], out[3]);

  /* a slice of the other rank's device */
  gl_slice *swapped[2] = {&x1, &x0};
  r = coll_req(comm, GL_COLL_ALL_REDUCE, swapped, swapped, st, &site);
  FAILS(gl_comm_collective(&r), rt, "t:allreduce: send of rank 0 is a slice of device 1", "rank 0 is on device 0");
  /* a stream of the other rank's device */
  gl_stream *wrong[2] = {d1->main, d1->main};
  r = coll_req(comm, GL_COLL_ALL_REDUCE, send, send, wrong, &site);
  FAILS(gl_comm_collective(&r), rt, "t:allreduce: the stream of rank 0, 'main', is on device 1", "rank 0 is on device 0");
  /* a dtype NCCL does not have */
  gl_slice *halves[2] = {&h0, &h1};
  r = coll_req(comm, GL_COLL_ALL_REDUCE, halves, halves, st, &site);
  FAILS(gl_comm_collective(&r), rt, "t:allreduce: NCCL has no i16 type", "(it takes i8");
  /* sizes that do not fit the collective */
  gl_slice *bigger[2] = {&y0, &y1};
  r = coll_req(comm, GL_COLL_ALL_REDUCE, send, bigger, st, &site);
  FAILS(gl_comm_collective(&r), rt, "t:allreduce: send and recv must have the same number of elements", "got 4 and 8");
  r = coll_req(comm, GL_COLL_ALL_GATHER, send, send, st, &site);
  FAILS(gl_comm_collective(&r), rt, "t:allreduce: recv must have size x send's elements", "(2 x 4 = 8), got 4");
  /* a root out of range */
  r = coll_req(comm, GL_COLL_BROADCAST, send, send, st, &site);
  r.root = 2;
  FAILS(gl_comm_collective(&r), rt, "t:allreduce: root = 2 is not a rank of this communicator", "(0 to 1)");
  /* recv overlapping send, neither in place nor apart */
  gl_slice s0, r0, s1, r1;
  gl_slice_view(&y0, 0, 4, &s0);
  gl_slice_view(&y0, 2, 4, &r0);
  gl_slice_view(&y1, 0, 4, &s1);
  gl_slice_view(&y1, 4, 4, &r1);
  gl_slice *ov_send[2] = {&s0, &s1}, *ov_recv[2] = {&r0, &r1};
  r = coll_req(comm, GL_COLL_ALL_REDUCE, ov_send, ov_recv, st, &site);
  FAILS(gl_comm_collective(&r), rt, "t:allreduce: recv of rank 0 (elements 2 to 5 of f32[8] on device 0) overlaps "
        "send of rank 0", "recv is send itself: leave recv out");

  /* closed: later calls name where */
  CHECK(gl_device_sync(d0, NULL) == 0 && gl_device_sync(d1, NULL) == 0, "%s", gl_error_message(rt));
  CHECK(gl_comm_close(comm, "t:close", gl_intern(rt, "test_ops_req.c:close")) == 0, "%s", gl_error_message(rt));
  FAILS(gl_comm_close(comm, "t:close", GL_LOC_NONE), rt, "t:close: the communicator was closed already",
        "test_ops_req.c:close");
  r = coll_req(comm, GL_COLL_ALL_REDUCE, send, send, st, &site);
  FAILS(gl_comm_collective(&r), rt, "t:allreduce: the communicator was closed", "test_ops_req.c:close");
  gl_comm_release(comm);

  gl_slice *all[] = {&x0, &x1, &y0, &y1, &h0, &h1, &s0, &r0, &s1, &r1};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) gl_slice_collect(all[i]);
}

int main(void) {
  setenv("GPULUA_BACKEND", "sim", 1);
  setenv("GPULUA_SIM_DEVICES", "2", 1);
  setenv("GPULUA_SIM_MEMORY", "256M", 1);
  gl_buf why = GL_BUF_INIT;
  if (gl_backend_choose(&why) != 0) {
    fprintf(stderr, "%s\n", gl_buf_str(&why));
    return 1;
  }
  gl_runtime *rt = gl_runtime_new(&why);
  gl_device *d0, *d1;
  if (!rt || gl_device_open(rt, 0, "open", &d0) != 0 || gl_device_open(rt, 1, "open", &d1) != 0) {
    fprintf(stderr, "%s\n", rt ? gl_error_message(rt) : gl_buf_str(&why));
    return 1;
  }
  test_gemm(rt, d0, d1);
  test_collectives(rt, d0, d1);
  gl_runtime_free(rt);
  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures != 0;
}
