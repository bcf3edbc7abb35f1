#!/usr/bin/env bash
# ctest: the README's tour runs, and prints what its "-->" comments say.
#   tests/readme_tour_check.sh PATH/TO/gpulua README.md
set -euo pipefail
g=$1 readme=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk '/^```lua$/ && !done {on = 1; next} on && /^```$/ {on = 0; done = 1} on' "$readme" >"$tmp/tour.lua"
grep -o -- '--> .*' "$tmp/tour.lua" | sed 's/^--> //' >"$tmp/want"
"$g" "$tmp/tour.lua" | tail -n "$(wc -l <"$tmp/want")" >"$tmp/got"
if diff -u "$tmp/want" "$tmp/got"; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; exit 1; fi
