-- m:global(name [, dtype]): a slice of a module's __device__ or __constant__
-- variable, on both backends. On sim the variables come from the module's
-- PTX (laid out and initialised at load), and a kernel reads them there as
-- on a GPU (not in the sim's host mode, where it runs its host function).
local gpu = require "gpulua"
local H = require "helpers"

local SRC = [[
extern "C" {
__constant__ float scale;
__constant__ double bias[2] = {1.5, -2.0};
__device__ int table[4] = {1, 2, 3, 4};
__device__ unsigned short odd[3];
__global__ void apply(float *out) {
  int i = threadIdx.x;
  if (i < 4) out[i] = scale * table[i] + (float)bias[0];
}
}
]]

-- The module, or nil and why when NVRTC is missing.
local function compile()
  local ok, m = pcall(gpu.compile, SRC, {name = "globals.cu"})
  if ok then return m end
  assert.matches("cannot compile", m)
  return nil, m
end

describe("m:global", function()
  local dev, main, m
  before_each(function()
    dev = gpu.device(0)
    main = dev.main
    local why
    m, why = compile()
    if not m then pending("NVRTC is not available: " .. tostring(why)) end
  end)

  it("sets a __constant__ by a copy from the host and reads it back", function()
    if not m then return end
    local c = m:global("scale", "f32")
    assert.are.equal(1, #c)
    assert.are.equal(0, c:read()[1]) -- no initializer: zero, as on the GPU
    main:copy(c, gpu.host("f32", {2.5}))
    assert.are.equal(2.5, c:read()[1])
    -- a second slice of the variable sees the same memory
    assert.are.equal(2.5, m:global("scale", "f32"):read()[1])
    assert.matches("variable 'scale' of module 'globals.cu'", tostring(c))
  end)

  it("reads an initialised __device__ array, as any dtype that divides its size", function()
    if not m then return end
    local t = m:global("table", "i32")
    assert.are.equal(4, #t)
    local h = t:read()
    for i = 1, 4 do assert.are.equal(i, h[i]) end
    local bytes = m:global("table") -- u8 by default
    assert.are.equal(16, #bytes)
    local b = bytes:read()
    assert.are.equal(1, b[1])
    assert.are.equal(0, b[2])
    assert.are.equal(2, b[5])
    local bias = m:global("bias", "f64"):read()
    assert.are.equal(1.5, bias[1])
    assert.are.equal(-2.0, bias[2])
    -- fills and views work as on any slice
    main:fill(t:view(2, 2), 9)
    h = t:read()
    assert.are.same({1, 2, 9, 9}, {h[1], h[2], h[3], h[4]})
  end)

  it("names an unknown variable, and a dtype that does not divide its size", function()
    if not m then return end
    H.fails(H.lit("m:global: module 'globals.cu' has no variable named 'nope' (a __device__ or __constant__ "
                  .. "variable; one declared in a namespace has a mangled name)"),
            function() m:global("nope") end)
    H.fails(H.lit("m:global: module 'globals.cu' has no variable named 'apply'"), function() m:global("apply") end)
    H.fails(H.lit("m:global: variable 'odd' of module 'globals.cu' is 6 bytes, not a whole number of f32 "
                  .. "(4 bytes each)"),
            function() m:global("odd", "f32") end)
    assert.are.equal(3, #m:global("odd", "u16"))
    H.fails("unknown dtype 'f128'", function() m:global("scale", "f128") end)
    H.fails("bad argument #1 to 'global' %(string expected, got table%)", function() m:global({}) end)
  end)

  it("refuses x:free() on a variable's slice, naming why; a view and <close> let the handle go", function()
    if not m then return end
    local t = m:global("table", "i32")
    H.fails(H.lit("x:free: slice i32[4] on device 0 (variable 'table' of module 'globals.cu') cannot be freed: "
                  .. "its memory belongs to the module and goes with it"),
            function() t:free() end)
    local v = t:view(1, 2)
    v:free()
    do
      local c <close> = m:global("table", "i32")
      assert.are.equal(1, c:read()[1])
    end
    assert.are.equal(4, t:read()[4]) -- the variable is still there
  end)

  it("keeps the module loaded while a slice of its variable lives", function()
    if not m then return end
    local t = m:global("table", "i32")
    main:copy(t, gpu.host("i32", {7, 8, 9, 10}))
    m = nil
    collectgarbage()
    collectgarbage()
    local h = t:read()
    assert.are.same({7, 8, 9, 10}, {h[1], h[2], h[3], h[4]})
  end)

  it("orders copies of a variable between streams like any slice's (strict: an error naming both)", function()
    if not m then return end
    if gpu.policy() ~= "strict" then
      pending("the conflict is an error under strict only")
      return
    end
    local other = dev:stream{name = "other"}
    local c = m:global("scale", "f32")
    other:copy(c, gpu.host("f32", {1}))
    H.fails("stream 'other'", function() main:copy(gpu.host("f32", 1), c) end)
    other:sync()
  end)

  it("is read by a kernel that uses the constant", function()
    if not m then return end
    if H.host_kernels() then
      pending("in the sim's host mode a kernel runs its host function, which cannot read module variables")
      return
    end
    main:copy(m:global("scale", "f32"), gpu.host("f32", {0.5}))
    local out = dev:zeros("f32", 4)
    main:launch(m:kernel("apply", "f32*"), {grid = 1, block = 4}, out)
    local h = out:read()
    for i = 1, 4 do assert.are.equal(0.5 * i + 1.5, h[i]) end
  end)

  -- A launch reads each __constant__ variable of its module that the script reached and may write
  -- each __device__ one: the checker orders them like its slice arguments.
  describe("in a launch", function()
    local other, k, out
    before_each(function()
      if not m then return end
      other = dev:stream{name = "other"}
      k = m:kernel("apply", "f32*")
      k:host(function() end) -- the sim's host mode: the ordering is the same
      out = dev:zeros("f32", 4)
    end)
    local function strict()
      if gpu.policy() == "strict" then return true end
      pending("the conflict is an error under strict only")
    end

    it("a __constant__ written on one stream is read by a launch on another: an error naming it", function()
      if not m or not strict() then return end
      local line = H.here() + 1
      other:copy(m:global("scale", "f32"), gpu.host("f32", {2}))
      local err = H.fails("s:launch of 'apply': variable 'scale' of module 'globals%.cu' is read on stream 'main'",
                          main.launch, main, k, {grid = 1, block = 4}, out)
      assert.matches("stream 'other' %(device 0%) may still be writing it %(queued at [^)]*"
                     .. H.at("module_global_spec.lua", line), err)
      main:join(other)
      main:launch(k, {grid = 1, block = 4}, out) -- ordered now
      main:sync()
    end)

    it("two launches reading a __constant__ on two streams do not conflict", function()
      if not m or not strict() then return end
      main:copy(m:global("scale", "f32"), gpu.host("f32", {2}))
      other:join(main)
      local out2 = dev:zeros("f32", 4, {stream = other})
      main:launch(k, {grid = 1, block = 4}, out)
      other:launch(k, {grid = 1, block = 4}, out2)
      main:sync()
      other:sync()
    end)

    it("a __device__ variable a launch may write is not read on another stream unordered", function()
      if not m or not strict() then return end
      local t = m:global("table", "i32")
      main:launch(k, {grid = 1, block = 4}, out)
      H.fails("variable 'table' of module 'globals%.cu'%) is read on stream 'other'",
              function() other:copy(gpu.host("i32", 4), t) end)
      main:sync()
    end)
  end)
end)
