"""bench/baselines/cupy_gemm.py: CuPy's side of bench/workloads/gemm_bench.lua: cupy.matmul (cuBLAS)
on the same shapes, timed the same way (events around REPS calls, median of 5).
Prints "RESULT gemm_<case> <TFLOP/s> TFLOP/s".
"""
import statistics

import cupy as cp

REPS = 10


def case(name, dtype, m, n, k, count=None):
    shape = (lambda r, c: (count, r, c)) if count else (lambda r, c: (r, c))
    a = cp.full(shape(m, k), 0.5, dtype=dtype)
    b = cp.full(shape(k, n), 0.25, dtype=dtype)
    c = cp.empty(shape(m, n), dtype=dtype)
    cp.matmul(a, b, out=c)
    t = []
    for _ in range(5):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        for _ in range(REPS):
            cp.matmul(a, b, out=c)
        e1.record()
        e1.synchronize()
        t.append(cp.cuda.get_elapsed_time(e0, e1) / REPS)
    ms = statistics.median(t)
    print(f"RESULT gemm_{name} {2.0 * m * n * k * (count or 1) / (ms * 1e-3) / 1e12:.2f} TFLOP/s", flush=True)


case("4096_f32", cp.float32, 4096, 4096, 4096)
try:
    import ml_dtypes  # CuPy's bf16 arrays need it

    case("4096_bf16", ml_dtypes.bfloat16, 4096, 4096, 4096)
except Exception as e:  # noqa: BLE001 (CuPy without bf16: say so; PyTorch's matmul below stands in)
    print(f"cupy_gemm: CuPy has no bf16 here ({type(e).__name__}: {e})", flush=True)
    try:
        import torch

        a = torch.full((4096, 4096), 0.5, dtype=torch.bfloat16, device="cuda")
        b = torch.full((4096, 4096), 0.25, dtype=torch.bfloat16, device="cuda")
        c = torch.matmul(a, b)
        t = []
        for _ in range(5):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(REPS):
                torch.matmul(a, b, out=c)
            e1.record()
            e1.synchronize()
            t.append(e0.elapsed_time(e1) / REPS)
        ms = statistics.median(t)
        print(f"RESULT gemm_4096_bf16_torch {2.0 * 4096 ** 3 / (ms * 1e-3) / 1e12:.2f} TFLOP/s", flush=True)
    except Exception as e2:  # noqa: BLE001
        print(f"cupy_gemm: no PyTorch bf16 either ({e2})", flush=True)
case("batched_4096x64_f32", cp.float32, 64, 64, 64, count=4096)
