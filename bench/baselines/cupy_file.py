"""bench/baselines/cupy_file.py: examples/file_pipeline.lua's processing pass in CuPy, beside
bench/baselines/raw_file.c and bench/workloads/file_bench.lua (bench/file_bench.sh runs the
three): the file read in chunks into pinned memory (cupyx.empty_pinned, filled by readinto, as
numpy.fromfile would fill pageable memory), copied in, y = 2 x + 1 (a cupy RawKernel), y *= 0.5,
copied out, written in order; `slots` chunks in flight, one stream each, a slot's last chunk
waited for and written before it is refilled. Prints "RESULT file_cupy <GB/s> GB/s".

    python3 bench/baselines/cupy_file.py IN OUT [chunk_MiB] [slots]   (default 32, 2)
"""
import sys
import time

import cupy as cp
import cupyx

IN, OUT = sys.argv[1], sys.argv[2]
CHUNK = (int(sys.argv[3]) if len(sys.argv) > 3 else 32) << 20
SLOTS = int(sys.argv[4]) if len(sys.argv) > 4 else 2

affine = cp.RawKernel(r'''
extern "C" __global__ void affine(float *x, unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    x[i] = 2.0f * x[i] + 1.0f;
}
''', "affine")
sms = cp.cuda.Device(0).attributes["MultiProcessorCount"]
elems = CHUNK // 4
grid = min((elems + 255) // 256, sms * 8)
streams = [cp.cuda.Stream(non_blocking=True) for _ in range(SLOTS)]
h_in = [cupyx.empty_pinned(elems, dtype=cp.float32) for _ in range(SLOTS)]
h_out = [cupyx.empty_pinned(elems, dtype=cp.float32) for _ in range(SLOTS)]
x = [cp.empty(elems, dtype=cp.float32) for _ in range(SLOTS)]
done = [cp.cuda.Event(disable_timing=True) for _ in range(SLOTS)]
pending = [0] * SLOTS
affine((1,), (32,), (x[0], cp.uint64(1)))  # compiled before the clock starts
cp.cuda.Device(0).synchronize()

t0 = time.perf_counter()
total = 0
with open(IN, "rb", buffering=0) as fin, open(OUT, "wb") as fout:
    c = 0
    while True:
        k = c % SLOTS
        if pending[k]:
            done[k].synchronize()
            fout.write(memoryview(h_out[k]).cast("B")[:pending[k]])
            pending[k] = 0
        got = fin.readinto(memoryview(h_in[k]).cast("B"))
        if not got:
            for j in range(1, SLOTS + 1):
                kk = (c + j) % SLOTS
                if pending[kk]:
                    done[kk].synchronize()
                    fout.write(memoryview(h_out[kk]).cast("B")[:pending[kk]])
            break
        n = got // 4
        s = streams[k]
        with s:
            xs = x[k][:n]
            xs.set(h_in[k][:n], stream=s)
            affine((grid,), (256,), (xs, cp.uint64(n)))
            xs *= 0.5
            xs.get(stream=s, out=h_out[k][:n])
            done[k].record(s)
        pending[k] = got
        total += got
        c += 1
secs = time.perf_counter() - t0
print(f"file_cupy: {total / 2**20:.0f} MiB in {secs:.3f} s, chunk {CHUNK >> 20} MiB, {SLOTS} slots")
print(f"RESULT file_cupy {total / 1e9 / secs:.4f} GB/s", flush=True)
