#!/usr/bin/env bash
# The layers depend only downwards (docs/ARCHITECTURE.md):
#   src/driver  <-  src/core  <-  src/lua  <-  src/host
# 1. No file under src/driver or src/core includes a Lua header.
# 2. A file includes only headers of its own layer or the layers below it
#    (a header named in quotes must exist there), or system headers.
#    A layer's files include those of its subfolders (src/driver/sim).
# 3. With nm: no library references a symbol defined in a library above it,
#    and gpulua_driver and gpulua_core reference no Lua symbol.
# 4. Nothing above the driver knows which backend runs: src/core, src/lua
#    and src/host name no gl_is_sim, no gld_sim_* (nor gl_sim_*) and compare
#    no gld_backend_name, include no header of src/driver/sim, and (nm)
#    gpulua_core and gpulua_lua reference no symbol the sim's objects
#    (sim_*.o) define but the backend's loaders, gld_driver_sim_*. What only
#    the sim does is reached through gld_drv_ext (driver_ext.h).
# 5. Each layer's prefix (docs/ARCHITECTURE.md): every global symbol
#    gpulua_driver defines begins gld_ (or sim_, the sim's own), gpulua_core's
#    gl_, gpulua_lua's gll_; the C interface (gpulua_*, luaopen_gpulua) is
#    the exception.
# Then it proves it can fail: the same checks on planted violations (a core
# header including lauxlib.h, a driver file including a core header, a
# driver object calling a core function, a backend test or a sim call in
# core or the bindings, a core header including a sim header, a core object
# calling the sim, a core library defining a gll_ name) must each be reported.
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
    while read -r f; do
      if [ "$i" -le 1 ] && grep -Eq '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](lua|lauxlib|lualib|luaconf)\.h[>"]' "$f"; then
        echo "layering: $f includes a Lua header (src/${layers[$i]} knows nothing of Lua)"
        bad=1
      fi
      while read -r h; do
        found=0
        for ((j = i; j >= 0; j--)); do [ -e "$root/${layers[$j]}/$h" ] && found=1; done
        [ -e "$(dirname "$f")/$h" ] && found=1 # beside the file
        [ "$h" = builtins_source.h ] && found=1 # generated into the core's build
        if [ "$i" -ge 1 ] && { [ -e "$root/driver/sim/$h" ] || [[ "$h" == sim/* ]]; }; then
          echo "layering: $f includes \"$h\", a header of the sim backend (above the driver, use driver_ext.h)"
          bad=1
        fi
        if [ "$found" -eq 0 ]; then
          echo "layering: $f includes \"$h\", which is not in src/${layers[$i]} or a layer below it"
          bad=1
        fi
      done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
    done < <(find "$root/${layers[$i]}" -name '*.[ch]' | sort)
  done
  return $bad
}

# check_backend ROOT: prints one line per backend test or sim call above the driver
check_backend() {
  local root=$1 bad=0 hit
  local sim='(^|[^A-Za-z0-9_])(gl_is_sim|gld?_sim_[A-Za-z0-9_]+)'
  local name='(strn?case)?cmp[[:space:]]*\([^)]*gld_backend_name|gld_backend_name[[:space:]]*(==|!=|\[)'
  while read -r hit; do
    echo "layering: $hit: a backend test or a sim call above the driver (use gld_drv_ext, driver_ext.h)"
    bad=1
  done < <(grep -rnE "$sim|$name" "$root/core" "$root/lua" "$root/host" --include='*.[ch]' | cut -c1-200)
  return $bad
}

# check_backend_symbols DRIVER.a CORE.a LUA.a: the core and the bindings
# reference nothing the sim's objects define, but its loaders
check_backend_symbols() {
  local bad=0 lib s
  local sims
  sims=$(nm -A --defined-only "$1" 2>/dev/null | awk -F: '$2 ~ /^sim_/ {print $NF}' |
    awk 'NF == 3 && $2 ~ /[TDBRC]/ {print $3}' | grep -v '^gld_driver_sim_' | sort -u)
  for lib in "$2" "$3"; do
    while read -r s; do
      echo "layering: $(basename "$lib") references $s, which the sim backend defines (use gld_drv_ext)"
      bad=1
    done < <(comm -12 <(nm -u "$lib" | awk '{print $NF}' | sort -u) <(echo "$sims"))
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

# check_prefixes DRIVER.a CORE.a LUA.a: every global symbol a library
# defines carries its layer's prefix
check_prefixes() {
  local -a want=('^(gld_|sim_)' '^(gl_|gpulua_)' '^(gll_|gpulua_|luaopen_gpulua$)')
  local -a lib=("$@")
  local bad=0 i s
  for i in 0 1 2; do
    while read -r s; do
      echo "layering: $(basename "${lib[$i]}") defines $s, without its layer's prefix (${want[$i]})"
      bad=1
    done < <(nm --defined-only "${lib[$i]}" | awk 'NF == 3 && $2 ~ /[TDBRC]/ {print $3}' |
      grep -v '^__' | grep -vE "${want[$i]}" | sort -u) # __: the compiler's (__odr_asan.*)
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
expect "no backend test above the driver" 0 check_backend "$src"
expect "no sim symbol above the driver" 0 check_backend_symbols "${libs[@]}"
expect "each layer's prefix" 0 check_prefixes "${libs[@]}"

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
echo '#include "sim/sim.h"' >"$tmp/src/core/planted.h"
expect "a core header that includes a sim header is reported" 1 check_includes "$tmp/src"
rm "$tmp/src/core/planted.h"
printf 'static int f(void) {\n  if (gl_is_sim) return 1;\n  return 0;\n}\n' >"$tmp/src/core/planted.c"
expect "a core file that tests gl_is_sim is reported" 1 check_backend "$tmp/src"
printf 'static int f(void) { return strcmp(gld_backend_name, "sim") == 0; }\n' >"$tmp/src/core/planted.c"
expect "a core file that compares the backend's name is reported" 1 check_backend "$tmp/src"
rm "$tmp/src/core/planted.c"
printf 'static void f(void) { int q = gld_sim_quiet(1); (void)q; }\n' >"$tmp/src/lua/planted.c"
expect "a binding that calls the sim is reported" 1 check_backend "$tmp/src"
rm "$tmp/src/lua/planted.c"
cc=${CC:-cc}
echo 'int gl_intern(void *rt, const char *t); int planted(void) { return gl_intern(0, "x"); }' >"$tmp/up.c"
echo 'int lua_gettop(void *L); int planted_lua(void) { return lua_gettop(0); }' >"$tmp/lua.c"
"$cc" -c "$tmp/up.c" -o "$tmp/up.o" && "$cc" -c "$tmp/lua.c" -o "$tmp/lua.o" &&
  ar rcs "$tmp/driver_up.a" "$tmp/up.o" && ar rcs "$tmp/driver_lua.a" "$tmp/lua.o"
expect "a driver library calling into the core is reported" 1 check_symbols "$tmp/driver_up.a" "${libs[1]}" "${libs[2]}"
expect "a driver library calling Lua is reported" 1 check_symbols "$tmp/driver_lua.a" "${libs[1]}" "${libs[2]}"
echo 'int gld_sim_quiet(int on); int planted_sim(void) { return gld_sim_quiet(1); }' >"$tmp/sim.c"
"$cc" -c "$tmp/sim.c" -o "$tmp/sim.o" && ar rcs "$tmp/core_sim.a" "$tmp/sim.o"
expect "a core library calling the sim is reported" 1 check_backend_symbols "${libs[0]}" "$tmp/core_sim.a" "${libs[2]}"
echo 'int gll_planted(void) { return 0; }' >"$tmp/prefix.c"
"$cc" -c "$tmp/prefix.c" -o "$tmp/prefix.o" && ar rcs "$tmp/core_prefix.a" "$tmp/prefix.o"
expect "a core library defining a binding's name is reported" 1 check_prefixes "${libs[0]}" "$tmp/core_prefix.a" "${libs[2]}"

echo "$passed passed, $failures failed"
[ "$failures" -eq 0 ]
