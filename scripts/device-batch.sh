#!/usr/bin/env bash
# Every GPU check and benchmark in one go, with everything it writes packed
# into one file ($OUT/all.tgz, one file to copy back from the GPU machine):
#   bash scripts/device-batch.sh [rounds]     (on the GPU machine, in a copy of the
#                                             checkout with the .carry/ that
#                                             scripts/device-prepare.sh made)
#   SKIP_EXAMPLES=1 leaves the examples out; LAUNCHES=n sets bench/run.sh's loop length.
# Runs the spec suite and the examples (scripts/device-run.sh), the graph specs
# under compute-sanitizer memcheck, then `rounds` (default 3) rounds of
# bench/run.sh, and prints bench/analysis/rounds.py's medians over the rounds.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
rounds=${1:-3}
final=${OUT:-/tmp/gpulua-device}
work=$final/work
mkdir -p "$work"
status=0
OUT=$work timeout 240 bash scripts/device-run.sh specs >"$work/specs-run.txt" 2>&1 || status=1
tail -n 6 "$work/specs-run.txt"
if [ -z "${SKIP_EXAMPLES:-}" ]; then # SKIP_EXAMPLES=1: not this time
  OUT=$work timeout 150 bash scripts/device-run.sh examples >"$work/examples-run.txt" 2>&1 || status=1
  grep -E '^== |speed-up|verified|Error|error' "$work/examples-run.txt" | head -n 40
fi
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
LUA_PATH_5_4="$root/lua/?.lua;$root/lua/?/init.lua;$root/tests/spec/?.lua;$root/.carry/share/lua/5.4/?.lua;$root/.carry/share/lua/5.4/?/init.lua;;" \
LUA_CPATH_5_4="$root/.carry/bin/?.so;$root/.carry/lib/lua/5.4/?.so;;" GPULUA_BACKEND=cuda \
  timeout 120 "$cs" --tool memcheck --error-exitcode 86 --report-api-errors no --leak-check full \
  "$root/.carry/bin/gpulua" "$root/.carry/bin/busted" --output=utfTerminal tests/spec/graph_spec.lua \
  >"$work/sanitize-graph.log" 2>&1 || status=1
echo "compute-sanitizer memcheck, graph_spec.lua:"
grep -E 'successes /|ERROR SUMMARY|LEAK SUMMARY' "$work/sanitize-graph.log"
for ((i = 1; i <= rounds; i++)); do
  mkdir -p "$work/r$i"
  OUT=$work/r$i timeout 170 bash bench/run.sh "${LAUNCHES:-100000}" >"$work/r$i/stdout.txt" 2>&1 || status=1
  echo "bench round $i: rc=$?"
done
if ((rounds > 0)); then python3 bench/analysis/rounds.py "$work"/r*/bench-results.txt | tee "$work/rounds.md"; fi
tar czf "$final/all.tgz" -C "$final" work && rm -rf "$work"
exit $status
