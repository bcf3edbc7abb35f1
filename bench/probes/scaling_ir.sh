#!/usr/bin/env bash
# Host cost that stays flat, in instructions (callgrind), which neither the
# machine's other load nor the sim's thread scheduling moves much: each
# workload of bench/workloads/scaling.lua runs once at sizes B, S and L in processes of
# their own; the cost per operation at the small size is (I(S) - I(B)) /
# (S - B), at the large size (I(L) - I(S)) / (L - S) (each difference drops
# the start-up and the warm-up), and the figure is their ratio (1.0: flat).
# Counts every thread (the sim's workers too). With a limit R, exits 1 when a
# ratio exceeds it (the suite's bench.scaling_ir test).
#   bench/probes/scaling_ir.sh [path/to/gpulua] [R]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
g=${1:-$root/build/gpulua}
limit=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GPULUA_BACKEND=sim
ir() { # workload n -> total instructions of the run
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$g" "$root/bench/workloads/scaling.lua" "--once=$1:$2" \
    >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 2; }
  sed -n 's/^summary: *//p' "$tmp/cg.out"
}
worst=0
fail=0
for w in "pipeline 1000 4000 32000" "sliding_strict 1000 4000 64000" "sliding_off 1000 4000 64000"; do
  set -- $w
  ib=$(ir "$1" "$2") is=$(ir "$1" "$3") il=$(ir "$1" "$4")
  read -r small large ratio < <(awk -v b="$2" -v s="$3" -v l="$4" -v ib="$ib" -v is="$is" -v il="$il" \
    'BEGIN { ps = (is - ib) / (s - b); pl = (il - is) / (l - s); printf "%.0f %.0f %.4f\n", ps, pl, pl / ps }')
  echo "RESULT scaling_ir_$1_$3 $small instructions"
  echo "RESULT scaling_ir_$1_$4 $large instructions"
  echo "RESULT scaling_ir_$1_ratio $ratio x"
  if [ -n "$limit" ] && awk -v r="$ratio" -v m="$limit" 'BEGIN { exit !(r > m) }'; then fail=1; fi
done
if [ -n "$limit" ]; then
  [ "$fail" -eq 0 ] && echo "scaling_ir: every ratio within ${limit}x" || { echo "scaling_ir: a ratio over ${limit}x"; exit 1; }
fi
