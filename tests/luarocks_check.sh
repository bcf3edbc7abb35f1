#!/usr/bin/env bash
# ctest: the rockspec works. A copy of the source is built and installed by
# `luarocks make` into a fresh tree (its own LuaRocks configuration, so no
# other tree is seen or written); from that tree the system lua5.4 requires
# gpulua and gpulua.pipeline, the installed host runs a script, and
# `luarocks test` runs a spec with busted (Debian's busted registered in the
# tree by tests/luarocks/busted-2.1.1-1.rockspec: there is no network here).
#   tests/luarocks_check.sh SOURCE_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
command -v luarocks >/dev/null || { echo "luarocks is missing (apt-get install luarocks)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tree=$work/tree
mkdir -p "$work/src"
tar -C "$src" --exclude='./build*' --exclude=./.git --exclude=./.carry --exclude=./.device -cf - . | tar -C "$work/src" -xf -
printf 'rocks_trees = { [[%s]] }\n' "$tree" >"$work/config.lua"
export LUAROCKS_CONFIG=$work/config.lua
lr() { luarocks --lua-version=5.4 --tree "$tree" "$@"; }
cd "$work/src"
rockspec=$(ls gpulua-*.rockspec)
lr make "$rockspec" >"$work/make.log" 2>&1 || { cat "$work/make.log"; exit 1; }
lr list --porcelain | grep -q '^gpulua	' || { echo "gpulua is not listed in the tree" >&2; exit 1; }
cd /
# the module, from the tree, on the system lua5.4
eval "$(lr path)"
GPULUA_BACKEND=sim lua5.4 -e "
  local gpu = require 'gpulua'
  local so = package.searchpath('gpulua', package.cpath)
  assert(so and so:find('$tree', 1, true) == 1, 'gpulua.so from the tree, not ' .. tostring(so))
  local p = require 'gpulua.pipeline'
  assert(package.searchpath('gpulua.pipeline', package.path):find('$tree', 1, true) == 1)
  assert(type(p.run) == 'function')
  local x = gpu.device(0):zeros('f32', 4)
  assert(x:read()[4] == 0)
  print('luarocks tree: lua5.4 required gpulua ' .. gpu.version .. ' from ' .. so)"
# the host, from the tree's bin/
GPULUA_BACKEND=sim "$tree/bin/gpulua" -e "
  assert(package.searchpath('gpulua.pipeline', package.path):find('$tree', 1, true) == 1)
  print('luarocks tree: ' .. arg[0] .. ' runs, ' .. gpu.backend())"
# luarocks test: busted on a spec, with the tree's gpulua.so
cd "$work/src"
lr make tests/luarocks/busted-2.1.1-1.rockspec >"$work/busted.log" 2>&1 || { cat "$work/busted.log"; exit 1; }
GPULUA_BACKEND=sim lr test "$rockspec" examples/saxpy_spec.lua >"$work/test.log" 2>&1 || { cat "$work/test.log"; exit 1; }
grep -E '^[0-9]+ success' "$work/test.log"
grep -qE '^[1-9][0-9]* successes / 0 failures / 0 errors' "$work/test.log" || { cat "$work/test.log"; exit 1; }
echo "1 passed, 0 failed"
