-- The sim's timing model (GPULUA_SIM_MODEL, --sim-model): device times come
-- from a discrete-event model of the figures in a model file, so a layout's
-- times are predicted, exactly and the same on every run. Each case runs in a
-- child process with its own model (the model is chosen when the backend is).
-- The model is the sim's: on cuda these are pending.
local gpu = require "gpulua"
local H = require "helpers"

-- a model with round figures, so each expected time is easy to derive:
-- 1 MB moves in 20 us each way, 25 us both ways at once (80 GB/s shared),
-- 4 us in memory-bound kernels, 2 us within the device
local MODEL = {
  name = "round test GPU", h2d_gbps = 50, d2h_gbps = 50, bidir_gbps = 80, d2d_gbps = 500,
  mem_gbps = 250, launch_us = 4, copy_latency_us = 2, copy_engines = 2, host_us = 0, switch_us = 0,
}

local function json(m)
  local parts = {}
  for k, v in pairs(m) do
    parts[#parts + 1] = ("%q: %s"):format(k, type(v) == "string" and ("%q"):format(v) or tostring(v))
  end
  return "{" .. table.concat(parts, ", ") .. "}"
end

local function with(over)
  local m = {}
  for k, v in pairs(MODEL) do m[k] = v end
  for k, v in pairs(over or {}) do m[k] = v end
  return m
end

local function model_file(m)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(type(m) == "string" and m or json(m))
  f:close()
  return path
end

-- run script under model m (a table or the file's text); returns output, status
local function run(m, script, env)
  local path = model_file(m)
  env = env or {}
  env.GPULUA_SIM_MODEL = path
  local out, status = H.run_child([[
local gpu = require "gpulua"
local dev = gpu.device(0)
local function us(a, b) return ("%.3f"):format(a:elapsed(b) * 1e3) end
]] .. script, env)
  os.remove(path)
  return out, status
end

-- the microseconds the child printed after `label`
local function got(out, label)
  local v = out:match(H.lit(label) .. "%s+([%-%d%.]+)")
  assert.is_not_nil(v, "no '" .. label .. "' in the child's output:\n" .. out)
  return tonumber(v)
end

local function near(want, have, what)
  assert.is_true(math.abs(have - want) <= 1e-3 * math.max(1, math.abs(want)),
    ("%s: expected %.3f us, got %.3f us"):format(what, want, have))
end

describe("the sim timing model", function()
  if gpu.backend() ~= "sim" then
    pending("the timing model is the sim backend's (on cuda the GPU's own times are reported)")
    return
  end
  if not H.interpreter() then
    pending("needs the interpreter's arg table to start a child process")
    return
  end

  it("names the model in use with gpu.sim_model()", function()
    local out, status = run(MODEL, "print('model', gpu.sim_model())")
    assert.are.equal(0, status, out)
    assert.matches("model\tround test GPU\n", out)
    if not os.getenv("GPULUA_SIM_MODEL") then assert.is_nil(gpu.sim_model()) end -- this process has none
  end)

  it("times a copy as its latency plus its bytes at the direction's rate", function()
    local out, status = run(MODEL, [[
      local h = gpu.host("u8", 1000000)
      local x = dev:alloc("u8", 1000000)
      local s = dev.main
      local a = s:record{timing = true}
      s:copy(x, h)
      local b = s:record{timing = true}
      s:copy(h, x)
      local c = s:record{timing = true}
      print("h2d", us(a, b))
      print("d2h", us(b, c))
    ]])
    assert.are.equal(0, status, out)
    near(22, got(out, "h2d"), "1 MB host to device")
    near(22, got(out, "d2h"), "1 MB device to host")
  end)

  it("shares a direction's rate between its copies, and the link between the directions", function()
    local script = [[
      local h1, h2 = gpu.host("u8", 1000000), gpu.host("u8", 1000000)
      local x1, x2 = dev:alloc("u8", 1000000), dev:alloc("u8", 1000000)
      gpu.sync()
      local s, t = dev:stream{name = "s"}, dev:stream{name = "t"}
      local a = s:record{timing = true}
      t:wait(a)
      s:copy(x1, h1)
      if os.getenv("BOTH") then t:copy(h2, x2) else t:copy(x2, h2) end
      s:join(t)
      print("span", us(a, s:record{timing = true}))
    ]]
    -- two copies host to device at once: with 4 engines (2 each way) they
    -- share 50 GB/s (40 us for 2 MB); with 2 engines (1 each way) the second
    -- waits for the first
    local out, status = run(with{copy_engines = 4}, script)
    assert.are.equal(0, status, out)
    near(42, got(out, "span"), "two copies sharing a direction")
    out = run(with{copy_engines = 2}, script)
    near(44, got(out, "span"), "two copies one after the other on one engine")
    -- one each way: 80 GB/s shared, 40 each: 25 us
    out = run(MODEL, script, {BOTH = "1"})
    near(27, got(out, "span"), "a copy each way, sharing bidir_gbps")
    out = run(with{bidir_gbps = 100}, script, {BOTH = "1"})
    near(22, got(out, "span"), "a copy each way, the link not shared")
  end)

  it("costs a built-in its bytes moved and a kernel what k:cost says", function()
    local out, status = run(MODEL, [[
      local n = 250000 -- scale: 2 MB read and written at 250 GB/s: 8 us
      local x, y = dev:zeros("f32", n), dev:zeros("f32", n)
      local s = dev.main
      local k = gpu.load("tests/data/twice.ptx"):kernel("twice", "const f32*, f32*, u64")
      k:host(function() end)
      local a = s:record{timing = true}
      s:launch(gpu.kernels.scale, {grid = 1, block = 256}, 2, x, y, n)
      local b = s:record{timing = true}
      s:launch(k, {grid = 1, block = 256}, x, y, n) -- no cost: the launch alone
      local c = s:record{timing = true}
      k:cost(30)
      s:launch(k, {grid = 1, block = 256}, x, y, n)
      local d = s:record{timing = true}
      k:cost(function(cfg, xs, ys, count) return count / 1000 + cfg.block / 256 end)
      s:launch(k, {grid = 1, block = 256}, x, y, n)
      local e = s:record{timing = true}
      s:fill(y, 0) -- 1 MB written: 4 us
      local f = s:record{timing = true}
      s:launch(gpu.kernels.sum, {block = 256}, x, y, n) -- the stream's reduction scratch made first
      local g = s:record{timing = true}
      s:launch(gpu.kernels.dot, {block = 256}, x, x, y, n) -- 2 MB read: 8 us
      local h = s:record{timing = true}
      local z = dev:zeros("f16", n)
      local i = s:record{timing = true}
      s:launch(gpu.kernels.max, {grid = 4, block = 256}, z, z, n) -- 0.5 MB read: 2 us
      local j = s:record{timing = true}
      print("scale", us(a, b))
      print("dot", us(g, h))
      print("max", us(i, j))
      print("plain", us(b, c))
      print("fixed", us(c, d))
      print("function", us(d, e))
      print("fill", us(e, f))
    ]])
    assert.are.equal(0, status, out)
    near(12, got(out, "scale"), "scale")
    near(4, got(out, "plain"), "a kernel without a cost")
    near(34, got(out, "fixed"), "k:cost(30)")
    near(255, got(out, "function"), "k:cost(function)")
    near(8, got(out, "fill"), "a fill")
    near(12, got(out, "dot"), "dot: two passes over n")
    near(6, got(out, "max"), "max of f16: one pass over n of 2 bytes")
  end)

  it("shares the memory rate between kernels running at once", function()
    local out, status = run(MODEL, [[
      local n = 250000
      local x, y1, y2 = dev:zeros("f32", n), dev:zeros("f32", n), dev:zeros("f32", n)
      gpu.sync()
      local s, t = dev:stream{name = "s"}, dev:stream{name = "t"}
      local a = s:record{timing = true}
      t:wait(a)
      s:launch(gpu.kernels.scale, {grid = 1, block = 256}, 2, x, y1, n)
      t:launch(gpu.kernels.scale, {grid = 1, block = 256}, 2, x, y2, n)
      s:join(t)
      print("span", us(a, s:record{timing = true}))
    ]])
    assert.are.equal(0, status, out)
    near(20, got(out, "span"), "two 8 us kernels at once: 4 us launch, then 16 us sharing")
  end)

  it("starts work after the events it waits for, and pays switch_us between engines", function()
    local script = [[
      local h = gpu.host("u8", 1000000)
      local x = dev:alloc("u8", 1000000)
      local y = dev:zeros("f32", 1000)
      gpu.sync()
      local s, t = dev:stream{name = "s"}, dev:stream{name = "t"}
      local a = s:record{timing = true}
      t:wait(a)
      s:copy(x, h)             -- 22 us
      t:wait(s:record())
      t:fill(y, 1)             -- 4 us launch, 4000 bytes: 0.016 us
      print("after", us(a, t:record{timing = true}))
    ]]
    local out, status = run(MODEL, script)
    assert.are.equal(0, status, out)
    near(26.016, got(out, "after"), "a fill after the copy it waits for")
    out = run(with{switch_us = 5}, script)
    near(31.016, got(out, "after"), "... after a switch from the copy engine")
  end)

  it("advances the host's clock by host_us per queued operation, and by its syncs", function()
    local out, status = run(with{host_us = 10}, [[
      local y = dev:zeros("f32", 16)
      gpu.sync()
      local s = dev.main
      local a = s:record{timing = true}
      for i = 1, 20 do s:fill(y, i) end -- 4 us each, queued 10 us apart: the GPU waits
      local b = s:record{timing = true}
      print("queued", us(a, b))
      s:sync()
      local c = s:record{timing = true}
      s:fill(y, 0)
      local d = s:record{timing = true}
      print("after sync", us(c, d))
    ]])
    assert.are.equal(0, status, out)
    -- a record costs the host nothing (host_us is per operation of work): the
    -- fills are queued at 0, 10, ..., 190 us, and the second record at 200
    near(200, got(out, "queued"), "20 fills that the host queues every 10 us")
    -- after the sync the host's clock is at the sync's end: the fill is
    -- queued with the first record and ends 4 us later; the second record is
    -- queued 10 us after the fill: 10 us
    near(10, got(out, "after sync"), "a fill queued after a sync")
  end)

  it("gives the same times on every run, whatever the sim's own speed, a trace or a look at a stream", function()
    local script = [[
      local pipeline = require "gpulua.pipeline"
      local n = 1 << 14
      local h = gpu.host("f32", n * 8)
      local stats = pipeline.run{device = dev, streams = 3, batches = 8,
        setup = function(s) return {a = dev:alloc("f32", n, {stream = s})} end,
        stage = function(b, s, buf)
          if os.getenv("LOOK") then tostring(s) end -- a look at the stream, for display: moves no clock
          s:copy(buf.a, h:view((b - 1) * n, n))
          s:launch(gpu.kernels.scale, {grid = 4, block = 256}, 2, buf.a, buf.a, n)
          s:copy(h:view((b - 1) * n, n), buf.a)
        end}
      print("gpu_ms", ("%.6f"):format(stats.gpu_ms))
      for i, st in ipairs(stats.streams) do print("stream" .. i, ("%.6f"):format(st.ms)) end
    ]]
    local m = with{host_us = 3, switch_us = 2}
    local first = run(m, script)
    assert.matches("gpu_ms", first)
    -- the sim's workers slowed down, a trace recording every operation with
    -- its own events, the streams looked at while the work runs: the same times
    assert.are.equal(first, run(m, script, {GPULUA_SIM_DELAY_US = 2000}))
    local traced = run(m, script, {GPULUA_TRACE = os.tmpname()})
    assert.are.equal(first, traced)
    assert.are.equal(first, run(m, script, {LOOK = "1", GPULUA_SIM_DELAY_US = 500}))
  end)

  it("reports model times while host syncs still wait for the real work", function()
    local out, status = run(MODEL, [[
      local y = dev:zeros("f32", 16)
      gpu.sync()
      local t0 = gpu.clock()
      local a = dev.main:record{timing = true}
      dev.main:fill(y, 1)
      local b = dev.main:record{timing = true}
      dev.main:sync()
      print("host_ms", (gpu.clock() - t0) * 1e3)
      print("model", us(a, b))
    ]], {GPULUA_SIM_DELAY_US = 100000})
    assert.are.equal(0, status, out)
    near(4, got(out, "model"), "the fill's model time")
    assert.is_true(got(out, "host_ms") >= 100, "the sync waited for the worker's delay:\n" .. out)
  end)

  it("puts model times in the trace", function()
    local trace = os.tmpname()
    local out, status = run(MODEL, [[
      local h = gpu.host("u8", 1000000)
      local x = dev:alloc("u8", 1000000)
      gpu.trace(os.getenv("TRACE"))
      dev.main:copy(x, h)
      dev.main:copy(x, h)
      gpu.trace(false)
    ]], {TRACE = trace})
    assert.are.equal(0, status, out)
    local f = assert(io.open(trace))
    local text = f:read("a")
    f:close()
    os.remove(trace)
    local durs = {}
    for d in text:gmatch('"name":"copy h2d"[^}]-"dur":([%d%.]+)') do durs[#durs + 1] = tonumber(d) end
    if #durs == 0 then
      for d in text:gmatch('"dur":([%d%.]+)[^}]-"name":"copy h2d"') do durs[#durs + 1] = tonumber(d) end
    end
    assert.are.equal(2, #durs, text)
    near(22, durs[1], "the first copy's duration in the trace")
    near(22, durs[2], "the second copy's duration in the trace")
  end)

  it("rejects a model file that is missing, malformed, incomplete or out of range, naming the field", function()
    local function fails(m, pattern)
      local out, status = run(m, "print('ran')")
      assert.are_not.equal(0, status, out)
      assert.is_nil(out:find("\nran\n"), out)
      assert.matches(pattern, out)
    end
    local incomplete = with()
    incomplete.mem_gbps = nil
    fails(incomplete, "GPULUA_SIM_MODEL: [^\n]*: field 'mem_gbps' is missing %(GB/s%)")
    fails(with{launch_us = -1}, "field 'launch_us' is %-1, out of its range %(from 0 to")
    fails(with{h2d_gbps = 0}, "field 'h2d_gbps' is 0, out of its range %(more than 0")
    fails(with{copy_engines = 1.5}, "field 'copy_engines' must be an integer")
    fails(with{h2d_gbps = "fast"}, "field 'h2d_gbps' must be a number %(GB/s%)")
    fails(with{h2d_gpbs = 3}, "unknown field 'h2d_gpbs' %(the fields are: name, h2d_gbps")
    fails(with{bidir_gbps = 20}, "field 'bidir_gbps' %(20%) is less than a single direction's rate")
    fails('{"name": "x", ', ":1: not a model file %(JSON%)")
    fails("[1, 2]", "a model file holds one JSON object")
    local out, status = H.run_child("require 'gpulua' print('ran')", {GPULUA_SIM_MODEL = "/nonexistent/model.json"})
    assert.are_not.equal(0, status, out)
    assert.matches("GPULUA_SIM_MODEL: /nonexistent/model%.json: cannot read it", out)
  end)

  it("checks k:cost's argument and what its function returns", function()
    local k = gpu.load("tests/data/twice.ptx"):kernel("twice", "const f32*, f32*, u64")
    assert.is_true(rawequal(k, k:cost(5)))
    assert.is_true(rawequal(k, k:cost(nil)))
    H.fails("k:cost: expected microseconds %(a number from 0%), got number %-1", k.cost, k, -1)
    H.fails("k:cost: expected microseconds %(a number from 0%), got number NaN", k.cost, k, 0 / 0)
    H.fails("k:cost: expected microseconds %(a number%), a function%(cfg, %.%.%.%) returning them, or nil, got string",
      k.cost, k, "fast")
    H.fails("k:cost: 'scale' is a built%-in kernel", gpu.kernels.scale.cost, gpu.kernels.scale, 3)
    local out, status = run(MODEL, [[
      local k = gpu.load("tests/data/twice.ptx"):kernel("twice", "const f32*, f32*, u64")
      k:host(function() end)
      local x = dev:zeros("f32", 4)
      k:cost(function() return "slow" end)
      print(pcall(dev.main.launch, dev.main, k, {grid = 1, block = 32}, x, x, 4))
      k:cost(function() error("cost failed") end)
      print(pcall(dev.main.launch, dev.main, k, {grid = 1, block = 32}, x, x, 4))
    ]])
    assert.are.equal(0, status, out)
    assert.matches("false\t[^\n]*s:launch: the cost function of kernel 'twice' %(k:cost%) returned string: expected "
      .. "microseconds", out)
    assert.matches("false\t[^\n]*cost failed", out)
  end)

  it("is what gpu.calibrate measures: calibrating the sim under a model gives the model back", function()
    local cal = os.tmpname()
    local m = with{switch_us = 3, copy_engines = 2}
    local out, status = run(m, [[
      local got = gpu.calibrate(os.getenv("CAL"), {sim = true, bytes = 1 << 20, repeats = 3})
      for k, v in pairs(got) do print(k, v) end
    ]], {CAL = cal})
    assert.are.equal(0, status, out)
    for _, f in ipairs{"h2d_gbps", "d2h_gbps", "d2d_gbps", "mem_gbps", "launch_us", "copy_latency_us", "switch_us"} do
      local have = got(out, f)
      assert.is_true(math.abs(have - m[f]) <= 0.02 * m[f], ("%s: the model has %g, calibrate measured %g"):format(
        f, m[f], have))
    end
    assert.is_true(math.abs(got(out, "bidir_gbps") - m.bidir_gbps) <= 0.05 * m.bidir_gbps, out)
    assert.are.equal(2, got(out, "copy_engines"))
    -- the file it wrote is a model file
    local f = assert(io.open(cal))
    local text = f:read("a")
    f:close()
    out, status = H.run_child("require 'gpulua' print('loaded')", {GPULUA_SIM_MODEL = cal})
    os.remove(cal)
    assert.are.equal(0, status, text .. "\n" .. out)
    assert.matches('"notes": "gpu%.calibrate, gpulua', text)
  end)

  it("gpu.calibrate leaves an earlier model file as it was when it fails", function()
    local path = model_file(MODEL)
    local before = assert(io.open(path)):read("a")
    local out, status = H.run_child(([[
      local gpu = require "gpulua"
      print(pcall(gpu.calibrate, %q, {sim = true, bytes = 64 << 20}))
    ]]):format(path), {GPULUA_SIM_MEMORY = "32M"})
    assert.are.equal(0, status, out)
    assert.matches("false\t[^\n]*out of memory", out)
    local f = assert(io.open(path))
    assert.are.equal(before, f:read("a"))
    f:close()
    assert.is_nil(io.open(path .. ".tmp"), "the temporary file stays behind")
    os.remove(path)
  end)

  it("gpu.calibrate refuses the sim unless asked, and checks its arguments", function()
    H.fails("gpu%.calibrate: it measures a GPU: it needs the cuda backend %(this is sim", gpu.calibrate, "/tmp/x.json")
    H.fails("gpu%.calibrate: unknown option 'repeat' %(the options are: bytes, device, repeats, sim%)",
      gpu.calibrate, "/tmp/x.json", {["repeat"] = 3})
    H.fails("gpu%.calibrate: expected a file name, got nil", gpu.calibrate)
    H.fails("option 'bytes' expected an integer multiple of 4 of at least 1 MiB, got 100", gpu.calibrate,
      "/tmp/x.json", {bytes = 100, sim = true})
    H.fails("gpu%.calibrate: cannot write /nonexistent/dir/m%.json", gpu.calibrate, "/nonexistent/dir/m.json",
      {sim = true})
  end)
end)
