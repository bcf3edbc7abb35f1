-- bench/workloads/builtins_bench.lua: the built-in library's bandwidth (bench/run.sh runs it on
-- the GPU beside bench/baselines/raw_builtins.c and bench/baselines/cupy_builtins.py). Each of the ten
-- kernels for f32, f16 and i32 at n = 2^28 elements (2^18 on sim, where the times mean
-- nothing), grid "auto", block 256: GB/s as the bytes it moves (passes over n, as the
-- sim's timing model counts them: axpy reads x and y and writes y, 3) over the median
-- of 5 timed launches after a warm-up; the device-to-device copy of the same elements
-- (s:copy, bytes read and written) as the ceiling, and each kernel's fraction of it.
-- Then f32 axpy and sum on grids of 2 to 32 blocks per SM (for tuning grid "auto"),
-- and NVRTC's cold compile of one dtype's program and of all twelve.
-- Prints "RESULT name value unit".
--
--   gpulua bench/workloads/builtins_bench.lua [log2 n]
local gpu = require "gpulua"

local cuda = gpu.backend() == "cuda"
local n = 1 << (tonumber(arg and arg[1]) or (cuda and 28 or 18))
local REPS = 5
local K = gpu.kernels
local dev = gpu.device(0)
local s = dev:stream{name = "builtins"}
local auto = gpu.config{block = 256}

local function median(t)
  table.sort(t)
  local m = #t
  return m % 2 == 1 and t[(m + 1) // 2] or 0.5 * (t[m // 2] + t[m // 2 + 1])
end

local function result(name, value, unit)
  print(string.format("RESULT %s %.4f %s", name, value, unit))
end

-- milliseconds of fn's work on s, by timing events: the median of REPS runs after one
local function timed(fn)
  fn()
  local t = {}
  for r = 1, REPS do
    local e0 = s:record{timing = true}
    fn()
    local e1 = s:record{timing = true}
    t[r] = e0:elapsed(e1)
  end
  return median(t)
end

local ORDER = {"fill", "copy", "scale", "axpy", "add", "mul", "sum", "dot", "min", "max"}
local PASSES = {fill = 1, copy = 2, scale = 2, axpy = 3, add = 3, mul = 3, sum = 1, dot = 2, min = 1, max = 1}
local SIZE = {f32 = 4, f16 = 2, i32 = 4}

for _, dt in ipairs{"f32", "f16", "i32"} do
  local size = SIZE[dt]
  local x = dev:alloc(dt, n, {stream = s})
  local y = dev:alloc(dt, n, {stream = s})
  local z = dev:alloc(dt, n, {stream = s})
  local out = dev:alloc(dt, 1, {stream = s})
  s:launch(K.fill, auto, x, 1, n)
  s:launch(K.fill, auto, y, 2, n)
  local a = dt == "i32" and 3 or 1.0001
  local runs = {
    fill = function() s:launch(K.fill, auto, z, 3, n) end,
    copy = function() s:launch(K.copy, auto, x, 1, z, 1, n) end,
    scale = function() s:launch(K.scale, auto, a, x, z, n) end,
    axpy = function() s:launch(K.axpy, auto, a, x, y, n) end,
    add = function() s:launch(K.add, auto, x, y, z, n) end,
    mul = function() s:launch(K.mul, auto, x, y, z, n) end,
    sum = function() s:launch(K.sum, auto, x, out, n) end,
    dot = function() s:launch(K.dot, auto, x, y, out, n) end,
    min = function() s:launch(K.min, auto, x, out, n) end,
    max = function() s:launch(K.max, auto, x, out, n) end,
  }
  local ceiling = 2 * n * size / (timed(function() s:copy(z, x) end) * 1e-3) / 1e9
  result("builtin_d2d_" .. dt, ceiling, "GB/s")
  for _, k in ipairs(ORDER) do
    local gbs = PASSES[k] * n * size / (timed(runs[k]) * 1e-3) / 1e9
    result(("builtin_%s_%s"):format(k, dt), gbs, "GB/s")
    result(("builtin_%s_%s_of_d2d"):format(k, dt), gbs / ceiling, "x")
  end
  s:sync()
  for _, v in ipairs{x, y, z, out} do v:free() end
end

-- grids by hand, for comparison with "auto": f32 axpy and sum, 2 to 32 blocks of 256 per SM
do
  local x = dev:alloc("f32", n, {stream = s})
  local y = dev:alloc("f32", n, {stream = s})
  local out = dev:alloc("f32", 1, {stream = s})
  s:launch(K.fill, auto, x, 1, n)
  s:launch(K.fill, auto, y, 2, n)
  for _, per_sm in ipairs{2, 4, 8, 16, 32} do
    local cfg = gpu.config{grid = dev.sms * per_sm, block = 256}
    local ms = timed(function() s:launch(K.axpy, cfg, 1.0001, x, y, n) end)
    result(("builtin_axpy_f32_grid_%dx"):format(per_sm), 3 * n * 4 / (ms * 1e-3) / 1e9, "GB/s")
    ms = timed(function() s:launch(K.sum, cfg, x, out, n) end)
    result(("builtin_sum_f32_grid_%dx"):format(per_sm), n * 4 / (ms * 1e-3) / 1e9, "GB/s")
  end
  s:sync()
  x:free()
  y:free()
  out:free()
end

-- NVRTC's cold compile of the library (a new source each time: no cache hit): one
-- dtype's program, as a dtype's first launch compiles it, and all twelve
do
  local here = debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or ""
  local f = assert(io.open(here .. "../../kernels/builtins.cu"))
  local src = f:read("a")
  f:close()
  local stamp = math.floor(gpu.clock() * 1e6) % 1000000000
  local function compile(dt, r)
    local t0 = gpu.clock()
    gpu.compile(src .. ("\n// %d %d\n"):format(stamp, r), {name = "builtins.cu", options = {"-DGL_DTYPE_" .. dt}})
    return (gpu.clock() - t0) * 1e3
  end
  local one = {}
  for r = 1, 3 do one[r] = compile("f32", r) end
  result("builtin_compile_cold_f32", median(one), "ms")
  local all = 0
  for _, dt in ipairs{"i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f16", "bf16", "f32", "f64"} do
    all = all + compile(dt, 99)
  end
  result("builtin_compile_cold_all", all, "ms")
end
