-- examples/saxpy_spec.lua: testing GPU code with Busted, against a CPU reference.
-- Runs on the GPU and on the sim backend, which runs the kernel's own code (its PTX, every
-- access bounds-checked): on both it tests the kernel itself (its indexing, its grid covering
-- n), with the ordering, the launch checks and the slices around it.
--   gpulua /usr/bin/busted examples/saxpy_spec.lua
--   busted --lua=gpulua examples/saxpy_spec.lua          (gpulua on PATH)
--   LUA_CPATH_5_4="build/?.so;;" lua5.4 /usr/bin/busted examples/saxpy_spec.lua
local gpu = require "gpulua"
require "gpulua.assert" -- assert.slice_equal and assert.slice_near

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
  end)

  -- y = a x + y on stream s for the first `count` of n elements (default
  -- all); returns the slice y (allocated on s: the assertions read it there)
  -- and the host buffers x and y started from.
  local function saxpy(s, n, a, count)
    local hx, hy = gpu.host("f32", n), gpu.host("f32", n)
    for i = 1, n do
      hx[i] = math.sin(i)
      hy[i] = math.cos(i)
    end
    local x, y = dev:alloc("f32", n, {stream = s}), dev:alloc("f32", n, {stream = s})
    s:copy(x, hx):copy(y, hy)
    count = count or n
    s:launch(k, {grid = (count + 255) // 256, block = 256}, a, x, y, count)
    return y, hx, hy
  end

  it("matches the CPU", function()
    local s <close> = dev:stream{name = "test"}
    local n, a = 10000, 2.5
    local y, hx, hy = saxpy(s, n, a)
    local want = {}
    for i = 1, n do want[i] = a * hx[i] + hy[i] end -- in double precision
    assert.slice_near(y, want, {abs = 1e-6, rel = 1e-6})
  end)

  it("leaves y alone when a is 0", function()
    local s <close> = dev:stream{name = "test"}
    local y, _, hy = saxpy(s, 1000, 0.0)
    assert.slice_equal(y, hy)
  end)

  it("writes no element past n", function()
    local s <close> = dev:stream{name = "test"}
    local y, _, hy = saxpy(s, 1000, 2.0, 900)
    assert.slice_equal(y:view(900), hy:view(900)) -- offsets are 0-based: elements 901 to 1000
    assert.is_not.slice_equal(y:view(0, 900), hy:view(0, 900))
  end)
end)
