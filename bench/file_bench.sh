#!/usr/bin/env bash
# The file pipeline's benchmark, on the GPU machine (scripts/device-run.sh file,
# or by hand there after scripts/device-prepare.sh here): examples/file_pipeline.lua's
# processing pass (read a file of f32 in chunks, copy in, y = 2 x + 1, y *= 0.5, copy out,
# write in order) done by gpulua (bench/workloads/file_bench.lua), by raw C
# (bench/baselines/raw_file.c: fread into pinned buffers) and by CuPy
# (bench/baselines/cupy_file.py), in rounds that rotate their order, each with the page
# cache dropped first (cold: the disk's speed counts) and then again warm. Beside them:
# the disk's read speed (dd, cold and warm), dd copying the file (the host's reads and
# writes without the GPU, cold and warm) and the host link (pinned copies, in and out at
# once). Every output is compared with raw C's (cmp). Prints each run's
# "RESULT name value unit" line and the medians and ratios (to $OUT/file-bench.md).
#   bash bench/file_bench.sh [MiB] [chunk_MiB] [slots] [rounds]   (default 2048 32 2 3)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
carry=$root/.carry
mib=${1:-2048}
chunk=${2:-32}
slots=${3:-2}
rounds=${4:-3}
out=${OUT:-/tmp/gpulua-bench}
dir=${FILE_BENCH_DIR:-/tmp/gpulua-file-bench}
mkdir -p "$out" "$dir"
log=$out/file-bench-results.txt
: >"$log"
export GPULUA_BACKEND=cuda
export GPULUA_CACHE_DIR=${GPULUA_CACHE_DIR:-/tmp/gpulua-bench-cache}
export LUA_PATH_5_4="$root/lua/?.lua;$root/lua/?/init.lua;;"
in=$dir/in.f32
status=0

python3 - "$in" "$mib" <<'PY'
import sys
import numpy as np
path, mib = sys.argv[1], int(sys.argv[2])
n, step = mib << 18, 1 << 26
with open(path, "wb") as f:
    for first in range(0, n, step):
        (np.arange(first, min(n, first + step), dtype=np.uint64) % 65536).astype(np.float32).tofile(f)
PY
echo "input: $(du -h "$in" | cut -f1) at $in (df: $(df -h "$dir" | awk 'NR == 2 {print $1, $2, $4 " free"}'))"

drop() { # the page cache dropped; 1 when that is refused (not root)
  sync
  echo 3 >/proc/sys/vm/drop_caches 2>/dev/null
}
if drop; then cold=1; else cold=0; echo "the page cache cannot be dropped here: cold runs are warm"; fi
result() { echo "RESULT $1 $2 $3" | tee -a "$log"; }
rate() { # dd's read speed of $in, GB/s
  dd if="$in" of=/dev/null bs=${chunk}M 2>&1 | awk '/copied/ {for (i = 1; i <= NF; i++) if ($i == "s,") {print $1 / $(i - 1) / 1e9; exit}}'
}
copy_rate() { # dd's speed copying $in to a file, as the pipelines read and write (no GPU), GB/s
  dd if="$in" of="$dir/copy.f32" bs=${chunk}M 2>&1 | awk '/copied/ {for (i = 1; i <= NF; i++) if ($i == "s,") {print $1 / $(i - 1) / 1e9; exit}}'
  rm -f "$dir/copy.f32"
}
drop
result disk_cold "$(rate)" GB/s
result disk_warm "$(rate)" GB/s
drop
result copy_cold "$(copy_rate)" GB/s
result copy_warm "$(copy_rate)" GB/s
"$carry/bin/raw_file" --link "$chunk" | tee -a /dev/stderr | sed -n 's/^RESULT /RESULT /p' >>"$log"

run() { # name mode: one run, its RESULT line renamed name_mode
  local name=$1 mode=$2 outf=$dir/out.$1
  [ "$mode" = cold ] && drop
  case $name in
    raw) cmd=("$carry/bin/raw_file" "$in" "$outf" "$chunk" "$slots") ;;
    gpulua) cmd=("$carry/bin/gpulua" bench/workloads/file_bench.lua "$in" "$outf" "$chunk" "$slots") ;;
    cupy) cmd=(env PYTHONUNBUFFERED=1 python3 bench/baselines/cupy_file.py "$in" "$outf" "$chunk" "$slots") ;;
  esac
  local line
  line=$("${cmd[@]}" 2>&1 | tee /dev/stderr | sed -n "s/^RESULT file_$name /RESULT file_${name}_$mode /p")
  [ -n "$line" ] || { echo "$name failed"; status=1; return; }
  echo "$line" >>"$log"
  if [ "$name" != raw ] && [ -f "$dir/out.raw" ] && ! cmp -s "$dir/out.raw" "$outf"; then
    echo "$name's output differs from raw C's"
    status=1
  fi
}
have_cupy=0
python3 -c 'import cupy' 2>/dev/null && have_cupy=1
[ "$have_cupy" = 1 ] || echo "-- cupy: not installed here, skipped"
names=(raw gpulua cupy)
for r in $(seq 1 "$rounds"); do
  echo "== round $r"
  for i in 0 1 2; do
    name=${names[$(((i + r - 1) % 3))]}
    [ "$name" = cupy ] && [ "$have_cupy" = 0 ] && continue
    [ "$name" != raw ] && [ ! -f "$dir/out.raw" ] && run raw warm >/dev/null
    run "$name" cold
    run "$name" warm
  done
done
python3 - "$log" <<'PY' | tee "$out/file-bench.md"
import statistics, sys
vals = {}
for line in open(sys.argv[1]):
    _, name, value, _ = line.split()
    vals.setdefault(name, []).append(float(value))
med = {k: statistics.median(v) for k, v in vals.items()}
def spread(k): return f"{min(vals[k]):.2f}-{max(vals[k]):.2f}"
print("| figure | median GB/s | runs |")
print("| --- | --- | --- |")
for k in sorted(vals): print(f"| {k} | {med[k]:.2f} | {spread(k)} ({len(vals[k])}) |")
for mode in ("cold", "warm"):
    g = med.get(f"file_gpulua_{mode}")
    if g is None: continue
    bound = min(med.get(f"disk_{mode}", float("inf")), med.get("link_both", float("inf")))
    line = f"{mode}: gpulua {g:.2f} GB/s = {g / bound:.2f} of min(disk {mode}, link both ways: {bound:.2f})"
    cp = med.get(f"copy_{mode}")
    if cp: line += f", {g / cp:.2f} of dd's file copy ({cp:.2f})"
    for other in ("raw", "cupy"):
        o = vals.get(f"file_{other}_{mode}")
        if o:  # each round's ratio (the runs of a round are adjacent in time), their median and spread
            rs = [a / b for a, b in zip(vals[f"file_gpulua_{mode}"], o)]
            line += f"; {statistics.median(rs):.3f}x {other} ({min(rs):.3f}-{max(rs):.3f})"
    print(line)
PY
rm -rf "$dir"
exit $status
