#!/usr/bin/env bash
# The sim suite under valgrind's memcheck, in build-valgrind/ (a plain
# RelWithDebInfo build, no sanitizer): the C unit tests and the examples in
# one lane, the Busted specs under the gpulua host in the other (valgrind runs
# a process's threads one at a time, so two lanes use CI's two cores). Any
# memcheck error or definite leak, in any process, fails the run; so does a
# failing test or a lane that runs past its time limit.
#   scripts/test-valgrind.sh        (VALGRIND_TIMEOUT: seconds for the spec lane, default 2400)
#
# Child processes are traced (--trace-children=yes): the fault, teardown, oom,
# interrupt and other specs run gpulua scripts in child processes (H.run_child:
# sh -c "timeout 120 gpulua script"), and those children are where teardown
# with live objects and queued work happens; LeakSanitizer found a leak there
# before. So sh and timeout are traced too (their own reports would count;
# there are none), each process logs to build-valgrind/valgrind/vg.PID.log,
# and every log is checked here, since a spec may swallow a child's exit
# status. Leaf programs the specs start that never run gpulua (grep, sleep,
# ls, mkfifo, mkdir, cat, rm) are not traced: not our code, and slow.
#
# Suppressions: tests/valgrind.supp, for system code only (none needed today).
# Nothing is left out: every spec runs (the #race and #sigint specs that
# scripts/test-tsan.sh leaves out are fine under memcheck), in the sim's host
# mode (GPULUA_SIM_KERNELS=host, below: why).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib-sanitize.sh
. "$root/scripts/lib-sanitize.sh"
build=$root/build-valgrind
limit=${VALGRIND_TIMEOUT:-2400}
busted=$(command -v busted)
configure_and_build "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
logs=$build/valgrind
rm -rf "$logs"
mkdir -p "$logs"
cd "$root"
export GPULUA_BACKEND=sim GPULUA_SIM_DEVICES=2 GPULUA_CACHE_DIR=$build/cache
# sim devices of 256 MiB instead of 1 GiB: the out-of-memory specs allocate
# 60% of a device (and the sim fills new memory), which valgrind's shadow
# memory doubles: a 6 GB peak with 1 GiB devices, too much for a small CI machine
export GPULUA_SIM_MEMORY=256M
# the specs in the sim's host mode (k:host functions, not the kernels' PTX): under
# valgrind the interpreter runs some fifty times slower and the suite would not end
# within the limit; valgrind is here for gpulua's host code, which is the same in both
# modes. The interpreter itself runs under valgrind in test_ptx (below) and in the
# specs' children that ask for ptx (sim_ptx_spec.lua and others), and the whole suite
# runs under ptx, the default, in scripts/test-sanitizers.sh (ASan) and test-tsan.sh.
# The C tests and the examples (which give no k:host) run under ptx here too.
vg=(valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite
  --num-callers=30 --suppressions="$root/tests/valgrind.supp" --log-file="$logs/vg.%p.log"
  --trace-children=yes --trace-children-skip='*/grep,*/sleep,*/ls,*/mkfifo,*/mkdir,*/cat,*/rm')

specs() {
  GPULUA_SIM_KERNELS=host timeout -k 30 "$limit" "${vg[@]}" "$build/gpulua" "$busted" --output=utfTerminal tests/spec
}
others() {
  local rc=0 t
  for t in "$build"/tests/test_* examples/*.lua; do
    case $t in
    *_spec.lua) continue ;;
    *.lua) echo "== $t"; timeout -k 30 300 "${vg[@]}" "$build/gpulua" "$t" || rc=1 ;;
    *) echo "== $t"; timeout -k 30 300 "${vg[@]}" "$t" || rc=1 ;;
    esac
  done
  return $rc
}
start=$SECONDS
specs >"$logs/specs.out" 2>&1 &
specs_pid=$!
others >"$logs/others.out" 2>&1 &
others_pid=$!
rc=0
wait "$others_pid" || { rc=1; echo "test-valgrind: the C tests or an example failed"; }
cat "$logs/others.out"
wait "$specs_pid" || { rc=1; echo "test-valgrind: the specs failed (or ran past ${limit} s)"; }
cat "$logs/specs.out"

# every process's log: any error or definite leak fails; the summaries of the
# processes started here (not by a traced process) are printed
# shellcheck disable=SC2317 # called by scan_logs
vg_judge() {
  local f=$1 cmd parent
  if ! grep -q "ERROR SUMMARY:" "$f"; then
    verdict=unfinished # exec'd an untraced program (sh -c grep ...), or was killed
    return
  fi
  cmd=$(sed -n 's/^==[0-9]*== Command: //p' "$f" | head -n 1)
  parent=$(sed -n 's/^==[0-9]*== Parent PID: //p' "$f" | head -n 1)
  if [ ! -e "$logs/vg.$parent.log" ]; then
    printf '%s\n  %s\n  %s\n' "$cmd" "$(grep -o 'ERROR SUMMARY:.*' "$f")" \
      "$(grep -o -e 'definitely lost:.*' -e 'All heap blocks were freed.*' "$f")"
  fi
  if ! grep -q "ERROR SUMMARY: 0 errors" "$f" || grep -q "definitely lost: [1-9]" "$f"; then
    verdict=bad note=": $cmd"
  fi
}
scan_logs "$logs" 'vg.*.log' vg_judge
[ "$scan_bad" -eq 0 ] || rc=1
echo "valgrind: $scan_n processes, $scan_bad with errors or definite leaks ($scan_unfinished without a summary:" \
  "exec'd an untraced program), $((SECONDS - start)) s"
exit "$rc"
