-- bench/probes/model_probe.lua: the GPU effects behind the timing model's figures,
-- measured one by one (docs/BENCHMARKS.md, "Sim timing model"): the time per
-- copy at several sizes, each way (is a copy latency + bytes / rate?), the
-- time per link of a chain that alternates engines on one stream (copy, then
-- kernel, then copy: what a dependency between engines costs), and the host's
-- time per operation in a pipeline's stage. All GPU times are of work queued
-- behind a blocker, so the host's queueing is not timed.
--   gpulua bench/probes/model_probe.lua
local gpu = require "gpulua"

local dev = gpu.device(0)
local big = 256 << 20
local n = big // 4
local a = dev:stream{name = "probe_a"}
local b = dev:stream{name = "probe_b"}
local h_in, h_out = gpu.host("f32", n), gpu.host("f32", n)
local x, y = dev:zeros("f32", n, {stream = a}), dev:zeros("f32", n, {stream = a})
local z = dev:zeros("f32", n, {stream = b})
gpu.sync()

local function median(t)
  table.sort(t)
  return #t % 2 == 1 and t[(#t + 1) // 2] or 0.5 * (t[#t // 2] + t[#t // 2 + 1])
end

local fill_ms
do
  local e0 = b:record{timing = true}
  b:fill(z, 0)
  local e1 = b:record{timing = true}
  fill_ms = e0:elapsed(e1)
  gpu.sync()
end

-- us per repetition of fn(a), count repetitions queued behind a blocker
local function per(count, fn)
  local t = {}
  for r = 1, 5 do
    local t0 = gpu.clock()
    for _ = 1, math.min(count, 8) do fn(a) end -- the host's pace, for the blocker
    local q = (gpu.clock() - t0) * 1e3 / math.min(count, 8) * count
    gpu.sync()
    for i = 1, math.min(512, math.max(1, math.ceil(2 * q / fill_ms))) do b:fill(z, i) end
    a:wait(b:record())
    local e0 = a:record{timing = true}
    for _ = 1, count do fn(a) end
    local e1 = a:record{timing = true}
    t[r] = e0:elapsed(e1) * 1e3 / count
    gpu.sync()
  end
  return median(t)
end

print(("model probe: %s"):format(dev.name))
for _, bytes in ipairs{4, 64 << 10, 1 << 20, 16 << 20, 256 << 20} do
  local e = bytes // 4
  local count = bytes >= (16 << 20) and 4 or 32
  local xv, hv, hov = x:view(0, e), h_in:view(0, e), h_out:view(0, e)
  local h2d = per(count, function(s) s:copy(xv, hv) end)
  local d2h = per(count, function(s) s:copy(hov, xv) end)
  print(("RESULT probe_h2d_%d %.3f us"):format(bytes, h2d))
  print(("RESULT probe_d2h_%d %.3f us"):format(bytes, d2h))
end

-- chains on one stream: one link = the listed ops of one chunk
for _, bytes in ipairs{4, 64 << 10, 1 << 20} do
  local e = bytes // 4
  local xv, yv, hv, hov = x:view(0, e), y:view(0, e), h_in:view(0, e), h_out:view(0, e)
  local cfg = gpu.config{grid = math.min((e + 255) // 256, dev.sms * 8), block = 256}
  local k1 = per(32, function(s) s:launch(gpu.kernels.scale, cfg, 2.0, xv, yv, e) end)
  local k2 = per(32, function(s) s:launch(gpu.kernels.axpy, cfg, 1.0, xv, yv, e) end)
  local hk = per(32, function(s)
    s:copy(xv, hv)
    s:launch(gpu.kernels.scale, cfg, 2.0, xv, yv, e)
  end)
  local chunk = per(32, function(s)
    s:copy(xv, hv)
    s:launch(gpu.kernels.scale, cfg, 2.0, xv, yv, e)
    s:launch(gpu.kernels.axpy, cfg, 1.0, xv, yv, e)
    s:copy(hov, yv)
  end)
  print(("RESULT probe_scale_%d %.3f us"):format(bytes, k1))
  print(("RESULT probe_axpy_%d %.3f us"):format(bytes, k2))
  print(("RESULT probe_h2d+scale_%d %.3f us"):format(bytes, hk))
  print(("RESULT probe_chunk_%d %.3f us"):format(bytes, chunk))
end

-- the host's time per operation in a pipeline-like stage (views made per
-- chunk, four operations), the GPU idle otherwise, 64 KiB chunks on 4 streams
do
  local e = 16 << 10
  local cfg = gpu.config{grid = (e + 255) // 256, block = 256}
  local ss = {}
  for i = 1, 4 do
    ss[i] = dev:stream{name = "probe_s" .. i}
    ss[i]:join(a)
  end
  local bufs = {}
  for i = 1, 4 do bufs[i] = {x:view((i - 1) * e, e), y:view((i - 1) * e, e)} end
  local t = {}
  for r = 1, 5 do
    local chunks = 1000
    local t0 = gpu.clock()
    for c = 1, chunks do
      local k = (c - 1) % 4 + 1
      local s, buf = ss[k], bufs[k]
      local off = ((c - 1) % 1024) * e
      s:copy(buf[1], h_in:view(off, e))
      s:launch(gpu.kernels.scale, cfg, 2.0, buf[1], buf[2], e)
      s:launch(gpu.kernels.axpy, cfg, 1.0, buf[1], buf[2], e)
      s:copy(h_out:view(off, e), buf[2])
    end
    t[r] = (gpu.clock() - t0) * 1e6 / (4 * chunks)
    gpu.sync()
  end
  print(("RESULT probe_host_per_op %.3f us"):format(median(t)))
end
