-- gpulua.calibrate: gpu.calibrate(file, {device =, repeats =, bytes =, sim =})
-- measures, on the cuda backend, the figures of the sim's timing model
-- (docs/API.md, "The sim backend") and writes them to `file` as a model file
-- that GPULUA_SIM_MODEL / --sim-model read. Returns the figures as a table.
--
-- Each figure is the median of `repeats` (default 5) measurements, timed with
-- events on the GPU:
--   h2d_gbps, d2h_gbps   one copy of `bytes` (default 256 MiB) of pinned memory each way
--   bidir_gbps           both copies at once, on two streams (bytes moved / span)
--   d2d_gbps             one copy of `bytes` within the device (bytes copied / time)
--   mem_gbps             the built-ins scale and axpy over `bytes` of f32 (bytes read and
--                        written / time), launched as examples/pipeline.lua launches them
--   launch_us            the GPU's time per launch of a tiny kernel, and
--   copy_latency_us      per tiny copy, each measured over a run queued behind a blocker
--                        (fills on another stream) so that the host's queueing is not timed
--   switch_us            what a dependency between engines adds: a chain of 1 MiB
--                        copies each followed by a kernel, against the two alone
--   host_us              the host's time to queue one operation, as pipeline.run of
--                        64 KiB chunks on 4 streams queues them (wall time / operations)
--   copy_engines         the device's copy engines (dev.copy_engines)
-- On sim it runs only with {sim = true}, and measures the sim itself: under a
-- timing model, that model's own figures come back (host_us aside, which is
-- the host's real time), which is how the suite tests both.
local gpu = require "gpulua"

local calibrate = {}

local here = debug.getinfo(1, "S").source

-- Raise msg at the script line that called gpu.calibrate (the first Lua frame
-- outside this file).
local function fail(msg)
  local level = 2
  while true do
    local info = debug.getinfo(level, "S")
    if not info or (info.source ~= here and info.what ~= "C") then break end
    level = level + 1
  end
  error("gpu.calibrate: " .. msg, level)
end

local OPTIONS = {device = true, repeats = true, bytes = true, sim = true}

local function median(t)
  local c = {}
  for i, v in ipairs(t) do c[i] = v end
  table.sort(c)
  local n = #c
  return n % 2 == 1 and c[(n + 1) // 2] or 0.5 * (c[n // 2] + c[n // 2 + 1])
end

-- ms of the work fn(s) queues on s, timed with events
local function timed(s, fn)
  local a = s:record{timing = true}
  fn(s)
  local b = s:record{timing = true}
  local ms = a:elapsed(b)
  gpu.sync()
  return ms
end

function calibrate.run(file, opts)
  if type(file) ~= "string" or file == "" then fail("expected a file name, got " .. tostring(file)) end
  if opts ~= nil and type(opts) ~= "table" then fail("expected an options table, got " .. type(opts)) end
  opts = opts or {}
  for k in pairs(opts) do
    if not OPTIONS[k] then
      fail(("unknown option '%s' (the options are: bytes, device, repeats, sim)"):format(tostring(k)))
    end
  end
  local repeats = opts.repeats or 5
  if math.type(repeats) ~= "integer" or repeats < 1 or repeats > 1000 then
    fail("option 'repeats' expected an integer from 1 to 1000, got " .. tostring(repeats))
  end
  local bytes = opts.bytes or (256 << 20)
  if math.type(bytes) ~= "integer" or bytes < (1 << 20) or bytes % 4 ~= 0 then
    fail("option 'bytes' expected an integer multiple of 4 of at least 1 MiB, got " .. tostring(bytes))
  end
  if opts.sim ~= nil and type(opts.sim) ~= "boolean" then
    fail("option 'sim' expected a boolean, got " .. tostring(opts.sim))
  end
  if gpu.backend() ~= "cuda" and not opts.sim then
    fail("it measures a GPU: it needs the cuda backend (this is " .. gpu.backend() .. "; {sim = true} measures "
      .. "the sim itself, for tests)")
  end
  local dev = opts.device
  if dev == nil or math.type(dev) == "integer" then
    local ok, d = pcall(gpu.device, dev or 0)
    if not ok then fail(tostring(d):gsub("^gpu%.device: ", "option 'device': ")) end
    dev = d
  elseif not (type(dev) == "userdata" and getmetatable(dev).__name == "gpulua.Device") then
    fail("option 'device' expected a device or an ordinal, got " .. tostring(dev))
  end
  -- before measuring, an unwritable file fails at once; the file itself is
  -- written only at the end, through a temporary one renamed over it, so a
  -- run that fails leaves an earlier model as it was
  local tmp = file .. ".tmp"
  local out, why = io.open(tmp, "w")
  if not out then fail("cannot write " .. file .. ": " .. tostring(why)) end
  out:close()
  os.remove(tmp)
  local existing = io.open(file, "r")
  if existing then existing:close() end
  local probe, err = io.open(file, "a") -- (makes the file: removed again below if it was not there)
  if not probe then fail("cannot write " .. file .. ": " .. tostring(err)) end
  probe:close()
  if not existing then os.remove(file) end

  local t_start = gpu.clock()
  local n = bytes // 4
  gpu.sync()
  local a = dev:stream{name = "calibrate_a"}
  local b = dev:stream{name = "calibrate_b"}
  local h_in, h_out = gpu.host("f32", n), gpu.host("f32", n)
  local x, y = dev:zeros("f32", n, {stream = a}), dev:zeros("f32", n, {stream = a})
  local z = dev:zeros("f32", n, {stream = b}) -- what the blocker fills
  gpu.sync()
  local function gbps(moved, us) return moved / (us * 1e3) end

  -- The GPU's time (us) per unit of work: units queued back to back on
  -- stream a behind a blocker (fills on stream b that a waits for, lasting
  -- twice the host's time to queue them), so the GPU runs them once all are
  -- queued and the host's queueing is not timed; k units and then 2k, and the
  -- difference over k, so what the run pays once (the blocker's wait, the
  -- switch to the first unit's engine, the records) cancels. The median of
  -- `repeats`. (At most 512 fills: ample on a GPU; on sim, whose host is far
  -- slower than its model's, they need only outlast the model's host clock.)
  local fill_ms = timed(b, function(s) s:fill(z, 0) end)
  -- (`around`, optional: what the run queues before the units and after
  -- them, around(s, "before") and around(s, "after"))
  local function run_behind(k, unit, around)
    local t0 = gpu.clock()
    unit(a)
    local queue_ms = (gpu.clock() - t0) * 1e3 * k
    gpu.sync()
    local fills = math.min(512, math.max(1, math.ceil(2 * queue_ms / fill_ms)))
    for i = 1, fills do b:fill(z, i) end
    a:wait(b:record())
    return timed(a, function(s)
      if around then around(s, "before") end
      for _ = 1, k do unit(s) end
      if around then around(s, "after") end
    end) * 1e3
  end
  local function per_unit(k, unit, around)
    local t = {}
    for r = 1, repeats do t[r] = (run_behind(2 * k, unit, around) - run_behind(k, unit, around)) / k end
    return median(t)
  end

  -- tiny operations: what they cost beyond their bytes
  local N = 200
  local tiny_x, tiny_y = x:view(0, 1), y:view(0, 1)
  local tiny_h = h_in:view(0, 1)
  local one = gpu.config{grid = 1, block = 32}
  -- (a slope can come out a hair below 0 where the true cost is ~0: clamped,
  -- as the model file's fields must be >= 0)
  local launch_us = math.max(0, per_unit(N, function(s) s:launch(gpu.kernels.scale, one, 2.0, tiny_x, tiny_y, 1) end))
  local copy_us = math.max(0, per_unit(N, function(s) s:copy(tiny_x, tiny_h) end))

  -- copies, one way and both ways at once (each pays a copy's latency)
  local function rate(moved, us, lat) return gbps(moved, math.max(us - lat, 1e-3)) end
  local h2d = rate(bytes, per_unit(1, function(s) s:copy(x, h_in) end), copy_us)
  local copy_latency_us = math.max(0, copy_us - 4 / (h2d * 1e3))
  local d2h = rate(bytes, per_unit(1, function(s) s:copy(h_out, x) end), copy_latency_us)
  local fork = a:fork{name = "calibrate_c"}
  local bidir = rate(2 * bytes, per_unit(1, function(s)
    s:copy(x, h_in)
    fork:copy(h_out, y)
  end, function(s, at) -- the second stream starts with a and ends into it
    if at == "before" then fork:join(s) else s:join(fork) end
  end), copy_latency_us)
  local d2d = rate(bytes, per_unit(1, function(s) s:copy(y, x) end), copy_latency_us)

  -- the memory rate of the built-ins, as the pipeline launches them
  local cfg = gpu.config{grid = math.min((n + 255) // 256, dev.sms * 8), block = 256}
  local mem = median{
    rate(8 * n, per_unit(1, function(s) s:launch(gpu.kernels.scale, cfg, 2.0, x, y, n) end), launch_us),
    rate(12 * n, per_unit(1, function(s) s:launch(gpu.kernels.axpy, cfg, 1.0, x, y, n) end), launch_us),
  }

  -- what a dependency between engines costs: a chain of 1 MiB copies, each
  -- followed by a kernel on the same stream, against the two alone
  local e = math.min(n, 1 << 18)
  local cx, cy, ch = x:view(0, e), y:view(0, e), h_in:view(0, e)
  local ccfg = gpu.config{grid = math.min((e + 255) // 256, dev.sms * 8), block = 256}
  local C = 32
  local t_copy = per_unit(C, function(s) s:copy(cx, ch) end)
  local t_kernel = per_unit(C, function(s) s:launch(gpu.kernels.scale, ccfg, 2.0, cx, cy, e) end)
  local t_link = per_unit(C, function(s)
    s:copy(cx, ch)
    s:launch(gpu.kernels.scale, ccfg, 2.0, cx, cy, e)
  end)
  local switch_us = math.max(0, (t_link - t_copy - t_kernel) / 2) -- copy -> kernel, kernel -> next copy

  -- the host's time per queued operation, as a pipeline queues them: a
  -- pipeline.run of 64 KiB chunks (copy in, two kernels, copy out) on 4
  -- streams, whose GPU work keeps up with the host
  local pipeline = require "gpulua.pipeline"
  local pe = math.min(n // 4, 1 << 14)
  local slots = math.max(4, (n // pe) // 4 * 4) -- chunks of the buffers, a multiple of the streams
  local pcfg = gpu.config{grid = (pe + 255) // 256, block = 256}
  local host = {}
  for r = 1, repeats do
    local batches = 500
    local stats = pipeline.run{
      device = dev, streams = 4, batches = batches,
      setup = function(s)
        return {a = dev:alloc("f32", pe, {stream = s}), b = dev:alloc("f32", pe, {stream = s})}
      end,
      stage = function(c, s, buf)
        local off = ((c - 1) % slots) * pe
        s:copy(buf.a, h_in:view(off, pe))
        s:launch(gpu.kernels.scale, pcfg, 2.0, buf.a, buf.b, pe)
        s:launch(gpu.kernels.axpy, pcfg, 1.0, buf.a, buf.b, pe)
        s:copy(h_out:view(off, pe), buf.b)
      end,
    }
    host[r] = stats.wall_ms * 1e3 / (4 * batches)
  end
  local host_us = median(host)

  fork:close()
  a:close()
  b:close()
  local m = {
    name = dev.name, h2d_gbps = h2d, d2h_gbps = d2h, bidir_gbps = math.max(bidir, h2d, d2h), d2d_gbps = d2d,
    mem_gbps = mem, launch_us = launch_us, copy_latency_us = copy_latency_us, host_us = host_us, switch_us = switch_us,
    copy_engines = math.max(1, dev.copy_engines),
  }
  local secs = gpu.clock() - t_start
  m.notes = ("gpu.calibrate, gpulua %s, %s: medians of %d runs, %d-byte copies; took %.1f s"):format(
    gpu.version, os.date("!%Y-%m-%d %H:%M UTC"), repeats, bytes, secs)
  local fields = {"name", "h2d_gbps", "d2h_gbps", "bidir_gbps", "d2d_gbps", "mem_gbps", "launch_us",
    "copy_latency_us", "copy_engines", "host_us", "switch_us", "notes"}
  local lines = {}
  for _, k in ipairs(fields) do
    local v = m[k]
    local text
    if type(v) == "string" then text = ("%q"):format(v):gsub("\\\n", "\\n")
    elseif math.type(v) == "integer" then text = tostring(v)
    else text = ("%.4g"):format(v) end
    lines[#lines + 1] = ("  %q: %s"):format(k, text)
  end
  out, why = io.open(tmp, "w")
  local ok = out ~= nil
  if out then
    ok, why = out:write("{\n", table.concat(lines, ",\n"), "\n}\n")
    local closed, close_why = out:close()
    if ok and not closed then ok, why = false, close_why end
  end
  if ok then ok, why = os.rename(tmp, file) end
  if not ok then
    os.remove(tmp)
    fail("cannot write " .. file .. ": " .. tostring(why))
  end
  return m
end

return calibrate
