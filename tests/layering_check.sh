#!/usr/bin/env bash
# The layers depend only downwards (docs/ARCHITECTURE.md):
#   src/driver  <-  src/core  <-  src/lua  <-  src/host
# 1. No file under src/driver or src/core includes a Lua header.
# 2. A file includes only headers of its own layer or the layers below it
#    (a header named in quotes must exist there), or system headers.
# 3. With nm: no library references a symbol defined in a library above it,
#    and gpulua_driver and gpulua_core reference no Lua symbol.
# Then it proves it can fail: the same checks on planted violations (a core
# header including lauxlib.h, a driver file including a core header, a
# driver object calling a core function) must each be reported.
#   tests/layering_check.sh SRC_DIR DRIVER.a CORE.a LUA.a
set -uo pipefail
src=$1
libs=("$2" "$3" "$4")
names=(gpulua_driver gpulua_core gpulua_lua)
layers=(driver core lua host)
failures=0
passed=0

# check_includes ROOT: prints one line per violation
check_includes() {
  local root=$1 bad=0 f h i j found
  for i in 0 1 2 3; do
    for f in "$root/${layers[$i]}"/*.[ch]; do
      [ -e "$f" ] || continue
      if [ "$i" -le 1 ] && grep -Eq '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](lua|lauxlib|lualib|luaconf)\.h[>"]' "$f"; then
        echo "layering: $f includes a Lua header (src/${layers[$i]} knows nothing of Lua)"
        bad=1
      fi
      while read -r h; do
        found=0
        for ((j = i; j >= 0; j--)); do [ -e "$root/${layers[$j]}/$h" ] && found=1; done
        [ "$h" = builtins_source.h ] && found=1 # generated into the core's build
        if [ "$found" -eq 0 ]; then
          echo "layering: $f includes \"$h\", which is not in src/${layers[$i]} or a layer below it"
          bad=1
        fi
      done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
    done
  done
  return $bad
}

# check_symbols LIB... (lowest first): prints one line per violation
check_symbols() {
  local -a l=("$@")
  local bad=0 i j s
  for ((i = 0; i < ${#l[@]}; i++)); do
    for ((j = i + 1; j < ${#l[@]}; j++)); do
      while read -r s; do
        echo "layering: $(basename "${l[$i]}") references $s, defined in the higher $(basename "${l[$j]}")"
        bad=1
      done < <(comm -12 <(nm -u "${l[$i]}" | awk '{print $NF}' | sort -u) \
                        <(nm --defined-only "${l[$j]}" | awk 'NF == 3 && $2 ~ /[TDBRC]/ {print $3}' | sort -u))
    done
    if [ "$i" -lt 2 ]; then
      while read -r s; do
        echo "layering: $(basename "${l[$i]}") references the Lua symbol $s"
        bad=1
      done < <(nm -u "${l[$i]}" | awk '{print $NF}' | grep -E '^luaL?_' | sort -u)
    fi
  done
  return $bad
}

expect() { # name, expected status (0 clean, 1 a violation), command...
  local name=$1 want=$2
  shift 2
  local out
  out=$("$@" 2>&1)
  local got=$?
  if [ "$got" -eq "$want" ]; then
    passed=$((passed + 1))
  else
    failures=$((failures + 1))
    echo "FAILED: $name (status $got, wanted $want)"
  fi
  [ -n "$out" ] && echo "$out" | head -n 20
}

expect "includes of the tree" 0 check_includes "$src"
expect "symbols of the libraries" 0 check_symbols "${libs[@]}"

# the checks can fail: planted violations in a copy of the tree and in
# libraries made for the purpose
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$src" "$tmp/src"
echo '#include <lauxlib.h>' >"$tmp/src/core/planted.h"
expect "a core header that includes lauxlib.h is reported" 1 check_includes "$tmp/src"
rm "$tmp/src/core/planted.h"
echo '#include "runtime.h"' >"$tmp/src/driver/planted.c"
expect "a driver file that includes a core header is reported" 1 check_includes "$tmp/src"
rm "$tmp/src/driver/planted.c"
cc=${CC:-cc}
echo 'int gl_intern(void *rt, const char *t); int planted(void) { return gl_intern(0, "x"); }' >"$tmp/up.c"
echo 'int lua_gettop(void *L); int planted_lua(void) { return lua_gettop(0); }' >"$tmp/lua.c"
"$cc" -c "$tmp/up.c" -o "$tmp/up.o" && "$cc" -c "$tmp/lua.c" -o "$tmp/lua.o" &&
  ar rcs "$tmp/driver_up.a" "$tmp/up.o" && ar rcs "$tmp/driver_lua.a" "$tmp/lua.o"
expect "a driver library calling into the core is reported" 1 check_symbols "$tmp/driver_up.a" "${libs[1]}" "${libs[2]}"
expect "a driver library calling Lua is reported" 1 check_symbols "$tmp/driver_lua.a" "${libs[1]}" "${libs[2]}"

echo "$passed passed, $failures failed"
[ "$failures" -eq 0 ]
