-- examples/saxpy_spec.lua: testing GPU code with Busted, against a CPU reference.
-- Runs on the GPU and on the sim backend (where k:host stands in for the kernel):
--   gpulua /usr/bin/busted examples/saxpy_spec.lua
--   LUA_CPATH_5_4="build/?.so;;" lua5.4 /usr/bin/busted examples/saxpy_spec.lua
local gpu = require "gpulua"

describe("saxpy", function()
  local dev = gpu.device(0)
  local k

  setup(function()
    local m = gpu.compile([[
      extern "C" __global__ void saxpy(float a, const float *x, float *y, unsigned long long n) {
        unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
      }]], {name = "saxpy.cu", device = dev})
    k = m:kernel("saxpy", "f32, const f32*, f32*, u64")
    k:host(function(_, a, x, y, n) for i = 1, n do y[i] = a * x[i] + y[i] end end)
  end)

  local function run(n, a)
    local hx, hy = gpu.host("f32", n), gpu.host("f32", n)
    for i = 1, n do
      hx[i] = math.sin(i)
      hy[i] = math.cos(i)
    end
    local s = dev:stream{name = "test"}
    local x, y = dev:alloc("f32", n, {stream = s}), dev:alloc("f32", n, {stream = s})
    s:copy(x, hx):copy(y, hy)
    s:launch(k, {grid = (n + 255) // 256, block = 256}, a, x, y, n)
    local out = y:read{stream = s}
    s:close()
    return out, hx, hy
  end

  it("matches the CPU", function()
    local n, a = 10000, 2.5
    local out, hx, hy = run(n, a)
    for i = 1, n do
      local want = a * hx[i] + hy[i]
      assert.is_true(math.abs(out[i] - want) <= 1e-6 * math.max(1, math.abs(want)),
        ("element %d: got %g, want %g"):format(i, out[i], want))
    end
  end)

  it("leaves y alone when a is 0", function()
    local out, _, hy = run(1000, 0.0)
    for i = 1, 1000 do assert.are.equal(hy[i], out[i]) end
  end)
end)
