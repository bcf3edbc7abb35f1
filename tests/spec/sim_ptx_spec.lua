-- GPULUA_SIM_KERNELS=ptx: the sim runs a kernel's own PTX (src/driver/sim/ptx_*.c)
-- instead of a host function: the kernel's bugs show on sim as on a GPU, and
-- every global access is checked against the sim's memory. Each case runs in a
-- child process with the setting. On cuda the kernels run on the GPU: these
-- cases are the sim's.
local gpu = require "gpulua"
local H = require "helpers"

local PRELUDE = [[
local gpu = require "gpulua"
local dev = gpu.device(0)
local m = gpu.compile([=[
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void past(float *y) {
  y[threadIdx.x] = 1.0f;
}
extern "C" __global__ void block_sum(const int *x, int *out) {
  __shared__ int part[128];
  part[threadIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, part[0]);
}
]=], {name = "job.cu"})
local saxpy = m:kernel("saxpy", "f32, const f32*, f32*, i32")
saxpy:host(function() error("the host function runs instead of the PTX") end)
]]

describe("GPULUA_SIM_KERNELS=ptx #ptx", function()
  if gpu.backend() ~= "sim" then
    pending("the sim's interpreter: on cuda kernels run on the GPU")
    return
  end
  if not H.interpreter() then
    pending("needs the interpreter's arg table to start a child process")
    return
  end
  local env = {GPULUA_SIM_KERNELS = "ptx"}

  it("runs the kernel's own code: a grid too small for n leaves elements unwritten", function()
    local out, status = H.run_child(PRELUDE .. [[
      local n = 100
      local x, y = dev:alloc("f32", n), dev:zeros("f32", n)
      dev.main:fill(x, 1)
      dev.main:launch(saxpy, {grid = 1, block = 32}, 2, x, y, n)
      local h = y:read()
      local unwritten = 0
      for i = 1, n do if h[i] == 0 then unwritten = unwritten + 1 end end
      print("unwritten", unwritten, h[1], h[32], h[33])
    ]], env)
    assert.are.equal(0, status, out)
    assert.matches("unwritten\t68\t2%.0\t2%.0\t0%.0", out)
  end)

  it("runs barriers, shared memory and atomics over several blocks", function()
    local out, status = H.run_child(PRELUDE .. [[
      local k = m:kernel("block_sum", "const i32*, i32*")
      local n = 128 * 6
      local h = gpu.host("i32", n)
      for i = 1, n do h[i] = i end
      local x, sum = dev:alloc("i32", n), dev:zeros("i32", 1)
      dev.main:copy(x, h)
      dev.main:launch(k, {grid = 6, block = 128}, x, sum)
      print("sum", sum:read()[1])
    ]], env)
    assert.are.equal(0, status, out)
    assert.matches("sum\t" .. (768 * 769 // 2), out)
  end)

  it("faults on a write past a slice, naming the slice, the kernel, its source line, the thread and the launch",
     function()
    local out, status = H.run_child(PRELUDE .. [[
      local y = dev:zeros("f32", 100)
      dev.main:launch(m:kernel("past", "f32*"), {grid = 1, block = 128}, y)
      print(pcall(dev.main.sync, dev.main))
    ]], env)
    assert.are.equal(0, status, out)
    assert.matches("device 0 is poisoned by a fault", out)
    local alloc, launch = out:match(H.lit("wrote 4 bytes 0 bytes past the end of slice f32[100] allocated at ") ..
      "[^:]+:(%d+)" .. H.lit(" (kernel 'past' at job.cu:6, thread (100,0,0) of block (0,0,0), launched at ") ..
      "[^:]+:(%d+)%)")
    assert.is_truthy(alloc, out)
    assert.are.equal(tonumber(alloc) + 1, tonumber(launch), out)
  end)

  it("names the allocation of a view written past its end", function()
    local out, status = H.run_child(PRELUDE .. [[
      local y = dev:zeros("f32", 100)
      dev.main:launch(m:kernel("past", "f32*"), {grid = 1, block = 128}, y:view(50))
      print(pcall(dev.main.sync, dev.main))
    ]], env)
    assert.are.equal(0, status, out)
    assert.matches(H.lit("wrote 4 bytes 0 bytes past the end of slice f32[100] allocated at "), out)
    assert.matches(H.lit("thread (50,0,0) of block (0,0,0), launched at "), out)
  end)

  it("runs f16 and bf16 arithmetic of cuda_fp16.h and cuda_bf16.h, rounded as on the GPU", function()
    local out, status = H.run_child([[
      local gpu = require "gpulua"
      local dev = gpu.device(0)
      local m = gpu.compile([=[
        #include <cuda_fp16.h>
        #include <cuda_bf16.h>
        extern "C" __global__ void hfma(const __half *x, const __half *y, __half *h, __nv_bfloat16 *b, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i >= n) return;
          h[i] = __hfma(x[i], y[i], __float2half_rn(0.25f));
          __half2 p = __hmul2(__halves2half2(x[i], y[i]), __float2half2_rn(2.0f));
          if (__hlt(__low2half(p), __high2half(p))) h[i] = __hneg(h[i]);
          b[i] = __float2bfloat16_rn(__half2float(x[i]) + 1.0f / 1024);
        }
      ]=], {name = "half.cu"})
      local k = m:kernel("hfma", "const f16*, const f16*, f16*, bf16*, i32")
      local n = 4
      local hx, hy = gpu.host("f16", n), gpu.host("f16", n)
      local xs, ys = {1.5, -2, 2049, 0.1}, {3, 0.5, 1, 1000}
      for i = 1, n do hx[i], hy[i] = xs[i], ys[i] end
      local x, y, h, b = dev:alloc("f16", n), dev:alloc("f16", n), dev:zeros("f16", n), dev:zeros("bf16", n)
      dev.main:copy(x, hx)
      dev.main:copy(y, hy)
      dev.main:launch(k, {grid = 1, block = 32}, x, y, h, b, n)
      local rh, rb = h:read(), b:read()
      for i = 1, n do io.write(string.format("%.10g %.10g ", rh[i], rb[i])) end
      print()
    ]], env)
    assert.are.equal(0, status, out)
    -- 1.5*3+0.25 = 4.75, negated (3 < 6); -2*0.5+0.25 = -0.75 (-4 < 1: negated);
    -- 2048*1+0.25 rounds to 2048 (2049 is no f16), 2048 < 2: kept; 0.1 as f16 is
    -- 0.0999755859375, times 1000 plus 0.25 is 100.22558..., the f16 100.25; plus
    -- 2^-10 it is 206.75 bf16 units of 2^-11: 207 of them, 0.10107421875
    assert.matches("^%-4%.75 1%.5 0%.75 %-2 2048 2048 %-100%.25 0%.1010742188", out)
  end)

  it("refuses at compile time what it cannot run, naming it and its PTX line", function()
    local out, status = H.run_child([[
      local gpu = require "gpulua"
      local ok, err = pcall(gpu.compile, [=[
        extern "C" __global__ void hello() { printf("hello\n"); }
      ]=], {name = "hello.cu"})
      print(ok, err)
    ]], env)
    assert.are.equal(0, status, out)
    assert.matches("false\t.*hello%.cu.*CUDA_ERROR_INVALID_PTX: line %d+: unsupported call to 'vprintf'", out)
  end)
end)
