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
# (require's second result is the file the module was loaded from; the
# modules are found without package.path, which stays Lua's)
GPULUA_BACKEND=sim "$prefix/bin/gpulua" -e "
  local path = package.path
  local p, where = require 'gpulua.pipeline'
  assert(type(p.run) == 'function', 'gpulua.pipeline loaded')
  assert(where:find('$prefix', 1, true) == 1, 'found in the install prefix, not ' .. where)
  assert(package.path == path, 'package.path unchanged')
  assert(io.open('$prefix/share/lua/5.4/gpulua/assert.lua'), 'gpulua.assert installed')
  print('installed host: ' .. gpu.backend() .. ' ' .. gpu.count() .. ', modules from ' .. where)"
# LUA_PATH is package.path, as in lua5.4, and the modules are still found
GPULUA_BACKEND=sim LUA_PATH_5_4=x "$prefix/bin/gpulua" -e "
  assert(package.path == 'x', package.path)
  local _, where = require 'gpulua.pipeline'
  assert(where:find('$prefix', 1, true) == 1, 'found in the install prefix, not ' .. where)"
if command -v lua5.4 >/dev/null; then
  GPULUA_BACKEND=sim LUA_CPATH_5_4="$prefix/lib/lua/5.4/?.so" lua5.4 -e "
    local path = package.path
    local gpu = require 'gpulua'
    assert(gpu.backend() == 'sim')
    assert(package.path == path, 'require \"gpulua\" leaves package.path alone')
    local p, where = require 'gpulua.pipeline'
    assert(p.run and where:find('$prefix', 1, true) == 1, 'found in the install prefix, not ' .. where)
    print('installed module in lua5.4: ' .. gpu.version)"
fi
echo "1 passed, 0 failed"
