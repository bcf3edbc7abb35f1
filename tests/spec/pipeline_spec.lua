-- Specs for lua/gpulua/pipeline.lua and the trace (gpu.trace, --trace).
local gpu = require "gpulua"
local pipeline = require "gpulua.pipeline"
local H = require "helpers"

describe("pipelines", function()
  local dev = gpu.device(0)
  local N = 256

  it("runs batch b on streams[(b - 1) % #streams + 1] and joins every stream into dev.main", function()
    local streams = {dev:stream{name = "p_a"}, dev:stream{name = "p_b"}, dev:stream{name = "p_c"}}
    local out = dev:zeros("i32", 10, {stream = dev.main})
    dev.main:sync()
    local seen = {}
    local stats = pipeline.run{device = dev, streams = streams, batches = 10,
      stage = function(b, s)
        seen[b] = s
        s:fill(out:view(b - 1, 1), b * 10)
      end}
    for b = 1, 10 do assert.are.equal(streams[(b - 1) % 3 + 1], seen[b]) end
    -- joined into main: main may read what the streams wrote, under strict
    local r = out:read()
    for b = 1, 10 do assert.are.equal(b * 10, r[b]) end
    assert.are.equal(10, stats.batches)
    assert.are.same({4, 3, 3}, {stats.streams[1].batches, stats.streams[2].batches, stats.streams[3].batches})
    assert.are.equal("p_b", stats.streams[2].name)
    assert.is_true(stats.gpu_ms >= 0 and stats.wall_ms >= 0 and stats.streams[1].ms >= 0)
    for _, s in ipairs(streams) do s:close() end
  end)

  it("creates and closes its own streams from a count, with per-stream buffers", function()
    local h = gpu.host("f32", N * 8)
    for i = 1, #h do h[i] = i end
    local o = gpu.host("f32", N * 8)
    local made = {}
    pipeline.run{device = 0, streams = 4, batches = 8,
      setup = pipeline.buffers{a = {"f32", N}, b = {"f32", N}},
      stage = function(b, s, buf)
        made[s] = buf
        s:copy(buf.a, h:view((b - 1) * N, N))
        s:launch(gpu.kernels.scale, {grid = 2, block = 128}, 3.0, buf.a, buf.b, N)
        s:copy(o:view((b - 1) * N, N), buf.b)
      end}
    dev:sync()
    for i = 1, #o, 97 do assert.are.equal(3 * i, o[i]) end
    local n = 0
    for s, buf in pairs(made) do
      n = n + 1
      H.fails("closed", function() return s:query() end)
      assert.are.equal(N, #buf.a)
    end
    assert.are.equal(4, n)
  end)

  it("rejects bad options, naming them", function()
    H.fails("pipeline%.run: option 'stage' expected a function, got nil", pipeline.run, {batches = 1})
    H.fails("option 'batches' expected a non%-negative integer, got number %-1$", pipeline.run,
      {batches = -1, stage = function() end})
    H.fails("option 'streams' expected a positive integer or a list of streams, got number 0$", pipeline.run,
      {batches = 1, streams = 0, stage = function() end})
    H.fails("option 'streams' is an empty list", pipeline.run, {batches = 1, streams = {}, stage = function() end})
    H.fails("expected a table of options", pipeline.run, 5)
    H.fails("give 'device' or 'devices', not both", pipeline.run,
      {device = 0, devices = {0}, batches = 1, stage = function() end})
    H.fails("pipeline%.buffers: buffer 'a' expected {dtype, count", pipeline.buffers, {a = {"f32"}})
    H.fails("pipeline%.run: unknown option 'batchs' %(the options are: device, devices, streams, batches, setup, " ..
            "stage, progress, chunk, host_buffers, load, store%)", pipeline.run, {batchs = 1, stage = print})
    H.fails("pipeline%.run: option 'progress' expected a boolean, got number 1$", pipeline.run,
      {batches = 1, stage = print, progress = 1})
    H.fails("pipeline%.run: option 'progress' expected a boolean, got string$", pipeline.run,
      {batches = 1, stage = print, progress = "yes"})
  end)

  it("takes dev.main among its streams", function()
    local s2 = dev:stream{name = "p_with_main"}
    local out = dev:zeros("i32", 4)
    dev.main:sync()
    local stats = pipeline.run{device = dev, streams = {dev.main, s2}, batches = 4,
      stage = function(b, s) s:fill(out:view(b - 1, 1), b) end}
    assert.are.same({2, 2}, {stats.streams[1].batches, stats.streams[2].batches})
    assert.are.same({1, 2, 3, 4}, out:read():totable())
    s2:close()
  end)

  it("names the caller's line in its option errors, not a line of pipeline.lua", function()
    local bad = {{batches = 1}, {batches = -1, stage = print}, {device = "gpu", batches = 1, stage = print},
                 {device = dev.main, batches = 1, stage = print}, {streams = {5}, batches = 1, stage = print}}
    local line = H.here() + 2
    for _, opts in ipairs(bad) do
      local ok, err = pcall(function() local r = pipeline.run(opts); return r end)
      assert.is_false(ok)
      assert.matches("^[^:]*pipeline_spec%.lua:" .. line .. ": pipeline%.run: ", err)
    end
  end)

  it("names the caller's line when a gpulua call it makes for the script fails", function()
    local run_line = H.here() + 1
    local ok, err = pcall(function() local r = pipeline.run{device = 99, batches = 1, stage = print}; return r end)
    assert.is_false(ok)
    assert.matches("^[^:]*pipeline_spec%.lua:" .. run_line .. ": pipeline%.run: gpu%.device: ordinal 99 is out of "
      .. "range", err)
    local setup = pipeline.buffers{a = {"f32", -1}}
    local buf_line = H.here() + 1
    ok, err = pcall(function() local r = pipeline.run{batches = 1, stage = print, setup = setup}; return r end)
    assert.is_false(ok)
    assert.matches("^[^:]*pipeline_spec%.lua:" .. buf_line .. ": pipeline%.run: bad argument #2 to 'alloc' "
      .. "%(element count must be positive, got %-1%)", err)
  end)

  H.it_devices(2, "spreads batches over devices, then over each device's streams", function()
    local where = {}
    local stats = pipeline.run{devices = {0, 1}, streams = 2, batches = 8,
      stage = function(b, s) where[b] = s.device.ordinal end}
    assert.are.same({0, 1, 0, 1, 0, 1, 0, 1}, where)
    assert.are.equal(4, #stats.streams)
    assert.are.equal(2, stats.streams[1].batches)
    assert.are.equal(1, stats.streams[2].device)
  end)
end)

describe("pipeline.run{progress = true}", function()
  local dev = gpu.device(0)
  local internal = require "gpulua.internal"
  H.checker_hooks()

  -- Run fn with stderr taken for a terminal and its writes collected;
  -- returns whether fn succeeded, its error, and what was written.
  local function on_a_terminal(fn)
    local isatty, stderr = internal.isatty, io.stderr
    local written = {}
    internal.isatty = function(fd) return fd == 2 or isatty(fd) end
    rawset(io, "stderr", {write = function(self, ...)
      for i = 1, select("#", ...) do written[#written + 1] = select(i, ...) end
      return self
    end})
    local ok, err = pcall(fn)
    internal.isatty = isatty
    rawset(io, "stderr", stderr)
    return ok, err, table.concat(written)
  end

  it("draws a line of batches queued and finished, redrawn in place, ended at the end", function()
    local out = dev:zeros("i32", 12)
    dev.main:sync()
    local ok, err, text = on_a_terminal(function()
      local stats = pipeline.run{device = dev, streams = 3, batches = 12, progress = true,
        stage = function(b, s)
          H.busy(dev, s, 1)
          s:fill(out:view(b - 1, 1), b)
        end}
      assert.are.equal(12, stats.batches)
    end)
    assert(ok, err)
    assert.matches("^\rpipeline%.run: 1/12 batches queued, [01] finished, [%d.]+ s, [%d.]+ batches/s\27%[K", text)
    assert.matches("\rpipeline%.run: 12/12 batches queued, 12 finished, [%d.]+ s, [%d.]+ batches/s\27%[K\n$", text)
    local _, lines = text:gsub("\n", "")
    assert.are.equal(1, lines)
    assert.are.same({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, out:read():totable())
  end)

  it("counts finished batches without telling the checker, and ends its line when a stage raises", function()
    local x = dev:zeros("f32", 4)
    local streams = {dev:stream{name = "one"}, dev:stream{name = "two"}, dev:stream{name = "three"}}
    for _, s in ipairs(streams) do s:join(dev.main) end
    local line
    local ok, err, text = on_a_terminal(function()
      pipeline.run{device = dev, streams = streams, batches = 3, progress = true,
        stage = function(b, s)
          if b == 1 then
            s:fill(x, 1) -- on stream one
          elseif b == 2 then
            -- past the redraw interval, with stream one's work finished (nothing tells the
            -- checker so): the line redrawn after this batch counts batch 1 finished (2 too, if its
            -- record has run)
            local t0, e = gpu.clock(), streams[1]:record{}
            while gpu.clock() - t0 < 0.15 or not internal.peek(e) do end
          else
            line = H.here() + 1
            s:copy(gpu.host("f32", 4), x) -- stream three is not ordered after stream one's fill
          end
        end}
    end)
    assert.is_false(ok)
    assert.matches("stream 'three'.*pipeline_spec%.lua:" .. line .. ".*stream 'one' %(device 0%) may still be "
      .. "writing", tostring(err))
    assert.matches("\rpipeline%.run: 2/3 batches queued, [12] finished, [^\r\n]*\27%[K\n$", text)
    for _, s in ipairs(streams) do s:close() end
  end)

  it("draws nothing when stderr is not a terminal", function()
    local out, status = H.run_child([[
      local gpu = require "gpulua" -- first: on lua5.4, loading it puts gpulua's modules on the path
      local pipeline = require "gpulua.pipeline"
      local dev = gpu.device(0)
      pipeline.run{device = dev, streams = 2, batches = 20, progress = true,
        stage = function(_, s) s:fill(dev:zeros("u8", 1 << 20, {stream = s}), 1) end}
      print("ran 20 batches")
    ]])
    assert.are.equal(0, status, out)
    assert.are.equal("ran 20 batches\nexit status 0\n", out)
  end)

  it("is refused by pipeline.graph, where nothing runs", function()
    local base = {device = dev, streams = 2, batches = 2, stage = function() end}
    base.progress = true
    H.fails("pipeline%.graph: option 'progress' is pipeline%.run's: nothing runs while a graph is captured",
      pipeline.graph, base)
    base.progress = false
    pipeline.graph(base):close()
    base.progress = 0
    H.fails("pipeline%.graph: option 'progress' expected a boolean, got number 0", pipeline.graph, base)
  end)
end)

describe("pipeline.graph", function()
  local dev = gpu.device(0)
  local N = 256
  local CFG = {grid = 1, block = 256}

  local function opts(h, o, extra)
    local t = {device = dev, streams = 4, batches = 8,
      setup = pipeline.buffers{a = {"f32", N}, b = {"f32", N}},
      stage = function(b, s, buf)
        s:copy(buf.a, h:view((b - 1) * N, N))
        s:launch(gpu.kernels.scale, CFG, 2.0, buf.a, buf.b, N)
        s:copy(o:view((b - 1) * N, N), buf.b)
      end}
    for k, v in pairs(extra or {}) do t[k] = v end
    return t
  end

  it("captures the whole pipeline as one graph of parallel branches, replayed like pipeline.run's work", function()
    local h, o = H.iota("f32", N * 8), gpu.host("f32", N * 8)
    local where = {}
    local o2 = opts(h, o, {name = "whole"})
    local inner = o2.stage
    o2.stage = function(b, s, buf)
      where[b] = s.name
      inner(b, s, buf)
    end
    local g = pipeline.graph(o2)
    assert.are.equal("whole", g.name)
    assert.are.equal(24, g.nodes) -- 8 batches of 3 operations
    assert.are.same({"pipeline1", "pipeline2", "pipeline3", "pipeline4", "pipeline1", "pipeline2", "pipeline3",
      "pipeline4"}, where)
    dev.main:sync()
    for _ = 1, 3 do g:launch(dev.main) end
    dev.main:sync()
    for i = 1, N * 8 do assert.are.equal(2 * i, o[i]) end
    g:close()
  end)

  it("rejects what cannot be one graph, and a stage's refused call comes out of it", function()
    local h, o = H.iota("f32", N * 8), gpu.host("f32", N * 8)
    H.fails("pipeline.graph: option 'streams' expected a positive integer %(the branches are forked inside the "
      .. "capture%), got table$", function() return pipeline.graph(opts(h, o, {streams = {dev.main}})) end)
    H.fails("pipeline.graph: option 'streams' expected a positive integer %(the branches are forked inside the "
      .. "capture%), got table$", function() return pipeline.graph(opts(h, o, {streams = {}})) end)
    H.fails("pipeline.graph: unknown option 'nmae'", function() return pipeline.graph(opts(h, o, {nmae = "x"})) end)
    local two = opts(h, o, {devices = {0, 0}})
    two.device = nil
    H.fails("pipeline.graph: a graph's work is on one device", function() return pipeline.graph(two) end)
    H.fails("pipeline.run: unknown option 'name'", function() return pipeline.run(opts(h, o, {name = "x"})) end)
    local bad = opts(h, o)
    bad.stage = function(_, s) s:sync() end
    H.fails("s:sync at [^:]*pipeline_spec.lua:%d+: not allowed during the capture of graph 'pipeline'", function()
      return pipeline.graph(bad)
    end)
    -- after that the device works as before
    local g = pipeline.graph(opts(h, o))
    dev.main:sync()
    g:launch(dev.main)
    dev.main:sync()
    for i = 1, N * 8 do assert.are.equal(2 * i, o[i]) end
    g:close()
  end)
end)

describe("pipeline.graph's errors", function()
  local dev = gpu.device(0)

  it("name the caller's line, not a line of pipeline.lua", function()
    local stage = function() end
    local cases = {
      {{device = 99, batches = 1, stage = stage}, "gpu%.device: ordinal 99 is out of range"},
      {{device = 0, batches = 1, stage = stage, setup = pipeline.buffers{a = {"f32", 0}}},
       "bad argument #2 to 'alloc' %(element count must be positive, got 0%)"},
      {{device = {}, batches = 1, stage = stage}, "expected a device or a device ordinal, got table$"},
      {{streams = {}, batches = 1, stage = stage}, "option 'streams' expected a positive integer %(the branches "
        .. "are forked inside the capture%), got table$"},
    }
    local line = H.here() + 2
    for _, case in ipairs(cases) do
      local ok, err = pcall(function() local g = pipeline.graph(case[1]); return g end)
      assert.is_false(ok)
      assert.matches("^[^:]*pipeline_spec%.lua:" .. line .. ": pipeline%.graph: " .. case[2], err)
    end
  end)

  it("name the caller's line for a capture refused where it is made", function()
    local line
    local ok, err = pcall(function()
      dev.main:capture(function()
        line = H.here() + 1
        local g = pipeline.graph{device = dev, batches = 1, stage = function() end}
        return g
      end)
    end)
    assert.is_false(ok)
    assert.matches("[^:]*pipeline_spec%.lua:" .. line .. ": pipeline%.graph: ", err)
    assert.does_not.match("pipeline%.lua", err)
  end)
end)

describe("the trace", function()
  it("writes Chrome trace JSON with a track per stream and an event per copy, fill and launch", function()
    local json = require "dkjson"
    local path = os.tmpname()
    local was = gpu.trace(path)
    assert.are.equal(path, was)
    local dev = gpu.device(0)
    local a, b = dev:stream{name = "tr_a"}, dev:stream{name = "tr_b"}
    local x = dev:zeros("f32", 1024, {stream = a})
    a:fill(x, 2)
    b:join(a)
    local y = dev:alloc("f32", 1024, {stream = b})
    b:copy(y, x)
    b:launch(gpu.kernels.scale, {grid = 2, block = 128}, 2.0, y, y, 1024)
    assert.are.equal(path, gpu.trace(false)) -- written, and tracing stops
    local f = assert(io.open(path))
    local doc = json.decode(f:read("a"))
    f:close()
    os.remove(path)
    local names, tracks, kinds = {}, {}, {}
    local flows = 0
    for _, e in ipairs(doc.traceEvents) do
      if e.ph == "M" and e.name == "thread_name" then names[e.tid] = e.args.name end
      if e.ph == "X" then
        tracks[e.tid] = true
        kinds[e.name] = e
        assert.is_true(e.dur >= 0)
      end
      if e.ph == "s" then flows = flows + 1 end
    end
    local got = {}
    for tid in pairs(tracks) do got[#got + 1] = names[tid]:gsub(" #%d+$", "") end
    table.sort(got)
    assert.are.same({"tr_a", "tr_b"}, got)
    assert.is_not_nil(kinds["fill"])
    assert.is_not_nil(kinds["dev:zeros"], "the zero fill of dev:zeros is traced")
    assert.are.equal(4096, kinds["copy d2d"].args.bytes)
    assert.are.equal("scale_f32", kinds["scale_f32"].args.kernel)
    assert.is_true(flows >= 1, "the join shows as a flow")
    a:close()
    b:close()
  end)

  it("shows each graph replay as one event of its own kind, and nothing of the capture", function()
    local json = require "dkjson"
    local path = os.tmpname()
    gpu.trace(path)
    local dev = gpu.device(0)
    local a = dev:stream{name = "tr_g"}
    local x = dev:zeros("f32", 1024, {stream = a})
    local g = a:capture(function(cs)
      cs:fill(x, 1)
      cs:launch(gpu.kernels.scale, {grid = 2, block = 128}, 2.0, x, x, 1024)
    end, {name = "traced"})
    g:launch(a)
    g:launch(a)
    gpu.trace(false)
    local f = assert(io.open(path))
    local doc = json.decode(f:read("a"))
    f:close()
    os.remove(path)
    local replays, others = 0, 0
    for _, e in ipairs(doc.traceEvents) do
      if e.ph == "X" and e.cat == "graph" then
        replays = replays + 1
        assert.are.equal("traced", e.name)
        assert.are.equal(2, e.args.nodes)
        assert.are.equal("tr_g", e.args.stream)
      elseif e.ph == "X" and e.args.stream == "tr_g" and e.name ~= "dev:zeros" and e.name ~= "reduction scratch" then
        others = others + 1
      end
    end
    assert.are.equal(2, replays)
    assert.are.equal(0, others, "the captured fill and launch are not traced themselves")
    g:close()
    a:close()
  end)

  it("says what is wrong", function()
    H.fails("gpu%.trace: no trace file", gpu.trace)
    H.fails("gpu%.trace: cannot write /nonexistent/dir/trace%.json: No such file or directory", gpu.trace,
            "/nonexistent/dir/trace.json")
  end)

  it("refuses a file name that is not a string, and starts no trace", function()
    gpu.trace(false) -- nothing records
    local usage = "gpu.trace: expected a file name (a string), nothing (write now) or false (write and stop), got "
    for _, case in ipairs{{123, "number 123"}, {true, "boolean"}, {{}, "table"}} do
      local line = H.here() + 1
      local err = H.fails(H.lit(usage .. case[2]) .. "$", function() gpu.trace(case[1]) end)
      assert.matches("^[^:]*pipeline_spec%.lua:" .. line .. ": ", err)
      local started = gpu.trace(false) -- the file a trace was started to, written now
      if started then os.remove(started) end
      assert.is_nil(started, "gpu.trace(" .. tostring(case[1]) .. ") started a trace")
    end
    H.fails(H.lit('gpu.trace: expected a file name, got ""') .. "$", gpu.trace, "")
    H.fails(H.lit("gpu.trace: expected a file name, got a string of 1024 bytes or more") .. "$", gpu.trace,
            ("a"):rep(1024))
  end)

  -- the events of a decoded trace file, and the names of its tracks by tid
  local function read_trace(path)
    local json = require "dkjson"
    local f = assert(io.open(path))
    local doc = assert(json.decode(f:read("a")), "not JSON: " .. path)
    f:close()
    os.remove(path)
    local names = {}
    for _, e in ipairs(doc.traceEvents) do
      if e.ph == "M" and e.name == "thread_name" then names[e.tid] = e.args.name end
    end
    return doc.traceEvents, names
  end

  it("names each flow by what ordered the streams, and tells apart streams of one name", function()
    local path = os.tmpname()
    gpu.trace(path)
    local dev = gpu.device(0)
    local a, b = dev:stream{name = "same"}, dev:stream{name = "same"}
    local x = dev:zeros("f32", 256, {stream = a})
    a:fill(x, 1)
    b:join(a)
    b:fill(x, 2)
    a:wait(b:record())
    a:fill(x, 3)
    local c = a:fork{name = "forked"}
    c:fill(x, 4)
    a:join(c)
    a:fill(x, 5)
    gpu.policy("auto")
    b:fill(x, 6) -- auto makes b wait for a
    gpu.policy("strict")
    b:close() -- main waits for b
    dev.main:fill(x, 7)
    gpu.trace(false)
    local events, names = read_trace(path)
    local flows, tracks = {}, {}
    for _, e in ipairs(events) do
      if e.ph == "s" then flows[e.name] = true end
      if e.ph == "X" then tracks[names[e.tid]] = true end
    end
    for _, kind in ipairs{"join", "wait", "fork", "auto wait", "close"} do
      assert.is_true(flows[kind], "no flow named '" .. kind .. "'")
    end
    local same = {}
    for name in pairs(tracks) do
      if name:match("^same #%d+$") then same[#same + 1] = name end
    end
    assert.are.equal(2, #same, "two streams named 'same' get two tracks")
    a:close()
    c:close()
  end)

  it("a second gpu.trace(file) writes the running trace first, then traces into the new file", function()
    local first, second = os.tmpname(), os.tmpname()
    gpu.trace(first)
    local dev = gpu.device(0)
    local x = dev:zeros("f32", 64)
    dev.main:fill(x, 1)
    gpu.trace(second)
    dev.main:fill(x, 2)
    dev.main:launch(gpu.kernels.scale, {grid = 1, block = 64}, 2.0, x, x, 64)
    gpu.trace(false)
    local count = function(events, name)
      local n = 0
      for _, e in ipairs(events) do if e.ph == "X" and e.name == name then n = n + 1 end end
      return n
    end
    local e1, e2 = read_trace(first), read_trace(second)
    assert.are.same({1, 1, 0}, {count(e1, "dev:zeros"), count(e1, "fill"), count(e1, "scale_f32")})
    assert.are.same({0, 1, 1}, {count(e2, "dev:zeros"), count(e2, "fill"), count(e2, "scale_f32")})
  end)

  H.it_devices(2, "times each rank of a collective on its own stream, after the work queued before it", function()
    local path = os.tmpname()
    gpu.trace(path)
    local d0, d1 = gpu.device(0), gpu.device(1)
    local comm = gpu.comm{devices = {0, 1}}
    local s0, s1 = d0:stream{name = "rank0"}, d1:stream{name = "rank1"}
    local x0, x1 = d0:zeros("f32", 4096, {stream = s0}), d1:zeros("f32", 4096, {stream = s1})
    comm:all_reduce({x0, x1}, {streams = {s0, s1}})
    gpu.trace(false)
    local events, names = read_trace(path)
    local zeros, coll = {}, {}
    for _, e in ipairs(events) do
      local track = e.ph == "X" and names[e.tid]:match("^(rank%d) #%d+$")
      if track and e.name == "dev:zeros" then zeros[track] = e end
      if track and e.name == "comm:all_reduce" then coll[track] = e end
    end
    for _, track in ipairs{"rank0", "rank1"} do
      local z, c = assert(zeros[track], track), assert(coll[track], "no collective on " .. track)
      -- its begin event was recorded on its own stream, after the zero fill
      assert.is_true(c.ts >= z.ts + z.dur - 1, ("%s: collective at %.1f us, before its stream's fill ended at %.1f us")
        :format(track, c.ts, z.ts + z.dur))
    end
    comm:close()
    s0:close()
    s1:close()
  end)

  it("a trace file that cannot be written is an error when tracing starts, not at exit", function()
    if type(arg) ~= "table" then return pending("needs the interpreter's arg table to start a child process") end
    local out, status = H.run_child("require 'gpulua'; print('ran')", {GPULUA_TRACE = "/nonexistent/dir/t.json"})
    assert.are_not.equal(0, status, out)
    assert.is_nil(out:find("ran", 1, true), "the script ran:\n" .. out)
    assert.matches("cannot write /nonexistent/dir/t%.json: No such file or directory", out)
  end)
end)
