-- Finalizers never wait: a module or kernel collected while its launches
-- are queued is released once they have finished, and the launches run as
-- queued.
local gpu = require "gpulua"
local H = require "helpers"

describe("finalizers", function()
  local dev
  before_each(function() dev = gpu.device(0) end)

  -- a stream busy for a while, then a launch of twice (y = 2 * x) on it;
  -- returns the stream, x, y, and a table whose `ran` the sim's host
  -- implementation sets
  local function queue_twice(n)
    local s = dev:stream{name = "busy"}
    H.busy(dev, s, 8)
    local m = gpu.load("tests/data/twice.ptx")
    local k = m:kernel("twice", "const f32*, f32*, u64")
    local seen = {ran = false}
    if gpu.backend() == "sim" then
      k:host(function(_, x, y, count)
        seen.ran = true
        for i = 1, count do y[i] = 2 * x[i] end
      end)
    end
    local x = dev:alloc("f32", n, {stream = s})
    s:copy(x, H.iota("f32", n))
    local y = dev:zeros("f32", n, {stream = s})
    s:launch(k, {grid = (n + 255) // 256, block = 256}, x, y, n)
    return s, x, y, seen
  end

  it("a module and kernel collected with launches queued: the launches still run", function()
    local s, _, y, _ = queue_twice(4096)
    collectgarbage()
    collectgarbage()
    s:sync()
    local out = y:read()
    for i = 1, #out, 512 do assert.are.equal(2 * i, out[i]) end
    assert.are.equal(2 * 4096, out[4096])
  end)

  it("collecting them does not wait for the launches (sim: the host kernel runs at the sync, not in GC) #simhost",
     function()
    if not H.host_kernels() then
      return pending(H.HOST_MODE_ONLY .. "; on cuda a finalizer's wait cannot be told apart from the work's own time")
    end
    local s, _, y, seen = queue_twice(64)
    collectgarbage()
    collectgarbage()
    assert.is_false(seen.ran, "a finalizer waited for the launch")
    s:sync()
    assert.is_true(seen.ran)
    assert.are.equal(128, y:read()[64])
  end)
end)
