-- Objects whose finalizer was called by hand (getmetatable(o).__gc(o)) and
-- then used again: every use is a Lua error, never a crash.
local gpu = require "gpulua"
local H = require "helpers"

describe("objects used after their finalizer ran", function()
  local dev = gpu.device(0)

  local function finalize(o) getmetatable(o).__gc(o) end

  -- an error whose value is a string message
  local function refuses(f, ...)
    local _, err = H.refused(f, ...)
    assert.are.equal("string", type(err))
  end

  it("streams", function()
    local s = dev:stream{name = "released"}
    finalize(s)
    refuses(function() return s:sync() end)
    refuses(dev.main.join, dev.main, s)
    refuses(function() return dev:alloc("f32", 4, {stream = s}) end)
    assert.are.equal("gpulua.Stream (released)", tostring(s))
  end)

  -- API.md: closing (freeing) twice is an error and a <close> after a close is
  -- not; a finalizer called by hand counts as the first close, for every type
  it("closing again after the finalizer is an error naming the call; a <close> is not", function()
    local line = H.here() + 3
    local function closed_again(o, method, msg)
      finalize(o)
      local err = H.fails(H.lit(msg) .. "$", function() o[method](o) end)
      assert.matches("^[^:]*released_spec%.lua:" .. line .. ": ", err)
      do local _ <close> = o end -- no error
    end
    closed_again(dev:stream{name = "gc_then_close"}, "close",
      "s:close: the stream is closed already: its finalizer (__gc) released it")
    closed_again(dev:alloc("f32", 4), "free", "x:free: the slice is freed already: its finalizer (__gc) released it")
    closed_again(gpu.comm{devices = {dev}}, "close",
      "comm:close: the communicator is closed already: its finalizer (__gc) released it")
    closed_again(gpu.host("f32", 4), "free",
      "h:free: the host buffer is freed already: its finalizer (__gc) released it")
    closed_again(dev.main:capture(function() end), "close",
      "g:close: the graph is closed already: its finalizer (__gc) released it")
  end)

  it("slices, host buffers, events and kernels", function()
    local x = dev:alloc("f32", 4)
    finalize(x)
    refuses(x.read, x)
    refuses(dev.main.fill, dev.main, x, 1)
    local h = gpu.host("f32", 4)
    finalize(h)
    refuses(function() return h[1] end)
    refuses(dev.main.copy, dev.main, h, dev:zeros("f32", 4))
    local e = dev.main:record()
    finalize(e)
    refuses(e.sync, e)
    refuses(dev.main.wait, dev.main, e)
    dev:sync()
    -- the device still works
    local y = dev:zeros("i32", 3)
    dev.main:fill(y, 5)
    assert.are.same({5, 5, 5}, y:read():totable())
  end)
end)
