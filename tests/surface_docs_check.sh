#!/usr/bin/env bash
# ctest: docs/API.md documents every name of the registration table
# (src/lua/l_surface.c): each gpu function and value as `gpu.NAME`, each
# type's methods (its release method included) as `var:NAME` and its fields
# as `var.NAME`, where var is the variable the type's section header names
# ("/* ---- gpulua.Stream: s ---"). A name counts when API.md has it as a
# whole word (`s:sync` is not found in `cs:sync` nor in `s:synchronize`).
# gpulua.internal, which is not part of the API, is not looked for.
#   tests/surface_docs_check.sh SRC_DIR
set -uo pipefail
src=${1:-.}
table=$src/src/lua/l_surface.c
api=$src/docs/API.md
for f in "$table" "$api"; do [ -r "$f" ] || { echo "FAILED: cannot read $f"; exit 1; }; done

# One line per name: "gpu.compile", "s:launch", "x.dtype"; or "NOVAR <type>"
# for a type section whose header names no variable.
names=$(awk '
  /^\/\* ---- gpu -/ { var = "gpu"; sep = "."; next }
  /^\/\* ---- gpulua\.[A-Za-z]+/ {
    if (match($0, /gpulua\.[A-Za-z]+: [a-z_]+/)) {
      split(substr($0, RSTART, RLENGTH), p, ": "); var = p[2]; sep = ":"
    } else if ($0 ~ /gpulua\.internal/) { var = "" }
    else { print "NOVAR " $0; var = "" }
    next
  }
  /^\/\* ---- / { var = ""; next }
  var == "" { next }
  /luaL_Reg [a-z_]*_meta\[\]/ { inmeta = 1 }
  /luaL_Reg [a-z_]*_methods\[\]|luaL_Reg gll_gpu_lib\[\]/ { inreg = 1 }
  /const char \*const [a-z_]*_fields\[\]/ {
    line = $0; sub(/.*= *\{/, "", line)
    while (match(line, /"[a-z_0-9]+"/)) { print var "." substr(line, RSTART + 1, RLENGTH - 2); line = substr(line, RSTART + RLENGTH) }
    next
  }
  /\.release_method = "/ { match($0, /"[a-z_]+"/); print var ":" substr($0, RSTART + 1, RLENGTH - 2); next }
  inreg || inmeta {
    line = $0
    while (inreg && match(line, /\{"[a-z_0-9]+"/)) {
      print var (var == "gpu" ? "." : sep) substr(line, RSTART + 2, RLENGTH - 3); line = substr(line, RSTART + RLENGTH)
    }
    if ($0 ~ /\};/) { inreg = 0; inmeta = 0 }
  }
' "$table")

passed=0 failed=0
while read -r name; do
  [ -n "$name" ] || continue
  case $name in
    NOVAR*) echo "FAILED: a type section of $table names no variable: ${name#NOVAR }"; failed=$((failed + 1)); continue ;;
  esac
  re=$(printf '%s' "$name" | sed 's/[.]/\\./g')
  if grep -qE "(^|[^[:alnum:]_])$re([^[:alnum:]_]|$)" "$api"; then
    passed=$((passed + 1))
  else
    echo "FAILED: docs/API.md does not document $name"
    failed=$((failed + 1))
  fi
done <<<"$names"
# the table was read: the gpu functions and every type's names
if [ "$passed" -lt 60 ] && [ "$failed" = 0 ]; then
  echo "FAILED: found only $passed names in $table (its layout changed?)"
  failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
