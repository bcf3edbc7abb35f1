#!/usr/bin/env bash
# ctest: the README's tour (its first lua block) runs, and prints what its "-->" comments say;
# with MARKER, the first lua block after the line that holds MARKER (a document's example).
#   tests/readme_tour_check.sh PATH/TO/gpulua README.md [MARKER]
set -euo pipefail
g=$1 readme=$2 marker=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk -v marker="$marker" 'marker == "" || index($0, marker) {seen = 1}
  seen && /^```lua$/ && !done {on = 1; next} on && /^```$/ {on = 0; done = 1} on' "$readme" >"$tmp/tour.lua"
if [ ! -s "$tmp/tour.lua" ]; then echo "no lua block${marker:+ after '$marker'} in $readme"; exit 1; fi
grep -o -- '--> .*' "$tmp/tour.lua" | sed 's/^--> //' >"$tmp/want"
"$g" "$tmp/tour.lua" | tail -n "$(wc -l <"$tmp/want")" >"$tmp/got"
if diff -u "$tmp/want" "$tmp/got"; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; exit 1; fi
