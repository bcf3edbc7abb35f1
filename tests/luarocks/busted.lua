-- Busted's command-line runner, as the busted script of a busted rock (and
-- Debian's /usr/bin/busted) is: started by run.lua on the Lua that
-- `luarocks test` runs, with the LuaRocks trees on the paths.
require("busted.runner")({standalone = false})
