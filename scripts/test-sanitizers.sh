#!/usr/bin/env bash
# The sim suite under AddressSanitizer, UndefinedBehaviorSanitizer and
# LeakSanitizer, in build-asan/. The tests that load gpulua.so into the
# system lua5.4 are left out: an ASan module cannot load into an
# interpreter built without ASan. Any report fails the run.
#   scripts/test-sanitizers.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build-asan
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_MODULE_LINKER_FLAGS="$flags" >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
cd "$build"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest -j"$(nproc)" -E 'lua54|install' --output-on-failure
