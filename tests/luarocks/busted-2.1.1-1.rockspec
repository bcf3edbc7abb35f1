-- Offline CI only: Debian's lua-busted is not a rock, and `luarocks test`
-- insists on a busted rock in the tree (it would download one). This rock
-- registers the system's busted (Debian's lua-busted, 2.1.1) in a tree with a
-- launcher that runs it on lua5.4 with that tree's modules, as LuaRocks' own
-- wrapper would. tests/luarocks_check.sh installs it (from the
-- repository root) before `luarocks test`.
rockspec_format = "3.0"
package = "busted"
version = "2.1.1-1"
source = {url = "git+file://."}
description = {summary = "the system's busted (Debian lua-busted), registered in a LuaRocks tree"}
build = {
  type = "none",
  install = {bin = {busted = "tests/luarocks/busted-launcher.sh"}},
}
