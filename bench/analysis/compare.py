"""bench/analysis/compare.py: the table of bench/compare.sh.

    python3 bench/analysis/compare.py compare-results.txt
Each input line: "<round> <who> <name> <value> <unit>" (who: raw, old, new).
For each figure gpulua measures: the median over the rounds of old and new,
new/old (median of the per-round ratios, with their spread) and each against
raw where raw measures the same figure. For times lower is better, for rates
(GB/s) higher.
"""
import statistics
import sys
from collections import defaultdict

vals = defaultdict(dict)  # (who, name) -> {round: value}
units = {}
for line in open(sys.argv[1]):
    rnd, who, name, value, unit = line.split()
    vals[(who, name)][int(rnd)] = float(value)
    units[name] = unit

RAW = {"launch_1arg_off": "launch_1arg", "launch_1arg_strict": "launch_1arg", "launch_8arg_off": "launch_8arg",
       "launch_8arg_strict": "launch_8arg", "event_wait": "event_wait", "h2d_256MiB": "h2d_256MiB",
       "d2h_256MiB": "d2h_256MiB", "axpy_f32_bw": "axpy_f32_bw", "scale_f32_bw": "scale_f32_bw",
       "sum_f32_bw": "sum_f32_bw"}


def med(d):
    return statistics.median(d.values()) if d else None


def ratios(a, b):
    return [a[r] / b[r] for r in a if r in b and b[r]]


print("| figure | old (median) | new (median) | new/old, median (spread) | old/raw | new/raw |")
print("| --- | --- | --- | --- | --- | --- |")
names = sorted({n for (w, n) in vals if w in ("old", "new")}, key=lambda n: list(units).index(n))
for name in names:
    old, new = vals.get(("old", name), {}), vals.get(("new", name), {})
    if not old or not new:
        continue
    u = units[name]
    rs = ratios(new, old)
    spread = f"{min(rs):.3f} to {max(rs):.3f}" if rs else "n/a"
    cells = [name, f"{med(old):.4g} {u}", f"{med(new):.4g} {u}", f"{statistics.median(rs):.3f}x ({spread})"]
    raw = vals.get(("raw", RAW.get(name, "")), {})
    for side in (old, new):
        rr = ratios(side, raw)
        cells.append(f"{statistics.median(rr):.3f}x" if rr else "")
    print("| " + " | ".join(cells) + " |")
print(f"\nrounds: {max((max(d) for d in vals.values()), default=0)}; times: lower is better (a ratio above 1 is "
      "slower); GB/s: higher is better")
