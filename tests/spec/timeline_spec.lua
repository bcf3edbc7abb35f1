-- Specs for gpu.timeline() (the text timeline of the work so far, on
-- stdout), gpu.timeline{file = ...} and --timeline / GPULUA_TIMELINE with an
-- SVG file. What prints runs in a child process, whose output is read back.
local gpu = require "gpulua"
local H = require "helpers"

-- run `script` in a child (skipped without the interpreter's arg table)
local function child(script, env)
  if type(arg) ~= "table" then return nil end
  return H.run_child(script, env)
end

local function read(path)
  local f = assert(io.open(path))
  local s = f:read("a")
  f:close()
  return s
end

describe("gpu.timeline", function()
  it("starts recording when nothing records, saying so, then prints a row per stream used", function()
    local out, status = child([[
      local gpu = require "gpulua"
      local dev = gpu.device(0)
      dev:zeros("f32", 16) -- before recording: not shown
      gpu.sync()
      gpu.timeline()
      local a, b = dev:stream{name = "tl_copies"}, dev:stream{name = "tl_fills"}
      local x = dev:zeros("f32", 4096, {stream = b})
      b:fill(x, 1)
      a:join(b)
      local h = gpu.host("f32", 4096)
      a:copy(h, x)
      gpu.sync()
      print("--")
      gpu.timeline()
    ]])
    if not out then return pending("needs the interpreter's arg table to start a child process") end
    assert.are.equal(0, status, out)
    local before, after = out:match("^(.-)\n%-%-\n(.*)$")
    assert.is_not_nil(before, out)
    assert.matches("gpulua timeline: nothing was being recorded; recording starts now", before)
    assert.is_nil(before:find("|", 1, true), "the first call prints no rows:\n" .. before)
    assert.matches("gpulua timeline: [%d.]+ ms, one column", after)
    assert.matches("dev0 tl_fills #%d+ +|[^|]*F[^|]*| 2 ops\n", after)
    assert.matches("dev0 tl_copies #%d+ +|[^|]*D[^|]*| 1 op\n", after)
    assert.is_nil(after:find("main #", 1, true), "the work before recording started is not shown:\n" .. after)
    assert.is_nil(after:find("pending", 1, true), after)
  end)

  it("waits for nothing: work still queued is counted as pending", function()
    local out, status = child([[
      local gpu = require "gpulua"
      gpu.timeline()
      local dev = gpu.device(0)
      local s = dev:stream{name = "tl_slow"}
      -- each fill takes 300 ms on sim (GPULUA_SIM_DELAY_US); on a GPU, one of
      -- 4 GiB takes over a millisecond, far longer than the host's next calls
      local x = dev:zeros("f32", gpu.backend() == "cuda" and (1 << 30) or 64, {stream = s})
      gpu.sync()
      for i = 1, 3 do s:fill(x, i) end
      gpu.timeline()
      print("--", s:query())
      gpu.sync()
      gpu.timeline()
    ]], {GPULUA_SIM_DELAY_US = 300000})
    if not out then return pending("needs the interpreter's arg table to start a child process") end
    assert.are.equal(0, status, out)
    local first, second = out:match("^(.-)\n%-%-\tfalse\n(.*)$")
    assert.is_not_nil(first, "gpu.timeline() waited for the queued work:\n" .. out)
    assert.matches("tl_slow #%d+ +|[^|]*| 1 op, 3 pending\n", first)
    assert.matches("3 operations still queued %(not finished%) are not shown yet", first)
    assert.matches("tl_slow #%d+ +|[^|]*F[^|]*| 4 ops\n", second)
  end)

  it("writes the SVG of the work so far to a file, names escaped, and returns the file", function()
    local svg = os.tmpname()
    local out, status = child(([[
      local gpu = require "gpulua"
      gpu.timeline()
      local dev = gpu.device(0)
      local s = dev:stream{name = 'a<b>&"c"'}
      local x = dev:zeros("f32", 1024, {stream = s})
      s:launch(gpu.kernels.scale, {grid = 4, block = 256}, 2.0, x, x, 1024)
      gpu.sync()
      print("wrote " .. gpu.timeline{file = %q})
    ]]):format(svg))
    if not out then return pending("needs the interpreter's arg table to start a child process") end
    assert.are.equal(0, status, out)
    assert.matches("wrote " .. H.lit(svg), out)
    assert.is_nil(out:find("|", 1, true), "the file form prints no text timeline:\n" .. out)
    local text = read(svg)
    os.remove(svg)
    assert.matches('^<%?xml version="1%.0" encoding="UTF%-8"%?>\n<svg xmlns="http://www%.w3%.org/2000/svg"', text)
    assert.matches("</svg>\n$", text)
    assert.matches(H.lit('a&lt;b&gt;&amp;&quot;c&quot; #'), text)
    assert.is_nil(text:find('a<b>', 1, true), "a name is escaped")
    assert.matches('<rect class="op k3"', text) -- the zero fill
    assert.matches('<rect class="op k4"[^>]*><title>kernel launch: scale_f32', text)
    assert.matches("gpulua timeline: [%d.]+ [mu]?s from the first operation", text)
  end)

  it("is stopped, like any recording, by gpu.trace(false)", function()
    local out = child([[
      local gpu = require "gpulua"
      gpu.timeline()
      gpu.trace(false)
      gpu.timeline()
    ]])
    if not out then return pending("needs the interpreter's arg table to start a child process") end
    local _, starts = out:gsub("recording starts now", "")
    assert.are.equal(2, starts, out)
  end)

  it("keeps the latest operations only, when it records for itself alone", function()
    local out, status = child([[
      local gpu = require "gpulua"
      gpu.timeline()
      local dev = gpu.device(0)
      local x = dev:zeros("f32", 1)
      for i = 1, 310000 do dev.main:fill(x, i) end -- past 300000: dropped while queued, then when shown
      gpu.sync()
      gpu.timeline()
    ]])
    if not out then return pending("needs the interpreter's arg table to start a child process") end
    assert.are.equal(0, status, out)
    local kept = tonumber(out:match("main #%d+ +|[^|]*| (%d+) ops\n"))
    assert.are.equal(200000, kept, out) -- exactly the latest 200000 of the 310001 (a zero fill, then the fills)
    assert.matches(H.lit("(the 110001 oldest operations are no longer kept, the latest 200000 are: recording for "
      .. "gpu.timeline() alone keeps the latest 200000, and any not finished yet)"), out)
  end)

  it("says what is wrong", function()
    H.fails("bad argument #1 to '[%w.]*timeline' %(expected nothing or an options table " ..
            "{file = \"x.svg\"}, got number 5%)", gpu.timeline, 5)
    H.fails("got string", gpu.timeline, "x.svg")
    H.fails("gpu%.timeline: unknown option 'svg' %(the options are: file%)", gpu.timeline, {svg = "x.svg"})
    H.fails("gpu%.timeline: option 'file' expected a file name %(a string%), got number 1", gpu.timeline, {file = 1})
    H.fails("gpu%.timeline: '' is not a usable file name", gpu.timeline, {file = ""})
    H.fails("gpu%.timeline: cannot write /nonexistent/dir/t%.svg: No such file or directory", gpu.timeline,
            {file = "/nonexistent/dir/t.svg"})
    local s = gpu.device(0):stream{name = "tl_capture"}
    H.fails("gpu%.timeline.*capture", s.capture, s, function() gpu.timeline() end)
    s:close()
  end)
end)

describe("--timeline=FILE.svg and GPULUA_TIMELINE", function()
  it("write the SVG timeline at exit, the text timeline (1) on stderr, or nothing (0)", function()
    local svg = os.tmpname()
    local script = [[
      local gpu = require "gpulua"
      local dev = gpu.device(0)
      local s = dev:stream{name = "tl_env"}
      dev:zeros("f32", 64, {stream = s})
      print("ran")
    ]]
    local out, status = child(script, {GPULUA_TIMELINE = svg})
    if not out then return pending("needs the interpreter's arg table to start a child process") end
    assert.are.equal(0, status, out)
    assert.is_nil(out:find("|", 1, true), out)
    local text = read(svg)
    os.remove(svg)
    assert.matches("<text class=\"stream\"[^>]*><title>stream 'tl_env' #%d+ on device 0</title>" ..
                   "tl_env #%d+</text>", text)
    out = child(script, {GPULUA_TIMELINE = "1"})
    assert.matches("dev0 tl_env #%d+ +|F+| 1 op\n", out)
    out = child(script, {GPULUA_TIMELINE = "0"})
    assert.is_nil(out:find("gpulua timeline", 1, true), out)
  end)

  it("with a file that cannot be written is an error when the run starts, naming the file and the reason", function()
    local out, status = child("require 'gpulua'; print('ran')", {GPULUA_TIMELINE = "/nonexistent/dir/t.svg"})
    if not out then return pending("needs the interpreter's arg table to start a child process") end
    assert.are_not.equal(0, status, out)
    assert.is_nil(out:find("ran", 1, true), "the script ran:\n" .. out)
    assert.matches("%-%-timeline %(or GPULUA_TIMELINE%): cannot write /nonexistent/dir/t%.svg: " ..
                   "No such file or directory", out)
  end)
end)
