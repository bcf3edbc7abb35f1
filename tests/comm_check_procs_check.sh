#!/usr/bin/env bash
# ctest comm.check_procs: under policy strict, a job of several gpulua
# processes on sim ends with a message instead of a hang when its ranks call
# different collectives (every rank names both calls and their lines), the
# same collective with different sizes, when a rank never reaches a
# collective (the others name it and its last collective after `timeout`),
# and when a rank is killed (named as ended). Sends and recvs likewise: a
# pair whose counts or dtypes differ, a send or recv whose partner never
# comes, a recv from a killed rank; correct rings and sends and recvs
# interleaved with collectives pass. Under policy off nothing is checked:
# the sim's own failure of the communicator is what ends the job.
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

# run_job NAME N SCRIPT: start_job, then wait for every rank
run_job() { start_job "$@"; wait "${pids[@]}"; }
# expect_all NAME PATTERN RANK...: expect, for each rank
expect_all() {
  local name=$1 pat=$2 r
  shift 2
  for r in "$@"; do expect "$name" "$r" "$pat"; done
}
# unchecked NAME TEXT RANK...: under policy off, each rank exited non-zero
# with the sim's own failure TEXT and no checker's "does not match"
unchecked() {
  local name=$1 text=$2 r
  shift 2
  for r in "$@"; do
    if [ "$(cat "$tmp/$name.$r.rc")" != 0 ] && ! grep -q 'does not match' "$tmp/$name.$r" && grep -q "$text" "$tmp/$name.$r"; then ok
    else bad "$name: rank $r (exit $(cat "$tmp/$name.$r.rc")):"; cat "$tmp/$name.$r"; fi
  done
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
run_job kinds 3 "$tmp/kinds.lua"
expect_all kinds 'comm:broadcast \(4 f32, root 0\) at [^ ]*kinds.lua:6 on rank 1 does not match comm:all_reduce \(4 f32, sum\) at [^ ]*kinds.lua:8 on ranks 0 and 2 \(collective 2 of this communicator\)' 0 1 2

# 2. The same collective with different counts.
cat >"$tmp/counts.lua" <<'EOF'
local gpu = require "gpulua"
local c = gpu.comm{timeout = 60}
local x = c.device:alloc("f32", c.rank == 0 and 4 or 8)
c:all_reduce(x)
print("result", x:read()[1])
EOF
run_job counts 2 "$tmp/counts.lua"
expect_all counts 'comm:all_reduce \((4|8) f32, sum\) at [^ ]*counts.lua:4 on rank (0|1) does not match comm:all_reduce \((8|4) f32, sum\) at [^ ]*counts.lua:4 on rank (1|0) \(collective 1 of this communicator\)' 0 1

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
run_job killed 4 "$tmp/killed.lua"
expect_all killed "rank 2 ended: its process's connection to the job's store closed \(its last collective: comm:all_reduce \(4 f32, sum\) at [^ ]*killed.lua:4, collective 1\), but ranks? .* for it in comm:all_reduce \(4 f32, sum\) at [^ ]*killed.lua:7 \(collective 2 of this communicator\)" 0 1 3

# 5. Policy off: nothing is checked (the sim's hub fails the communicator by itself).
GPULUA_POLICY=off run_job off 3 "$tmp/kinds.lua"
unchecked off 'not the same call' 0 1 2

# Sends and recvs: the k-th send from a to b is paired with the k-th recv
# of b from a. 6. Different counts; 7. different dtypes (both then call a
# barrier: the verdict ends it on every rank).
cat >"$tmp/p2pcount.lua" <<'EOF'
local gpu = require "gpulua"
local c = gpu.comm{timeout = 60}
local x = c.device:alloc(DTYPE or "f32", c.rank == 0 and 4 or COUNT or 8)
if c.rank == 0 then
  c:send(x, 1)
else
  c:recv(x, 0)
end
c:barrier()
print("result", x:read()[1])
EOF
run_job p2pcount 2 "$tmp/p2pcount.lua"
expect_all p2pcount 'comm:send \(4 f32 to rank 1\) at [^ ]*p2pcount.lua:5 on rank 0 does not match comm:recv \(8 f32 from rank 0\) at [^ ]*p2pcount.lua:7 on rank 1 \(send 1 from rank 0 to rank 1\)' 0 1
sed '2a DTYPE, COUNT = c.rank == 1 and "i32" or "f32", 4' "$tmp/p2pcount.lua" >"$tmp/p2pdtype.lua"
run_job p2pdtype 2 "$tmp/p2pdtype.lua"
expect_all p2pdtype 'comm:send \(4 f32 to rank 1\) at [^ ]*p2pdtype.lua:6 on rank 0 does not match comm:recv \(4 i32 from rank 0\) at [^ ]*p2pdtype.lua:8 on rank 1 \(send 1 from rank 0 to rank 1\)' 0 1

# 8. A send whose recv never comes: both ranks go on with barriers (which
# complete) until the verdict ends them, 2 s after the send (at most 60 s:
# then the job ends unchecked, and the test fails).
cat >"$tmp/nosend.lua" <<'EOF'
local gpu = require "gpulua"
local c = gpu.comm{timeout = 2}
local x = c.device:alloc("f32", 4)
if c.rank == 0 then c:send(x, 1) end
local t0 = os.time()
while os.time() - t0 < 60 do c:barrier() end
print("result", x:read()[1])
EOF
run_job nosend 2 "$tmp/nosend.lua"
expect_all nosend 'comm:send \(4 f32 to rank 1\) at [^ ]*nosend.lua:4 on rank 0 \(send 1 from rank 0 to rank 1\) did not complete within 2 seconds: rank 1 has not made its matching comm:recv \(its last call: comm:barrier at [^ ]*nosend.lua:6\)' 0 1

# 9. A recv whose send never comes: rank 0 waits for a file made once rank 1
# has ended, then calls a barrier (where it learns the verdict).
cat >"$tmp/norecv.lua" <<EOF
local gpu = require "gpulua"
local c = gpu.comm{timeout = 2}
local x = c.device:alloc("f32", 4)
c:barrier()
if c.rank == 1 then
  c:recv(x, 0)
  x:read()
else
  while not io.open("$tmp/norecv.go") do os.execute("sleep 0.05") end
  c:barrier()
end
print("result", x:read()[1])
EOF
start_job norecv 2 "$tmp/norecv.lua"
wait "${pids[1]}"
touch "$tmp/norecv.go"
wait "${pids[0]}"
for r in 0 1; do
  expect norecv $r 'comm:recv \(4 f32 from rank 0\) at [^ ]*norecv.lua:6 on rank 1 \(recv 1 on rank 1 from rank 0\) did not complete within 2 seconds: rank 0 has not made its matching comm:send \(its last call: comm:barrier at [^ ]*norecv.lua:4\)'
done

# 10. Rank 1 waits in a recv from rank 2, which is killed before its send
# (half a second after its barrier: a rank's calls go to rank 0 from a thread
# of its own, so one killed at once may not have sent the barrier yet, and is
# named as before it); rank 0 waits for a file made once ranks 1 and 2 have
# ended.
cat >"$tmp/p2pkilled.lua" <<EOF
local gpu = require "gpulua"
local c = gpu.comm{timeout = 60}
local x = c.device:alloc("f32", 4)
c:barrier()
if c.rank == 2 then os.execute("sleep 0.5; kill -9 \$PPID") end
if c.rank == 1 then
  c:recv(x, 2)
  x:read()
else
  while not io.open("$tmp/p2pkilled.go") do os.execute("sleep 0.05") end
  c:barrier()
end
print("result", x:read()[1])
EOF
start_job p2pkilled 3 "$tmp/p2pkilled.lua"
wait "${pids[1]}" "${pids[2]}"
touch "$tmp/p2pkilled.go"
wait "${pids[0]}"
for r in 0 1; do
  expect p2pkilled $r "rank 2 ended: its process's connection to the job's store closed \(its last call: comm:barrier at [^ ]*p2pkilled.lua:4\), but rank 1 waits for it in comm:recv \(4 f32 from rank 2\) at [^ ]*p2pkilled.lua:7 \(recv 1 on rank 1 from rank 2\)"
done

# 11. Correct jobs pass under strict: a ring of sends and recvs, and sends
# and recvs interleaved with collectives, two sends of different sizes to
# one peer queued before their recvs (each paired with its own).
cat >"$tmp/p2pok.lua" <<'EOF'
local gpu = require "gpulua"
local c = gpu.comm{timeout = 60}
local r, n, dev = c.rank, c.size, c.device
local function put(values)
  local x = dev:alloc("f32", #values)
  dev.main:copy(x, gpu.host("f32", values))
  return x
end
local nxt, prv = (r + 1) % n, (r - 1 + n) % n
for round = 1, 3 do
  local a, b, z = put{r, round}, put{r, r, r, round}, put{1}
  local ia, ib = dev:alloc("f32", 2), dev:alloc("f32", 4)
  c:send(a, nxt)
  c:all_reduce(z)
  c:send(b, nxt)
  c:barrier()
  c:recv(ia, prv)
  c:all_reduce(z)
  c:recv(ib, prv)
  local ga, gb, gz = ia:read(), ib:read(), z:read()
  assert(ga[1] == prv and ga[2] == round and gb[3] == prv and gb[4] == round, "wrong data")
  assert(gz[1] == n * n, "wrong sum " .. gz[1])
end
print("result ok")
EOF
start_job p2pok 3 "$tmp/p2pok.lua"
wait "${pids[@]}"
for r in 0 1 2; do
  if [ "$(cat "$tmp/p2pok.$r.rc")" = 0 ] && grep -q '^result ok$' "$tmp/p2pok.$r"; then ok
  else bad "p2pok: rank $r (exit $(cat "$tmp/p2pok.$r.rc")):"; cat "$tmp/p2pok.$r"; fi
done

# 12. Policy off: sends and recvs are not checked either (the sim's hub
# fails the pair of different sizes by itself).
GPULUA_POLICY=off run_job p2poff 2 "$tmp/p2pcount.lua"
unchecked p2poff 'not the same size and type as its recv' 0 1

echo "comm.check_procs: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
