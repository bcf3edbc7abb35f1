#!/usr/bin/env bash
# The check's cost per collective on sim: a job of N ranks (default 4) of
# bench/workloads/comm_check_loop.lua under policy strict, then off, then
# strict and off again; rank 0's lines printed.
#   bench/probes/comm_check.sh [gpulua] [ranks] [collectives]
set -euo pipefail
g=${1:-build/gpulua} n=${2:-4} calls=${3:-10000}
here=$(cd "$(dirname "$0")/.." && pwd)
export GPULUA_BACKEND=sim
for policy in ${POLICIES:-strict off strict off}; do
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  pids=()
  for ((r = 0; r < n; r++)); do
    GPULUA_POLICY=$policy GPULUA_RANK=$r GPULUA_SIZE=$n GPULUA_STORE=127.0.0.1:$port \
      timeout 600 "$g" "$here/workloads/comm_check_loop.lua" "$calls" &
    pids+=($!)
  done
  wait "${pids[@]}"
done
