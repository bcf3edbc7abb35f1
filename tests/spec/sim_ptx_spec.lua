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

  -- a block sum whose loop lacks its __syncthreads(): lane 0 reads what lane 16
  -- wrote in the step before, with nothing ordering the two
  local RACY = PRELUDE .. [[
    local racy = gpu.compile([=[
extern "C" __global__ void racy_sum(const int *x, int *out) {
  __shared__ int part[64];
  unsigned t = threadIdx.x;
  part[t] = x[t];
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2)
    if (t < s) part[t] += part[t + s];
  if (t == 0) *out = part[0];
}
]=], {name = "racy.cu"})
    local k = racy:kernel("racy_sum", "const i32*, i32*")
    local x, sum = dev:alloc("i32", 64), dev:zeros("i32", 1)
    dev.main:fill(x, 1)
    dev.main:launch(k, {grid = 1, block = 64}, x, sum)
    local ok, err = pcall(dev.main.sync, dev.main)
    print(ok, err)
    if ok then print("sum", sum:read()[1]) end
  ]]

  it("faults on a shared-memory race, naming both threads, accesses and lines", function()
    local out, status = H.run_child(RACY, env)
    assert.are.equal(0, status, out)
    assert.matches("device 0 is poisoned by a fault", out)
    assert.matches(H.lit("data race on __shared__ 'part' at byte 64: read 4 bytes, which thread (16,0,0) of block " ..
      "(0,0,0) wrote (4 bytes at racy.cu:7) with no barrier or __syncwarp between them (kernel 'racy_sum' at " ..
      "racy.cu:7, thread (0,0,0) of block (0,0,0), launched at "), out)
  end)

  it("runs the same kernel with GPULUA_SIM_RACECHECK=off", function()
    local out, status = H.run_child(RACY, {GPULUA_SIM_KERNELS = "ptx", GPULUA_SIM_RACECHECK = "off"})
    assert.are.equal(0, status, out)
    assert.matches("^true", out)
    assert.matches("sum\t%d+", out)
  end)

  it("refuses at compile time what it cannot run, naming it and its PTX line", function()
    local out, status = H.run_child([[
      local gpu = require "gpulua"
      local ok, err = pcall(gpu.compile, [=[
        extern "C" __global__ void grab(int **out) { *out = (int *)malloc(16); }
      ]=], {name = "grab.cu"})
      print(ok, err)
    ]], env)
    assert.are.equal(0, status, out)
    assert.matches("false\t.*grab%.cu.*CUDA_ERROR_INVALID_PTX: line %d+: " ..
      "unsupported call to 'malloc' %(declared, not defined%)", out)
  end)

  local PRINTF = [[
local gpu = require "gpulua"
local dev = gpu.device(0)
local m = gpu.compile([=[
extern "C" __global__ void hello(int n, float x) {
  printf("hello %d (%.2f, %5s|%-3x|) from thread %d of block %d\n", n, x, "ab", 255, threadIdx.x, blockIdx.x);
}
extern "C" __global__ void checked(const int *x, int n) {
  assert(x[threadIdx.x] < n);
}
extern "C" __global__ void odd() { printf("%n\n", (int *)0); }
]=], {name = "job.cu"})
]]

  it("prints printf's lines on stdout, block after block, thread after thread, before what follows a sync", function()
    local out, status = H.run_child(PRINTF .. [[
      print("before")
      dev.main:launch(m:kernel("hello", "i32, f32"), {grid = 2, block = 3}, 7, 1.5)
      dev.main:sync()
      io.write("after\n")
    ]], env)
    assert.are.equal(0, status, out)
    local want = {"before"}
    for b = 0, 1 do
      for t = 0, 2 do want[#want + 1] = ("hello 7 (1.50,    ab|ff |) from thread %d of block %d"):format(t, b) end
    end
    want[#want + 1] = "after"
    assert.are.equal(table.concat(want, "\n") .. "\nexit status 0\n", out)
  end)

  it("faults on a printf conversion CUDA's printf does not have, naming it", function()
    local out, status = H.run_child(PRINTF .. [[
      dev.main:launch(m:kernel("odd", ""), {grid = 1, block = 1})
      print(pcall(dev.main.sync, dev.main))
    ]], env)
    assert.are.equal(0, status, out)
    assert.matches(H.lit([[printf format "%n\n": unsupported conversion '%n' (kernel 'odd' at job.cu:7, ]] ..
      "thread (0,0,0) of block (0,0,0))"), out)
  end)

  it("faults on a failed assert with CUDA's message, naming the kernel, thread and block", function()
    local out, status = H.run_child(PRINTF .. [[
      local x = dev:zeros("i32", 64)
      dev.main:fill(x:view(40, 1), 5)
      dev.main:launch(m:kernel("checked", "const i32*, i32"), {grid = 1, block = 64}, x, 3)
      print(pcall(dev.main.sync, dev.main))
    ]], env)
    assert.are.equal(0, status, out)
    assert.matches(H.lit("device 0 is poisoned by a fault: CUDA_ERROR_ASSERT: device-side assert triggered"), out)
    assert.matches(H.lit("job.cu:5: void checked(const int *, int): Assertion `x[threadIdx.x] < n` failed " ..
      "(kernel 'checked' at job.cu:5, thread (40,0,0) of block (0,0,0), launched at "), out)
  end)

  local TICKETS = [[
local gpu = require "gpulua"
local dev = gpu.device(0)
local m = gpu.compile([=[
extern "C" __global__ void tickets(unsigned *counter, unsigned *out) {
  out[blockIdx.x * blockDim.x + threadIdx.x] = atomicAdd(counter, 1u);
}
extern "C" __global__ void scale(const int *x, int *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 3 * x[i] + 1;
}
]=], {name = "sched.cu"})
local n = 6 * 64
local counter, out = dev:zeros("u32", 1), dev:zeros("u32", n)
dev.main:launch(m:kernel("tickets", "u32*, u32*"), {grid = 6, block = 64}, counter, out)
local h = out:read()
local t = {}
for i = 1, n do t[i] = h[i] end
local x, y = dev:alloc("i32", 1000), dev:zeros("i32", 1000)
local hx = gpu.host("i32", 1000)
for i = 1, 1000 do hx[i] = i * 7 - 3000 end
dev.main:copy(x, hx)
dev.main:launch(m:kernel("scale", "const i32*, i32*, i32"), {grid = 8, block = 128}, x, y, 1000)
local hy, sum = y:read(), 0
for i = 1, 1000 do sum = sum + hy[i] * i end
print("tickets " .. table.concat(t, ","))
print("scale " .. sum)
]]

  it("GPULUA_SIM_SCHEDULE=random:SEED permutes the order of atomics, the same for the same seed", function()
    local function run(schedule)
      local out, status = H.run_child(TICKETS, {GPULUA_SIM_KERNELS = "ptx", GPULUA_SIM_SCHEDULE = schedule})
      assert.are.equal(0, status, out)
      return out:match("tickets ([%d,]+)"), out:match("scale (%-?%d+)")
    end
    local fixed, fixed_sum = run(nil)
    local ordered = {}
    for i = 0, 6 * 64 - 1 do ordered[#ordered + 1] = tostring(i) end
    assert.are.equal(table.concat(ordered, ","), fixed) -- thread i of the grid, ticket i
    assert.are.equal(fixed, (run("fixed")))
    local a, a_sum = run("random:1")
    assert.are.equal(a, (run("random:1")))
    assert.are_not.equal(fixed, a)
    local b, b_sum = run("random:2")
    assert.are_not.equal(a, b)
    local sorted = {}
    for v in a:gmatch("%d+") do sorted[#sorted + 1] = tonumber(v) end
    table.sort(sorted)
    for i = 1, #sorted do assert.are.equal(i - 1, sorted[i]) end -- each ticket once: each thread ran once
    -- a kernel without races: the same result under every schedule
    assert.are.equal(fixed_sum, a_sum)
    assert.are.equal(fixed_sum, b_sum)
    for seed = 3, 6 do assert.are.equal(fixed_sum, select(2, run("random:" .. seed))) end
  end)

  it("refuses a GPULUA_SIM_SCHEDULE that is not fixed or random:SEED, naming it", function()
    -- the gpulua host refuses it at start; under another Lua, the first use of the backend
    local out = H.run_child("print(pcall(require('gpulua').device, 0))",
      {GPULUA_SIM_KERNELS = "ptx", GPULUA_SIM_SCHEDULE = "random:often"})
    assert.matches(H.lit("GPULUA_SIM_SCHEDULE must be fixed or random:SEED (SEED an integer from 0 to 2^64-1), " ..
      "got 'random:often'"), out)
    assert.not_matches("^true", out)
  end)
end)
