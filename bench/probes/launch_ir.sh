#!/usr/bin/env bash
# Instructions per launch on sim, by callgrind: bench/workloads/launch_loop.lua with N
# launches and with none, the difference divided by N, for policy strict and
# off and a cfg table and a gpu.config. (The sim's queue and worker thread
# are counted too; a GPU has neither: see docs/BENCHMARKS.md.)
#   bench/probes/launch_ir.sh [path/to/gpulua] [N]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
g=${1:-$root/build/gpulua}
n=${2:-4000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GPULUA_BACKEND=sim
ir() { # script launches policy form -> total instructions of the run
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$g" "$@" >/dev/null 2>&1
  sed -n 's/^summary: *//p' "$tmp/cg.out"
}
for policy in strict off; do
  for form in table config; do
    a=$(ir "$root/bench/workloads/launch_loop.lua" 0 "$policy" "$form")
    b=$(ir "$root/bench/workloads/launch_loop.lua" "$n" "$policy" "$form")
    echo "RESULT launch_ir_${policy}_${form} $(( (b - a) / n )) instructions"
  done
done
for c in "off launch8" "strict launch8" "strict event" "strict replay"; do
  set -- $c
  a=$(ir "$root/bench/workloads/ops_loop.lua" 0 "$1" "$2")
  b=$(ir "$root/bench/workloads/ops_loop.lua" "$n" "$1" "$2")
  echo "RESULT ops_ir_$1_$2 $(( (b - a) / n )) instructions"
done
