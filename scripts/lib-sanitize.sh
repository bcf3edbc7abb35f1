# shellcheck shell=bash
# Steps shared by scripts/test-sanitizers.sh, test-tsan.sh and
# test-valgrind.sh: sourced (not run) by them, after `set -euo pipefail` and
# with $root set to the source tree.

# configure_and_build <build-dir> <cmake args...>: configure the source tree
# into build-dir with the cmake arguments given, then build it; quiet but for
# errors.
# shellcheck disable=SC2154 # root: set by the script that sources this file
configure_and_build() {
  local build=$1
  shift
  cmake -S "$root" -B "$build" "$@" >/dev/null
  cmake --build "$build" -j"$(nproc)" >/dev/null
}

# build_sanitized <build-dir> <flags> <cmake args...>: configure_and_build a
# Debug build whose code, programs and modules are all compiled and linked
# with the sanitizer flags given.
build_sanitized() {
  local build=$1 flags=$2
  shift 2
  configure_and_build "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_MODULE_LINKER_FLAGS="$flags" "$@"
}
