-- `luarocks test`: the rockspec's test section runs this file with the Lua
-- interpreter LuaRocks is set up for, from the root of the checkout, with
-- the arguments given after `luarocks test` (busted's: spec files, --tags...).
-- It runs Busted as a busted rock's own launcher would, with the LuaRocks
-- trees first on Lua's paths (in the environment, so that the processes the
-- specs start load the same gpulua.so): the gpulua that `luarocks make`
-- installed is tested, by the system's busted (Debian's lua-busted, which is
-- not a rock), and nothing is downloaded. Exits with busted's status.
local function fail(msg)
  io.stderr:write("luarocks test: ", msg, "\n")
  os.exit(1)
end

if _VERSION ~= "Lua 5.4" then
  fail(("LuaRocks runs the specs on %s, and gpulua is a Lua 5.4 module: run "
    .. "`luarocks --lua-version=5.4 test`, or make 5.4 LuaRocks' default once with "
    .. "`luarocks config --scope user lua_version 5.4`"):format(_VERSION))
end

-- LuaRocks' configuration for this Lua, as luarocks.loader reads it
local has_cfg, cfg = pcall(require, "luarocks.core.cfg")
if not has_cfg then fail("LuaRocks' modules do not load on Lua 5.4: " .. tostring(cfg)) end
local ok, err = cfg.init()
if not ok then fail("LuaRocks' configuration: " .. tostring(err)) end
local tree_path, tree_cpath = cfg.package_paths()

local function prepend(paths, var)
  local old = os.getenv(var .. "_5_4") or os.getenv(var)
  return paths .. ";" .. (old or ";")
end
local lpath, lcpath = prepend(tree_path, "LUA_PATH"), prepend(tree_cpath, "LUA_CPATH")

-- what the specs will load: the trees first, then Lua's own paths
local so = package.searchpath("gpulua", tree_cpath .. ";" .. package.cpath)
if not so then
  fail("gpulua is not installed in a LuaRocks tree for Lua 5.4 (the trees of "
    .. "`luarocks --lua-version=5.4 config rocks_trees`): run `luarocks make` first")
end
if not package.searchpath("busted.runner", tree_path .. ";" .. package.path) then
  fail("busted is missing for Lua 5.4 (apt-get install lua-busted)")
end
print("luarocks test: gpulua from " .. so)

local function quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end
local lua = arg[-1]
for i = -2, -math.huge, -1 do
  if arg[i] == nil then break end
  lua = arg[i]
end
local here = arg[0]:match("^(.*)/[^/]*$") or "."
local cmd = {
  "LUA_PATH_5_4=" .. quote(lpath), "LUA_CPATH_5_4=" .. quote(lcpath),
  quote(lua), quote(here .. "/busted.lua"),
}
for i = 1, #arg do cmd[#cmd + 1] = quote(arg[i]) end
local _, how, status = os.execute(table.concat(cmd, " "))
os.exit(how == "exit" and status or 128 + status)
