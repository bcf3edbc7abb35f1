/*
 * test_sim_graphs.c -- the sim's CUDA graphs: nothing runs during capture;
 * a replay runs the captured work again, each time; forks joined back and
 * the errors CUDA gives (an unjoined fork, a sync, an allocation or a free
 * while capturing, a wait on an event of no capture), after which the
 * stream works as before; an update of the same topology, refused for
 * another; kernel nodes with parameters of their own.
 */
#include "sim_driver_harness.h"
#include "sim_driver_tests.h"

#include <stdint.h>
#include <string.h>

static void count_fn(void *p) { atomic_fetch_add((atomic_int *)p, 1); }

/* the words of [p, p + n*4) as the host sees them after a sync of s */
static void read_words(CUstream s, CUdeviceptr p, uint32_t *out, size_t n) {
  OK(d.cuMemcpyDtoHAsync(out, p, n * 4, s));
  OK(d.cuStreamSynchronize(s));
}

void test_graph_capture_and_replay(void) {
  CUstream s = mkstream(), r = mkstream();
  CUdeviceptr x;
  OK(d.cuMemAllocAsync(&x, 64, s));
  OK(d.cuMemsetD32Async(x, 7, 16, s));
  OK(d.cuStreamSynchronize(s));
  atomic_int count;
  atomic_init(&count, 0);

  OK(d.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  CUstreamCaptureStatus st;
  OK(d.cuStreamIsCapturing(s, &st));
  CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CHECK_RC(d.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_ERROR_ILLEGAL_STATE);
  OK(d.cuMemsetD32Async(x, 9, 16, s));
  OK(d.cuLaunchHostFunc(s, count_fn, &count));
  CUgraph g = NULL;
  OK(d.cuStreamEndCapture(s, &g));
  CHECK(g != NULL);
  OK(d.cuStreamIsCapturing(s, &st));
  CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE);
  CHECK_RC(d.cuStreamEndCapture(s, &g), CUDA_ERROR_ILLEGAL_STATE);

  uint32_t w[16];
  read_words(s, x, w, 16);
  CHECK(w[0] == 7 && w[15] == 7); /* nothing ran during capture */
  CHECK(atomic_load(&count) == 0);
  size_t n = 0;
  OK(d.cuGraphGetNodes(g, NULL, &n));
  CHECK(n == 2);

  CUgraphExec e = NULL;
  OK(d.cuGraphInstantiateWithFlags(&e, g, 0));
  OK(d.cuGraphDestroy(g)); /* the instance keeps its own copy */
  OK(d.cuGraphUpload(e, r));
  OK(d.cuGraphLaunch(e, r));
  OK(d.cuGraphLaunch(e, r));
  OK(d.cuStreamSynchronize(r));
  read_words(r, x, w, 16);
  CHECK(w[0] == 9 && w[15] == 9);
  CHECK(atomic_load(&count) == 2); /* each replay runs the nodes again */
  OK(d.cuGraphExecDestroy(e));
  OK(d.cuMemFreeAsync(x, s));
  OK(d.cuStreamSynchronize(s));
  OK(d.cuStreamDestroy(s));
  OK(d.cuStreamDestroy(r));
}

void test_graph_fork_join(void) {
  CUstream s = mkstream(), t = mkstream(), r = mkstream();
  CUevent e1, e2;
  OK(d.cuEventCreate(&e1, CU_EVENT_DISABLE_TIMING));
  OK(d.cuEventCreate(&e2, CU_EVENT_DISABLE_TIMING));
  CUdeviceptr x;
  OK(d.cuMemAllocAsync(&x, 64, s));
  OK(d.cuMemsetD32Async(x, 0, 16, s));
  OK(d.cuStreamSynchronize(s));

  /* a fork joined back: one graph of both branches */
  OK(d.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  OK(d.cuEventRecord(e1, s));
  OK(d.cuStreamWaitEvent(t, e1, 0)); /* t joins the capture */
  CUstreamCaptureStatus st;
  OK(d.cuStreamIsCapturing(t, &st));
  CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  OK(d.cuMemsetD32Async(x, 1, 8, s));
  OK(d.cuMemsetD32Async(x + 32, 2, 8, t));
  OK(d.cuEventRecord(e2, t));
  OK(d.cuStreamWaitEvent(s, e2, 0)); /* joined back */
  CUgraph g = NULL;
  OK(d.cuStreamEndCapture(s, &g));
  OK(d.cuStreamIsCapturing(t, &st));
  CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE);
  size_t n = 0;
  OK(d.cuGraphGetNodes(g, NULL, &n));
  CHECK(n == 2); /* the events are dependencies, not nodes */
  CUgraphExec e;
  OK(d.cuGraphInstantiateWithFlags(&e, g, 0));
  OK(d.cuGraphLaunch(e, r));
  uint32_t w[16];
  read_words(r, x, w, 16);
  CHECK(w[0] == 1 && w[7] == 1 && w[8] == 2 && w[15] == 2);
  OK(d.cuGraphExecDestroy(e));
  OK(d.cuGraphDestroy(g));

  /* a fork not joined back: the capture fails, and both streams work again */
  OK(d.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  OK(d.cuEventRecord(e1, s));
  OK(d.cuStreamWaitEvent(t, e1, 0));
  OK(d.cuMemsetD32Async(x, 5, 16, t));
  g = (CUgraph)1;
  CHECK_RC(d.cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
  CHECK(g == NULL);
  OK(d.cuStreamIsCapturing(t, &st));
  CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE);
  OK(d.cuMemsetD32Async(x, 3, 16, t));
  read_words(t, x, w, 16);
  CHECK(w[0] == 3 && w[15] == 3);

  OK(d.cuEventDestroy(e1));
  OK(d.cuEventDestroy(e2));
  OK(d.cuMemFreeAsync(x, s));
  OK(d.cuStreamSynchronize(s));
  OK(d.cuStreamDestroy(s));
  OK(d.cuStreamDestroy(t));
  OK(d.cuStreamDestroy(r));
}

void test_graph_capture_errors(void) {
  CUstream s = mkstream(), o = mkstream();
  CUdeviceptr x, y;
  OK(d.cuMemAllocAsync(&x, 64, s));
  OK(d.cuStreamSynchronize(s));
  CUstreamCaptureStatus st;
  CUgraph g;

  /* a sync while capturing: refused, and the capture is invalidated */
  OK(d.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  OK(d.cuMemsetD32Async(x, 1, 16, s));
  CHECK_RC(d.cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  OK(d.cuStreamIsCapturing(s, &st));
  CHECK(st == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  CHECK_RC(d.cuMemsetD32Async(x, 1, 16, s), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  CHECK_RC(d.cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  OK(d.cuStreamIsCapturing(s, &st));
  CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE);

  /* a query, a context sync, an allocation and a free: the same */
  OK(d.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  CHECK_RC(d.cuStreamQuery(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CHECK_RC(d.cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  OK(d.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  CHECK_RC(d.cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CHECK_RC(d.cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  OK(d.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  CHECK_RC(d.cuMemAllocAsync(&y, 64, s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CHECK_RC(d.cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  OK(d.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  CHECK_RC(d.cuMemFreeAsync(x, s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CHECK_RC(d.cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

  /* a wait on an event recorded outside any capture: isolation */
  CUevent outside;
  OK(d.cuEventCreate(&outside, CU_EVENT_DISABLE_TIMING));
  OK(d.cuEventRecord(outside, o));
  OK(d.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  CHECK_RC(d.cuStreamWaitEvent(s, outside, 0), CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
  CHECK_RC(d.cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

  /* a stream destroyed while capturing: the capture goes with it (valgrind: nothing leaks) */
  CUstream q = mkstream();
  OK(d.cuStreamBeginCapture(q, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  OK(d.cuMemsetD32Async(x, 8, 16, q));
  OK(d.cuStreamDestroy(q));

  /* after all that, the stream works */
  OK(d.cuMemsetD32Async(x, 4, 16, s));
  uint32_t w[16];
  read_words(s, x, w, 16);
  CHECK(w[0] == 4 && w[15] == 4);
  CHECK_RC(d.cuStreamBeginCapture(s, (CUstreamCaptureMode)99), CUDA_ERROR_INVALID_VALUE);
  OK(d.cuEventDestroy(outside));
  OK(d.cuMemFreeAsync(x, s));
  OK(d.cuStreamSynchronize(s));
  OK(d.cuStreamDestroy(s));
  OK(d.cuStreamDestroy(o));
}

static int add_host(void *user, const gld_sim_launch *l) {
  (void)user;
  int *out = (int *)(uintptr_t)*(unsigned long long *)l->params[0];
  *out += *(int *)l->params[1];
  return 0;
}

void test_graph_kernels_and_update(void) {
  static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry kern(\n"
                            ".param .u64 kern_param_0,\n.param .u32 kern_param_1\n)\n{\nret;\n}\n";
  CUstream s = mkstream();
  CUmodule m;
  CUfunction f;
  OK(d.cuModuleLoadData(&m, ptx));
  OK(d.cuModuleGetFunction(&f, m, "kern"));
  size_t sizes[] = {8, 4};
  OK(gld_sim_func_set_host(f, add_host, NULL, NULL, 0, 2, sizes, NULL));
  int out = 0, arg = 1;
  unsigned long long outp = (unsigned long long)(uintptr_t)&out;
  void *params[] = {&outp, &arg};

  CUgraph g1, g2, g3;
  OK(d.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  OK(d.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
  arg = 10; /* parameters are copied at capture, as at launch */
  OK(d.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
  OK(d.cuStreamEndCapture(s, &g1));
  CUgraphExec e;
  OK(d.cuGraphInstantiateWithFlags(&e, g1, 0));
  OK(d.cuGraphLaunch(e, s));
  OK(d.cuGraphLaunch(e, s));
  OK(d.cuStreamSynchronize(s));
  CHECK(out == 2 * (1 + 10));

  /* the same topology with other parameters: updated in place */
  OK(d.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  arg = 100;
  OK(d.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
  OK(d.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
  OK(d.cuStreamEndCapture(s, &g2));
  CUgraphExecUpdateResultInfo info;
  OK(d.cuGraphExecUpdate(e, g2, &info));
  CHECK(info.result == CU_GRAPH_EXEC_UPDATE_SUCCESS);
  out = 0;
  OK(d.cuGraphLaunch(e, s));
  OK(d.cuStreamSynchronize(s));
  CHECK(out == 200);

  /* another topology: refused, the instance unchanged */
  OK(d.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  OK(d.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
  OK(d.cuStreamEndCapture(s, &g3));
  CHECK_RC(d.cuGraphExecUpdate(e, g3, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  CHECK(info.result == CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  out = 0;
  OK(d.cuGraphLaunch(e, s));
  OK(d.cuStreamSynchronize(s));
  CHECK(out == 200);

  /* a replay inside a capture: its nodes join the new graph */
  CUgraph g4;
  OK(d.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  OK(d.cuGraphLaunch(e, s));
  OK(d.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
  OK(d.cuStreamEndCapture(s, &g4));
  size_t n = 0;
  OK(d.cuGraphGetNodes(g4, NULL, &n));
  CHECK(n == 3);
  out = 0;
  CUgraphExec e4;
  OK(d.cuGraphInstantiateWithFlags(&e4, g4, 0));
  OK(d.cuGraphLaunch(e4, s));
  OK(d.cuStreamSynchronize(s));
  CHECK(out == 300);

  OK(d.cuGraphExecDestroy(e));
  OK(d.cuGraphExecDestroy(e4));
  OK(d.cuGraphDestroy(g1));
  OK(d.cuGraphDestroy(g2));
  OK(d.cuGraphDestroy(g3));
  OK(d.cuGraphDestroy(g4));
  CHECK_RC(d.cuGraphInstantiateWithFlags(&e, NULL, 0), CUDA_ERROR_INVALID_VALUE);
  OK(d.cuModuleUnload(m));
  OK(d.cuStreamDestroy(s));
}
