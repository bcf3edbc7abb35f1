#!/usr/bin/env bash
# ctest: Tab completion in the REPL (libedit), on a terminal: tmux runs the
# host in a pane, types a word and Tab (twice to list), and reads the pane.
#   tests/repl_complete_check.sh PATH/TO/gpulua
set -uo pipefail
g=$(realpath "$1")
command -v tmux >/dev/null || { echo "tmux is missing (apt-get install tmux)" >&2; exit 1; }
passed=0 failed=0
tmp=$(mktemp -d)
sock=$tmp/tmux.sock
t() { tmux -S "$sock" "$@"; }
trap 't kill-server 2>/dev/null; rm -rf "$tmp"' EXIT
# HOME: the REPL's history file goes there
t new-session -d -x 200 -y 50 "cd '$tmp' && env HOME='$tmp' GPULUA_BACKEND=sim GPULUA_SIM_DEVICES=2 '$g'"
screen() { t capture-pane -p -J; }
# wait until the pane shows a line matching the grep -E pattern (the pane
# changes as the terminal draws: the wait is bounded, the check is not timed)
wait_for() {
  local n=0
  until screen | grep -Eq -- "$1"; do
    n=$((n + 1))
    [ "$n" -gt 200 ] && return 1
    sleep 0.05
  done
}
run() { # a line of Lua, typed and run; waits for the next prompt
  t send-keys -l -- "$1"
  t send-keys Enter
  t send-keys -l -- "print('ran', $2)"
  t send-keys Enter
  wait_for "^ran +$2\$"  # (the pane shows print's tab as spaces)
}
check() { # name, text typed, keys, patterns the pane must then show (each)
  local name=$1 text=$2 keys=$3 ok=1 p
  shift 3
  t send-keys -l -- "$text"
  # shellcheck disable=SC2086 # the keys are words: Tab, or Tab Tab
  t send-keys $keys
  for p in "$@"; do wait_for "$p" || ok=0; done
  if [ "$ok" = 1 ]; then passed=$((passed + 1))
  else failed=$((failed + 1)); printf 'FAILED %s: typed %s then %s, wanted /%s/, the pane:\n%s\n' "$name" "$text" "$keys" "$*" "$(screen)"; fi
  t send-keys C-u  # the line, emptied
  t send-keys -l -- "-- $name done"
  t send-keys Enter
  wait_for "^> -- $name done\$" || true
  t send-keys C-l  # a clean screen for the next check
  wait_for '^> $' || true
}
wait_for '^> ' || { echo "the REPL did not start:"; screen; exit 1; }
run "dev = gpu.device(0); s = dev:stream{name = 'w'}; x = dev:zeros('f32', 4); str = 'abc'" 1
run "t = setmetatable({}, {__index = function() ran = true end})" 2

check global 'pri' Tab '^> print$'
check keyword 'func' Tab '^> function$'
check gpu-field 'gpu.dev' Tab '^> gpu\.device$'
check gpu-list 'gpu.' 'Tab Tab' '(^| )gpu\.kernels( |$)' '(^| )gpu\.load( |$)' '(^| )gpu\.device( |$)'
check gpu-subtable 'gpu.kernels.ax' Tab '^> gpu\.kernels\.axpy$'
check device-field 'dev.ma' Tab '^> dev\.main$'
check device-list 'dev.' 'Tab Tab' '(^| )dev\.name( |$)' '(^| )dev\.main( |$)' '(^| )dev\.zeros( |$)'
check stream-method 's:fi' Tab '^> s:fill$'
check stream-list 's:' 'Tab Tab' '(^| )s:copy( |$)' '(^| )s:fill( |$)' '(^| )s:launch( |$)'
check field-method 'dev.main:jo' Tab '^> dev\.main:join$'
check slice-method 'x:re' Tab '^> x:read$'
check string-method 'str:up' Tab '^> str:upper$'
# after ':' only methods: a stream's fields (name, device) are not listed
t send-keys -l -- 's:'
t send-keys Tab Tab
if wait_for '(^| )s:copy( |$)' && ! screen | grep -Eq '(^| )s:(name|device)( |$)'; then passed=$((passed + 1))
else failed=$((failed + 1)); printf 'FAILED stream-no-fields: the pane:\n%s\n' "$(screen)"; fi
t send-keys C-u
# completing runs none of the script's code (t's __index is a function)
t send-keys -l -- 't.x'
t send-keys Tab
t send-keys C-u
t send-keys -l -- "print('ran is', ran)"
t send-keys Enter
if wait_for '^ran is +nil$'; then passed=$((passed + 1))
else failed=$((failed + 1)); printf 'FAILED no-code-run: the pane:\n%s\n' "$(screen)"; fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
