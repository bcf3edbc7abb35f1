#!/usr/bin/env bash
# ctest: `cmake --install` into a temporary prefix; the installed host finds
# the project's Lua modules next to itself (not in the source tree), and the
# installed gpulua.so loads into the system lua5.4.
#   tests/install_check.sh BUILD_DIR
set -euo pipefail
build=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
cd /
GPULUA_BACKEND=sim "$prefix/bin/gpulua" -e "
  local p = require 'gpulua.pipeline'
  assert(type(p.run) == 'function', 'gpulua.pipeline loaded')
  local where = package.searchpath('gpulua.pipeline', package.path)
  assert(where:find('$prefix', 1, true) == 1, 'found in the install prefix, not ' .. where)
  local asserts = package.searchpath('gpulua.assert', package.path)
  assert(asserts and asserts:find('$prefix', 1, true) == 1, 'gpulua.assert installed, not ' .. tostring(asserts))
  print('installed host: ' .. gpu.backend() .. ' ' .. gpu.count() .. ', modules from ' .. where)"
if command -v lua5.4 >/dev/null; then
  GPULUA_BACKEND=sim LUA_CPATH_5_4="$prefix/lib/lua/5.4/?.so" LUA_PATH_5_4="$prefix/share/lua/5.4/?.lua;;" lua5.4 -e "
    local gpu = require 'gpulua'
    assert(gpu.backend() == 'sim')
    assert(require('gpulua.pipeline').run)
    print('installed module in lua5.4: ' .. gpu.version)"
fi
echo "1 passed, 0 failed"
