-- ctest lua.testes.main: Lua 5.4.4's own test of its stand-alone interpreter
-- (main.lua, beside this file, unmodified: see COPYRIGHT) run against the
-- gpulua host. Run by the host under test:
--   gpulua tests/lua-testes/main_check.lua
-- main.lua starts the interpreter named by arg[-1] (here: this gpulua) for
-- each of its checks. Three of them test what gpulua does differently on
-- purpose, and are changed here, each where it is expected exactly once:
--   - `-v` prints "gpulua 0.1.0 (Lua 5.4.4)", not Lua's "... PUC-Rio" banner;
--   - `-h` shows gpulua's help and succeeds; in lua5.4 it is an unknown option;
--   - `-i < file`: GNU readline (lua.c's build for Linux) echoes each line
--     it reads after its prompt; gpulua uses line editing (libedit) only on a
--     terminal and reads a file with plain fgets, as lua.c without readline,
--     so the output holds the prompts alone. (main.lua's other REPL checks
--     look for the results only, and hold either way.)
-- Everything else must hold as for lua5.4.
local here = arg[0]:match("^(.*)/[^/]*$") or "."
local f = assert(io.open(here .. "/main.lua", "rb"))
local text = f:read("a")
f:close()

local function change(old, new)
  local at = text:find(old, 1, true)
  assert(at and not text:find(old, at + 1, true), "main.lua: expected once: " .. old)
  text = text:sub(1, at - 1) .. new .. text:sub(at + #old)
end
-- the version line ends with Lua's release, then -e runs
change([[assert(string.find(t, "PUC%-Rio\nhello"))]],
       [[assert(string.find(t, "^gpulua [%d.]+ %(Lua 5%.4%.%d+%)\nhello\n$"))]])
-- -h is gpulua's help (on stdout, exit 0)
change([[NoRun("unrecognized option '-h'", "lua -h")]],
       [[RUN("lua -h > /dev/null")]])
-- Not a difference, a race in main.lua's harness: its Ctrl-C checks start
-- `PROG -e "..." & echo $!` and take the pipe's first line for the pid, but
-- the interpreter's own first line ("12") can get there before the shell's
-- echo on a loaded machine; the wrong pid is then signalled and the test
-- waits forever for a loop nothing stops. Here a background shell prints its
-- own pid and then becomes the interpreter (exec), so the pid always comes
-- first; the shell popen started still exits at once, as before.
change([[local shellprg = string.format('%s -e "%s" & echo $!', progname, luaprg)]],
       [[local shellprg = string.format([=[sh -c 'echo $$; exec "$0" -e "$1"' %s "%s" &]=], progname, luaprg)]])
-- the REPL on a file does not echo the lines it reads: only the prompts
change([==[assert(string.find(t, [[
1 --
2a = 2
3
]], 1, true))]==], [==[assert(string.find(t, "\n123\n$"))]==])

assert(os.getenv("GPULUA_BACKEND") == "sim",
       "run with GPULUA_BACKEND=sim: main.lua compares stderr exactly, where the fallback notice would be")
-- (its first line is a '#' comment, which load, unlike loadfile, does not skip)
local chunk = assert(load(text:gsub("^#", "--", 1), "@" .. here .. "/main.lua"))
chunk()
