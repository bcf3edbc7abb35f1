"""bench/analysis/report.py: turn bench/run.sh's results into the table of docs/BENCHMARKS.md.

    python3 bench/analysis/report.py results.txt
Each input line: "<who> <name> <value> <unit> [extra...]" (who: raw, gpulua, cupy);
bench/baselines/launch_pairs.c's ratio lines carry the spread of the rounds as extra.
"""
import sys

r = {}
extra = {}
for line in open(sys.argv[1]):
    who, name, value, unit, *more = line.split()
    r[(who, name)] = (float(value), unit)
    extra[(who, name)] = more


def get(who, name):
    v = r.get((who, name))
    return v[0] if v else None


rows = []


def row(what, target, value, unit, base, ratio_kind, note=""):
    if value is None or base is None:
        rows.append((what, f"{target:g}", "n/a" if value is None else f"{value:.3f} {unit}", "n/a", "missing", note))
        return
    ratio = value / base
    if ratio_kind == "time":  # lower is better: ours / theirs <= target
        ok = ratio <= target
        tgt = f"<= {target:g}x"
    else:  # rate: ours / theirs >= target
        ok = ratio >= target
        tgt = f">= {target:g}x"
    rows.append((what, tgt, f"{value:.3f} {unit}", f"{base:.3f}", f"{ratio:.3f}x {'met' if ok else 'MISSED'}", note))


for args in (1, 8):
    raw = get("raw", f"launch_{args}arg")
    row(f"launch, {args} slice arg, policy off (us/launch) vs raw", 1.1, get("gpulua", f"launch_{args}arg_off"), "us", raw, "time", "cfg table")
    row(f"launch, {args} slice arg, strict (us/launch) vs raw", 1.2, get("gpulua", f"launch_{args}arg_strict"), "us", raw, "time", "cfg table")
    row(f"launch, {args} slice arg, policy off (us/launch) vs raw", 1.1, get("gpulua", f"launch_{args}arg_config_off"), "us", raw, "time", "gpu.config")
    row(f"launch, {args} slice arg, strict (us/launch) vs raw", 1.2, get("gpulua", f"launch_{args}arg_config_strict"), "us", raw, "time", "gpu.config")
    row(f"CuPy RawKernel, {args} arg (us/launch) vs raw", 99, get("cupy", f"launch_{args}arg"), "us", raw, "time", "for reference")
# the launch and event goals, paired in one process (bench/baselines/launch_pairs.c): the median of the
# rounds' ratios, and their spread
for name, goal, what in (("launch_1arg_config_off", 1.1, "launch, 1 slice arg, off, gpu.config"),
                         ("launch_1arg_config_strict", 1.2, "launch, 1 slice arg, strict, gpu.config"),
                         ("launch_8arg_config_off", 1.1, "launch, 8 slice args, off, gpu.config"),
                         ("launch_8arg_config_strict", 1.2, "launch, 8 slice args, strict, gpu.config"),
                         ("launch_1arg_table_off", None, "launch, 1 slice arg, off, cfg table"),
                         ("launch_1arg_table_strict", None, "launch, 1 slice arg, strict, cfg table"),
                         ("launch_8arg_table_off", None, "launch, 8 slice args, off, cfg table"),
                         ("launch_8arg_table_strict", None, "launch, 8 slice args, strict, cfg table"),
                         ("event_wait_rerecord", 1.5, "s:record(e) + t:wait(e)"),
                         ("event_wait_new", None, "s:record() (a new event) + t:wait(e)"),
                         ("graph_replay_per_kernel", 1.1, "graph of 1,000 empty kernels, host time per replayed kernel"),
                         ("capture_chain", None, "capture + instantiate of the 1,000-kernel chain"),
                         ("chain_eager_per_kernel", None, "the 1,000-kernel chain launched one by one, per kernel")):
    ratio = get("gpulua", f"pair_{name}_ratio")
    if ratio is None:
        continue
    lo, hi = (extra[("gpulua", f"pair_{name}_ratio")] + ["?", "?"])[:2]
    us = get("gpulua", f"pair_{name}_us")
    rawus = (extra.get(("gpulua", f"pair_{name}_us")) or ["", "?"])[1]
    verdict = "reference" if goal is None else ("met" if ratio <= goal else "MISSED")
    rows.append((f"paired: {what} vs raw (us)", f"<= {goal:g}x" if goal else "", f"{us:.3f} us" if us else "n/a",
                 f"{rawus}", f"{ratio:.3f}x {verdict}", f"rounds from {lo}x to {hi}x"))
eager, replay = get("gpulua", "pair_chain_eager_per_kernel_us"), get("gpulua", "pair_graph_replay_per_kernel_us")
if eager and replay:
    sp = eager / replay
    rows.append(("graph replay vs launching the chain from Lua one by one", ">= 5x", f"{replay:.4f} us/kernel",
                 f"{eager:.4f}", f"{sp:.1f}x faster {'met' if sp >= 5 else 'MISSED'}", ""))
for label, goal, what in (("default", 1.0, "no slower"), ("256x64KiB", 1.0, "faster")):
    for suffix, kind in (("_wall", "wall time, queue + run"), ("", "device time")):
        gr, ru = get("gpulua", f"pipeline_graph_{label}{suffix}"), get("gpulua", f"pipeline_run_{label}{suffix}")
        if gr and ru:
            ratio = gr / ru
            ok = ratio <= 1.0 if what == "no slower" else ratio < 1.0
            judged = suffix == "_wall"
            rows.append((f"pipeline.graph vs pipeline.run, {label}, {kind}", f"{what}" if judged else "",
                         f"{gr:.3f} ms", f"{ru:.3f}",
                         f"{ratio:.3f}x {('met' if ok else 'MISSED') if judged else '(reference)'}", ""))
row("event record + cross-stream wait (us) vs raw", 99, get("gpulua", "event_wait"), "us", get("raw", "event_wait"), "time", "a new event each time (s:record())")
row("event re-record + cross-stream wait (us) vs raw", 1.5, get("gpulua", "event_wait_rerecord"), "us", get("raw", "event_wait"), "time", "s:record(e)")
for d in ("h2d", "d2h"):
    row(f"pinned {d} 256 MiB (GB/s) vs raw", 0.97, get("gpulua", f"{d}_256MiB"), "GB/s", get("raw", f"{d}_256MiB"), "rate")
ceiling = get("raw", "d2d_copy_bw")
for k in ("axpy_f32", "scale_f32", "sum_f32"):
    row(f"built-in {k} (GB/s) vs raw launch", 0.95, get("gpulua", f"{k}_bw"), "GB/s", get("raw", f"{k}_bw"), "rate")
    row(f"built-in {k} (GB/s) vs the d2d copy ceiling", 0.0, get("gpulua", f"{k}_bw"), "GB/s", ceiling, "rate", "reading only")
# the library for every dtype (bench/workloads/builtins_bench.lua, raw_builtins.c, cupy_builtins.py): the goal is
# 0.9 of the device-to-device copy ceiling for the elementwise kernels in f32 and f16
for dt in ("f32", "f16", "i32"):
    ceil_dt = get("gpulua", f"builtin_d2d_{dt}")
    for k in ("fill", "copy", "scale", "axpy", "add", "mul", "sum", "dot", "min", "max"):
        ours = get("gpulua", f"builtin_{k}_{dt}")
        if ours is None:
            continue
        goal = 0.9 if dt != "i32" and k not in ("sum", "dot", "min", "max") else 0.0
        row(f"built-in {k} {dt}, grid auto (GB/s) vs the d2d copy ceiling", goal, ours, "GB/s", ceil_dt, "rate",
            "" if goal else "for reference")
        row(f"built-in {k} {dt} (GB/s) vs the same kernel launched raw", 0.95, ours, "GB/s", get("raw", f"builtin_{k}_{dt}"),
            "rate")
        row(f"built-in {k} {dt} (GB/s) vs CuPy", 0.0, ours, "GB/s", get("cupy", f"builtin_{k}_{dt}"), "rate",
            "for reference")
for g in ("2x", "4x", "8x", "16x", "32x"):
    for k in ("axpy", "sum"):
        row(f"built-in {k} f32, grid {g} the SMs (GB/s) vs grid auto", 0.0, get("gpulua", f"builtin_{k}_f32_grid_{g}"),
            "GB/s", get("gpulua", f"builtin_{k}_f32"), "rate", "for tuning grid auto")
for what in ("f32", "all"):
    v = get("gpulua", f"builtin_compile_cold_{what}")
    rows.append((f"NVRTC cold compile of the built-ins, {'one dtype' if what == 'f32' else 'all 12 dtypes'}", "",
                 f"{v:.1f} ms" if v else "n/a", "", "", "a dtype's first launch compiles its program"))
cold, warm = get("gpulua", "compile_cold"), get("gpulua", "compile_warm")
rows.append(("NVRTC cold compile", "", f"{cold:.2f} ms" if cold else "n/a", "", "", ""))
rows.append(("NVRTC warm (disk cache hit)", "<= 2 ms", f"{warm:.2f} ms" if warm else "n/a", "",
             ("met" if warm is not None and warm <= 2 else "MISSED"), ""))
ideal = get("gpulua", "pipeline_ideal")
four = get("gpulua", "pipeline_4stream")
if ideal and four:
    eff = ideal / four
    rows.append(("pipeline, 4 streams: ideal / measured", ">= 0.9", f"{four:.3f} ms", f"{ideal:.3f}",
                 f"{eff:.3f} {'met' if eff >= 0.9 else 'MISSED'}", ""))
row("pipeline, 4 streams (ms) vs CuPy streams", 1.0, four, "ms", get("cupy", "pipeline_4stream"), "time")
limit = get("gpulua", "pipeline_link_limit")
if limit and four:
    eff = limit / four
    rows.append(("pipeline, 4 streams: physical limit / measured", ">= 0.97", f"{four:.3f} ms", f"{limit:.3f}",
                 f"{eff:.3f} {'met' if eff >= 0.97 else 'MISSED'}",
                 f"limit: max(copy-in, copy-out, both at the bidirectional {get('raw', 'bidir_256MiB') or 0:.1f} GB/s, compute) + one batch's fill and drain"))
raw4 = get("raw", "pipeline_4stream")
if limit and raw4:
    rows.append(("pipeline, 4 streams, raw driver (bench/baselines/raw.c): physical limit / measured", "", f"{raw4:.3f} ms",
                 f"{limit:.3f}", f"{limit / raw4:.3f}", "the same calls from C: what the structure allows"))
row("pipeline, 4 streams (ms) vs the raw driver's", 99, four, "ms", raw4, "time", "for reference")
graph4 = get("gpulua", "pipeline_graph_default")
if limit and graph4:
    rows.append(("pipeline as one graph (pipeline.graph, 4 branches): physical limit / measured", "", f"{graph4:.3f} ms",
                 f"{limit:.3f}", f"{limit / graph4:.3f}", "the same work replayed as a graph"))
row("pipeline as one graph (ms) vs CuPy streams", 99, graph4, "ms", get("cupy", "pipeline_4stream"), "time", "for reference")
limit16 = get("gpulua", "pipeline_link_limit_16MiB")
if limit16 and four:
    rows.append(("pipeline, 4 streams: limit at its copy size / measured", "", f"{four:.3f} ms", f"{limit16:.3f}",
                 f"{limit16 / four:.3f}",
                 f"the aggregate of 16 MiB copies both ways at once: {get('raw', 'bidir_16MiB_x32') or 0:.1f} GB/s (bench/baselines/layouts.c)"))
best = get("raw", "layout_best")
if limit and best:
    rows.append(("the fastest raw layout of the pipeline (bench/baselines/layouts.c): physical limit / measured", "", f"{best:.3f} ms",
                 f"{limit:.3f}", f"{limit / best:.3f}", "N streams, split copies, one stream per engine, a graph"))
for name, what in (("scaling_pipeline", "4-stream pipeline, per batch, 32,000 vs 2,000 batches"),
                   ("scaling_sliding_strict", "sliding windows, per fill, 64,000 vs 2,000, strict"),
                   ("scaling_sliding_off", "sliding windows, per fill, 64,000 vs 2,000, off")):
    ratio = get("gpulua", name + "_ratio")
    rows.append((f"host cost scaling: {what}", "<= 1.3x", f"{ratio:.3f}x" if ratio else "n/a", "", "met" if ratio and ratio <= 1.3 else "MISSED", ""))
row("pipeline, 1 stream (ms) vs CuPy", 99, get("gpulua", "pipeline_1stream"), "ms", get("cupy", "pipeline_1stream"), "time", "for reference")
for case, what in (("4096_f32", "4096^3 f32"), ("4096_bf16", "4096^3 bf16"), ("batched_4096x64_f32", "strided batched 4096 x 64^3 f32")):
    theirs = get("cupy", f"gemm_{case}") or get("cupy", f"gemm_{case}_torch")
    who = "PyTorch (CuPy has no bf16 here)" if get("cupy", f"gemm_{case}_torch") and not get("cupy", f"gemm_{case}") else "CuPy"
    row(f"s:gemm {what} (TFLOP/s) vs {who}", 0.97, get("gpulua", f"gemm_{case}"), "TFLOP/s", theirs, "rate")
s10, s100k = get("gpulua", "launch_1arg_strict_10_slices"), get("gpulua", "launch_1arg_strict_100000_slices")
row("checker: launch with 100,000 live slices vs 10", 1.1, s100k, "us", s10, "time")

print("| figure | target | gpulua | baseline | ratio | note |")
print("| --- | --- | --- | --- | --- | --- |")
for rw in rows:
    print("| " + " | ".join(rw) + " |")
