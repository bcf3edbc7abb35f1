-- GPULUA_SIM_KERNELS=compare: a launch of a kernel that has both PTX and a
-- k:host function runs both, the host function on copies of the memory the
-- kernel may write, and the first element where they differ is a fault. Each
-- case runs in a child process with the setting. On cuda kernels run on the
-- GPU: these cases are the sim's.
local gpu = require "gpulua"
local H = require "helpers"

local PRELUDE = [[
local gpu = require "gpulua"
local dev = gpu.device(0)
local m = gpu.compile([=[
extern "C" __global__ void twice(const float *x, float *y, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
extern "C" __global__ void add_twice(const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += 2.0f * x[i];
}
extern "C" __global__ void count(const int *x, int *hits, unsigned *where, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && x[i] > 0) { atomicAdd(hits, 1); where[i] = 7u; }
}
extern "C" __global__ void quiet_nan(float *y, double *z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { y[i] = __int_as_float(0x7fc00001); z[i] = __longlong_as_double(0x7ff8000000000123ll); }
}
]=], {name = "cmp.cu"})
local n = 100
local hx = gpu.host("f32", n)
for i = 1, n do hx[i] = i - 1 end -- x[i] = i, as the kernel indexes
local x = dev:alloc("f32", n)
dev.main:copy(x, hx)
local host_runs = 0
]]

describe("GPULUA_SIM_KERNELS=compare #ptx", function()
  if gpu.backend() ~= "sim" then
    pending("the sim's interpreter: on cuda kernels run on the GPU")
    return
  end
  if not H.interpreter() then
    pending("needs the interpreter's arg table to start a child process")
    return
  end
  local env = {GPULUA_SIM_KERNELS = "compare"}

  it("runs the PTX and the host function, which agree: the launch passes", function()
    local out, status = H.run_child(PRELUDE .. [[
      local k = m:kernel("twice", "const f32*, f32*, u64")
      k:host(function(_, x, y, n)
        host_runs = host_runs + 1
        for i = 1, n do y[i] = 2 * x[i] end
      end)
      local y = dev:zeros("f32", n)
      dev.main:launch(k, {grid = 1, block = 128}, x, y, n)
      local h = y:read()
      print("runs", host_runs, h[1], h[18], h[100])
    ]], env)
    assert.are.equal(0, status, out)
    assert.matches("runs\t1\t0%.0\t34%.0\t198%.0", out)
  end)

  it("gives the host function the memory as it was before the launch; the memory keeps the PTX's result",
     function()
    -- y += 2x in place: a host function that saw the PTX's result would add
    -- twice and differ; the memory holds y + 2x once
    local out, status = H.run_child(PRELUDE .. [[
      local k = m:kernel("add_twice", "const f32*, f32*, i32")
      local seen
      k:host(function(_, x, y, n)
        seen = y[18]
        for i = 1, n do y[i] = y[i] + 2 * x[i] end
      end)
      local y = dev:alloc("f32", n)
      dev.main:fill(y, 1)
      dev.main:launch(k, {grid = 1, block = 128}, x, y, n)
      local h = y:read()
      print("seen", seen, h[18], h[100])
    ]], env)
    assert.are.equal(0, status, out)
    assert.matches("seen\t1%.0\t35%.0\t199%.0", out)
  end)

  it("gives a read-only argument that is also written the memory as it was before the launch", function()
    local out, status = H.run_child(PRELUDE .. [[
      local k = m:kernel("twice", "const f32*, f32*, u64")
      k:host(function(_, x, y, n) for i = 1, n do y[i] = 2 * x[i] end end)
      local y = dev:alloc("f32", n)
      dev.main:copy(y, hx)
      dev.main:launch(k, {grid = 1, block = 128}, y, y, n) -- in place: y = 2y
      print("ok", pcall(dev.main.sync, dev.main), y:read()[18])
    ]], env)
    assert.are.equal(0, status, out)
    assert.matches("ok\ttrue\t34%.0", out)
  end)

  it("faults on the first element where the host function differs, naming the kernel, argument, element and " ..
     "both values", function()
    local out, status = H.run_child(PRELUDE .. [[
      local k = m:kernel("twice", "const f32*, f32*, u64")
      k:host(function(_, x, y, n)
        for i = 1, n do y[i] = 2 * x[i] end
        y[18], y[60] = 36, 0 -- elements 17 and 59, as the kernel counts
      end)
      local y = dev:zeros("f32", n)
      dev.main:launch(k, {grid = 1, block = 128}, x, y, n)
      print(pcall(dev.main.sync, dev.main))
    ]], env)
    assert.are.equal(0, status, out)
    assert.matches("device 0 is poisoned by a fault", out)
    assert.matches(H.lit("compare: kernel 'twice' argument 2 (f32*) element 17: ptx wrote 34.0, the host " ..
                         "function 36.0"), out)
  end)

  it("compares every written argument by its dtype, in order", function()
    local out, status = H.run_child(PRELUDE .. [[
      local k = m:kernel("count", "const i32*, i32*, u32*, i32")
      k:host(function(_, x, hits, where, n)
        for i = 1, n do if x[i] > 0 then hits[1] = hits[1] + 1; where[i] = 7 end end
        where[4] = 4294967295
      end)
      local xi = dev:alloc("i32", 10)
      dev.main:fill(xi, 1)
      dev.main:fill(xi:view(5, 5), -3) -- five positive
      local hits, where = dev:zeros("i32", 1), dev:zeros("u32", 10)
      dev.main:launch(k, {grid = 1, block = 32}, xi, hits, where, 10)
      print(pcall(dev.main.sync, dev.main))
    ]], env)
    assert.are.equal(0, status, out)
    assert.matches(H.lit("compare: kernel 'count' argument 3 (u32*) element 3: ptx wrote 7, the host function " ..
                         "4294967295"), out)
  end)

  it("takes two NaNs as equal, whatever their bits", function()
    local out, status = H.run_child(PRELUDE .. [[
      local k = m:kernel("quiet_nan", "f32*, f64*, i32")
      k:host(function(_, y, z, n)
        host_runs = host_runs + 1
        for i = 1, n do y[i], z[i] = 0 / 0, -(0 / 0) end
      end)
      local y, z = dev:zeros("f32", 8), dev:zeros("f64", 8)
      dev.main:launch(k, {grid = 1, block = 32}, y, z, 8)
      local hy = y:read()
      print("ok", pcall(dev.main.sync, dev.main), host_runs, hy[1] ~= hy[1])
    ]], env)
    assert.are.equal(0, status, out)
    assert.matches("ok\ttrue\t1\ttrue", out)
  end)

  it("runs the PTX of a kernel that has no host function", function()
    local out, status = H.run_child(PRELUDE .. [[
      local y = dev:zeros("f32", n)
      dev.main:launch(m:kernel("twice", "const f32*, f32*, u64"), {grid = 1, block = 64}, x, y, n)
      local h = y:read()
      print("got", h[18], h[64], h[65])
    ]], env)
    assert.are.equal(0, status, out)
    assert.matches("got\t34%.0\t126%.0\t0%.0", out) -- a grid too small: the kernel's own bug shows
  end)

  it("reports an error the host function raises as the launch's fault", function()
    local out, status = H.run_child(PRELUDE .. [[
      local k = m:kernel("twice", "const f32*, f32*, u64")
      k:host(function() error("no reference for this") end)
      dev.main:launch(k, {grid = 1, block = 128}, x, dev:zeros("f32", n), n)
      print(pcall(dev.main.sync, dev.main))
    ]], env)
    assert.are.equal(0, status, out)
    assert.matches("device 0 is poisoned by a fault: .*host kernel 'twice' %(launched at [^)]+%) raised: " ..
                   "[^\n]*no reference for this", out)
  end)

  it("reports a fault of the PTX without running the host function", function()
    local out, status = H.run_child(PRELUDE .. [[
      local k = m:kernel("twice", "const f32*, f32*, u64")
      k:host(function() host_runs = host_runs + 1 end)
      local y = dev:zeros("f32", 10)
      dev.main:launch(k, {grid = 1, block = 128}, x, y, n) -- n past y's end
      print(pcall(dev.main.sync, dev.main))
      print("runs", host_runs)
    ]], env)
    assert.are.equal(0, status, out)
    assert.matches(H.lit("wrote 4 bytes 0 bytes past the end of slice f32[10] allocated at "), out)
    assert.matches("runs\t0", out)
  end)

  it("names each device's own fault: a host function's error on one, the PTX's on another", function()
    local out, status = H.run_child(PRELUDE .. [[
      local k = m:kernel("twice", "const f32*, f32*, u64")
      k:host(function() error("no reference for this") end)
      dev.main:launch(k, {grid = 1, block = 128}, x, dev:zeros("f32", n), n)
      print("dev0", pcall(dev.main.sync, dev.main))
      local d1 = gpu.device(1)
      local k1 = gpu.compile([=[
        extern "C" __global__ void past(float *y) { y[threadIdx.x] = 1.0f; }
      ]=], {name = "past.cu", device = d1}):kernel("past", "f32*")
      d1.main:launch(k1, {grid = 1, block = 64}, d1:zeros("f32", 10))
      print("dev1", pcall(d1.main.sync, d1.main))
    ]], {GPULUA_SIM_KERNELS = "compare", GPULUA_SIM_DEVICES = 2})
    assert.are.equal(0, status, out)
    assert.matches("dev0\tfalse\t[^\n]*raised: [^\n]*no reference for this", out)
    local dev1 = assert(out:match("dev1\tfalse\t([^\n]*)"), out)
    assert.matches(H.lit("wrote 4 bytes 0 bytes past the end of slice f32[10] allocated at "), dev1)
    assert.is_nil(dev1:find("no reference", 1, true), dev1)
  end)
end)
