#!/usr/bin/env bash
# Compare two builds of gpulua in one run on the same GPU (a change's "no
# worse than before"): each round runs the raw-driver baseline, then
# bench/workloads/bench.lua under the old and the new host (alternating which goes
# first), and bench/analysis/compare.py prints each figure's median over the rounds
# with its spread, new/old, and both against raw.
#   bash bench/compare.sh OLD_BIN_DIR NEW_BIN_DIR [rounds] [launches]
# A BIN_DIR holds gpulua and raw as scripts/device-prepare.sh builds them
# (.carry/bin); results go to $OUT/compare-results.txt when OUT is set.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
old=$1
new=$2
rounds=${3:-3}
launches=${4:-200000}
out=${OUT:-/tmp/gpulua-bench}
mkdir -p "$out"
log=$out/compare-results.txt
: >"$log"
export GPULUA_BACKEND=${GPULUA_BACKEND:-cuda}
export GPULUA_CACHE_DIR=${GPULUA_CACHE_DIR:-/tmp/gpulua-bench-cache}
run() { # round, label, command...
  local round=$1 label=$2
  shift 2
  "$@" 2>&1 | sed -n "s/^RESULT /$round $label /p" >>"$log"
}
status=0
for ((r = 1; r <= rounds; r++)); do
  echo "-- round $r of $rounds"
  run "$r" raw "$new/raw" "$launches" || status=1
  if ((r % 2)); then
    run "$r" old "$old/gpulua" bench/workloads/bench.lua "$launches" || status=1
    run "$r" new "$new/gpulua" bench/workloads/bench.lua "$launches" || status=1
  else
    run "$r" new "$new/gpulua" bench/workloads/bench.lua "$launches" || status=1
    run "$r" old "$old/gpulua" bench/workloads/bench.lua "$launches" || status=1
  fi
done
python3 bench/analysis/compare.py "$log" | tee "$out/compare.md"
exit $status
