#!/usr/bin/env bash
# Run the benchmarks on the GPU machine (from scripts/device-run.sh, or by hand
# there after scripts/device-prepare.sh here): the raw-driver C baseline, gpulua
# and CuPy, in one run on the same GPU; prints every figure and a table of
# ratios (also written to $OUT/bench.md when OUT is set).
#   bash bench/run.sh [launches]
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
carry=$root/.carry
launches=${1:-200000}
out=${OUT:-/tmp/gpulua-bench}
mkdir -p "$out"
log=$out/bench-results.txt
: >"$log"
export GPULUA_BACKEND=cuda
export GPULUA_CACHE_DIR=${GPULUA_CACHE_DIR:-/tmp/gpulua-bench-cache}
run() { # label, command...
  local label=$1
  shift
  echo "-- $label"
  "$@" 2>&1 | tee -a /dev/stderr | sed -n "s/^RESULT /$label /p" >>"$log"
}
run raw "$carry/bin/raw" "$launches"
# the built-in library launched raw: every kernel for f32, f16 and i32 at 2^28
run raw "$carry/bin/raw_builtins"
# the pipeline's layouts made raw, and the link's aggregate at the pipeline's copy size
run raw "$carry/bin/layouts"
# the launch and event goals: gpulua beside the raw calls, interleaved in one
# process, 9 rounds of 20,000 ops per case (bench/baselines/launch_pairs.c)
run gpulua "$carry/bin/launch_pairs" 20000 9 bench/workloads/launch_pairs.lua
run gpulua "$carry/bin/gpulua" bench/workloads/bench.lua "$launches"
agg=$(sed -n 's/^raw bidir_256MiB \([0-9.]*\) .*/\1/p' "$log" | head -n 1)
agg16=$(sed -n 's/^raw bidir_16MiB_x32 \([0-9.]*\) .*/\1/p' "$log" | head -n 1)
run gpulua "$carry/bin/gpulua" bench/workloads/pipeline_bench.lua $agg $agg16
run gpulua "$carry/bin/gpulua" bench/workloads/scaling.lua
run gpulua "$carry/bin/gpulua" bench/workloads/gemm_bench.lua
run gpulua "$carry/bin/gpulua" bench/workloads/builtins_bench.lua
if python3 -c 'import cupy' 2>/dev/null; then
  run cupy env PYTHONUNBUFFERED=1 python3 bench/baselines/cupy_bench.py "$launches"
  run cupy env PYTHONUNBUFFERED=1 python3 bench/baselines/cupy_gemm.py
  run cupy env PYTHONUNBUFFERED=1 python3 bench/baselines/cupy_builtins.py
else
  echo "-- cupy: not installed here, skipped"
fi
python3 bench/analysis/report.py "$log" | tee "$out/bench.md"
