/*
 * test_core.c -- the core driven without Lua (this test links gpulua_core
 * and gpulua_driver only): a runtime on sim, streams, allocations, accesses
 * recorded by queued fills and copies, a conflict record from the checker,
 * ordering, auto's waits, frees ordered after the work, an error found in a
 * finalizer kept on its device, the retire list reaped where host memory is
 * allocated, two runtimes that do not share state, messages named by the
 * caller, and memory a poisoned device's queued work writes kept until it ran.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checker.h"
#include "clock.h"
#include "device.h"
#include "graph.h"
#include "hostmem.h"
#include "memory.h"
#include "ops.h"
#include "options.h"
#include "retire.h"
#include "runtime.h"
#include "stream.h"

#include "check.h"

/* A call site as the Lua layer would give it: here, a fixed text. */
static int site_here(gl_runtime *rt, void *ctx) { return gl_intern(rt, ctx); }
#define SITE(text) {site_here, (void *)(text), GL_LOC_UNRESOLVED}

static gl_runtime *new_runtime(void) {
  gl_buf why = GL_BUF_INIT;
  gl_runtime *rt = gl_runtime_new(&why);
  if (!rt) {
    fprintf(stderr, "gl_runtime_new: %s\n", gl_buf_str(&why));
    exit(1);
  }
  return rt;
}

static gl_stream *new_stream(gl_device *d, const char *name) {
  gl_stream *s;
  if (gl_stream_new(d, name, 0, 0, &s, NULL) != 0) {
    fprintf(stderr, "gl_stream_new: %s\n", gl_error_message(d->rt));
    exit(1);
  }
  return s;
}

static const float one = 1.0f, two = 2.0f;

/* The requests a binding would make (ops.h). */
static int fill(gl_stream *s, gl_slice *x, const float *v, gl_site *site) {
  gl_fill_req r = {.call = "s:fill", .s = s, .x = x, .site = site};
  memcpy(r.value, v, sizeof *v);
  return gl_fill_submit(&r);
}

static int copy(gl_stream *s, gl_ref dst, gl_ref src, gl_site *site) {
  gl_copy_req r = {.call = "s:copy", .s = s, .dst = dst, .src = src, .site = site};
  return gl_copy_submit(&r);
}

static int read_into(gl_slice *x, gl_stream *s, gl_hostbuf *h, gl_site *site) {
  gl_read_req r = {.call = "x:read", .x = x, .s = s, .h = h, .site = site};
  return gl_read_submit(&r);
}

static void test_conflicts_and_ordering(gl_runtime *rt, gl_device *dev) {
  gl_stream *a = new_stream(dev, "a"), *b = new_stream(dev, "b");
  gl_slice x;
  gl_site at_alloc = SITE("test_core.c:alloc");
  CHECK(gl_slice_alloc(a, GL_F32, 1024, 1, &at_alloc, &x) == 0, "%s", gl_error_message(rt));
  gl_site at_fill_a = SITE("test_core.c:fill on a"), at_fill_b = SITE("test_core.c:fill on b");
  CHECK(fill(a, &x, &one, &at_fill_a) == 0, "%s", gl_error_message(rt));

  /* the checker's own answer: a conflict record naming the other stream */
  gl_conflict c;
  uint64_t lo = gl_slice_lo(&x), hi = lo + gl_slice_bytes(&x);
  CHECK(gl_access_conflict(&x.a->acc, b, lo, hi, 1, &c) == 1, "a write on b conflicts with a's fill");
  CHECK(c.other == a && c.other_writes, "the record is a's write");
  CHECK(strcmp(gl_loc_text(rt, c.other_loc), "test_core.c:fill on a") == 0, "at the fill's site, got %s",
        gl_loc_text(rt, c.other_loc));
  CHECK(gl_access_conflict(&x.a->acc, a, lo, hi, 1, &c) == 0, "the same stream never conflicts with itself");

  /* strict: the queued operation is refused, naming both streams and both sites */
  uint64_t bseq = b->seq;
  CHECK(fill(b, &x, &two, &at_fill_b) == -1, "strict refuses the unordered fill");
  const char *msg = gl_error_message(rt);
  CHECK(strstr(msg, "stream 'b'") && strstr(msg, "stream 'a'") && strstr(msg, "test_core.c:fill on a") &&
            strstr(msg, "test_core.c:fill on b"),
        "the message names both streams and both sites: %s", msg);
  CHECK(b->seq == bseq, "nothing was queued on b");

  /* ordering: after b joins a, b's write is allowed */
  CHECK(gl_stream_join(b, a, 0, NULL) == 0, "%s", gl_error_message(rt));
  CHECK(gl_access_conflict(&x.a->acc, b, lo, hi, 1, &c) == 0, "ordered after the join");
  CHECK(fill(b, &x, &two, &at_fill_b) == 0, "%s", gl_error_message(rt));

  /* disjoint views of one allocation never conflict */
  gl_slice lo_half, hi_half;
  gl_slice_view(&x, 0, 512, &lo_half);
  gl_slice_view(&x, 512, 512, &hi_half);
  CHECK(gl_stream_join(a, b, 0, NULL) == 0, "%s", gl_error_message(rt));
  CHECK(fill(a, &lo_half, &one, NULL) == 0, "%s", gl_error_message(rt));
  CHECK(fill(b, &hi_half, &one, NULL) == 0, "the other half is free: %s", gl_error_message(rt));
  CHECK(gl_access_conflict(&x.a->acc, b, 0, 4, 0, &c) == 1 && c.other == a, "the same half is not");

  /* auto: the unordered access makes b wait for a instead of failing */
  rt->policy = GL_POLICY_AUTO;
  CHECK(fill(b, &lo_half, &one, NULL) == 0, "auto inserts the wait: %s", gl_error_message(rt));
  CHECK(gl_ordered_before(b, a, a->seq), "b is now ordered after all of a");
  rt->policy = GL_POLICY_STRICT;
  CHECK(gl_stream_join(a, b, 0, NULL) == 0, "%s", gl_error_message(rt));

  /* the data: a copy to the host and a read see the last fill */
  gl_hostbuf h;
  CHECK(gl_hostbuf_new(rt, GL_F32, 1024, 1, 1, "host_new", &h) == 0, "%s", gl_error_message(rt));
  CHECK(copy(a, (gl_ref){NULL, &h}, (gl_ref){&x, NULL}, NULL) == 0, "%s", gl_error_message(rt));
  CHECK(gl_hostbuf_access(&h, 0, 1024, 0, NULL, NULL) == -1, "strict refuses a host read while the copy may run");
  CHECK(gl_stream_sync(a, "sync", NULL) == 0, "%s", gl_error_message(rt));
  CHECK(gl_hostbuf_access(&h, 0, 1024, 0, NULL, NULL) == 0, "after the sync it is allowed");
  CHECK(((float *)gl_hostbuf_ptr(&h))[1023] == 1.0f, "the copy holds the last fill");
  gl_hostbuf r;
  CHECK(gl_hostbuf_new(rt, GL_F32, 512, 0, 0, "host_new", &r) == 0, "%s", gl_error_message(rt));
  CHECK(read_into(&hi_half, b, &r, NULL) == 0, "%s", gl_error_message(rt));
  CHECK(((float *)gl_hostbuf_ptr(&r))[0] == 1.0f, "the read sees the same data");
  /* the read's copy is recorded on the buffer it writes: were its wait to
   * fail, the buffer's memory would wait for the copy (the retire list) */
  CHECK(r.m->acc.n == 1, "a read is recorded on the buffer it writes");

  /* frees: ordered after every access; the memory comes back */
  size_t after, total;
  gl_site at_free = SITE("test_core.c:free");
  gl_slice_collect(&lo_half);
  CHECK(lo_half.a == NULL, "a view's finalizer drops its handle");
  CHECK(gl_slice_free(&hi_half, 0, "slice_free", &at_free) == 0, "%s", gl_error_message(rt));
  CHECK(gl_slice_free(&x, 0, "slice_free", &at_free) == 0, "%s", gl_error_message(rt));
  CHECK(gl_slice_check(&x, 1) == -1 && strstr(gl_error_message(rt), "freed at test_core.c:free"),
        "use after free names where: %s", gl_error_message(rt));
  CHECK(gl_slice_free(&x, 0, "slice_free", &at_free) == -1, "a second free is an error");
  gl_buf why = GL_BUF_INIT;
  CHECK(gl_slice_released(&x, &why) && strstr(gl_buf_str(&why), "is already freed (at test_core.c:free)"),
        "a released slice says so beforehand: %s", gl_buf_str(&why));
  gl_buf_free(&why);
  gl_slice_collect(&x);
  CHECK(x.a == NULL, "the finalizer drops the handle");
  gl_slice_collect(&hi_half); /* every handle is finally collected */
  CHECK(gl_device_sync(dev, NULL) == 0, "%s", gl_error_message(rt));
  CHECK(gl_device_free_memory(dev, &after, &total) == 0 && after == total, "all memory is back: %zu of %zu", after,
        total);
  CHECK(gl_hostbuf_free(rt, &h, 0, "host_free", NULL) == 0, "%s", gl_error_message(rt));
  CHECK(gl_hostbuf_released(rt, &h, &why) && strstr(gl_buf_str(&why), "is already freed"), "%s", gl_buf_str(&why));
  gl_buf_free(&why);
  CHECK(gl_hostbuf_free(rt, &h, 0, "host_free", NULL) == -1, "a second free is an error");
  gl_hostbuf_collect(&r);
  CHECK(r.m == NULL, "a buffer's finalizer drops its handle");
  CHECK(gl_stream_close(a, GL_LOC_NONE, 1) == 0 && gl_stream_close(b, GL_LOC_NONE, 1) == 0, "%s", gl_error_message(rt));
  CHECK(gl_stream_check(a) == -1 && strstr(gl_error_message(rt), "is closed"), "%s", gl_error_message(rt));
  gl_stream_unref(a);
  gl_stream_unref(b);
}

static CUresult (*real_free)(CUdeviceptr, CUstream);
static CUresult failing_free(CUdeviceptr p, CUstream s) {
  (void)p;
  (void)s;
  return CUDA_ERROR_INVALID_VALUE;
}

static void test_finalizer_error_is_kept(gl_runtime *rt, gl_device *dev) {
  gl_slice x;
  CHECK(gl_slice_alloc(dev->main, GL_U8, 64, 0, NULL, &x) == 0, "%s", gl_error_message(rt));
  real_free = gld_drv.cuMemFreeAsync;
  gld_drv.cuMemFreeAsync = failing_free;
  gl_slice_collect(&x); /* a finalizer never fails: it keeps the error */
  gld_drv.cuMemFreeAsync = real_free;
  CHECK(gl_device_check(dev) == -1, "the next call on the device reports it");
  CHECK(strstr(gl_error_message(rt), "cuMemFreeAsync failed: CUDA_ERROR_INVALID_VALUE") != NULL,
        "naming the call and the result: %s", gl_error_message(rt));
  CHECK(gl_device_check(dev) == 0, "once");
  gl_device_sync(dev, NULL); /* the memory itself was never freed: reclaim nothing, leak nothing else */
}

static void test_out_of_memory(gl_runtime *rt, gl_device *dev) {
  gl_slice x = {0};
  CHECK(gl_slice_new(dev->main, GL_F64, (dev->memory / 8) + 1, 0, "test.alloc", NULL, &x) == -1,
        "more than the device has");
  CHECK(gl_error_code(rt) == CUDA_ERROR_OUT_OF_MEMORY, "with the out-of-memory code");
  CHECK(strstr(gl_error_message(rt), "test.alloc: out of memory on device 0") != NULL, "%s", gl_error_message(rt));
  CHECK(x.a == NULL, "the handle holds nothing");
}

/* realloc, failing on demand (the test links with --wrap=realloc): out of
 * host memory is an error like any other, never an abort */
void *__real_realloc(void *p, size_t n);
static int realloc_fails;
void *__wrap_realloc(void *p, size_t n) { return realloc_fails ? NULL : __real_realloc(p, n); }

static void test_out_of_host_memory(gl_runtime *rt, gl_device *dev) {
  gl_stream *a = new_stream(dev, "oom-a");
  gl_slice x = {0};
  realloc_fails = 1;
  CHECK(gl_slice_alloc(a, GL_F32, 16, 0, NULL, &x) == -1, "an allocation whose records cannot be kept fails");
  CHECK(gl_error_code(rt) == CUDA_ERROR_OUT_OF_MEMORY && strstr(gl_error_message(rt), "out of host memory"), "%s",
        gl_error_message(rt));
  realloc_fails = 0;
  CHECK(gl_slice_alloc(a, GL_F32, 16, 0, NULL, &x) == 0, "%s", gl_error_message(rt));
  /* fill the record list, so that one more stream's record needs more room */
  gl_stream *s[8];
  for (int i = 0; i < 8; i++) {
    s[i] = new_stream(dev, "oom");
    CHECK(gl_stream_join(s[i], a, 0, NULL) == 0, "%s", gl_error_message(rt));
  }
  int failed = 0;
  for (int i = 0; i < 8 && !failed; i++) {
    gl_slice v;
    gl_slice_view(&x, (size_t)i, 1, &v);
    uint64_t seq = s[i]->seq;
    realloc_fails = 1;
    int rc = fill(s[i], &v, &one, NULL);
    realloc_fails = 0;
    if (rc != 0) {
      failed = 1;
      CHECK(strstr(gl_error_message(rt), "out of host memory") != NULL, "%s", gl_error_message(rt));
      CHECK(s[i]->seq == seq, "and nothing was queued");
    }
    gl_slice_collect(&v);
  }
  CHECK(failed, "a record that cannot be kept fails the operation");
  CHECK(gl_device_sync(dev, NULL) == 0, "%s", gl_error_message(rt));
  gl_slice_collect(&x);
  for (int i = 0; i < 8; i++) {
    gl_stream_close(s[i], GL_LOC_NONE, 1);
    gl_stream_unref(s[i]);
  }
  gl_stream_close(a, GL_LOC_NONE, 1);
  gl_stream_unref(a);
}

static void test_two_runtimes(gl_runtime *rt) {
  gl_runtime *other = new_runtime();
  int a = gl_intern(rt, "only in the first"), b = gl_intern(other, "only in the second");
  CHECK(strcmp(gl_loc_text(rt, a), "only in the first") == 0, "the first keeps its text");
  CHECK(strcmp(gl_loc_text(other, b), "only in the second") == 0, "the second its own");
  other->policy = GL_POLICY_OFF;
  CHECK(rt->policy == GL_POLICY_STRICT, "policies are per runtime");
  gl_device *d2;
  CHECK(gl_device_open(other, 1, "open", &d2) == 0, "%s", gl_error_message(other));
  gl_runtime_free(other);
  CHECK(rt->devs[1].opened == 0 || rt->devs[1].rt == rt, "the first runtime's devices are its own");
}

/* Host memory whose copy is still queued when its last handle goes waits on
 * the runtime's retire list (a finalizer never blocks); the next host
 * allocation reaps it once the copy has finished. */
static void test_retire_list(gl_runtime *rt, gl_device *dev) {
  gl_slice x;
  CHECK(gl_slice_alloc(dev->main, GL_F32, 256, 1, NULL, &x) == 0, "%s", gl_error_message(rt));
  size_t before = rt->pinned_held;
  gl_hostbuf h, r;
  CHECK(gl_hostbuf_new(rt, GL_F32, 256, 1, 0, "host_new", &h) == 0, "%s", gl_error_message(rt));
  CHECK(copy(dev->main, (gl_ref){NULL, &h}, (gl_ref){&x, NULL}, NULL) == 0, "%s", gl_error_message(rt));
  gl_hostbuf_collect(&h);
  CHECK(gl_retire_pending(rt) && rt->pinned_held > before, "memory whose copy is queued waits on the retire list");
  CHECK(gl_stream_sync(dev->main, "sync", NULL) == 0, "%s", gl_error_message(rt));
  CHECK(gl_hostbuf_new(rt, GL_F32, 4, 0, 0, "host_new", &r) == 0, "%s", gl_error_message(rt)); /* pageable */
  CHECK(!gl_retire_pending(rt) && rt->pinned_held == before,
        "the next host allocation reaps it once the copy has finished: %zu bytes pinned, %zu before", rt->pinned_held,
        before);
  gl_hostbuf_collect(&r);
  gl_slice_collect(&x);
}

/* A device poisoned by another rank's fault (comm.c writes only its poison
 * text) still runs its queued work once its collectives end: memory that
 * work writes waits for it on the retire list, in a reap that does not wait
 * and in the one that does, until the work has run. The stream is held by a
 * host function behind which the copy waits. */
static volatile int gate_open;
static void gate(void *user) {
  (void)user;
  while (!__atomic_load_n(&gate_open, __ATOMIC_ACQUIRE)) usleep(1000);
}
static void *open_gate_later(void *arg) {
  (void)arg;
  usleep(50000);
  __atomic_store_n(&gate_open, 1, __ATOMIC_RELEASE);
  return NULL;
}

static void test_poisoned_device_work_still_holds(gl_runtime *rt, gl_device *dev) {
  gl_slice x;
  CHECK(gl_slice_alloc(dev->main, GL_F32, 256, 1, NULL, &x) == 0, "%s", gl_error_message(rt));
  CHECK(fill(dev->main, &x, &two, NULL) == 0, "%s", gl_error_message(rt));
  gl_hostbuf h;
  CHECK(gl_hostbuf_new(rt, GL_F32, 256, 1, 0, "host_new", &h) == 0, "%s", gl_error_message(rt));
  gl_hostmem *m = h.m;
  gl_set_ctx(dev);
  CHECK(gld_drv.cuLaunchHostFunc(dev->main->cu, gate, NULL) == CUDA_SUCCESS, "the gate is queued");
  CHECK(copy(dev->main, (gl_ref){NULL, &h}, (gl_ref){&x, NULL}, NULL) == 0, "%s", gl_error_message(rt));
  gl_buf_printf(&dev->poison, "device 0 is poisoned: a collective of its communicator cannot complete (test)");
  gl_hostbuf_collect(&h);
  gl_retire_reap(rt, 0);
  CHECK(gl_retire_pending(rt) && m->ptr, "memory a poisoned device's queued copy writes waits for the copy");
  pthread_t t;
  pthread_create(&t, NULL, open_gate_later, NULL);
  gl_retire_reap(rt, 1);
  CHECK(__atomic_load_n(&gate_open, __ATOMIC_ACQUIRE) && !gl_retire_pending(rt),
        "the waiting reap waits for the copy on the poisoned device, then frees");
  pthread_join(t, NULL);
  gl_buf_free(&dev->poison);
  gl_slice_collect(&x);
}

/* Messages are made from the names the caller gives: the failing call's own
 * (`call`), and the runtime's vocabulary for the calls a message points at
 * (names.h). Here both are this test's, so nothing of Lua may appear. */
static void test_messages_name_the_call(gl_runtime *rt, gl_device *dev) {
  static const gl_names names = {
      .device = "test.open", .alloc = "test.alloc", .builtins = "test.builtins", .trace = "test.trace",
      .language = "C", .capture = "test.begin", .update = "test.recapture", .launch_graph = "test.replay",
      .close_graph = "test.close()", .fork = "test.fork", .join = "test.join", .join_hint = "test.join('%s', '%s')",
      .record_again = "test.record()", .trace_start = "test.trace()"};
  gl_names saved = rt->names;
  rt->names = names;
  gl_stream *s = new_stream(dev, "origin"), *other = new_stream(dev, "other"), *t = NULL;
  gl_slice x;
  gl_site at_capture = SITE("test_core.c:capture"), at_sync = SITE("test_core.c:sync");
  CHECK(gl_slice_alloc(s, GL_F32, 64, 1, NULL, &x) == 0, "%s", gl_error_message(rt));

  /* a capture refuses a host wait: the refused call and the capture's call are the test's */
  gl_graph *g;
  CHECK(gl_graph_begin(s, "g", "test.capture", &at_capture, &g) == 0, "%s", gl_error_message(rt));
  CHECK(gl_stream_sync(other, "test.sync", &at_sync) == -1, "a capture refuses a host wait");
  const char *msg = gl_error_message(rt);
  CHECK(strstr(msg, "test.sync at test_core.c:sync: not allowed during the capture of graph 'g' (test.begin at "
                    "test_core.c:capture)") == msg &&
            strstr(msg, "before or after test.begin") && !strstr(msg, "s:"),
        "%s", msg);
  CHECK(fill(s, &x, &one, NULL) == 0, "%s", gl_error_message(rt));
  CHECK(gl_graph_end(&g, 1, "test.capture", NULL) == 0, "%s", gl_error_message(rt));

  /* memory a graph uses: its free names the free and how to close the graph */
  CHECK(gl_slice_free(&x, 0, "test.free", NULL) == -1, "memory a live graph uses is not freed");
  msg = gl_error_message(rt);
  CHECK(strstr(msg, "test.free: slice f32[64] on device 0 is used by graph 'g' (captured at test_core.c:capture): "
                    "close the graph first (test.close())") == msg,
        "%s", msg);
  gl_graph_close(g);
  CHECK(gl_slice_free(&x, 0, "test.free", NULL) == 0, "%s", gl_error_message(rt));
  gl_slice_collect(&x);

  /* a fork not joined back: the capture's end names itself and the join to write */
  CHECK(gl_graph_begin(s, "h", "test.capture", &at_capture, &g) == 0, "%s", gl_error_message(rt));
  CHECK(gl_stream_fork(s, "branch", 0, &t, "test.fork", NULL) == 0, "%s", gl_error_message(rt));
  CHECK(gl_graph_end(&g, 1, "test.end", NULL) == -1 && g == NULL, "a fork not joined back fails the capture");
  msg = gl_error_message(rt);
  CHECK(strstr(msg, "test.end of graph 'h' (test.begin at test_core.c:capture): stream 'branch', forked from "
                    "'origin' in the capture, was not joined back before the function returned: "
                    "test.join('origin', 'branch') after its last work") == msg,
        "%s", msg);
  CHECK(gl_stream_sync(s, "test.sync", NULL) == 0, "%s", gl_error_message(rt));
  gl_stream_close(t, GL_LOC_NONE, 0);
  gl_stream_close(other, GL_LOC_NONE, 0);
  gl_stream_close(s, GL_LOC_NONE, 0);
  gl_stream_unref(t);
  gl_stream_unref(other);
  gl_stream_unref(s);
  rt->names = saved;
}

int main(void) {
  setenv("GPULUA_BACKEND", "sim", 1);
  setenv("GPULUA_SIM_MEMORY", "64M", 1);
  gl_buf why = GL_BUF_INIT;
  if (gl_backend_choose(&why) != 0) {
    fprintf(stderr, "%s\n", gl_buf_str(&why));
    return 1;
  }
  gl_runtime *rt = new_runtime();
  gl_device *dev;
  if (gl_device_open(rt, 0, "open", &dev) != 0) {
    fprintf(stderr, "%s\n", gl_error_message(rt));
    return 1;
  }
  test_conflicts_and_ordering(rt, dev);
  test_finalizer_error_is_kept(rt, dev);
  test_retire_list(rt, dev);
  test_out_of_memory(rt, dev);
  test_out_of_host_memory(rt, dev);
  test_two_runtimes(rt);
  test_messages_name_the_call(rt, dev);
  test_poisoned_device_work_still_holds(rt, dev);
  gl_runtime_free(rt);
  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures != 0;
}
