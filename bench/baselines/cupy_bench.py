"""bench/baselines/cupy_bench.py: CuPy's side of the benchmarks (bench/run.sh runs it on the
GPU beside bench/baselines/raw.c and bench/workloads/bench.lua). Prints "RESULT name value unit".

    python3 bench/baselines/cupy_bench.py [launches]
"""
import ctypes
import statistics
import sys
import time

import cupy as cp
import numpy as np

LAUNCHES = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
REPS = 5


def result(name, value, unit):
    print(f"RESULT {name} {value:.4f} {unit}", flush=True)


src = r'''
extern "C" __global__ void empty1(float *a) {}
extern "C" __global__ void empty8(float *a, float *b, float *c, float *d, float *e, float *f,
                                  float *g, float *h) {}
'''
mod = cp.RawModule(code=src, options=("-arch=sm_90",))
k1 = mod.get_function("empty1")
k8 = mod.get_function("empty8")
buf = cp.zeros(1 << 18, dtype=cp.float32)
views = [buf[i * 64:(i + 1) * 64] for i in range(8)]
stream = cp.cuda.Stream(non_blocking=True)

for name, k, args in (("launch_1arg", k1, (views[0],)), ("launch_8arg", k8, tuple(views))):
    times = []
    with stream:
        for _ in range(REPS):
            stream.synchronize()
            t0 = time.perf_counter()
            for _ in range(LAUNCHES):
                k((1,), (32,), args)
            stream.synchronize()
            times.append((time.perf_counter() - t0) / LAUNCHES * 1e6)
    result(name, statistics.median(times), "us")

# the pipeline of examples/pipeline.lua (copy in, scale, axpy, copy out per chunk)
# with CuPy streams: 1 stream and 4 streams, chunk 2^22 f32, 32 chunks
chunk, chunks = 1 << 22, 32
host_in = cp.cuda.alloc_pinned_memory(chunk * chunks * 4)
h_in = np.frombuffer(host_in, dtype=np.float32, count=chunk * chunks)
h_in[:] = (np.arange(chunk * chunks) % 1000) * 0.5
host_out = cp.cuda.alloc_pinned_memory(chunk * chunks * 4)
h_out = np.frombuffer(host_out, dtype=np.float32, count=chunk * chunks)


def pipeline(nstreams):
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(nstreams)]
    bufs = [(cp.empty(chunk, cp.float32), cp.empty(chunk, cp.float32)) for _ in range(nstreams)]
    cp.cuda.Device().synchronize()
    start = cp.cuda.Event()
    stop = cp.cuda.Event()
    start.record(cp.cuda.get_current_stream())
    for c in range(chunks):
        k = c % nstreams
        s, (a, b) = streams[k], bufs[k]
        with s:
            s.wait_event(start)
            # asynchronous copies from and to the pinned buffers
            a.data.copy_from_host_async(ctypes.c_void_p(host_in.ptr + c * chunk * 4), chunk * 4, stream=s)
            cp.multiply(a, 2.0, out=b)
            b += a
            b.data.copy_to_host_async(ctypes.c_void_p(host_out.ptr + c * chunk * 4), chunk * 4, stream=s)
    for s in streams:
        stop.record(s)
        stop.synchronize()
    cp.cuda.Device().synchronize()
    end = cp.cuda.Event()
    end.record()
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end)


for n in (1, 4):
    pipeline(n)  # warm-up
    times = [pipeline(n) for _ in range(REPS)]
    result(f"pipeline_{n}stream", statistics.median(times), "ms")
assert np.allclose(h_out, h_in * 3.0), "CuPy pipeline result is wrong"
