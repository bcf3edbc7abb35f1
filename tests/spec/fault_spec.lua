-- Device faults: a kernel that writes to an illegal address or traps poisons
-- its device (every later call on it names the fault and where it was first
-- seen), the process does not hang, and an uncaught fault exits non-zero.
-- Each case runs in a child process: a fault ends the device's context for
-- the rest of the process. On sim the kernels' own code faults the same way
-- (the interpreter's memory check, trap); in the sim's host mode their host
-- implementations raise, which takes the same path (the launch fails; the
-- device is poisoned).
local gpu = require "gpulua"
local H = require "helpers"

local PRELUDE = [[
local gpu = require "gpulua"
local dev = gpu.device(0)
local m = gpu.compile([=[
  extern "C" __global__ void bad_write(float *y, unsigned long long n) {
    float *p = (float *)(unsigned long long)0x10;  // not device memory
    p[threadIdx.x] = y[0];
  }
  extern "C" __global__ void trap(float *y) { if (threadIdx.x == 0) __trap(); y[0] = 1.0f; }
]=], {name = "faults.cu"})
local bad = m:kernel("bad_write", "f32*, u64")
bad:host(function() error("bad_write touched an illegal address") end)
local trap = m:kernel("trap", "f32*")
trap:host(function() error("trap") end)
local y = dev:zeros("f32", 64)
]]

describe("device faults #fault", function()
  if type(arg) ~= "table" then
    pending("needs the interpreter's arg table to start a child process")
    return
  end

  it("poison the device: the fault is named, later calls say where it was seen", function()
    local out, status = H.run_child(PRELUDE .. [[
      dev.main:launch(bad, {grid = 1, block = 32}, y, 64)
      print("sync:", pcall(dev.main.sync, dev.main))
      print("later:", pcall(dev.zeros, dev, "f32", 4))
      print("read:", pcall(y.read, y))
      print("end")
    ]])
    assert.are.equal(0, status, "the child failed:\n" .. out)
    local sync = assert(out:match("sync:\tfalse\t([^\n]*)"), out)
    assert.matches("device 0 is poisoned by a fault", sync)
    if gpu.backend() == "cuda" then
      assert.matches("CUDA_ERROR_ILLEGAL_ADDRESS", sync)
    elseif H.host_kernels() then
      assert.matches("host kernel 'bad_write' %(launched at [^)]*:%d+%) raised: .*illegal address", sync)
    else -- the interpreter's memory check: the kernel, its line, the thread and the launch's line
      assert.matches("wrote 4 bytes at 0x10, which is no memory the sim gave out %(kernel 'bad_write' at "
                     .. "faults%.cu:3, thread %(0,0,0%) of block %(0,0,0%), launched at [^)]*:%d+%)", sync)
    end
    assert.matches("seen at [^\n]*:%d+", sync)
    -- the driver does not say which kernel faulted: the launches not known to
    -- have finished are named, with their script lines
    assert.matches("not known to have finished: kernel 'bad_write' launched on stream 'main' at [^\n]*:%d+", sync)
    for _, what in ipairs{"later", "read"} do
      local msg = assert(out:match(what .. ":\tfalse\t([^\n]*)"), out)
      assert.matches("device 0 is poisoned by a fault", msg)
    end
    assert.matches("\nend\n", out)
  end)

  -- A launch queued behind the fault never runs; what it holds is released
  -- all the same (on sim, a host kernel's record keeps its function: a
  -- skipped launch once kept it for the life of the process)
  it("release what the launches they skip hold", function()
    local out, status = H.run_child(PRELUDE .. [[
      local weak = setmetatable({}, {__mode = "v"})
      local later = m:kernel("trap", "f32*")
      do
        local fn = function() end
        weak[1] = fn
        later:host(fn)
      end
      dev.main:launch(bad, {grid = 1, block = 32}, y, 64)
      local queued = pcall(dev.main.launch, dev.main, later, {grid = 1, block = 32}, y)
      print("sync:", pcall(dev.main.sync, dev.main))
      later:host(function() end)
      collectgarbage()
      collectgarbage()
      print("queued:", queued, "released:", weak[1] == nil)
    ]])
    assert.are.equal(0, status, "the child failed:\n" .. out)
    assert.matches("sync:\tfalse\t[^\n]*poisoned by a fault", out)
    assert.matches("released:\ttrue", out)
  end)

  -- After a fault, no wait returns what the faulted stream should have
  -- produced: each wait below is the first one after the fault (its own
  -- child), and it must raise the fault.
  local FAULTED = [[
    local s = dev:stream{name = "A"}
    local x = dev:zeros("f32", 64)
    dev.main:fill(x, 5)
    dev.main:sync()
    s:join(dev.main)
    s:launch(bad, {grid = 1, block = 32}, y, 64)
    s:fill(x, 7) -- after the fault: never runs
  ]]
  local waits = {
    {"x:read on the faulted stream", "local h = x:read{stream = s}; print('DATA', h[1])"},
    {"e:sync of an event after the fault", "local e = s:record(); e:sync(); print('DATA')"},
    {"e:query of an event after the fault",
     "local e = s:record(); for _ = 1, 1e7 do if e:query() then break end end; print('DATA')"},
    {"s:sync", "s:sync(); print('DATA')"},
    {"dev:sync", "dev:sync(); print('DATA')"},
    {"gpu.sync", "gpu.sync(); print('DATA')"},
    {"a host read that auto makes wait for its copy",
     "gpu.policy('auto'); local h = gpu.host('f32', 64); s:copy(h, x); print('DATA', h[1])"},
    {"a wait auto inserts between streams",
     "gpu.policy('auto'); local t = dev:stream(); local z = dev:zeros('f32', 64, {stream = t}); " ..
     "t:copy(z, x); local h = z:read{stream = t}; print('DATA', h[1])"},
  }
  for _, w in ipairs(waits) do
    it("are reported by " .. w[1] .. ", which returns no data", function()
      local out, status = H.run_child(PRELUDE .. FAULTED .. "print(pcall(function() " .. w[2] .. " end))\n")
      assert.are.equal(0, status, "the child failed:\n" .. out)
      assert.is_nil(out:find("DATA", 1, true), "the wait returned data after the fault:\n" .. out)
      assert.matches("false\t[^\n]*poisoned by a fault", out)
    end)
  end

  it("end the process with a non-zero status when not caught, without hanging", function()
    local out, status = H.run_child(PRELUDE .. [[
      dev.main:launch(trap, {grid = 1, block = 32}, y)
      dev.main:sync()
      print("not reached")
    ]])
    assert.are_not.equal(0, status, out)
    assert.are_not.equal(124, status, "the child hung:\n" .. out)
    assert.matches("poisoned by a fault", out)
    assert.is_nil(out:find("not reached", 1, true))
  end)

  -- An error ending a block runs its <close> variables' __close after the
  -- block's frames are gone; closing on the faulted device fails again, and
  -- that must not replace the error with one that names no script line.
  it("keep the script line when a <close> fails on the device whose fault ends the block", function()
    local first = select(2, PRELUDE:gsub("\n", "")) + 1 -- the first line after the prelude
    local out, status = H.run_child(PRELUDE .. [[
      dev.main:sync()
      print("caught:", pcall(function()
        local s <close> = dev:stream{name = "closing"}
        local x <close> = dev:zeros("f32", 4, {stream = s})
        local h <close> = gpu.host("f32", 4)
        s:launch(trap, {grid = 1, block = 32}, y)
        s:sync()
      end))
    ]])
    assert.are.equal(0, status, out)
    assert.matches("caught:\tfalse\t[^\n]*:" .. (first + 6) .. ": device 0 is poisoned by a fault", out)
    out, status = H.run_child(PRELUDE .. [[
      dev.main:sync()
      local s <close> = dev:stream{name = "top"}
      s:launch(trap, {grid = 1, block = 32}, y)
      s:sync()
    ]])
    assert.are_not.equal(0, status, out)
    assert.are_not.equal(124, status, "the child hung:\n" .. out)
    -- the message's first line (after the program's name: gpulua or lua5.4)
    assert.matches(":" .. (first + 3) .. ": device 0 is poisoned by a fault", out:match("^[^\n]*"))
    assert.matches("in main chunk", out)
  end)

  it("leave other devices working", function()
    if gpu.count() < 2 then
      pending("needs 2 devices: only " .. gpu.count() .. " here")
      return
    end
    local out, status = H.run_child(PRELUDE .. [[
      dev.main:launch(bad, {grid = 1, block = 32}, y, 64)
      pcall(dev.main.sync, dev.main)
      local d1 = gpu.device(1)
      local h = gpu.host("i32", {7, 8, 9})
      local x = d1:alloc("i32", 3)
      d1.main:copy(x, h)
      print("other:", x:read()[3])
    ]])
    assert.are.equal(0, status, out)
    assert.matches("other:\t9", out)
  end)
end)
