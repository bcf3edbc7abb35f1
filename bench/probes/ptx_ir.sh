#!/usr/bin/env bash
# The PTX interpreter's cost per thread-instruction stays flat as a launch
# grows, in instructions (callgrind, counting sim_ptx_run alone), which the
# machine's other load does not move: saxpy and the shared-memory block
# reduction of tests/ptx, racecheck on and off, each run once over B, 4B and
# 16B threads (test_ptx --bench, a process each). The cost at the small size
# is (I(4B) - I(B)) / (T(4B) - T(B)) host instructions a thread-instruction,
# at the large size (I(16B) - I(4B)) / (T(16B) - T(4B)) (each difference drops
# the launch's fixed cost), and the figure is their ratio (1.0: flat). With a
# limit R, exits 1 when a ratio exceeds it (the suite's bench.ptx_ir test).
#   bench/probes/ptx_ir.sh [path/to/test_ptx] [R] [B]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
t=${1:-$root/build/tests/test_ptx}
limit=${2:-}
b=${3:-4096}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { # kernel racecheck threads -> "instructions thread-instructions"
  valgrind --tool=callgrind --toggle-collect=sim_ptx_run --callgrind-out-file="$tmp/cg.out" \
    "$t" "$root/tests/ptx" --bench "$1" "$3" "$2" >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 2; }
  echo "$(sed -n 's/^summary: *//p' "$tmp/cg.out") $(sed -n 's/.*(\([0-9]*\) in .*/\1/p' "$tmp/log")"
}
fail=0
for k in saxpy reduce; do
  for rc in on off; do
    read -r ib tb < <(run "$k" "$rc" "$b")
    read -r is ts < <(run "$k" "$rc" $((4 * b)))
    read -r il tl < <(run "$k" "$rc" $((16 * b)))
    read -r small large ratio < <(awk -v ib="$ib" -v is="$is" -v il="$il" -v tb="$tb" -v ts="$ts" -v tl="$tl" \
      'BEGIN { ps = (is - ib) / (ts - tb); pl = (il - is) / (tl - ts); printf "%.2f %.2f %.4f\n", ps, pl, pl / ps }')
    echo "RESULT ptx_ir_${k}_racecheck_${rc}_$((4 * b)) $small instructions a thread-instruction"
    echo "RESULT ptx_ir_${k}_racecheck_${rc}_$((16 * b)) $large instructions a thread-instruction"
    echo "RESULT ptx_ir_${k}_racecheck_${rc}_ratio $ratio x"
    if [ -n "$limit" ] && awk -v r="$ratio" -v m="$limit" 'BEGIN { exit !(r > m) }'; then fail=1; fi
  done
done
if [ -n "$limit" ]; then
  [ "$fail" -eq 0 ] && echo "ptx_ir: every ratio within ${limit}x" || { echo "ptx_ir: a ratio over ${limit}x"; exit 1; }
fi
