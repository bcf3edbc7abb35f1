local gpu = require "gpulua"
local H = require "helpers"

describe("gpu.device", function()
  it("gives each device its attributes with the right types", function()
    for i = 0, gpu.count() - 1 do
      local dev = gpu.device(i)
      assert.are.equal("userdata", type(dev))
      assert.are.equal(i, dev.ordinal)
      assert.are.equal("integer", math.type(dev.ordinal))
      assert.is_string(dev.name)
      assert.is_true(#dev.name > 0, "empty device name")
      assert.are.equal("integer", math.type(dev.memory))
      assert.is_true(dev.memory > 0)
      assert.is_string(dev.cc)
      assert.matches("^%d+%.%d+$", dev.cc)
      assert.are.equal("integer", math.type(dev.sms))
      assert.is_true(dev.sms > 0)
      assert.are.equal("integer", math.type(dev.copy_engines))
      assert.is_true(dev.copy_engines >= 0)
      assert.matches("^gpulua%.Device%(" .. i .. ": ", tostring(dev))
    end
  end)

  if gpu.backend() == "sim" then
    it("states the sim device's name, cc, sms and memory", function()
      for i = 0, gpu.count() - 1 do
        local dev = gpu.device(i)
        assert.are.equal("gpulua sim device " .. i, dev.name)
        assert.are.equal("9.0", dev.cc)
        assert.are.equal(4, dev.sms)
        assert.are.equal(2, dev.copy_engines)
        if not os.getenv("GPULUA_SIM_MEMORY") then assert.are.equal(1 << 30, dev.memory) end
      end
    end)
  end

  it("returns the same userdata on every call", function()
    assert.is_true(rawequal(gpu.device(0), gpu.device(0)))
    if gpu.count() >= 2 then
      assert.is_false(rawequal(gpu.device(0), gpu.device(1)))
      assert.are.equal(1, gpu.device(1).ordinal)
    end
  end)

  it("has one main stream, the same each time", function()
    local dev = gpu.device(0)
    local m = dev.main
    assert.is_true(rawequal(m, dev.main))
    assert.is_true(rawequal(m, gpu.device(0).main))
    assert.are.equal("main", m.name)
    assert.is_true(rawequal(dev, m.device))
    if gpu.count() >= 2 then
      assert.is_false(rawequal(m, gpu.device(1).main))
      assert.is_true(rawequal(gpu.device(1), gpu.device(1).main.device))
    end
  end)

  it("reports free memory as an integer no larger than the memory", function()
    for i = 0, gpu.count() - 1 do
      local dev = gpu.device(i)
      local f = dev:free_memory()
      assert.are.equal("integer", math.type(f))
      assert.is_true(f >= 0 and f <= dev.memory, ("free %d of %d"):format(f, dev.memory))
    end
  end)

  if gpu.backend() == "sim" then
    it("counts allocations in free memory on the sim", function()
      local dev = gpu.device(0)
      collectgarbage()
      collectgarbage()
      local before = dev:free_memory()
      local x = dev:alloc("f32", 1 << 20)
      assert.are.equal(before - (4 << 20), dev:free_memory())
      x:free()
      assert.are.equal(before, dev:free_memory())
    end)
  end

  it("syncs and returns itself", function()
    local dev = gpu.device(0)
    local x = dev:zeros("i32", 8)
    dev.main:fill(x, 3)
    assert.is_true(rawequal(dev, dev:sync()))
    assert.is_true(dev.main:query())
    H.check_all(x:read(), 3)
  end)

  it("rejects ordinals out of range, naming the ordinal", function()
    local n = gpu.count()
    H.fails("ordinal %-1 is out of range %(%a+ has " .. n .. " devices?: 0 to " .. (n - 1) .. "%)", gpu.device, -1)
    H.fails("ordinal " .. n .. " is out of range", gpu.device, n)
    H.fails("ordinal " .. (n + 100) .. " is out of range", gpu.device, n + 100)
    H.fails("ordinal %-9223372036854775808 is out of range", gpu.device, math.mininteger)
  end)

  it("rejects ordinals that are not integers, naming the ordinal", function()
    H.fails("expected an integer device ordinal, got number 0%.5", gpu.device, 0.5)
    H.fails("expected an integer device ordinal, got number 1%.5", gpu.device, 1.5)
    H.fails("expected an integer device ordinal, got string", gpu.device, "x")
    H.fails("expected an integer device ordinal, got nil", gpu.device, nil)
    H.fails("expected an integer device ordinal, got no value", gpu.device)
    H.fails("expected an integer device ordinal, got table", gpu.device, {})
  end)

  it("accepts an integral float ordinal", function()
    assert.is_true(rawequal(gpu.device(0), gpu.device(0.0)))
  end)

  it("rejects device methods called on something else", function()
    local dev = gpu.device(0)
    H.fails("gpulua%.Device expected, got number", dev.sync, 5)
    H.fails("gpulua%.Device expected, got no value", dev.free_memory)
    H.fails("gpulua%.Device expected, got gpulua%.Stream", dev.stream, dev.main)
  end)
end)
