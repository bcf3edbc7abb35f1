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

# scan_logs <dir> <glob> <judge> [<heading>]: check the per-process log
# files <dir>/<glob> (each process a tool traced writes its own). For each,
# `<judge> <file>` sets verdict to clean (the default), bad or unfinished
# (no summary: no verdict, counted apart), may set note (added to the
# file's "===" line) and may print what it finds. Every bad file is printed
# in full under "=== <file><note>"; heading, a printf format whose %d is the
# number of log files, is printed before the first. Sets scan_n (log files),
# scan_bad and scan_unfinished; the caller decides what fails its run.
scan_logs() {
  local dir=$1 glob=$2 judge=$3 heading=${4:-} f verdict note
  local files=()
  for f in "$dir"/$glob; do # (unquoted: the pattern expands)
    if [ -f "$f" ]; then files+=("$f"); fi # (no match leaves the pattern itself)
  done
  scan_n=${#files[@]} scan_bad=0 scan_unfinished=0
  for f in "${files[@]}"; do
    verdict=clean note=
    "$judge" "$f"
    case $verdict in
    clean) ;;
    unfinished) scan_unfinished=$((scan_unfinished + 1)) ;;
    bad)
      if [ "$scan_bad" -eq 0 ] && [ -n "$heading" ]; then
        # shellcheck disable=SC2059 # the caller's format
        printf "$heading\n" "$scan_n"
      fi
      scan_bad=$((scan_bad + 1))
      echo "=== $f$note"
      cat "$f"
      ;;
    *)
      echo "scan_logs: $judge gave $f the verdict '$verdict' (not clean, bad or unfinished)" >&2
      return 1
      ;;
    esac
  done
}
