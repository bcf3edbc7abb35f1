-- examples/kernels.lua: write, compile, declare and launch a kernel.
--
-- A SAXPY-like kernel is compiled with NVRTC (cached on disk, so the second
-- run starts at once), declared with its signature, and launched next to the
-- built-in library; results are checked on the CPU. On the sim backend the
-- kernel's own code runs too (its PTX, through the sim's interpreter).
--
--   gpulua examples/kernels.lua [n]
local gpu = require "gpulua"

local n = tonumber(arg and arg[1]) or 100000
local dev = gpu.device(0)
local s = dev:stream{name = "work"}

local source = [[
extern "C" __global__ void shift_scale(const float *x, float *y, float a, float b,
                                       unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
       i < n; i += (unsigned long long)gridDim.x * blockDim.x)
    y[i] = a * (x[i] + b);
}
]]
local m = gpu.compile(source, {name = "shift_scale.cu", options = {"-use_fast_math"}, device = dev})
local k = m:kernel("shift_scale", "const f32*, f32*, f32, f32, u64")

local h = gpu.host("f32", n)
for i = 1, n do h[i] = (i % 97) * 0.25 end
local x = dev:alloc("f32", n, {stream = s})
local y = dev:alloc("f32", n, {stream = s})
local total = dev:alloc("f32", 1, {stream = s})

local block = 256
local grid = math.min((n + block - 1) // block, 4 * dev.sms)
s:copy(x, h)
s:launch(k, {grid = grid, block = block}, x, y, 3.0, 1.0, n)             -- y = 3 (x + 1)
s:launch(gpu.kernels.axpy, {grid = grid, block = block}, -1.0, x, y, n)  -- y = y - x
s:launch(gpu.kernels.sum, {block = block}, y, total, n)  -- total[1] = sum(y); the built-ins pick their grid
local out = y:read{stream = s}
local got = total:read{stream = s}[1]

local want, bad = 0.0, 0
for i = 1, n do
  local v = 3 * (h[i] + 1) - h[i]
  want = want + v
  if math.abs(out[i] - v) > 1e-4 * math.max(1, math.abs(v)) then bad = bad + 1 end
end
print(string.format("%s on %s: %d elements, %d wrong; sum %.6g (CPU %.6g)", k.name, dev.name, n, bad, got, want))
assert(bad == 0, "kernel results differ from the CPU")
assert(math.abs(got - want) <= 1e-4 * math.abs(want), "sum differs from the CPU")
print("kernels verified")
