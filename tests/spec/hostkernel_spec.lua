-- A sim host kernel (k:host) may read and write its own views and run any
-- Lua that does not touch gpulua. A gpulua call from inside it (queue, sync,
-- allocate, create or free an object, touch another buffer) is an error
-- naming the call, raised in the host kernel: the launch fails and poisons
-- the device like any failing kernel, and nothing hangs. So is another Lua
-- state's gpulua called from inside it (tests/c/test_lifetimes.c). Each case
-- runs in a child process (a poisoned device stays poisoned), in the sim's host
-- mode (GPULUA_SIM_KERNELS=host), where launches run their k:host functions.
local gpu = require "gpulua"
local H = require "helpers"

local HOST_MODE = {GPULUA_SIM_KERNELS = "host"}

local PRELUDE = [[
local gpu = require "gpulua"
local dev = gpu.device(0)
local m = gpu.load("tests/data/twice.ptx")
local k = m:kernel("twice", "const f32*, f32*, u64")
local x, y = dev:zeros("f32", 8), dev:zeros("f32", 8)
local other = gpu.host("f32", 8)
local s = dev:stream{name = "A"}
]]

describe("host kernels", function()
  if gpu.backend() ~= "sim" then
    pending("sim only: host kernels (k:host) run on the sim backend alone")
    return
  end
  if type(arg) ~= "table" then
    pending("needs the interpreter's arg table to start a child process")
    return
  end

  local calls = {
    {"dev:sync", "dev:sync()"},
    {"gpu.sync", "gpu.sync()"},
    {"x:read", "x:read()"},
    {"s:fill", "s:fill(y, 1)"},
    {"s:copy", "s:copy(y, xv)"},
    {"dev:alloc", "dev:alloc('f32', 4)"},
    {"dev:stream", "dev:stream()"},
    {"x:free", "x:free()"},
    {"gpu.host", "gpu.host('f32', 4)"},
    {"h[i] of another buffer", "return other[1]"},
    {"s:record", "s:record()"},
  }
  for _, c in ipairs(calls) do
    it("refuse " .. c[1] .. ": the launch fails naming the call, nothing hangs", function()
      local out, status = H.run_child(PRELUDE .. ([[
        k:host(function(_, xv, yv, n)
          %s
        end)
        dev.main:launch(k, {grid = 1, block = 32}, x, y, 8)
        print("sync:", pcall(dev.main.sync, dev.main))
      ]]):format(c[2]), HOST_MODE, 30)
      assert.are_not.equal(124, status, "the child hung:\n" .. out)
      assert.are.equal(0, status, "the child failed:\n" .. out)
      local msg = assert(out:match("sync:\tfalse\t([^\n]*)"), out)
      assert.matches("host kernel 'twice'", msg)
      assert.matches("cannot be called from inside a host kernel", msg)
    end)
  end

  -- the kernel holds its device until it returns, which it never does: the
  -- exit must not wait for that device (a teardown that drains it would hang)
  for _, close in ipairs{true, false} do
    it(("os.exit(code, %s) inside one exits with code: nothing waits for the kernel's device"):format(close),
      function()
      local out, status = H.run_child(PRELUDE .. ([[
        k:host(function(_, xv, yv, n) os.exit(7, %s) end)
        dev.main:launch(k, {grid = 1, block = 32}, x, y, 8)
        s:fill(dev:zeros("f32", 64, {stream = s}), 1) -- work on another stream, and on another device
        if gpu.count() > 1 then gpu.device(1):zeros("f32", 64) end
        gpu.sync()
        print("not reached")
      ]]):format(close), HOST_MODE, 30)
      assert.are_not.equal(124, status, "the child hung:\n" .. out)
      assert.are.equal(7, status, "the child failed:\n" .. out)
      assert.are.equal("exit status 7", (out:gsub("^%s+", ""):gsub("%s+$", ""))) -- nothing printed
    end)
  end

  it("views made from their views expire with them: no read or write after the call", function()
    local out, status = H.run_child(PRELUDE .. [[
      local kept
      k:host(function(_, xv, yv, n) kept = yv:view(0) end)
      dev.main:launch(k, {grid = 1, block = 32}, x, y, 8)
      dev.main:sync()
      print("read:", pcall(function() return kept[1] end))
      print("write:", pcall(function() kept[1] = 5 end))
      y:free()
      print("after free:", pcall(function() kept[1] = 5 end))
    ]], HOST_MODE, 30)
    assert.are.equal(0, status, out)
    for _, what in ipairs{"read", "write", "after free"} do
      assert.matches(what .. ":\tfalse\t[^\n]*only valid during the host kernel call", out)
    end
  end)

  it("views of const T* arguments are read-only", function()
    local out, status = H.run_child(PRELUDE .. [[
      k:host(function(_, xv, yv, n)
        local ok, err = pcall(function() xv[1] = 1 end)
        local ok2, err2 = pcall(function() xv:view(1):fill(2) end)
        print("write:", ok, err)
        print("fill:", ok2, err2)
        yv[1] = xv[1]
      end)
      dev.main:launch(k, {grid = 1, block = 32}, x, y, 8)
      print("sync:", pcall(dev.main.sync, dev.main))
    ]], HOST_MODE, 30)
    assert.are.equal(0, status, out)
    assert.matches("write:\tfalse\t[^\n]*read%-only", out)
    assert.matches("fill:\tfalse\t[^\n]*read%-only", out)
    assert.matches("sync:\ttrue", out)
  end)

  it("may read and write their views, and views made from them, during the call", function()
    local out, status = H.run_child(PRELUDE .. [[
      dev.main:fill(x, 3)
      k:host(function(_, xv, yv, n)
        local w = yv:view(2, 4)
        for i = 1, #w do w[i] = xv[i] + i end
        yv[1] = #xv + n
      end)
      dev.main:launch(k, {grid = 1, block = 32}, x, y, 8)
      local h = y:read()
      print("y:", h[1], h[3], h[6], h[7])
    ]], HOST_MODE, 30)
    assert.are.equal(0, status, out)
    assert.matches("y:\t16%.0\t4%.0\t7%.0\t0%.0", out)
  end)

  it("that fail in their computation fault the device, naming the kernel, its launch line and the error", function()
    local out, status = H.run_child(PRELUDE .. [[
      local big = gpu.compile("extern \"C\" __global__ void big(unsigned long long *y) { y[0] = 0; }",
                              {name = "big.cu"}):kernel("big", "u64*")
      big:host(function(_, yv)
        yv[1] = 2.0 ^ 64 -- out of range for a u64
      end)
      local u = dev:zeros("u64", 4)
      dev.main:launch(big, {grid = 1, block = 1}, u) -- LAUNCH
      print("sync:", pcall(dev.main.sync, dev.main))
    ]], HOST_MODE, 30)
    assert.are.equal(0, status, out)
    local msg = assert(out:match("sync:\tfalse\t([^\n]*)"), out)
    local before = select(2, PRELUDE:gsub("\n", "")) -- the child's lines before the test's own
    assert.matches("device 0 is poisoned by a fault", msg)
    assert.matches("host kernel 'big' %(launched at [^)]*:" .. (before + 7) .. "%) raised: [^\n]*:" ..
                   (before + 4) .. ": host buffer u64%[4%]: element 1: out of range for u64", msg)
  end)
end)
