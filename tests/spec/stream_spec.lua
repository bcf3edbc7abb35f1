local gpu = require "gpulua"
local H = require "helpers"

local N = 1 << 16 -- elements moved in the ordering specs

describe("streams", function()
  local dev
  before_each(function() dev = gpu.device(0) end)

  describe("creation", function()
    it("takes a name and a priority", function()
      local s = dev:stream{name = "h2d", priority = 0}
      assert.are.equal("h2d", s.name)
      assert.is_true(rawequal(dev, s.device))
      local hi = dev:stream{name = "urgent", priority = -1}
      assert.are.equal("urgent", hi.name)
      assert.matches("^gpulua%.Stream%('h2d' on device 0: idle, 0 operations queued%)$", tostring(s))
    end)

    it("prints its device, pending work and last operation", function()
      local s = dev:stream{name = "shown"}
      local x = dev:zeros("f32", 8, {stream = s})
      s:fill(x, 2)
      s:sync()
      assert.are.equal("gpulua.Stream('shown' on device 0: idle, 3 operations queued, last a fill)", tostring(s))
      s:launch(gpu.kernels.scale, {grid = 1, block = 32}, 2, x, x, #x)
      s:sync()
      assert.matches("^gpulua%.Stream%('shown' on device 0: idle, 4 operations queued, "
        .. "last a launch of scale_f32 %(at [^)]*stream_spec%.lua:%d+%)%)$", tostring(s))
    end)

    it("has a default name and priority", function()
      local a, b = dev:stream(), dev:stream{}
      assert.matches("^stream%d+$", a.name)
      assert.matches("^stream%d+$", b.name)
      assert.are_not.equal(a.name, b.name)
      assert.is_true(rawequal(dev, a.device))
    end)

    it("works: a stream created with options carries data", function()
      local s = dev:stream{name = "work", priority = -1}
      local x = dev:alloc("i32", 16, {stream = s})
      s:copy(x, H.iota("i32", 16, 5))
      H.check_iota(x:read{stream = s}, 5)
    end)

    it("rejects options of the wrong type", function()
      H.fails("dev:stream: option 'priority' expected an integer, got string", dev.stream, dev, {priority = "high"})
      H.fails("option 'priority' expected an integer, got number 1%.5", dev.stream, dev, {priority = 1.5})
      H.fails("option 'priority' expected an integer, got table", dev.stream, dev, {priority = {}})
      local line = H.here() + 1
      local err = H.fails("priority", function() local t = dev:stream{priority = 0 / 0}; return t end)
      assert.matches("^[^:]*stream_spec%.lua:" .. line .. ": dev:stream: option 'priority' expected an integer, got "
        .. "number NaN$", err)
      H.fails("s:fork: option 'priority' expected an integer, got number NaN$", dev.main.fork, dev.main,
        {priority = 0 / 0})
      H.fails("dev:stream: option 'name' expected a string, got number", dev.stream, dev, {name = 3})
      H.fails("option 'name' expected a string, got boolean", dev.stream, dev, {name = true})
      H.fails("table expected, got string", dev.stream, dev, "h2d")
      H.fails("table expected, got number", dev.stream, dev, 0)
    end)

    it("rejects a priority out of the device's range, naming the range and the value", function()
      local range = "option 'priority' must be from %-?%d+ %(highest%) to %-?%d+ %(lowest%) on device 0, got "
      H.fails("dev:stream: " .. range .. "1$", dev.stream, dev, {priority = 1})
      H.fails("dev:stream: " .. range .. "%-1000$", dev.stream, dev, {priority = -1000})
      H.fails("s:fork: " .. range .. "%-1000$", dev.main.fork, dev.main, {priority = -1000})
    end)

    it("rejects an empty or too long name", function()
      H.fails("option 'name' must be 1 to 63 characters long", dev.stream, dev, {name = ""})
      H.fails("option 'name' must be 1 to 63 characters long", dev.stream, dev, {name = ("n"):rep(64)})
      assert.are.equal(("n"):rep(63), dev:stream{name = ("n"):rep(63)}.name)
    end)
  end)

  describe("ordering", function()
    it("join: the joining stream's later work sees the other stream's queued work", function()
      local a, b = dev:stream{name = "a"}, dev:stream{name = "b"}
      local h = H.iota("i32", N, 1)
      local x = dev:alloc("i32", N, {stream = a})
      local y = dev:zeros("i32", N, {stream = b})
      H.busy(dev, a)
      a:copy(x, h)
      assert.is_true(rawequal(b, b:join(a)))
      b:copy(y, x)
      H.check_iota(y:read{stream = b}, 1)
    end)

    it("wait: the waiting stream's later work sees the work before the event", function()
      local a, b = dev:stream{name = "a"}, dev:stream{name = "b"}
      local x = dev:alloc("i32", N, {stream = a})
      local y = dev:zeros("i32", N, {stream = b})
      local src = H.iota("i32", N, 7)
      H.busy(dev, a)
      a:copy(x, src)
      local e = a:record()
      assert.is_true(rawequal(b, b:wait(e)))
      b:copy(y, x)
      H.check_iota(y:read{stream = b}, 7)
    end)

    it("fork: the new stream's work starts after the parent's queued work", function()
      local a = dev:stream{name = "parent"}
      local x = dev:alloc("i32", N, {stream = a})
      local src = H.iota("i32", N, -3)
      H.busy(dev, a)
      a:copy(x, src)
      local c = a:fork{name = "child"}
      assert.are.equal("child", c.name)
      assert.is_true(rawequal(dev, c.device))
      assert.is_false(rawequal(a, c))
      H.check_iota(x:read{stream = c}, -3)
    end)

    it("fork: the child has a default name and takes a priority", function()
      local c = dev.main:fork()
      assert.matches("^stream%d+$", c.name)
      local d = dev.main:fork{priority = -1}
      assert.matches("^stream%d+$", d.name)
      H.fails("option 'name' expected a string, got number", dev.main.fork, dev.main, {name = 1})
    end)

    H.it_devices(2, "join of a stream on another device orders across devices", function()
      local d1 = gpu.device(1)
      local a = dev:stream{name = "on0"}
      local b = d1:stream{name = "on1"}
      local x = dev:alloc("i32", N, {stream = a})
      local y = d1:zeros("i32", N, {stream = b})
      local src = H.iota("i32", N, 11)
      H.busy(dev, a)
      a:copy(x, src)
      b:join(a)
      b:copy(y, x) -- a peer copy, queued on device 1
      H.check_iota(y:read{stream = b}, 11)
    end)

    it("rejects joining itself and waiting for a non-event", function()
      local s = dev:stream{name = "self"}
      H.fails("a stream cannot join itself", function() return s:join(s) end)
      H.fails("gpulua%.Stream expected, got number", function() return s:join(5) end)
      H.fails("gpulua%.Stream expected, got no value", function() return s:join() end)
      H.fails("gpulua%.Event expected, got string", function() return s:wait("e") end)
      H.fails("gpulua%.Event expected, got gpulua%.Stream", function() return s:wait(dev.main) end)
    end)
  end)

  describe("sync and query", function()
    it("sync waits for the queued work and returns the stream", function()
      local s = dev:stream{name = "sync"}
      local x = dev:alloc("i32", N, {stream = s})
      s:copy(x, H.iota("i32", N, 1))
      local out = gpu.host("i32", N)
      s:copy(out, x)
      assert.is_true(rawequal(s, s:sync()))
      assert.is_true(s:query())
      local old = gpu.policy("strict")
      finally(function() gpu.policy(old) end)
      H.check_iota(out, 1) -- no error: the copy is known to be done
    end)

    it("query becomes true once the work is done, and then the results may be read", function()
      local s = dev:stream{name = "query"}
      local x = dev:alloc("i32", N, {stream = s})
      s:fill(x, 42)
      local out = gpu.host("i32", N)
      s:copy(out, x)
      local t0 = os.time()
      local done = s:query()
      while not done and os.time() - t0 < 30 do done = s:query() end
      assert.is_true(done)
      assert.are.equal("boolean", type(done))
      local old = gpu.policy("strict")
      finally(function() gpu.policy(old) end)
      H.check_all(out, 42)
    end)

    it("query of an idle stream is true", function()
      local s = dev:stream()
      assert.is_true(s:query())
      assert.is_true(dev.main:sync():query())
    end)
  end)

  describe("close", function()
    it("makes every later use an error saying the stream is closed", function()
      local s = dev:stream{name = "gone"}
      local other = dev:stream{name = "other"}
      local x = dev:zeros("i32", 4)
      dev:sync()
      s:close()
      local msg = "stream 'gone' of device 0 is closed %(closed at [^)]*stream_spec%.lua:%d+%)"
      H.fails(msg, function() return s:sync() end)
      H.fails(msg, function() return s:query() end)
      H.fails(msg, function() return s:record() end)
      H.fails(msg, function() return s:wait(other:record()) end)
      H.fails(msg, function() return s:join(other) end)
      H.fails(msg, function() return other:join(s) end)
      H.fails(msg, function() return s:fork() end)
      H.fails(msg, function() return s:copy(x, gpu.host("i32", 4)) end)
      H.fails(msg, function() return s:fill(x, 1) end)
      H.fails(msg, function() return x:read{stream = s} end)
      H.fails(msg, function() return dev:alloc("i32", 4, {stream = s}) end)
      -- its name and device stay readable
      assert.are.equal("gone", s.name)
      assert.is_true(rawequal(dev, s.device))
      assert.matches(", closed %(at [^)]*stream_spec%.lua:%d+%)%)$", tostring(s))
    end)

    it("keeps the queued work: dev.main waits for it", function()
      local s = dev:stream{name = "closing"}
      local x = dev:alloc("i32", N, {stream = s})
      local out = gpu.host("i32", N)
      local src = H.iota("i32", N, 3)
      H.busy(dev, s)
      s:copy(x, src)
      s:copy(out, x)
      s:close()
      dev.main:sync()
      H.check_iota(out, 3)
      H.check_iota(x:read(), 3)
    end)

    it("refuses to close the main stream", function()
      H.fails("stream 'main' of device 0 cannot be closed", function() return dev.main:close() end)
      dev.main:sync() -- (collected objects may have queued frees and closes on main)
      assert.is_true(dev.main:query()) -- still usable
    end)

    it("refuses a second close, naming where the first one was", function()
      local s = dev:stream{name = "twice"}
      s:close()
      H.fails("stream 'twice' of device 0 is already closed %(closed at [^)]*stream_spec%.lua:%d+%)",
              function() return s:close() end)
    end)

    it("happens for a <close> variable at the end of its scope, keeping the work", function()
      local kept
      local out = gpu.host("i32", N)
      do
        local s <close> = dev:stream{name = "scoped"}
        kept = s
        local x = dev:alloc("i32", N, {stream = s})
        local src = H.iota("i32", N, 9)
        H.busy(dev, s)
        s:copy(x, src)
        s:copy(out, x)
      end
      H.fails("stream 'scoped' of device 0 is closed", function() return kept:sync() end)
      dev.main:sync()
      H.check_iota(out, 9)
    end)

    it("a <close> variable already closed by hand closes quietly", function()
      local kept
      assert.has_no.errors(function()
        local s <close> = dev:stream{name = "byhand"}
        kept = s
        s:close()
      end)
      H.fails("stream 'byhand' of device 0 is closed", function() return kept:query() end)
    end)

    it("happens when the stream is collected, keeping the work", function()
      local out = gpu.host("i32", N)
      local probe = setmetatable({}, {__mode = "v"})
      local function queue() -- its locals are gone when it returns
        local s = dev:stream{name = "collected"}
        probe[1] = s
        local x = dev:alloc("i32", N, {stream = s})
        local src = H.iota("i32", N, 21)
        H.busy(dev, s)
        s:copy(x, src)
        s:copy(out, x)
      end
      queue()
      collectgarbage()
      collectgarbage()
      assert.is_nil(probe[1], "the stream was not collected")
      -- main waited for it, but a finalizer's wait orders nothing for the
      -- checker: main:sync() alone does not cover the collected stream
      assert.has_error(function() return out[1] end)
      dev:sync()
      H.check_iota(out, 21)
    end)
  end)

  it("rejects stream methods called on something else", function()
    local s = dev:stream()
    H.fails("gpulua%.Stream expected, got number", s.sync, 1)
    H.fails("gpulua%.Stream expected, got no value", s.query)
    H.fails("gpulua%.Stream expected, got table", s.close, {})
  end)
end)
