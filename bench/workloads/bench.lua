-- bench/workloads/bench.lua: gpulua's side of the benchmarks (bench/run.sh runs it on the
-- GPU beside bench/baselines/raw.c and bench/baselines/cupy_bench.py). Prints "RESULT name value unit".
--
--   gpulua bench/workloads/bench.lua [launches]
local gpu = require "gpulua"

local launches = tonumber(arg and arg[1]) or 200000
local REPS = 5
local dev = gpu.device(0)
local s = dev:stream{name = "bench"}
local s2 = dev:stream{name = "bench2"}

local function median(t)
  table.sort(t)
  local n = #t
  return n % 2 == 1 and t[(n + 1) // 2] or 0.5 * (t[n // 2] + t[n // 2 + 1])
end

local function result(name, value, unit)
  print(string.format("RESULT %s %.4f %s", name, value, unit))
end

-- launch overhead: empty kernels with 1 and 8 slice arguments, policy off and strict
local here = debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or ""
local E = dofile(here .. "empty_kernels.lua")(dev, s) -- the empty kernels and 8 views of one buffer
local k1, k8, v = E.k1, E.k8, E.v
local cfg = {grid = 1, block = 32}

local function time_launches(policy, k, ...)
  gpu.policy(policy)
  local t = {}
  for r = 1, REPS do
    s:sync()
    local t0 = gpu.clock()
    for _ = 1, launches do s:launch(k, cfg, ...) end
    s:sync()
    t[r] = (gpu.clock() - t0) / launches * 1e6
  end
  gpu.policy("strict")
  return median(t)
end

for _, policy in ipairs{"off", "strict"} do
  result("launch_1arg_" .. policy, time_launches(policy, k1, v[1]), "us")
  result("launch_8arg_" .. policy, time_launches(policy, k8, v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]), "us")
end

-- the checker's per-launch cost with 10 and with 100,000 live slices (strict)
for _, live in ipairs{10, 100000} do
  local keep = {}
  for i = 1, live do keep[i] = dev:alloc("u8", 256, {stream = s}) end
  s:sync()
  result("launch_1arg_strict_" .. live .. "_slices", time_launches("strict", k1, v[1]), "us")
  assert(#keep == live)
  for i = 1, live do keep[i]:free() end
end

-- event record + cross-stream wait
do
  local t = {}
  local n = launches // 2
  for r = 1, REPS do
    s:sync()
    local t0 = gpu.clock()
    for _ = 1, n do s2:wait(s:record()) end
    s2:sync()
    t[r] = (gpu.clock() - t0) / n * 1e6
  end
  result("event_wait", median(t), "us")
  collectgarbage()
end

-- the same with one event recorded again (s:record(e)), as the raw loop does
do
  local t = {}
  local n = launches // 2
  local e = s:record()
  for r = 1, REPS do
    s:sync()
    local t0 = gpu.clock()
    for _ = 1, n do s2:wait(s:record(e)) end
    s2:sync()
    t[r] = (gpu.clock() - t0) / n * 1e6
  end
  result("event_wait_rerecord", median(t), "us")
end

-- launches with a prepared gpu.config instead of a cfg table
do
  local plain = cfg
  cfg = gpu.config{grid = 1, block = 32}
  for _, policy in ipairs{"off", "strict"} do
    result("launch_1arg_config_" .. policy, time_launches(policy, k1, v[1]), "us")
    result("launch_8arg_config_" .. policy,
      time_launches(policy, k8, v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]), "us")
  end
  cfg = plain
end

-- pinned copies, 256 MiB
do
  local n = (gpu.backend() == "cuda" and (256 << 20) or (4 << 20)) // 4
  local h = gpu.host("f32", n)
  h:fill(1)
  local x = dev:alloc("f32", n, {stream = s})
  for _, dir in ipairs{"h2d", "d2h"} do
    local t = {}
    for r = 1, REPS do
      local e0 = s:record{timing = true}
      if dir == "h2d" then s:copy(x, h) else s:copy(h, x) end
      local e1 = s:record{timing = true}
      t[r] = n * 4 / (e0:elapsed(e1) * 1e-3) / 1e9
    end
    result(dir .. "_256MiB", median(t), "GB/s")
  end
  s:sync()
  x:free()
end

-- built-ins, n = 2^28 f32, the same grid as bench/baselines/raw.c
do
  local n = gpu.backend() == "cuda" and (1 << 28) or (1 << 20)
  local x = dev:alloc("f32", n, {stream = s})
  local y = dev:alloc("f32", n, {stream = s})
  local out = dev:zeros("f32", 1, {stream = s})
  s:launch(gpu.kernels.fill, {grid = dev.sms * 16, block = 256}, x, 1.0, n)
  s:launch(gpu.kernels.fill, {grid = dev.sms * 16, block = 256}, y, 2.0, n)
  local bcfg = {grid = dev.sms * 16, block = 256}
  local cases = {
    {"axpy_f32", 3 * n * 4, function() s:launch(gpu.kernels.axpy, bcfg, 1.0001, x, y, n) end},
    {"scale_f32", 2 * n * 4, function() s:launch(gpu.kernels.scale, bcfg, 1.0001, x, y, n) end},
    {"sum_f32", n * 4, function() s:launch(gpu.kernels.sum, bcfg, x, out, n) end},
  }
  for _, c in ipairs(cases) do
    c[3]() -- warm-up (and the lazy compile)
    local t = {}
    for r = 1, REPS do
      local e0 = s:record{timing = true}
      c[3]()
      local e1 = s:record{timing = true}
      t[r] = c[2] / (e0:elapsed(e1) * 1e-3) / 1e9
    end
    result(c[1] .. "_bw", median(t), "GB/s")
  end
  s:sync()
  x:free()
  y:free()
end

-- NVRTC: a cold compile (new source each time) and a warm disk-cache hit
do
  local src = [[
extern "C" __global__ void saxpy_%d(float a, const float *x, float *y, unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) y[i] = a * x[i] + y[i];
}]]
  local cold, warm = {}, {}
  local stamp = math.floor(gpu.clock() * 1e6) % 1000000000
  for r = 1, REPS do
    local code = string.format(src, stamp * 10 + r)
    local t0 = gpu.clock()
    gpu.compile(code, {name = "cold.cu"})
    cold[r] = (gpu.clock() - t0) * 1e3
    t0 = gpu.clock()
    gpu.compile(code, {name = "cold.cu"})
    warm[r] = (gpu.clock() - t0) * 1e3
  end
  result("compile_cold", median(cold), "ms")
  result("compile_warm", median(warm), "ms")
end
