#!/usr/bin/env python3
"""bench/analysis/model_compare.py: the sim timing model's predictions beside the GPU's
measurements, from the output of bench/workloads/model_accuracy.lua.

    python3 bench/analysis/model_compare.py --gpu run1.log run2.log run3.log --sim sim.log

Each GPU log is one run of model_accuracy.lua on the GPU (each line already a
median of its repetitions); the measured figure of a configuration is the
median over the GPU logs, with their spread. The sim log is one run on sim with
the calibrated model (the model is deterministic). Prints a Markdown table:
measured, predicted, the error, and whether the layouts (1, 2, 4, 8 streams)
rank the same at each chunk size; exits 1 when a prediction misses by more
than --goal (default 10%) or a ranking differs, so a run says plainly whether
the goal was met.
"""
import argparse
import re
import statistics
import sys

LINE = re.compile(r"^RESULT acc_(\S+)_s(\d+) ([0-9.]+) ms")


def read(path):
    out = {}
    with open(path) as f:
        for line in f:
            m = LINE.match(line.strip())
            if m:
                out[(m.group(1), int(m.group(2)))] = float(m.group(3))
    if not out:
        sys.exit(f"{path}: no RESULT acc_ lines")
    return out


def ranking(values):
    """Streams ordered by time; ties within 1% count as one place."""
    order = sorted(values, key=lambda s: values[s])
    return order


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", nargs="+", required=True)
    ap.add_argument("--sim", required=True)
    ap.add_argument("--goal", type=float, default=0.10)
    a = ap.parse_args()
    gpu_runs = [read(p) for p in a.gpu]
    sim = read(a.sim)
    keys = [k for k in sim if all(k in r for r in gpu_runs)]
    chunks = []
    for c, _ in keys:
        if c not in chunks:
            chunks.append(c)
    print("| chunk | streams | measured ms (median of %d runs, spread) | predicted ms | error |" % len(gpu_runs))
    print("| --- | --- | --- | --- | --- |")
    misses = 0
    measured, spread = {}, {}
    for c in chunks:
        for s in sorted(s for cc, s in keys if cc == c):
            vals = [r[(c, s)] for r in gpu_runs]
            m = statistics.median(vals)
            measured[(c, s)] = m
            spread[(c, s)] = (min(vals), max(vals))
            p = sim[(c, s)]
            err = (p - m) / m
            if abs(err) > a.goal:
                misses += 1
            print(f"| {c} | {s} | {m:.3f} ({min(vals):.3f}-{max(vals):.3f}) | {p:.3f} | {err * 100:+.1f}% |")
    print()
    # Rankings: a pair of layouts is ordered by the measurements only where
    # their runs do not overlap (else it is a tie within the machine's noise);
    # the prediction must order every such pair the same way.
    rank_ok = True
    for c in chunks:
        ss = sorted(s for cc, s in keys if cc == c)
        rm = ranking({s: measured[(c, s)] for s in ss})
        rp = ranking({s: sim[(c, s)] for s in ss})
        separated, wrong, ties = 0, [], []
        for i, s1 in enumerate(ss):
            for s2 in ss[i + 1:]:
                lo1, hi1 = spread[(c, s1)]
                lo2, hi2 = spread[(c, s2)]
                if hi1 < lo2 or hi2 < lo1:
                    separated += 1
                    if (measured[(c, s1)] < measured[(c, s2)]) != (sim[(c, s1)] < sim[(c, s2)]):
                        wrong.append(f"{s1} vs {s2}")
                else:
                    ties.append(f"{s1}={s2}")
        rank_ok = rank_ok and not wrong
        verdict = "the same" if not wrong else "DIFFERENT for " + ", ".join(wrong)
        print(f"- {c}: measured fastest to slowest {rm} streams, predicted {rp}; of the {separated} pairs the "
              f"runs separate, the prediction orders {verdict}; ties within the runs' spread: "
              f"{', '.join(ties) or 'none'}")
    print()
    print(f"{len(keys) - misses} of {len(keys)} predictions within {a.goal * 100:.0f}%; rankings "
          f"{'identical (up to ties within the runs spread)' if rank_ok else 'differ'}")
    return 0 if misses == 0 and rank_ok else 1


if __name__ == "__main__":
    sys.exit(main())
