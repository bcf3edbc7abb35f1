#!/usr/bin/env bash
# ctest comm.check_procs: under policy strict, a job of several gpulua
# processes on sim ends with a message instead of a hang when its ranks call
# different collectives (every rank names both calls and their lines), the
# same collective with different sizes, when a rank never reaches a
# collective (the others name it and its last collective after `timeout`),
# and when a rank is killed (named as ended). Under policy off nothing is
# checked: the sim's own failure of the communicator is what ends the job.
# Every process runs under `timeout`, so a hang fails the test.
#   tests/comm_check_procs_check.sh PATH/TO/gpulua
set -uo pipefail
g=$1
passed=0 failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GPULUA_BACKEND=sim

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); printf 'FAILED %s\n' "$*"; }

# start_job NAME N SCRIPT: N ranks of SCRIPT in the background (pids in
# $pids); rank r's output in $tmp/NAME.r, its exit status in $tmp/NAME.r.rc
start_job() {
  local name=$1 n=$2 script=$3 r port
  port=$(free_port)
  pids=()
  for ((r = 0; r < n; r++)); do
    ( GPULUA_RANK=$r GPULUA_SIZE=$n GPULUA_STORE=127.0.0.1:$port timeout 120 "$g" "$script" >"$tmp/$name.$r" 2>&1
      echo $? >"$tmp/$name.$r.rc" ) &
    pids+=($!)
  done
}
# expect NAME RANK PATTERN: rank RANK of job NAME exited non-zero with PATTERN (grep -E) in its output
expect() {
  local name=$1 r=$2 pat=$3
  if [ "$(cat "$tmp/$name.$r.rc")" != 0 ] && ! grep -q '^result' "$tmp/$name.$r" && grep -Eq "$pat" "$tmp/$name.$r"; then ok
  else bad "$name: rank $r (exit $(cat "$tmp/$name.$r.rc")), expected /$pat/:"; cat "$tmp/$name.$r"; fi
}

# 1. Rank 1 calls broadcast where ranks 0 and 2 call all_reduce (their second collective).
cat >"$tmp/kinds.lua" <<'EOF'
local gpu = require "gpulua"
local c = gpu.comm{timeout = 60}
local x = c.device:alloc("f32", 4)
c:all_reduce(x)
if c.rank == 1 then
  c:broadcast(x, {root = 0})
else
  c:all_reduce(x)
end
print("result", x:read()[1])
EOF
start_job kinds 3 "$tmp/kinds.lua"
wait "${pids[@]}"
for r in 0 1 2; do
  expect kinds $r 'comm:broadcast \(4 f32, root 0\) at [^ ]*kinds.lua:6 on rank 1 does not match comm:all_reduce \(4 f32, sum\) at [^ ]*kinds.lua:8 on ranks 0 and 2 \(collective 2 of this communicator\)'
done

# 2. The same collective with different counts.
cat >"$tmp/counts.lua" <<'EOF'
local gpu = require "gpulua"
local c = gpu.comm{timeout = 60}
local x = c.device:alloc("f32", c.rank == 0 and 4 or 8)
c:all_reduce(x)
print("result", x:read()[1])
EOF
start_job counts 2 "$tmp/counts.lua"
wait "${pids[@]}"
for r in 0 1; do
  expect counts $r 'comm:all_reduce \((4|8) f32, sum\) at [^ ]*counts.lua:4 on rank (0|1) does not match comm:all_reduce \((8|4) f32, sum\) at [^ ]*counts.lua:4 on rank (1|0) \(collective 1 of this communicator\)'
done

# 3. Rank 2 never reaches the second collective: it waits for a file that
# is made only once ranks 0 and 1 have ended (after their timeout of 3 s).
cat >"$tmp/late.lua" <<EOF
local gpu = require "gpulua"
local c = gpu.comm{timeout = 3}
local x = c.device:alloc("f32", 4)
c:all_reduce(x)
x:read()
if c.rank == 2 then
  while not io.open("$tmp/late.go") do os.execute("sleep 0.05") end
end
c:all_reduce(x)
print("result", x:read()[1])
EOF
start_job late 3 "$tmp/late.lua"
wait "${pids[0]}" "${pids[1]}"
touch "$tmp/late.go"
wait "${pids[2]}"
for r in 0 1; do
  expect late $r 'comm:all_reduce \(4 f32, sum\) at [^ ]*late.lua:9 \(collective 2 of this communicator\) did not complete within 3 seconds: ranks 0 and 1 reached it; rank 2 has not reached it \(its last collective: comm:all_reduce \(4 f32, sum\) at [^ ]*late.lua:4, collective 1\)'
done
expect late 2 'did not complete within 3 seconds'

# 4. Rank 2 is killed after its first collective, before the second.
cat >"$tmp/killed.lua" <<'EOF'
local gpu = require "gpulua"
local c = gpu.comm{timeout = 60}
local x = c.device:alloc("f32", 4)
c:all_reduce(x)
x:read()
if c.rank == 2 then os.execute("kill -9 $PPID") end
c:all_reduce(x)
print("result", x:read()[1])
EOF
start_job killed 4 "$tmp/killed.lua"
wait "${pids[@]}"
for r in 0 1 3; do
  expect killed $r "rank 2 ended: its process's connection to the job's store closed \(its last collective: comm:all_reduce \(4 f32, sum\) at [^ ]*killed.lua:4, collective 1\), but ranks? .* for it in comm:all_reduce \(4 f32, sum\) at [^ ]*killed.lua:7 \(collective 2 of this communicator\)"
done

# 5. Policy off: nothing is checked (the sim's hub fails the communicator by itself).
GPULUA_POLICY=off start_job off 3 "$tmp/kinds.lua"
wait "${pids[@]}"
for r in 0 1 2; do
  if [ "$(cat "$tmp/off.$r.rc")" != 0 ] && ! grep -q 'does not match' "$tmp/off.$r" && grep -q 'not the same call' "$tmp/off.$r"; then ok
  else bad "off: rank $r (exit $(cat "$tmp/off.$r.rc")):"; cat "$tmp/off.$r"; fi
done

echo "comm.check_procs: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
