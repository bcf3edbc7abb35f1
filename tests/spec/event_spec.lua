local gpu = require "gpulua"
local H = require "helpers"

local N = 1 << 16

describe("events", function()
  local dev
  before_each(function() dev = gpu.device(0) end)

  it("record returns an event", function()
    local s = dev:stream{name = "rec"}
    local e = s:record()
    assert.are.equal("userdata", type(e))
    assert.matches("^gpulua%.Event%(on 'rec' of device 0%)$", tostring(e))
    assert.matches("^gpulua%.Event%(on 'rec' of device 0, timing%)$", tostring(s:record{timing = true}))
    assert.are.equal("userdata", type(s:record{timing = false}))
    assert.is_false(rawequal(e, s:record()))
  end)

  describe("s:record(e)", function()
    it("records the same event again, after the work queued since, and returns it", function()
      local s, t = dev:stream{name = "rr_s"}, dev:stream{name = "rr_t"}
      local x = dev:zeros("i32", 64, {stream = s})
      local e = s:record()
      s:fill(x, 3)
      H.fails("stream 'rr_s' %(device 0%) may still be writing it", t.fill, t, x, 4) -- e is before the fill
      assert.is_true(rawequal(e, s:record(e)))
      t:wait(e)
      t:fill(x, 4) -- now ordered after the fill
      H.check_all(x:read{stream = t}, 4)
      assert.is_true(e:sync():query())
    end)

    it("keeps the event's timing, and moves it to another stream or device", function()
      local s = dev:stream{name = "rr_timing"}
      local a, b = s:record{timing = true}, s:record{timing = true}
      s:fill(dev:zeros("u8", 1 << 20, {stream = s}), 1)
      assert.is_true(rawequal(b, s:record(b)))
      assert.is_number(a:elapsed(b))
      local other = dev:stream{name = "rr_other"}
      other:record(b)
      assert.matches("on 'rr_other' of device 0, timing", tostring(b))
      if gpu.count() > 1 then
        local d1 = gpu.device(1)
        local y = d1:zeros("f32", 8)
        d1.main:fill(y, 2)
        d1.main:record(b)
        assert.matches("on 'main' of device 1", tostring(b))
        local t = d1:stream{name = "rr_dev1"}
        t:wait(b)
        t:fill(y, 5)
        H.check_all(y:read{stream = t}, 5)
      end
    end)

    it("allocates nothing: a loop of record and wait does not grow the Lua heap", function()
      local s, t = dev:stream{name = "rr_loop_s"}, dev:stream{name = "rr_loop_t"}
      local e = s:record()
      for _ = 1, 100 do t:wait(s:record(e)) end -- warm up
      collectgarbage()
      collectgarbage("stop")
      local before = collectgarbage("count")
      for _ = 1, 20000 do t:wait(s:record(e)) end
      local grown = collectgarbage("count") - before
      collectgarbage("restart")
      assert.is_true(grown < 1, ("the heap grew by %.1f KiB"):format(grown))
      t:sync()
    end)

    it("refuses what is not an event or options", function()
      local s = dev:stream{name = "rr_bad"}
      H.fails("expected an event to record again or a table of options, got gpulua.Slice", s.record, s,
              dev:zeros("f32", 4))
      H.fails("table expected, got number", s.record, s, 5)
    end)
  end)

  it("sync waits for the work before the event; query is then true", function()
    local s = dev:stream{name = "ev"}
    local x = dev:alloc("i32", N, {stream = s})
    H.busy(dev, s)
    s:fill(x, 17)
    local out = gpu.host("i32", N)
    s:copy(out, x)
    local e = s:record()
    assert.is_true(rawequal(e, e:sync()))
    assert.is_true(e:query())
    local old = gpu.policy("strict")
    finally(function() gpu.policy(old) end)
    H.check_all(out, 17) -- no error: the event's sync covers the copy
  end)

  it("sync covers the copies before the event even while later work is still queued", function()
    local s = dev:stream{name = "evlater"}
    local x = dev:alloc("i32", N, {stream = s})
    s:fill(x, 23)
    local out = gpu.host("i32", N)
    s:copy(out, x)
    local e = s:record()
    H.busy(dev, s, 16) -- queued after the event
    e:sync()
    local old = gpu.policy("strict")
    finally(function() gpu.policy(old) end)
    H.check_all(out, 23)
    s:sync()
  end)

  it("query becomes true once the stream reaches the event", function()
    local s = dev:stream{name = "evq"}
    local x = dev:alloc("i32", N, {stream = s})
    s:fill(x, -4)
    local out = gpu.host("i32", N)
    s:copy(out, x)
    local e = s:record()
    local t0 = os.time()
    local done = e:query()
    while not done and os.time() - t0 < 30 do done = e:query() end
    assert.is_true(done)
    local old = gpu.policy("strict")
    finally(function() gpu.policy(old) end)
    H.check_all(out, -4)
  end)

  it("an event recorded on an idle stream is done at once after sync", function()
    local e = dev.main:record()
    e:sync()
    assert.is_true(e:query())
  end)

  it("lets another stream wait for it", function()
    local a, b = dev:stream{name = "a"}, dev:stream{name = "b"}
    local x = dev:alloc("f64", N, {stream = a})
    H.busy(dev, a)
    a:fill(x, 2.5)
    b:wait(a:record())
    H.check_all(x:read{stream = b}, 2.5)
  end)

  H.it_devices(2, "lets a stream of another device wait for it", function()
    local d1 = gpu.device(1)
    local a = dev:stream{name = "a0"}
    local b = d1:stream{name = "b1"}
    local x = dev:alloc("i32", N, {stream = a})
    local y = d1:zeros("i32", N, {stream = b})
    local src = H.iota("i32", N, 100)
    H.busy(dev, a)
    a:copy(x, src)
    b:wait(a:record())
    b:copy(y, x)
    H.check_iota(y:read{stream = b}, 100)
  end)

  it("outlives the stream it was recorded on", function()
    local s = dev:stream{name = "short"}
    local x = dev:alloc("i32", N, {stream = s})
    H.busy(dev, s)
    s:fill(x, 8)
    local e = s:record()
    s:close()
    assert.is_true(rawequal(e, e:sync()))
    assert.is_true(e:query())
    local b = dev:stream()
    b:wait(e)
    H.check_all(x:read{stream = b}, 8)
  end)

  describe("elapsed", function()
    it("gives the milliseconds between two timing events", function()
      local s = dev:stream{name = "timed"}
      local x = dev:alloc("u8", 16 << 20, {stream = s})
      local e1 = s:record{timing = true}
      for v = 1, 4 do s:fill(x, v) end
      local e2 = s:record{timing = true}
      local ms = e1:elapsed(e2)
      assert.are.equal("number", type(ms))
      assert.is_true(ms >= 0, "elapsed returned " .. tostring(ms))
      assert.is_true(ms < 60000, "elapsed returned " .. tostring(ms))
      assert.is_true(e1:query() and e2:query()) -- elapsed waited for both
      assert.are.equal(0, e1:elapsed(e1))
      H.check_all(x:read{stream = s}, 4)
    end)

    it("needs both events recorded with timing = true", function()
      local s = dev:stream()
      local t = s:record{timing = true}
      local u = s:record()
      local f = s:record{timing = false}
      H.fails("both events must be recorded with timing = true %(the first was not%)",
              function() return u:elapsed(t) end)
      H.fails("both events must be recorded with timing = true %(the second was not%)",
              function() return t:elapsed(f) end)
      H.fails("timing = true", function() return u:elapsed(f) end)
    end)

    H.it_devices(2, "refuses events of two devices, as CUDA does", function()
      local t0 = dev.main:record{timing = true}
      local t1 = gpu.device(1).main:record{timing = true}
      H.fails(H.lit("e:elapsed: the events are on two devices (the first on device 0, the second on device 1)"),
              function() return t0:elapsed(t1) end)
      H.fails("the first on device 1, the second on device 0", function() return t1:elapsed(t0) end)
      assert.are.equal(0, t1:elapsed(t1)) -- each still times its own device
      assert.is_number(t0:elapsed(dev.main:record{timing = true}))
    end)

    it("rejects a later event that is not an event", function()
      local t = dev.main:record{timing = true}
      H.fails("gpulua%.Event expected, got number", function() return t:elapsed(5) end)
      H.fails("gpulua%.Event expected, got no value", function() return t:elapsed() end)
    end)
  end)

  it("rejects a timing option that is not a boolean", function()
    H.fails("option 'timing' expected a boolean, got number", function() return dev.main:record{timing = 1} end)
    H.fails("option 'timing' expected a boolean, got string", function() return dev.main:record{timing = "yes"} end)
    H.fails("table expected, got string", function() return dev.main:record("timing") end)
  end)

  it("rejects event methods called on something else", function()
    local e = dev.main:record()
    H.fails("gpulua%.Event expected, got number", e.sync, 1)
    H.fails("gpulua%.Event expected, got gpulua%.Stream", e.query, dev.main)
  end)
end)
