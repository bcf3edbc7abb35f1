#!/usr/bin/env bash
# The whole test suite: configure, build, then ctest runs the C unit tests,
# the Busted specs under the gpulua host and under the system lua5.4 (both
# on the sim backend), and luacheck. Ends with ctest's summary line.
#   scripts/test.sh [build-dir]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)"
cd "$build"
ctest --output-on-failure --no-label-summary -j"$(nproc)"
