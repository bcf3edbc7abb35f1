"""bench/baselines/cupy_builtins.py: CuPy's equivalents of gpulua's built-in kernels (bench/run.sh
runs it on the GPU beside bench/workloads/builtins_bench.lua and bench/baselines/raw_builtins.c).

For f32, f16 and i32 at n = 2^28 elements: fill (z.fill), copy (cupy.copyto), scale
(cupy.multiply by a scalar), axpy (an ElementwiseKernel, y = a * x + y in place), add,
mul, sum (cupy.sum), dot (cupy.dot), min and max (cupy.min, cupy.max). GB/s counts the
bytes each moves as gpulua's bench does (axpy: x read, y read and written: 3 passes over
n); times are CUDA events around one call on the current stream, the median of 5 after a
warm-up (which also compiles CuPy's kernels). Prints "RESULT name value unit".

    python3 bench/baselines/cupy_builtins.py [log2 n]
"""
import statistics
import sys

import cupy as cp

N = 1 << (int(sys.argv[1]) if len(sys.argv) > 1 else 28)
REPS = 5


def result(name, value, unit):
    print(f"RESULT {name} {value:.4f} {unit}", flush=True)


def timed(fn):
    """milliseconds of fn's GPU work: the median of REPS event-timed runs after one"""
    fn()
    stream = cp.cuda.get_current_stream()
    times = []
    for _ in range(REPS):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record(stream)
        fn()
        e1.record(stream)
        e1.synchronize()
        times.append(cp.cuda.get_elapsed_time(e0, e1))
    return statistics.median(times)


axpy = cp.ElementwiseKernel("T a, T x", "T y", "y = a * x + y", "gl_bench_axpy")

for name, dtype in (("f32", cp.float32), ("f16", cp.float16), ("i32", cp.int32)):
    size = cp.dtype(dtype).itemsize
    x = cp.full(N, 1, dtype=dtype)
    y = cp.full(N, 2, dtype=dtype)
    z = cp.empty(N, dtype=dtype)
    a = dtype(3) if name == "i32" else dtype(1.0001)
    ms = timed(lambda: z.data.copy_from_device_async(x.data, N * size))
    ceiling = 2 * N * size / (ms * 1e-3) / 1e9
    result(f"builtin_d2d_{name}", ceiling, "GB/s")
    cases = (
        ("fill", 1, lambda: z.fill(3)),
        ("copy", 2, lambda: cp.copyto(z, x)),
        ("scale", 2, lambda: cp.multiply(x, a, out=z)),
        ("axpy", 3, lambda: axpy(a, x, y)),
        ("add", 3, lambda: cp.add(x, y, out=z)),
        ("mul", 3, lambda: cp.multiply(x, y, out=z)),
        ("sum", 1, lambda: cp.sum(x)),
        ("dot", 2, lambda: cp.dot(x, y)),
        ("min", 1, lambda: cp.min(x)),
        ("max", 1, lambda: cp.max(x)),
    )
    for kernel, passes, fn in cases:
        gbs = passes * N * size / (timed(fn) * 1e-3) / 1e9
        result(f"builtin_{kernel}_{name}", gbs, "GB/s")
        result(f"builtin_{kernel}_{name}_of_d2d", gbs / ceiling, "x")
    del x, y, z
    cp.get_default_memory_pool().free_all_blocks()
