#!/usr/bin/env bash
# The sim suite under AddressSanitizer, UndefinedBehaviorSanitizer and
# LeakSanitizer, in build-asan/. The tests that load gpulua.so into the
# system lua5.4 are left out: an ASan module cannot load into an
# interpreter built without ASan; so is bench.scaling, whose timings mean
# nothing under a sanitizer (test_checker covers the checker's records).
# Any report fails the run.
#   scripts/test-sanitizers.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib-sanitize.sh
. "$root/scripts/lib-sanitize.sh"
build=$root/build-asan
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
build_sanitized "$build" "$flags"
cd "$build"
echo "test-sanitizers: leaving out the lua54 and install tests (an ASan gpulua.so cannot load into the plain lua5.4)" \
  "and bench.scaling (timings under ASan mean nothing)"
# intercept_tls_get_addr=0: LeakSanitizer's record of dynamic TLS blocks
# (those of libraries loaded at run time: NVRTC) guesses a block's layout
# from its address, and where the guess is wrong it scans a range that is
# not memory and crashes at exit ("Tracer caught signal 11", a DTLS range
# starting near 0: google/sanitizers#1322). Without the record, those blocks
# are no roots: a leak is still reported, never hidden.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:intercept_tls_get_addr=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest -j"$(nproc)" -E 'lua54|install|bench' --output-on-failure
