#!/usr/bin/env bash
# ctest: README.md's LuaRocks commands work as written, offline, with
# Debian's busted (lua-busted, not a rock). A copy of the checkout, a fresh
# HOME, and a system configuration of LuaRocks of its own (LUAROCKS_SYSCONFDIR:
# Debian's trees, the home tree and a system tree, with the system tree in a
# temporary folder), so no other configuration or tree is seen or written.
# In it, as the README says:
#   luarocks config --scope user lua_version 5.4
#   luarocks make
#   luarocks test
#   luarocks test examples/saxpy_spec.lua
# and before them, `luarocks test` says what is missing: Lua 5.4 as
# LuaRocks' Lua, then gpulua in a tree. Then the system lua5.4 requires
# gpulua and gpulua.pipeline from the tree, and the tree's host runs.
#   tests/luarocks_check.sh SOURCE_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
command -v luarocks >/dev/null || { echo "luarocks is missing (apt-get install luarocks)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
system=$work/system
mkdir -p "$work/src" "$work/home" "$work/etc"
tar -C "$src" --exclude='./build*' --exclude=./.git --exclude=./.carry --exclude=./.device -cf - . | tar -C "$work/src" -xf -
for v in 5.1 5.2 5.3 5.4; do
  printf 'rocks_trees = { home..[[/.luarocks]], [[%s]] }\n' "$system" >"$work/etc/config-$v.lua"
done
export HOME=$work/home LUAROCKS_SYSCONFDIR=$work/etc
unset LUAROCKS_CONFIG LUAROCKS_CONFIG_5_4 XDG_CONFIG_HOME LUA_PATH LUA_CPATH LUA_PATH_5_4 LUA_CPATH_5_4 \
  GPULUA_BACKEND GPULUA_SIM_DEVICES GPULUA_CACHE_DIR GPULUA_POLICY
cd "$work/src"

# expect_fail LOG PATTERN COMMAND...: the command fails, and its output matches
expect_fail() {
  local log=$1 pattern=$2
  shift 2
  if "$@" >"$work/$log" 2>&1; then
    echo "'$*' succeeded, but should have failed:" >&2; cat "$work/$log" >&2; exit 1
  fi
  grep -qE "$pattern" "$work/$log" || {
    echo "'$*' failed without saying '$pattern':" >&2; cat "$work/$log" >&2; exit 1; }
  grep -E "$pattern" "$work/$log"
}

# Debian's LuaRocks runs on Lua 5.1 and defaults to it
expect_fail test-5.1.log 'luarocks --lua-version=5.4 test.*luarocks config --scope user lua_version 5.4' luarocks test
luarocks config --scope user lua_version 5.4 >"$work/config.log" 2>&1 || { cat "$work/config.log"; exit 1; }
# shellcheck disable=SC2016 # the backquotes are the message's
expect_fail test-none.log 'gpulua is not installed .*run `luarocks make` first' luarocks test

luarocks make >"$work/make.log" 2>&1 || { cat "$work/make.log"; exit 1; }
luarocks list --porcelain | grep -q '^gpulua	' || { echo "gpulua is not listed in the tree" >&2; exit 1; }
[ -f "$system/lib/lua/5.4/gpulua.so" ] || { echo "luarocks make did not install into the system tree $system" >&2; exit 1; }

# luarocks test: the whole suite, then one file, on the installed gpulua.so
for args in "" examples/saxpy_spec.lua; do
  # shellcheck disable=SC2086 # args: none, or one file
  luarocks test $args >"$work/test.log" 2>&1 || { cat "$work/test.log"; exit 1; }
  grep -qxF "luarocks test: gpulua from $system/lib/lua/5.4/gpulua.so" "$work/test.log" || {
    echo "luarocks test $args did not run the installed gpulua.so:" >&2; cat "$work/test.log" >&2; exit 1; }
  grep -qE '^[1-9][0-9]* successes / 0 failures / 0 errors' "$work/test.log" || { cat "$work/test.log"; exit 1; }
  echo "luarocks test${args:+ $args}: $(grep -E '^[0-9]+ success' "$work/test.log")"
done

cd /
# the module, from the tree, on the system lua5.4
eval "$(luarocks path)"
GPULUA_BACKEND=sim lua5.4 -e "
  local gpu = require 'gpulua'
  local so = package.searchpath('gpulua', package.cpath)
  assert(so and so:find('$system', 1, true) == 1, 'gpulua.so from the tree, not ' .. tostring(so))
  local p = require 'gpulua.pipeline'
  assert(package.searchpath('gpulua.pipeline', package.path):find('$system', 1, true) == 1)
  assert(type(p.run) == 'function')
  local x = gpu.device(0):zeros('f32', 4)
  assert(x:read()[4] == 0)
  print('luarocks tree: lua5.4 required gpulua ' .. gpu.version .. ' from ' .. so)"
# the host, from the tree's bin/
GPULUA_BACKEND=sim "$system/bin/gpulua" -e "
  assert(package.searchpath('gpulua.pipeline', package.path):find('$system', 1, true) == 1)
  print('luarocks tree: ' .. arg[0] .. ' runs, ' .. gpu.backend())"
echo "1 passed, 0 failed"
