"""bench/analysis/builtins_medians.py: the built-in library's figures over several runs.

Each argument is the output of one run of bench/baselines/raw_builtins.c, bench/workloads/builtins_bench.lua and
bench/baselines/cupy_builtins.py, their "RESULT" lines prefixed with raw, gpulua and cupy (the device
command in docs/BENCHMARKS.md writes them so). Prints a Markdown table: per kernel and dtype
the median GB/s, the fraction of the D2D copy, the ratio to the raw launch and to CuPy, each
median with its spread over the runs; then the D2D ceilings, the grids by hand and NVRTC's
cold compile.

    python3 bench/analysis/builtins_medians.py run1.txt run2.txt run3.txt
"""
import statistics
import sys

runs = []
for f in sys.argv[1:]:
    d = {}
    for line in open(f):
        p = line.split()
        if len(p) >= 3 and p[0] in ("raw", "gpulua", "cupy"):
            d[(p[0], p[1])] = float(p[2])
    runs.append(d)
def vals(src, key): return [r.get((src, key)) for r in runs]
def med(v): return statistics.median(v)
def fmt(v): return f"{med(v):.3f} ({min(v):.3f} to {max(v):.3f})"
print("| kernel | dtype | gpulua GB/s (median) | of D2D, median (spread) | / raw launch, median (spread) | CuPy GB/s (median) | / CuPy, median (spread) |")
print("|---|---|---|---|---|---|---|")
for dt in ("f32", "f16", "i32"):
    for k in ("fill","copy","scale","axpy","add","mul","sum","dot","min","max"):
        g = vals("gpulua", f"builtin_{k}_{dt}"); r = vals("raw", f"builtin_{k}_{dt}"); c = vals("cupy", f"builtin_{k}_{dt}")
        od = vals("gpulua", f"builtin_{k}_{dt}_of_d2d")
        print(f"| {k} | {dt} | {med(g):.0f} | {fmt(od)} | {fmt([a/b for a,b in zip(g,r)])} | {med(c):.0f} | {fmt([a/b for a,b in zip(g,c)])} |")
for dt in ("f32","f16","i32"):
    for s in ("gpulua","raw","cupy"):
        v = vals(s, f"builtin_d2d_{dt}")
        if None not in v: print(f"d2d {dt} {s}: median {med(v):.0f} ({min(v):.0f} to {max(v):.0f})")
for g in (2,4,8,16,32):
    for k in ("axpy","sum"):
        v = vals("gpulua", f"builtin_{k}_f32_grid_{g}x"); print(f"grid {g}x {k}: {med(v):.0f} ({min(v):.0f}-{max(v):.0f})")
for k in ("f32","all"):
    v = vals("gpulua", f"builtin_compile_cold_{k}"); print(f"compile cold {k}: {med(v):.1f} ms ({min(v):.1f}-{max(v):.1f})")
