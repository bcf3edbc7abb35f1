"""bench/analysis/rounds.py: the median and spread over several runs of bench/run.sh.

    python3 bench/analysis/rounds.py r1/bench-results.txt r2/bench-results.txt r3/bench-results.txt
For every ratio a goal is judged on (the paired launch and event ratios of
bench/baselines/launch_pairs.c, and the ratios bench/analysis/report.py forms from one run's
figures), prints each run's value, the median over the runs and the verdict
against the goal: a goal counts as met only when the median meets it.
"""
import statistics
import sys


def load(path):
    r = {}
    for line in open(path):
        who, name, value, _unit, *_ = line.split()
        r[(who, name)] = float(value)
    return r


runs = [load(p) for p in sys.argv[1:]]


def ratio_of(r, key):
    kind, a, b = key
    if kind == "pair":
        return r.get(("gpulua", f"pair_{a}_ratio"))
    x, y = r.get(a), r.get(b)
    return x / y if x and y else None


# (label, goal, lower-is-better, key)
GOALS = [
    ("launch, 1 slice arg, off, gpu.config (paired)", 1.1, True, ("pair", "launch_1arg_config_off", None)),
    ("launch, 1 slice arg, strict, gpu.config (paired)", 1.2, True, ("pair", "launch_1arg_config_strict", None)),
    ("launch, 8 slice args, off, gpu.config (paired)", 1.1, True, ("pair", "launch_8arg_config_off", None)),
    ("launch, 8 slice args, strict, gpu.config (paired)", 1.2, True, ("pair", "launch_8arg_config_strict", None)),
    ("the floor of any binding: 8 args read by a C function that launches raw (paired)", None, True,
     ("pair", "launch_8arg_floor", None)),
    ("launch, 1 slice arg, off, cfg table (paired)", None, True, ("pair", "launch_1arg_table_off", None)),
    ("launch, 1 slice arg, strict, cfg table (paired)", None, True, ("pair", "launch_1arg_table_strict", None)),
    ("launch, 8 slice args, off, cfg table (paired)", None, True, ("pair", "launch_8arg_table_off", None)),
    ("launch, 8 slice args, strict, cfg table (paired)", None, True, ("pair", "launch_8arg_table_strict", None)),
    ("s:record(e) + t:wait(e) (paired)", 1.5, True, ("pair", "event_wait_rerecord", None)),
    ("s:record() + t:wait(e) (paired)", None, True, ("pair", "event_wait_new", None)),
    ("graph replay, host time per replayed kernel (paired)", 1.1, True, ("pair", "graph_replay_per_kernel", None)),
    ("capture + instantiate, 1,000 kernels (paired)", None, True, ("pair", "capture_chain", None)),
    ("graph replay: eager chain / replay, per kernel (above 5: met)", 5.0, False,
     ("sep", ("gpulua", "pair_chain_eager_per_kernel_us"), ("gpulua", "pair_graph_replay_per_kernel_us"))),
    ("launch, 1 slice arg, off, gpu.config (separate processes)", 1.1, True,
     ("sep", ("gpulua", "launch_1arg_config_off"), ("raw", "launch_1arg"))),
    ("launch, 1 slice arg, strict, gpu.config (separate processes)", 1.2, True,
     ("sep", ("gpulua", "launch_1arg_config_strict"), ("raw", "launch_1arg"))),
    ("launch, 8 slice args, off, gpu.config (separate processes)", 1.1, True,
     ("sep", ("gpulua", "launch_8arg_config_off"), ("raw", "launch_8arg"))),
    ("launch, 8 slice args, strict, gpu.config (separate processes)", 1.2, True,
     ("sep", ("gpulua", "launch_8arg_config_strict"), ("raw", "launch_8arg"))),
    ("s:record(e) + t:wait(e) (separate processes)", 1.5, True,
     ("sep", ("gpulua", "event_wait_rerecord"), ("raw", "event_wait"))),
    ("pipeline.graph / pipeline.run, default size, wall time (no slower)", 1.0, True,
     ("sep", ("gpulua", "pipeline_graph_default_wall"), ("gpulua", "pipeline_run_default_wall"))),
    ("pipeline.graph / pipeline.run, 256 x 64 KiB, wall time (faster)", 1.0, True,
     ("sep", ("gpulua", "pipeline_graph_256x64KiB_wall"), ("gpulua", "pipeline_run_256x64KiB_wall"))),
    ("pipeline.graph / pipeline.run, default size, device time", None, True,
     ("sep", ("gpulua", "pipeline_graph_default"), ("gpulua", "pipeline_run_default"))),
    ("pipeline.graph / pipeline.run, 256 x 64 KiB, device time", None, True,
     ("sep", ("gpulua", "pipeline_graph_256x64KiB"), ("gpulua", "pipeline_run_256x64KiB"))),
    ("4-stream pipeline: physical limit / measured", 0.97, False,
     ("sep", ("gpulua", "pipeline_link_limit"), ("gpulua", "pipeline_4stream"))),
    ("4-stream pipeline: CuPy / gpulua (above 1: gpulua ahead)", 1.0, False,
     ("sep", ("cupy", "pipeline_4stream"), ("gpulua", "pipeline_4stream"))),
    ("4-stream pipeline as one graph (pipeline.graph): physical limit / measured", None, False,
     ("sep", ("gpulua", "pipeline_link_limit"), ("gpulua", "pipeline_graph_default"))),
    ("4-stream pipeline as one graph: CuPy / gpulua (above 1: gpulua ahead)", None, False,
     ("sep", ("cupy", "pipeline_4stream"), ("gpulua", "pipeline_graph_default"))),
    ("4-stream pipeline: limit at its copy size (16 MiB both ways at once) / measured", None, False,
     ("sep", ("gpulua", "pipeline_link_limit_16MiB"), ("gpulua", "pipeline_4stream"))),
    ("the link both ways: 16 MiB copies back to back / two 256 MiB copies (bench/baselines/layouts.c)", None, False,
     ("sep", ("raw", "bidir_16MiB_x32"), ("raw", "bidir_256MiB"))),
    ("the best raw layout (bench/baselines/layouts.c): physical limit / measured", None, False,
     ("sep", ("gpulua", "pipeline_link_limit"), ("raw", "layout_best"))),
    ("4-stream pipeline made raw (bench/baselines/raw.c): physical limit / measured", None, False,
     ("sep", ("gpulua", "pipeline_link_limit"), ("raw", "pipeline_4stream"))),
    ("4-stream pipeline: raw / gpulua (above 1: gpulua ahead)", None, False,
     ("sep", ("raw", "pipeline_4stream"), ("gpulua", "pipeline_4stream"))),
    ("s:gemm 4096^3 f32: gpulua's rate / CuPy's", 0.97, False,
     ("sep", ("gpulua", "gemm_4096_f32"), ("cupy", "gemm_4096_f32"))),
    ("s:gemm 4096^3 bf16: gpulua's rate / CuPy's", 0.97, False,
     ("sep", ("gpulua", "gemm_4096_bf16"), ("cupy", "gemm_4096_bf16"))),
    ("s:gemm 4096^3 bf16: gpulua's rate / PyTorch's (where CuPy has no bf16)", 0.97, False,
     ("sep", ("gpulua", "gemm_4096_bf16"), ("cupy", "gemm_4096_bf16_torch"))),
    ("s:gemm strided batched 4096 x 64^3 f32: gpulua's rate / CuPy's", 0.97, False,
     ("sep", ("gpulua", "gemm_batched_4096x64_f32"), ("cupy", "gemm_batched_4096x64_f32"))),
    ("host cost, 4-stream pipeline, 32,000 vs 2,000 batches", 1.3, True,
     ("sep", ("gpulua", "scaling_pipeline_ratio"), None)),
    ("host cost, sliding windows, strict, 64,000 vs 2,000", 1.3, True,
     ("sep", ("gpulua", "scaling_sliding_strict_ratio"), None)),
    ("host cost, sliding windows, off, 64,000 vs 2,000", 1.3, True,
     ("sep", ("gpulua", "scaling_sliding_off_ratio"), None)),
]

print("| figure | goal | " + " | ".join(f"run {i + 1}" for i in range(len(runs))) + " | median | met |")
print("| --- | --- | " + " | ".join("---" for _ in runs) + " | --- | --- |")
for label, goal, lower, key in GOALS:
    if key[0] == "sep" and key[2] is None:
        vals = [r.get(key[1]) for r in runs]
    else:
        vals = [ratio_of(r, key) for r in runs]
    got = [v for v in vals if v is not None]
    if not got:
        continue
    med = statistics.median(got)
    if goal is None:
        verdict, goal_text = "(reference)", ""
    else:
        ok = med <= goal if lower else med > goal if goal == 1.0 and not lower else med >= goal
        verdict, goal_text = ("yes" if ok else "no"), (f"<= {goal:g}" if lower else f">= {goal:g}")
        if goal == 1.0 and not lower:
            goal_text = "> 1"
    cells = [f"{v:.3f}" if v is not None else "n/a" for v in vals]
    print(f"| {label} | {goal_text} | " + " | ".join(cells) + f" | {med:.3f} | {verdict} |")
