#!/usr/bin/env bash
# Run on the GPU machine (device tool), from the repository root, after
# scripts/device-prepare.sh here and with carry [".carry"]:
#   bash scripts/device-run.sh [specs|examples|bench|all]   (default all)
# Runs the spec suite with --backend=cuda, the examples and the benchmarks,
# each ending with its summary line. Logs go to $OUT when it is set.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
carry=$root/.carry
what=${1:-all}
out=${OUT:-/tmp/gpulua-device}
mkdir -p "$out"
export LUA_PATH_5_4="$root/lua/?.lua;$root/lua/?/init.lua;$root/tests/spec/?.lua;$carry/share/lua/5.4/?.lua;$carry/share/lua/5.4/?/init.lua;;"
export LUA_CPATH_5_4="$carry/bin/?.so;$carry/lib/lua/5.4/?.so;;"
export GPULUA_BACKEND=cuda
export GPULUA_CACHE_DIR=${GPULUA_CACHE_DIR:-/tmp/gpulua-cache}
gpulua=$carry/bin/gpulua
status=0

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
"$gpulua" -e 'local d = gpu.device(0); print(gpu.backend(), gpu.count(), d.name, d.cc, d.sms, d.memory)' || status=1

if [ "$what" = all ] || [ "$what" = specs ]; then
  echo "== specs (gpulua host, --backend=cuda)"
  "$gpulua" --backend=cuda "$carry/bin/busted" --output=utfTerminal tests/spec 2>&1 | tee "$out/specs-host.log" | tail -n 40
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  echo "== examples/saxpy_spec.lua (Busted for users)"
  "$gpulua" --backend=cuda "$carry/bin/busted" examples/saxpy_spec.lua 2>&1 | tail -n 1
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi

if [ "$what" = all ] || [ "$what" = examples ]; then
  for ex in examples/*.lua; do
    case "$ex" in *_spec.lua) continue ;; esac
    echo "== $ex"
    "$gpulua" --backend=cuda "$ex" 2>&1 | tee "$out/$(basename "$ex" .lua).log" | tail -n 15
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  done
fi

if [ "$what" = all ] || [ "$what" = examples ]; then
  echo "== trace of examples/pipeline.lua"
  "$gpulua" --backend=cuda --trace="$out/pipeline-trace.json" --timeline examples/pipeline.lua >/dev/null 2>"$out/timeline.txt" || status=1
  cat "$out/timeline.txt" | head -n 20
  python3 tests/trace_check.py "$out/pipeline-trace.json" --streams 4 --overlap || status=1
fi

if [ "$what" = all ] || [ "$what" = bench ]; then
  if [ -x bench/run.sh ]; then
    echo "== benchmarks"
    bash bench/run.sh 2>&1 | tee "$out/bench.log" | tail -n 40
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  fi
fi
echo "device-run: $([ $status -eq 0 ] && echo ok || echo FAILED)"
exit $status
