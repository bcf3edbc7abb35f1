#!/usr/bin/env bash
# ctest: `gpulua --help` lists every GPULUA_* environment variable that
# gpulua reads (in src/ or lua/), with its default, and each it lists is read
# somewhere, so the help cannot fall behind the code.
#   tests/host_env_check.sh PATH/TO/gpulua SOURCE_DIR
set -uo pipefail
g=$1 src=$2
help=$("$g" --help 2>&1)
listed=$(grep -oE '^  GPULUA_[A-Z0-9_]+=' <<<"$help" | sed 's/^  //; s/=$//' | sort -u)
# a variable's name as a whole string, as getenv("GPULUA_X") and the library
# loaders' gld_dl_search(..., "GPULUA_X", ...) take it (the host's own help
# text in src/host is what is checked, so it is not searched)
read_vars=$(grep -rhoE '"GPULUA_[A-Z0-9_]+"' "$src/src/driver" "$src/src/core" "$src/src/lua" "$src/lua" |
  tr -d '"' | sort -u)
passed=0 failed=0
if [ -z "$listed" ] || [ -z "$read_vars" ]; then
  echo "FAILED: found no variables (listed: ${listed:-none}; read: ${read_vars:-none})"
  failed=1
fi
for v in $read_vars; do
  if grep -qx "$v" <<<"$listed"; then passed=$((passed + 1))
  else failed=$((failed + 1)); echo "FAILED: gpulua reads $v, but --help does not list it (src/host/options.c, envvars)"; fi
done
for v in $listed; do
  if grep -qx "$v" <<<"$read_vars"; then passed=$((passed + 1))
  else failed=$((failed + 1)); echo "FAILED: --help lists $v, which nothing in src/ or lua/ reads"; fi
done
# each listed with a default ([...])
while read -r v; do
  [ -n "$v" ] || continue
  if grep -A1 -E "^  $v=" <<<"$help" | grep -qE '\[[^]]+\]$'; then passed=$((passed + 1))
  else failed=$((failed + 1)); echo "FAILED: --help gives no default for $v"; fi
done <<<"$listed"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
