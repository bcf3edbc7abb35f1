#!/usr/bin/env bash
# ctest: the gpulua host behaves like the lua interpreter, plus its options.
#   tests/host_cli_check.sh PATH/TO/gpulua
set -uo pipefail
g=$1
passed=0 failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() { # name, expected (a grep -E pattern), command...
  local name=$1 want=$2
  shift 2
  local got
  got=$("$@" 2>&1)
  # a here-string, not printf | grep -q: grep -q exits at its first match,
  # and under pipefail the printf it left writing (SIGPIPE) failed the check
  if grep -Eq -- "$want" <<<"$got"; then passed=$((passed + 1))
  else failed=$((failed + 1)); printf 'FAILED %s: wanted /%s/, got:\n%s\n' "$name" "$want" "$got"; fi
}
status() { # name, expected exit status, command...
  local name=$1 want=$2
  shift 2
  "$@" >/dev/null 2>&1 </dev/null
  local rc=$?
  if [ "$rc" -eq "$want" ]; then passed=$((passed + 1))
  else failed=$((failed + 1)); printf 'FAILED %s: exit %s, wanted %s\n' "$name" "$rc" "$want"; fi
}
printf 'print(arg[0], arg[1], arg[2], arg[-1], select("#", ...))\n' >"$tmp/args.lua"
printf 'local x = nil\nx.y = 1\n' >"$tmp/err.lua"

check backend-count $'^sim\t2$' env GPULUA_SIM_DEVICES=2 "$g" -e 'print(gpu.backend(), gpu.count())'
check version '^gpulua 0\.[0-9]+\.[0-9]+ \(Lua 5\.4' "$g" -v
check version-long '^gpulua 0\.[0-9]+\.[0-9]+ \(Lua 5\.4[^~]*~backend: sim \(GPULUA_BACKEND=sim\)~$' \
  sh -c "GPULUA_BACKEND=sim '$g' --version | tr '\\n' '~'"
check version-option '^backend: sim \(--backend=sim\)$' env GPULUA_BACKEND=cuda "$g" --backend=sim --version
# --version says which backend this machine would get, and why
check version-why '^backend: sim \(no usable CUDA device: the CUDA driver \(/nonexistent/libcuda\.so\.1\) could not be loaded: ' \
  env -u GPULUA_BACKEND GPULUA_LIBCUDA=/nonexistent/libcuda.so.1 "$g" --version
check version-cuda-unusable '^backend: none: --backend=cuda, but the CUDA driver \(/nonexistent/libcuda\.so\.1\) could not be loaded' \
  env GPULUA_LIBCUDA=/nonexistent/libcuda.so.1 "$g" --backend=cuda --version
# -v alone prints the version and starts no backend (no notice, no error)
check v-alone '^1$' sh -c "env -u GPULUA_BACKEND GPULUA_LIBCUDA=/nonexistent/libcuda.so.1 '$g' -v 2>&1 | wc -l"
check v-alone-bad-env '^gpulua 0\.[0-9.]+ \(Lua 5\.4\.[0-9]+\)$' env GPULUA_BACKEND=tpu "$g" -v
status v-alone-bad-env-exit 0 env GPULUA_BACKEND=tpu "$g" -v
check v-then-e $'^sim$' env GPULUA_BACKEND=sim "$g" -v -e 'print(gpu.backend())'
check v-luainit '^sim$' env GPULUA_BACKEND=sim LUA_INIT='print(gpu.backend())' "$g" -v
check version-bad-env "^backend: none: GPULUA_BACKEND must be cuda or sim, got 'tpu'$" env GPULUA_BACKEND=tpu "$g" --version
status version-exit 0 "$g" --version
check version-stops '^backend' "$g" --version -e 'print("ran")'
check help-options '--timeline=FILE\.svg' "$g" --help
check help-env '^  GPULUA_SIM_DEVICES=1\.\.64$' "$g" --help
check help-default '^      sim: the number of devices \[2\]$' "$g" --help
check help-short '^usage: .*gpulua \[options\]' "$g" -h
check help-E '^  -E +ignore environment variables: LUA_INIT\*, LUA_PATH\*, LUA_CPATH\*$' "$g" --help
check help-E-gpulua '^ +and every GPULUA_\* below' "$g" --help
check help-notice 'naming sim here or with --backend=sim silences that notice' "$g" --help
# a bad option: one line saying what is wrong, and where to look
check bad-long-space $'^[^~]*gpulua: \'--backend\' needs its value after \'=\': --backend=VALUE \\(cuda or sim\\)~try \'[^~]*gpulua --help\'~$' \
  sh -c "'$g' --backend sim 2>&1 | tr '\\n' '~'"
status bad-long-space-exit 1 "$g" --backend sim
check bad-short-option $'^[^~]*gpulua: unrecognized option \'-x\'~try \'[^~]*gpulua --help\'~$' \
  sh -c "'$g' -x 2>&1 | tr '\\n' '~'"
status help-exit 0 "$g" --help
# -E: Lua's variables and gpulua's are ignored, for the host and its children
check E-policy '^strict$' env GPULUA_POLICY=off "$g" -E -e 'print(gpu.policy())'
check E-bad-backend $'^sim\t2$' env GPULUA_BACKEND=tpu GPULUA_SIM_DEVICES=9 "$g" -E --backend=sim -e 'print(gpu.backend(), gpu.count())'
check E-children $'^nil\tnil$' env GPULUA_POLICY=off GPULUA_TRACE=/x.json "$g" -E -e 'print(os.getenv("GPULUA_POLICY"), os.getenv("GPULUA_TRACE"))'
check E-version '^backend: (sim \(no usable CUDA device: |cuda \([0-9]+ device)' env GPULUA_BACKEND=sim "$g" -E --version
check E-keeps-others '^kept$' env OTHER_VAR=kept "$g" -E -e 'print(os.getenv("OTHER_VAR"))'
long_name=GPULUA_$(printf 'X%.0s' $(seq 300))
check E-long-name '^nil$' env "$long_name=1" timeout 20 "$g" -E -e "print(os.getenv('$long_name'))"
check args $'args.lua\ta\tb\t.*gpulua\t2' "$g" "$tmp/args.lua" a b
check dash-e '^3$' "$g" -e 'print(1 + 2)'
check stdin '^from stdin$' sh -c "echo 'print(\"from stdin\")' | '$g' -"
check require-same '^true$' "$g" -e 'print(require("gpulua") == gpu)'
check error-message "err.lua:2: attempt to index a nil value \\(local 'x'\\)" "$g" "$tmp/err.lua"
check error-traceback '^stack traceback:' "$g" "$tmp/err.lua"
status error-exit 1 "$g" "$tmp/err.lua"
status os-exit 7 "$g" -e 'os.exit(7)'
check bad-backend "invalid value 'gpu' for --backend" "$g" --backend=gpu -e 'print(1)'
status bad-backend-exit 1 "$g" --backend=gpu -e 'print(1)'
check bad-policy "invalid value 'lax' for --policy" "$g" --policy=lax -e 'print(1)'
check policy-option '^auto$' "$g" --policy=auto -e 'print(gpu.policy())'
check policy-env '^off$' env GPULUA_POLICY=off "$g" -e 'print(gpu.policy())'
check bad-policy-env "GPULUA_POLICY must be strict, auto or off, got 'nope'" env GPULUA_POLICY=nope "$g" -e 'print(1)'
check sim-option '^sim$' env GPULUA_BACKEND=cuda "$g" --backend=sim -e 'print(gpu.backend())'
check bad-backend-env "GPULUA_BACKEND must be cuda or sim, got 'tpu'" env GPULUA_BACKEND=tpu "$g" -e 'print(1)'
check bad-sim-devices 'GPULUA_SIM_DEVICES must be an integer from 1 to 64' env GPULUA_SIM_DEVICES=0 "$g" -e 'print(1)'
check bad-sim-nccl-fault 'GPULUA_SIM_NCCL_FAULT must be N or async:N' env GPULUA_SIM_NCCL_FAULT=async:0 "$g" -e 'print(1)'
check bad-sim-kernels "GPULUA_SIM_KERNELS must be ptx, host or compare, got 'gpu'" env GPULUA_SIM_KERNELS=gpu "$g" -e 'print(1)'
check sim-kernels-ptx '^sim$' env GPULUA_BACKEND=sim GPULUA_SIM_KERNELS=ptx "$g" -e 'print(gpu.backend())'
check sim-kernels-compare '^sim$' env GPULUA_BACKEND=sim GPULUA_SIM_KERNELS=compare "$g" -e 'print(gpu.backend())'
check sim-kernels-host '^sim$' env GPULUA_BACKEND=sim GPULUA_SIM_KERNELS=host "$g" -e 'print(gpu.backend())'
check bad-sim-schedule "GPULUA_SIM_SCHEDULE must be fixed or random:SEED .SEED an integer from 0 to 2.64-1., got 'random'" env GPULUA_SIM_SCHEDULE=random "$g" -e 'print(1)'
check sim-schedule-random '^sim$' env GPULUA_BACKEND=sim GPULUA_SIM_SCHEDULE=random:7 "$g" -e 'print(gpu.backend())'
check bad-sim-racecheck "GPULUA_SIM_RACECHECK must be on or off, got 'yes'" env GPULUA_SIM_RACECHECK=yes "$g" -e 'print(1)'
check sim-racecheck-off '^sim$' env GPULUA_BACKEND=sim GPULUA_SIM_RACECHECK=off "$g" -e 'print(gpu.backend())'
check bad-sim-builtins "GPULUA_SIM_BUILTINS must be c or ptx, got 'cuda'" env GPULUA_SIM_BUILTINS=cuda "$g" -e 'print(1)'
check bad-sim-nccl-addr "GPULUA_SIM_NCCL_ADDR must be a numeric IPv4 or IPv6 address such as 127.0.0.1, got 'localhost'" env GPULUA_SIM_NCCL_ADDR=localhost "$g" -e 'print(1)'
check sim-builtins-c '^sim$' env GPULUA_BACKEND=sim GPULUA_SIM_BUILTINS=c "$g" -e 'print(gpu.backend())'
# under ptx the built-ins run kernels/builtins.cu, so they need NVRTC (c has stand-ins without it)
check sim-builtins-ptx-nvrtc "gpu.kernels: GPULUA_SIM_BUILTINS=ptx runs the built-ins' CUDA source, kernels/builtins.cu, which needs NVRTC: GPULUA_NVRTC=/nonexistent/libnvrtc.so could not be loaded" \
  env GPULUA_BACKEND=sim GPULUA_SIM_BUILTINS=ptx GPULUA_NVRTC=/nonexistent/libnvrtc.so "$g" -e 'local d = gpu.device(0) d.main:fill(d:alloc("f32", 4), 1) d.main:launch(gpu.kernels.fill, {grid = 1, block = 32}, d:alloc("f32", 4), 1, 4) d:sync() print(1)'
check sim-builtins-c-no-nvrtc '^8\.0$' \
  env GPULUA_BACKEND=sim GPULUA_SIM_BUILTINS=c GPULUA_NVRTC=/nonexistent/libnvrtc.so "$g" -e 'local d = gpu.device(0) local x = d:alloc("f32", 4) d.main:launch(gpu.kernels.fill, {grid = 1, block = 32}, x, 8, 4) print(x:read()[4])'
check sim-devices '^5$' env GPULUA_SIM_DEVICES=5 "$g" -e 'print(gpu.count())'
check sim-memory '^536870912$' env GPULUA_SIM_MEMORY=512M "$g" -e 'print(gpu.device(0).memory)'
check no-gpu-line 'no usable CUDA device .*using the sim backend' env -u GPULUA_BACKEND GPULUA_LIBCUDA=/nonexistent/libcuda.so.1 "$g" -e 'print(gpu.backend())'
if [ -f /usr/local/cuda/lib64/stubs/libcuda.so ]; then
  check stub-library 'CUDA_ERROR_STUB_LIBRARY.*using the sim backend' env -u GPULUA_BACKEND GPULUA_LIBCUDA=/usr/local/cuda/lib64/stubs/libcuda.so "$g" -e 'print(gpu.backend())'
  check cuda-demanded 'GPULUA_BACKEND=cuda, but cuInit failed: CUDA_ERROR_STUB_LIBRARY' env GPULUA_BACKEND=cuda GPULUA_LIBCUDA=/usr/local/cuda/lib64/stubs/libcuda.so "$g" -e 'print(1)'
fi
check no-double-prefix "^$g: GPULUA_BACKEND must be cuda or sim" env GPULUA_BACKEND=tpu "$g" -e 'print(1)'
# messages name the program as it was started (argv[0]), as lua.c does
ln -s "$(realpath "$g")" "$tmp/mylua"
check progname "^$tmp/mylua: $tmp/err.lua:2: attempt to index" "$tmp/mylua" "$tmp/err.lua"
check progname-start "^$tmp/mylua: GPULUA_BACKEND must be cuda or sim" env GPULUA_BACKEND=tpu "$tmp/mylua" -e 'print(1)'
# naming sim silences the fallback notice
check notice-silenced-env '^1~$' sh -c "GPULUA_BACKEND=sim GPULUA_LIBCUDA=/nonexistent/libcuda.so.1 '$g' -e 'print(1)' 2>&1 | tr '\\n' '~'"
check notice-silenced-option '^1~$' sh -c "env -u GPULUA_BACKEND GPULUA_LIBCUDA=/nonexistent/libcuda.so.1 '$g' --backend=sim -e 'print(1)' 2>&1 | tr '\\n' '~'"
# LUA_PATH and LUA_CPATH (and their _5_4 forms, and ';;') as in lua5.4;
# gpulua's own modules are found all the same
check lua-path '^x$' env LUA_PATH=x "$g" -e 'print(package.path)'
check lua-path-5-4 '^y$' env LUA_PATH=x LUA_PATH_5_4=y "$g" -e 'print(package.path)'
check lua-cpath '^yacc$' env LUA_CPATH=x LUA_CPATH_5_4=yacc "$g" -e 'print(package.cpath)'
check lua-path-default '^true$' sh -c "d=\$('$g' -E -e 'io.write(package.path)'); LUA_PATH='a;;b' '$g' -e \"print(package.path == 'a;' .. [[\$d]] .. ';b')\""
check lua-path-modules '^function$' env LUA_PATH=x "$g" -e 'print(type(require("gpulua.pipeline").run))'
check trace-unwritable 'cannot write /nonexistent/dir/t\.json: No such file or directory' \
  "$g" --trace=/nonexistent/dir/t.json -e 'print("ran")'
status trace-unwritable-exit 1 "$g" --trace=/nonexistent/dir/t.json -e 'print("ran")'
check timeline-svg-unwritable "^$g: --timeline \(or GPULUA_TIMELINE\): cannot write /nonexistent/dir/t\.svg: No such file or directory" \
  "$g" --timeline=/nonexistent/dir/t.svg -e 'print("ran")'
status timeline-svg-unwritable-exit 1 "$g" --timeline=/nonexistent/dir/t.svg -e 'print("ran")'
check timeline-svg '^<svg xmlns' sh -c "'$g' --timeline='$tmp/t.svg' -e 'gpu.device(0):zeros(\"f32\", 4) gpu.sync()' && cat '$tmp/t.svg'"
# the command line wins over GPULUA_TIMELINE, 0 included
check timeline-option-wins '^0$' sh -c "GPULUA_TIMELINE=1 '$g' --timeline=0 -e 'gpu.device(0):zeros(\"f32\", 4) gpu.sync()' 2>&1 | grep -c 'gpulua timeline'"
# a value meant as a switch is refused, not taken as the SVG's file name
check timeline-word "^$g: --timeline got 'yes': give 1 for the text timeline on stderr, 0 for none" \
  sh -c "cd '$tmp' && '$g' --timeline=yes -e 'print(\"ran\")' 2>&1; test ! -e '$tmp/yes' || echo 'wrote yes'"
status timeline-word-exit 1 "$g" --timeline=yes -e 'print("ran")'
check timeline-env-word "^$g: GPULUA_TIMELINE got 'true'" sh -c "GPULUA_TIMELINE=true '$g' -e 'print(1)' 2>&1"
check timeline-env '^dev0 main #[0-9]+ +\|F+\| 1 op$' env GPULUA_TIMELINE=1 "$g" -e 'gpu.device(0):zeros("f32", 4) gpu.sync()'
# the timeline shows every kind of work a row holds (a short kernel before a
# long fill), and says "1 op"
cat >"$tmp/tl.lua" <<'LUA'
local dev = gpu.device(0)
local x, y = dev:zeros("f32", 1 << 22), dev:zeros("f32", 16)
local s = dev:stream{name = "mixed"}
s:join(dev.main)
s:launch(gpu.kernels.scale, {grid = 1, block = 32}, 2.0, y, y, 16)
for _ = 1, 4 do s:fill(x, 1) end
local one = dev:stream{name = "single"}
one:join(s)
one:fill(y, 3)
gpu.sync()
LUA
check timeline-kernel 'mixed #[0-9]+ +\|[^|]*K[^|]*\| 5 ops' "$g" --timeline "$tmp/tl.lua"
check timeline-fill 'mixed #[0-9]+ +\|[^|]*F[^|]*\| 5 ops' "$g" --timeline "$tmp/tl.lua"
check timeline-one-op 'single #[0-9]+ +\|[^|]*\| 1 op$' "$g" --timeline "$tmp/tl.lua"
# a graph's replays are their own kind of work on the stream that launched them
cat >"$tmp/tlg.lua" <<'LUA'
local dev = gpu.device(0)
local x = dev:zeros("f32", 1 << 16)
local s = dev:stream{name = "replayer"}
s:join(dev.main)
local g = s:capture(function(cs) for _ = 1, 8 do cs:fill(x, 1) end end)
for _ = 1, 3 do g:launch(s) end
gpu.sync()
LUA
check timeline-graph 'replayer #[0-9]+ +\|[^|]*G[^|]*\| 3 ops$' "$g" --timeline "$tmp/tlg.lua"
check repl '^> 4$' sh -c "printf '2 + 2\n' | '$g' -i 2>/dev/null"
# objects print usefully at the prompt ('=' and a bare expression)
printf '%s\n' 'x = gpu.device(0):zeros("f32", 4096)' '= x' 'gpu.host("f32", {1.5, 2, 3})' \
  's = gpu.device(0):stream{name = "w"}' 's:join(gpu.device(0).main)' 's:fill(x, 1)' '= s' 's:sync()' 's' >"$tmp/print.in"
check repl-slice '> gpulua\.Slice\(f32\[4096\] on device 0, home stream main\)$' sh -c "'$g' -i <'$tmp/print.in' 2>&1"
check repl-host '> gpulua\.HostBuffer\(f32\[3\]: 1\.5, 2, 3\)$' sh -c "'$g' -i <'$tmp/print.in' 2>&1"
check repl-stream "> gpulua\.Stream\('w' on device 0: (idle|busy), [0-9 of]+operations? queued.*, last a fill\)$" sh -c "'$g' -i <'$tmp/print.in' 2>&1"
check repl-stream-idle "> gpulua\.Stream\('w' on device 0: idle, 2 operations queued, last a fill\)$" sh -c "'$g' -i <'$tmp/print.in' 2>&1"
# the REPL records from its first line: gpu.timeline() shows it all, starting nothing
printf 'dev = gpu.device(0)\ns = dev:stream{name = "repl_s"}\nx = dev:zeros("f32", 4, {stream = s})\ngpu.sync()\ngpu.timeline()\n' \
  >"$tmp/repl-tl.in"
check repl-timeline 'repl_s #[0-9]+ +\|F+\| 1 op$' sh -c "'$g' -i <'$tmp/repl-tl.in'"
check repl-timeline-no-start '^0$' sh -c "'$g' -i <'$tmp/repl-tl.in' 2>&1 | grep -c 'recording starts'"
# the REPL's locations count its input lines, continuation lines included
printf 'x = gpu.device(0):zeros("f32", 4)\n\nfor i = 1, 1 do\n  x:free()\nend\nprint(pcall(x.read, x))\nerror("line 7")\n' \
  >"$tmp/repl.in"
check repl-freed-at 'use of a freed slice f32\[4\] on device 0 \(freed at stdin:4\)' sh -c "'$g' -i <'$tmp/repl.in'"
check repl-error-line '^(> )*stdin:7: line 7$' sh -c "'$g' -i <'$tmp/repl.in'"
# one SIGINT, as Ctrl-C sends (timeout(1) signals the process group too: twice)
busy='local n = 0 while true do n = n + 1 end'
# ThreadSanitizer (scripts/test-tsan.sh) defers an asynchronous signal until
# the thread next enters a call it intercepts, which a pure Lua loop never
# does: there the loop calls os.time (time(3), intercepted) each iteration,
# so the handler, the hook and exit 130 are still checked under TSan.
if ldd "$g" 2>/dev/null | grep libtsan >/dev/null; then # (not grep -q: with pipefail, ldd would die of SIGPIPE)
  echo "host_cli_check: $g is built with ThreadSanitizer, which delivers SIGINT only at an intercepted call:" \
    "the interrupt checks' busy loop calls os.time() each iteration"
  busy='local n = 0 while true do n = n + os.time() end'
fi
# the child makes a file when its loop starts, and the signal waits for it
# (a fixed sleep could signal a host still starting up on a loaded machine)
interrupt() {
  rm -f "$tmp/int.ready"
  "$g" -e "io.open('$tmp/int.ready', 'w'):close() $busy" 2>"$tmp/int.err" &
  local pid=$! n=0
  while [ ! -e "$tmp/int.ready" ] && [ "$n" -lt 600 ] && kill -0 "$pid" 2>/dev/null; do
    sleep 0.05; n=$((n + 1))
  done
  sleep 0.1
  kill -INT "$pid"
  wait "$pid"
  echo "exit $?"
  cat "$tmp/int.err"
}
check interrupt 'interrupted!' interrupt
check interrupt-status '^exit 130$' interrupt
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
