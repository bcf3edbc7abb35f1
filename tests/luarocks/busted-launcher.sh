#!/bin/sh
# The system's busted on lua5.4, with the modules of the LuaRocks tree this
# launcher is installed in (<tree>/bin/busted) first on the paths.
tree=$(cd "$(dirname "$0")/.." && pwd)
export LUA_PATH_5_4="$tree/share/lua/5.4/?.lua;$tree/share/lua/5.4/?/init.lua;;"
export LUA_CPATH_5_4="$tree/lib/lua/5.4/?.so;;"
exec lua5.4 /usr/bin/busted "$@"
