#!/usr/bin/env bash
# ctest: pipeline.run{progress = true} on a real terminal. Through a pty
# (util-linux `script`), its line is drawn on stderr and redrawn in place
# with \r, and ends with the last state on a line of its own; with stderr
# a file (stdout still the terminal) nothing is drawn. Exit 77 (skipped)
# without `script`.
#   tests/progress_check.sh PATH/TO/gpulua
set -uo pipefail
g=$1
if ! command -v script >/dev/null; then
  echo "no 'script' (util-linux) to make a terminal: skipped"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/prog.lua" <<'LUA'
local gpu = require "gpulua"
local pipeline = require "gpulua.pipeline"
local dev = gpu.device(0)
pipeline.run{device = dev, streams = 3, batches = 60, progress = true,
  setup = pipeline.buffers{a = {"u8", 4096}},
  stage = function(b, s, buf) s:fill(buf.a, b):fill(buf.a, b + 1) end}
print("done")
LUA
passed=0 failed=0
check() { # name, wanted (a grep -P pattern), text
  if grep -Pzq -- "$2" <<<"$3"; then passed=$((passed + 1))
  else failed=$((failed + 1)); printf 'FAILED %s: wanted /%s/, got:\n%s\n' "$1" "$2" "$(cat -v <<<"$3")"; fi
}
# slow enough (4 ms an operation, 40 a stream) for redraws while the batches run
export GPULUA_SIM_DELAY_US=4000 GPULUA_BACKEND=${GPULUA_BACKEND:-sim}
tty_out=$(script -qec "'$g' '$tmp/prog.lua'" /dev/null)
check first-line '^\rpipeline\.run: 1/60 batches queued, [0-9]+ finished, [0-9.]+ s, [0-9.]+ batches/s\e\[K' "$tty_out"
check redrawn '\e\[K\rpipeline\.run: 60/60 batches queued, [0-9]+ finished' "$tty_out"
check last-line '\rpipeline\.run: 60/60 batches queued, 60 finished, [0-9.]+ s, [0-9.]+ batches/s\e\[K\r?\ndone\r?\n$' "$tty_out"
n=$(grep -o $'\r'pipeline <<<"$tty_out" | wc -l)
if [ "$n" -ge 3 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED redraws: $n lines drawn, wanted 3 or more"; fi
# stderr a file, stdout the terminal: nothing drawn
file_out=$(script -qec "'$g' '$tmp/prog.lua' 2>'$tmp/err'" /dev/null)
check stdout-only '^done\r?\n$' "$file_out"
if [ ! -s "$tmp/err" ]; then passed=$((passed + 1))
else failed=$((failed + 1)); printf 'FAILED stderr-empty: got:\n%s\n' "$(cat -v "$tmp/err")"; fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
