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

  it("faults on a write past a slice, naming the kernel, its source line and the thread", function()
    local out, status = H.run_child(PRELUDE .. [[
      local y = dev:zeros("f32", 100)
      dev.main:launch(m:kernel("past", "f32*"), {grid = 1, block = 128}, y)
      print(pcall(dev.main.sync, dev.main))
    ]], env)
    assert.are.equal(0, status, out)
    assert.matches("device 0 is poisoned by a fault", out)
    assert.matches(H.lit("wrote 4 bytes 0 bytes past the end of an allocation of 400 bytes (kernel 'past' at " ..
      "job.cu:6, thread (100,0,0) of block (0,0,0))"), out)
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
      "racy.cu:7, thread (0,0,0) of block (0,0,0))"), out)
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
        extern "C" __global__ void hello() { printf("hello\n"); }
      ]=], {name = "hello.cu"})
      print(ok, err)
    ]], env)
    assert.are.equal(0, status, out)
    assert.matches("false\t.*hello%.cu.*CUDA_ERROR_INVALID_PTX: line %d+: unsupported call to 'vprintf'", out)
  end)
end)
