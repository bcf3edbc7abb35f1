-- bench/workloads/gemm_bench.lua: s:gemm's rate on the GPU, beside
-- bench/baselines/cupy_gemm.py's (CuPy's matmul, cuBLAS too) in the same run: 4096^3
-- f32 and bf16, and a strided batched 4096 x (64 x 64 x 64) f32. Device time
-- from timing events around REPS gemms, after a warm-up; the median of 5.
-- Prints "RESULT gemm_<case> <TFLOP/s> TFLOP/s".
local gpu = require "gpulua"

local on_gpu = gpu.backend() == "cuda"
local dev = gpu.device(0)
local s = dev:stream{name = "gemm"}
local REPS = on_gpu and 10 or 1

local function median(t)
  table.sort(t)
  return t[(#t + 1) // 2]
end

local function case(name, dt, m, n, k, count)
  local batches = count or 1
  local a = dev:alloc(dt, m * k * batches, {stream = s})
  local b = dev:alloc(dt, k * n * batches, {stream = s})
  local c = dev:alloc(dt, m * n * batches, {stream = s})
  s:fill(a, 0.5)
  s:fill(b, 0.25)
  local args = {a = a, b = b, c = c, m = m, n = n, k = k, count = count}
  s:gemm(args) -- warm-up (and the stream's handle and workspace)
  local t = {}
  for r = 1, 5 do
    local e0 = s:record{timing = true}
    for _ = 1, REPS do s:gemm(args) end
    local e1 = s:record{timing = true}
    t[r] = e0:elapsed(e1) / REPS
  end
  local got = c:view(0, 1):read{stream = s}[1]
  assert(math.abs(got - 0.125 * k) <= 1e-2 * 0.125 * k, name .. ": wrong result " .. got)
  local ms = median(t)
  print(string.format("RESULT gemm_%s %.2f TFLOP/s", name, 2.0 * m * n * k * batches / (ms * 1e-3) / 1e12))
  a:free()
  b:free()
  c:free()
end

local N = on_gpu and 4096 or 64
case("4096_f32", "f32", N, N, N)
case("4096_bf16", "bf16", N, N, N)
case("batched_4096x64_f32", "f32", 64, 64, 64, on_gpu and 4096 or 4)
