#!/usr/bin/env bash
# Run on the GPU machine, from the root of a copy of the checkout that holds
# the .carry/ made by scripts/device-prepare.sh:
#   bash scripts/device-run.sh [specs|examples|bench|all]   (default all)
#   bash scripts/device-run.sh sanitize                    (not part of all)
#   bash scripts/device-run.sh file [MiB] [rounds]         (not part of all: the file pipeline's
#                                                          benchmark, bench/file_bench.sh)
#   bash scripts/device-run.sh corpus                      (part of all: the interpreter's corpus,
#                                                          tests/ptx, on the GPU and on sim, compared)
#   bash scripts/device-run.sh model                       (not part of all: calibrates the
#                                                          sim's timing model, runs its accuracy benchmark)
# Runs the spec suite with --backend=cuda, the examples and the benchmarks,
# each ending with its summary line; `sanitize` runs the suite and the main
# example under compute-sanitizer memcheck and racecheck (docs/RELIABILITY.md).
# Logs go to $OUT when it is set.
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
  # the GPU's memory in use, twice a second, with the processes holding it:
  # on a fresh machine, child processes of the specs have failed to create a
  # context (CUDA_ERROR_OUT_OF_MEMORY) in the first, slow run (see the note
  # in docs/RELIABILITY.md); this log says who held the memory then
  smi_pid=
  if command -v nvidia-smi >/dev/null; then
    (while :; do
      printf '%s ' "$(date +%T.%N | cut -c1-12)"
      nvidia-smi --query-gpu=memory.used --format=csv,noheader | tr '\n' ' '
      nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader | tr '\n' ' '
      echo
      sleep 0.5
    done >"$out/gpu-memory.log" 2>&1) &
    smi_pid=$!
  fi
  "$gpulua" --backend=cuda "$carry/bin/busted" --output=utfTerminal tests/spec 2>&1 | tee "$out/specs-host.log" | tail -n 40
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  if [ -n "$smi_pid" ]; then
    kill "$smi_pid" 2>/dev/null
    wait "$smi_pid" 2>/dev/null
    echo "most GPU memory in use during the specs: $(awk '{print $2}' "$out/gpu-memory.log" | sort -n | tail -n 1) MiB" \
      "($out/gpu-memory.log)"
  fi
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
  head -n 20 "$out/timeline.txt"
  python3 tests/trace_check.py "$out/pipeline-trace.json" --streams 4 --overlap || status=1
  echo "== SVG timeline of examples/pipeline.lua"
  "$gpulua" --backend=cuda --trace="$out/pipeline-svg.json" --timeline="$out/pipeline.svg" examples/pipeline.lua >/dev/null || status=1
  if command -v rsvg-convert >/dev/null; then # renders pipeline.png, as ctest timeline.svg does on sim
    python3 tests/svg_check.py "$out/pipeline.svg" "$out/pipeline.png" --json "$out/pipeline-svg.json" --streams 5 \
      --kinds h2d,d2h,kernel --flows 4 || status=1
  else
    echo "no rsvg-convert here: check and render $out/pipeline.svg elsewhere with tests/svg_check.py"
  fi
fi

if [ "$what" = all ] || [ "$what" = bench ]; then
  if [ -x bench/run.sh ]; then
    echo "== benchmarks"
    bash bench/run.sh 2>&1 | tee "$out/bench.log" | tail -n 40
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  fi
fi
if [ "$what" = file ]; then
  # the file pipeline against raw C and CuPy, page cache dropped and warm (bench/file_bench.sh)
  echo "== file pipeline benchmark"
  bash bench/file_bench.sh "${2:-2048}" 32 2 "${3:-3}" 2>&1 | tee "$out/file-bench.log" | grep -v '^\(raw_file\|file_\)' | tail -n 30
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
if [ "$what" = all ] || [ "$what" = corpus ]; then
  # the sim's interpreter against the GPU: the same kernels, the same inputs, every output
  # element compared (tests/ptx/corpus.lua); printf's lines compared as sorted sets
  echo "== corpus (tests/ptx): cuda against sim"
  "$gpulua" --backend=cuda tests/ptx/corpus.lua "$out/corpus-cuda.dump" || status=1
  "$gpulua" --backend=sim tests/ptx/corpus.lua "$out/corpus-sim.dump" || status=1
  "$gpulua" tests/ptx/corpus_compare.lua "$out/corpus-cuda.dump" "$out/corpus-sim.dump" 2>&1 |
    tee "$out/corpus.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  hello='local m = gpu.compile([[extern "C" __global__ void hello(int k) {
      printf("hello %d from thread %d of block %d: %g %5.2f|%-4x|%s\n", k, threadIdx.x, blockIdx.x,
             threadIdx.x / 3.0, blockIdx.x * 1.25, threadIdx.x * 77, threadIdx.x % 2 ? "odd" : "even"); }]],
      {name = "hello.cu"})
    gpu.device(0).main:launch(m:kernel("hello", "i32"), {grid = 3, block = 40}, 42); gpu.sync()'
  "$gpulua" --backend=cuda -e "$hello" | sort >"$out/printf-cuda.txt"
  "$gpulua" --backend=sim -e "$hello" | sort >"$out/printf-sim.txt"
  if cmp -s "$out/printf-cuda.txt" "$out/printf-sim.txt"; then
    echo "printf: the same $(wc -l <"$out/printf-sim.txt") lines on both"
  else
    echo "printf: the lines differ"; diff "$out/printf-cuda.txt" "$out/printf-sim.txt" | head -n 10; status=1
  fi
fi

if [ "$what" = model ]; then
  # the sim's timing model: calibrate this GPU, then the accuracy benchmark
  # (three runs) and the main example, whose times sim predicts from the model
  echo "== gpu.calibrate"
  t0=$SECONDS
  "$gpulua" --backend=cuda -e "gpu.calibrate('$out/model.json')" || status=1
  echo "gpu.calibrate took about $((SECONDS - t0)) s (the whole process)"
  cat "$out/model.json"
  for r in 1 2 3; do
    echo "== bench/workloads/model_accuracy.lua, run $r"
    "$gpulua" --backend=cuda bench/workloads/model_accuracy.lua 3 >"$out/acc-gpu-$r.log" 2>&1 || status=1
    cat "$out/acc-gpu-$r.log"
  done
  for r in 1 2 3; do
    echo "== examples/pipeline.lua, run $r"
    "$gpulua" --backend=cuda examples/pipeline.lua 2>&1 | tee "$out/pipeline-gpu-$r.log" | head -n 3
  done
fi
if [ "$what" = sanitize ]; then
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  "$cs" --version | tail -n 1
  # API errors are not counted: the specs provoke them on purpose (out of
  # memory, invalid handles) and check that each becomes a Lua error. The
  # fault specs (#fault) are left out: their kernels fault on purpose, and the
  # planted-fault run below shows that the tool catches exactly that.
  csflags=(--error-exitcode 86 --report-api-errors no --target-processes all --print-limit 20)
  planted=$(mktemp --suffix=.lua)
  cat >"$planted" <<'LUA'
local gpu = require "gpulua"
local dev = gpu.device(0)
local m = gpu.compile([[
  extern "C" __global__ void past_end(float *y, unsigned long long n) { y[n + threadIdx.x] = 1.0f; }
  extern "C" __global__ void racy(float *y) {
    __shared__ float s[64];
    s[threadIdx.x] = threadIdx.x;  // no barrier before reading a neighbour's word
    y[threadIdx.x] = s[(threadIdx.x + 32) % 64];
  }
]], {name = "planted.cu"})
local y = dev:zeros("f32", 64)
local k = m:kernel(os.getenv("PLANTED"), os.getenv("PLANTED") == "racy" and "f32*" or "f32*, u64")
if os.getenv("PLANTED") == "racy" then dev.main:launch(k, {grid = 1, block = 64}, y)
else dev.main:launch(k, {grid = 1, block = 32}, y, 1 << 20) end
pcall(dev.main.sync, dev.main)
LUA
  for tool in memcheck racecheck; do
    extra=()
    [ "$tool" = memcheck ] && extra=(--leak-check full)
    echo "== compute-sanitizer --tool $tool: the spec suite"
    timeout 280 "$cs" --tool "$tool" "${extra[@]}" "${csflags[@]}" \
      "$gpulua" --backend=cuda "$carry/bin/busted" --output=utfTerminal --exclude-tags=fault tests/spec \
      >"$out/sanitize-$tool-specs.log" 2>&1
    rc=$?
    grep -E '^[0-9]+ success|ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY' "$out/sanitize-$tool-specs.log" | sort | uniq -c
    echo "exit status $rc"
    [ $rc -eq 0 ] || status=1
    echo "== compute-sanitizer --tool $tool: examples/pipeline.lua"
    timeout 200 "$cs" --tool "$tool" "${extra[@]}" "${csflags[@]}" "$gpulua" --backend=cuda examples/pipeline.lua \
      >"$out/sanitize-$tool-pipeline.log" 2>&1
    rc=$?
    tail -n 3 "$out/sanitize-$tool-pipeline.log"
    echo "exit status $rc"
    [ $rc -eq 0 ] || status=1
  done
  # the tools must be able to fail here: a planted out-of-bounds write and a
  # planted shared-memory race must each be reported (exit 86)
  for plant in past_end:memcheck racy:racecheck; do
    PLANTED=${plant%%:*} timeout 120 "$cs" --tool "${plant##*:}" "${csflags[@]}" "$gpulua" --backend=cuda "$planted" \
      >"$out/sanitize-planted-${plant%%:*}.log" 2>&1
    rc=$?
    echo "== planted ${plant%%:*} under ${plant##*:}: exit status $rc (86 = reported)"
    grep -m 3 -E 'Invalid __global__|hazard|ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitize-planted-${plant%%:*}.log"
    [ $rc -eq 86 ] || status=1
  done
  rm -f "$planted"
fi
echo "device-run: $([ $status -eq 0 ] && echo ok || echo FAILED)"
# the summary lines of every log, first in $OUT's listing (few files come back)
for f in "$out"/*.log; do
  [ -f "$f" ] && grep -H -E 'successes /|corpus: |ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY|passed, .* failed|speed-up' "$f"
done >"$out/00-summary-$what.txt" 2>/dev/null
echo "$what: $([ $status -eq 0 ] && echo ok || echo FAILED)" >>"$out/00-summary-$what.txt"
exit $status
