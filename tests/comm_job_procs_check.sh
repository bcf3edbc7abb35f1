#!/usr/bin/env bash
# ctest comm.job_procs: jobs of several gpulua processes on sim really exchange
# data. tests/comm_job_procs.lua runs every collective, send/recv, all_to_all
# and barrier on each rank and checks the results against values computed in
# Lua; each rank prints one line. Jobs of 2 and 4 ranks under gpulua's own
# variables, then torchrun's, Slurm's and (where mpirun is installed) Open
# MPI's; a rank that ends before a collective fails the others with a message
# naming it; a connection that sends garbage to the hub is dropped and the job
# completes. examples/ddp.lua runs as 2 processes under gpulua's variables and
# as 4 under mpirun; each rank must print its line saying its results match
# the CPU. Every process runs under `timeout`, so a hang fails the test.
#   tests/comm_job_procs_check.sh PATH/TO/gpulua
set -uo pipefail
g=$1
here=$(cd "$(dirname "$0")" && pwd)
job=$here/comm_job_procs.lua
passed=0 failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GPULUA_BACKEND=sim

free_port() { # a port the OS says is free now
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); printf 'FAILED %s\n' "$*"; }

# run_job NAME N SCRIPT VARS: N processes of SCRIPT, rank r with `VARS r` in
# its environment (VARS: a function printing NAME=VALUE words), all at once;
# each rank's output in $tmp/NAME.r, its exit status in $tmp/NAME.r.rc
run_job() {
  local name=$1 n=$2 script=$3 vars=$4 pids=() r
  for ((r = 0; r < n; r++)); do
    # shellcheck disable=SC2046
    ( env $($vars "$r" "$n") timeout 120 "$g" "$script" >"$tmp/$name.$r" 2>&1; echo $? >"$tmp/$name.$r.rc" ) &
    pids+=($!)
  done
  wait "${pids[@]}"
}
# every rank of job NAME exited 0 and printed its line (`LINE r n` prints the
# pattern; comm_job_procs.lua's line by default)
job_line() { echo "^rank $1 of $2: all collectives agree\$"; }
ddp_line() { echo "^ddp: rank $1 of $2: .*; gradient matches the CPU (.*), ring ok\$"; }
check_job() {
  local name=$1 n=$2 line=${3:-job_line} r
  for ((r = 0; r < n; r++)); do
    if [ "$(cat "$tmp/$name.$r.rc")" = 0 ] && grep -q "$($line "$r" "$n")" "$tmp/$name.$r"; then ok
    else bad "$name: rank $r (exit $(cat "$tmp/$name.$r.rc")):"; cat "$tmp/$name.$r"; fi
  done
}

port=
gpulua_vars() { echo "GPULUA_RANK=$1 GPULUA_SIZE=$2 GPULUA_LOCAL_RANK=$1 GPULUA_STORE=127.0.0.1:$port"; }
torchrun_vars() { echo "RANK=$1 WORLD_SIZE=$2 LOCAL_RANK=$1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port"; }
slurm_vars() { echo "SLURM_PROCID=$1 SLURM_NTASKS=$2 SLURM_LOCALID=$1 GPULUA_STORE=127.0.0.1:$port"; }

for n in 2 4; do
  port=$(free_port)
  run_job "gpulua$n" "$n" "$job" gpulua_vars
  check_job "gpulua$n" "$n"
done
port=$(free_port)
run_job torchrun 4 "$job" torchrun_vars
check_job torchrun 4
port=$(free_port)
run_job slurm 2 "$job" slurm_vars
check_job slurm 2

# the example: a data-parallel job checked against the CPU on every rank
port=$(free_port)
run_job ddp 2 "$here/../examples/ddp.lua" gpulua_vars
check_job ddp 2 ddp_line

if command -v mpirun >/dev/null 2>&1; then
  for script in "$job" "$here/../examples/ddp.lua"; do
    line=job_line
    [ "$script" = "$job" ] || line=ddp_line
    port=$(free_port)
    out=$(GPULUA_STORE=127.0.0.1:$port timeout 180 mpirun --allow-run-as-root --oversubscribe -np 4 \
      -x GPULUA_BACKEND -x GPULUA_STORE "$g" "$script" 2>&1)
    rc=$?
    for r in 0 1 2 3; do
      if [ "$rc" = 0 ] && grep -q "$($line "$r" 4)" <<<"$out"; then ok
      else bad "mpirun -np 4 $(basename "$script") (exit $rc), rank $r:"; printf '%s\n' "$out"; fi
    done
  done
else
  echo "comm.job_procs: skipped the mpirun part: mpirun is not installed (Debian: apt-get install openmpi-bin)"
fi

# A rank whose process ends before a collective: the others' collective fails,
# naming it and the collective the others wait in (the check of policy
# strict). Rank 2 ends by os.exit (its communicator closed at exit) in one
# job, and is killed (its connection just closes) in the other.
for how in exit kill; do
  cat >"$tmp/dies.lua" <<EOF
local gpu = require "gpulua"
local c = gpu.comm{timeout = 60}
if c.rank == 2 then
  if "$how" == "kill" then os.execute("kill -9 \$PPID") end
  os.exit(0)
end
local x = c.device:alloc("f32", 4)
c:all_reduce(x)
print("result", x:read()[1])
EOF
  port=$(free_port)
  run_job "dies_$how" 4 "$tmp/dies.lua" gpulua_vars
  for r in 0 1 3; do
    if [ "$(cat "$tmp/dies_$how.$r.rc")" != 0 ] && ! grep -q '^result' "$tmp/dies_$how.$r" &&
       grep -q "rank 2 $([ $how = kill ] && echo "ended: its process's connection" || echo "closed the communicator").*(its last collective: none), but rank.* for it in comm:all_reduce (4 f32, sum) at .*dies.lua:8 (collective 1 of this communicator)" "$tmp/dies_$how.$r"; then ok
    else bad "dies_$how: rank $r (exit $(cat "$tmp/dies_$how.$r.rc")):"; cat "$tmp/dies_$how.$r"; fi
  done
done

# Strangers at the hub: once the communicator is made, rank 0 writes its pid
# and waits for a file; the test finds the hub's port (the listening socket of
# rank 0 other than the store's), sends garbage on one connection and a hello
# with a wrong token on another, waits until the hub drops both, then lets
# the job go on: it completes.
{
  cat <<EOF
local gpu = require "gpulua"
local c = gpu.comm{timeout = 60}
if c.rank == 0 then
  local pid = io.open("/proc/self/stat"):read("n")
  local f = assert(io.open("$tmp/pid.tmp", "w"))
  f:write(pid, "\n")
  f:close()
  os.rename("$tmp/pid.tmp", "$tmp/pid")
  while not io.open("$tmp/go") do os.execute("sleep 0.05") end
end
EOF
  grep -v '^local c = gpu.comm{timeout = 60}$' "$job" | grep -v '^local gpu = require "gpulua"$'
} >"$tmp/stranger.lua"
port=$(free_port)
run_job stranger 2 "$tmp/stranger.lua" gpulua_vars &
job_pid=$!
while [ ! -f "$tmp/pid" ] && kill -0 "$job_pid" 2>/dev/null; do sleep 0.05; done
if [ -f "$tmp/pid" ] && timeout 60 python3 - "$(cat "$tmp/pid")" "$port" <<'PY'
import os, socket, struct, sys
pid, store = sys.argv[1], int(sys.argv[2])
inodes = set()
for fd in os.listdir(f"/proc/{pid}/fd"):
    try:
        t = os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        continue
    if t.startswith("socket:["):
        inodes.add(t[8:-1])
ports = []
for line in open("/proc/net/tcp").read().splitlines()[1:]:
    f = line.split()
    if f[3] == "0A" and f[9] in inodes:
        p = int(f[1].split(":")[1], 16)
        if p != store:
            ports.append(p)
assert len(ports) == 1, f"rank 0 listens on {ports} besides the store"
hello = struct.pack("=10Q", 0x54454e4d49534c47, 1, 0, 0, 0, 0, 0, 0, 2, 16) + b"not the token!!!"
for junk in (b"GET / HTTP/1.0\r\n\r\n" * 8, hello):
    s = socket.create_connection(("127.0.0.1", ports[0]))
    s.sendall(junk)
    try:
        while s.recv(4096):  # until the hub drops it (a close, or a reset: it left our bytes unread)
            pass
    except ConnectionResetError:
        pass
    s.close()
PY
then ok; else bad "the hub did not drop its strangers"; fi
touch "$tmp/go"
wait "$job_pid"
check_job stranger 2

echo "comm.job_procs: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
