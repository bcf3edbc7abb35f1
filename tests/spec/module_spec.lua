local gpu = require "gpulua"
local H = require "helpers"

describe("the gpu module", function()
  it("has a version string 0.x.y", function()
    assert.is_string(gpu.version)
    assert.matches("^0%.%d+%.%d+$", gpu.version)
  end)

  it("names its backend: cuda or sim", function()
    local b = gpu.backend()
    assert.is_string(b)
    assert.is_true(b == "cuda" or b == "sim", "gpu.backend() returned " .. tostring(b))
  end)

  it("counts at least one device", function()
    local n = gpu.count()
    assert.are.equal("integer", math.type(n))
    assert.is_true(n >= 1, "gpu.count() returned " .. tostring(n))
  end)

  if gpu.backend() == "sim" and not os.getenv("GPULUA_SIM_DEVICES") then
    it("has 2 sim devices by default", function()
      assert.are.equal(2, gpu.count())
    end)
  end

  it("require returns the same table every time", function()
    assert.are.equal(gpu, require "gpulua")
    assert.is_true(rawequal(gpu, require "gpulua"))
  end)

  if rawget(_G, "gpu") ~= nil then
    it("under the gpulua host, require returns the global gpu", function()
      assert.is_true(rawequal(rawget(_G, "gpu"), gpu))
    end)
  else
    it("under plain Lua, require does not create a global gpu", function()
      assert.is_nil(rawget(_G, "gpu"))
    end)
  end

  describe("gpu.sync", function()
    it("waits for the work of every stream, so host buffers may be read at once", function()
      local n = 1 << 16
      local outs, xs = {}, {} -- xs keeps the slices alive until the end
      for d = 0, gpu.count() - 1 do
        local dev = gpu.device(d)
        local s = dev:stream{name = "sync" .. d}
        H.busy(dev, s)
        local x = dev:alloc("i32", n, {stream = s})
        s:fill(x, 100 + d)
        outs[d], xs[d] = gpu.host("i32", n), x
        s:copy(outs[d], x)
      end
      gpu.sync()
      -- under strict, reading a buffer a copy may still write is an error:
      -- after gpu.sync() nothing is pending
      local old = gpu.policy("strict")
      finally(function() gpu.policy(old) end)
      for d = 0, gpu.count() - 1 do
        H.check_all(outs[d], 100 + d)
        assert.are.equal(100 + d, xs[d]:read()[1])
      end
    end)

    it("returns nothing and may be called with no work queued", function()
      gpu.sync()
      assert.are.equal(0, select("#", gpu.sync()))
    end)
  end)

  describe("gpu.policy", function()
    local saved
    before_each(function() saved = gpu.policy() end)
    after_each(function() gpu.policy(saved) end)

    it("returns the current policy", function()
      local p = gpu.policy()
      assert.is_true(p == "strict" or p == "auto" or p == "off", "gpu.policy() returned " .. tostring(p))
    end)

    if not os.getenv("GPULUA_POLICY") then
      it("is strict by default", function()
        assert.are.equal("strict", saved)
      end)
    end

    it("sets each policy and returns the one in force before", function()
      gpu.policy("strict")
      assert.are.equal("strict", gpu.policy("auto"))
      assert.are.equal("auto", gpu.policy())
      assert.are.equal("auto", gpu.policy("off"))
      assert.are.equal("off", gpu.policy())
      assert.are.equal("off", gpu.policy("strict"))
      assert.are.equal("strict", gpu.policy())
    end)

    it("rejects a name that is not a policy and keeps the old one", function()
      gpu.policy("auto")
      H.fails("expected strict, auto or off, got 'lenient'", gpu.policy, "lenient")
      H.fails("expected strict, auto or off, got 'STRICT'", gpu.policy, "STRICT")
      H.fails("expected strict, auto or off, got ''", gpu.policy, "")
      assert.are.equal("auto", gpu.policy())
    end)

    it("rejects a policy that is not a string", function()
      H.fails("string expected, got table", gpu.policy, {})
      H.fails("string expected, got boolean", gpu.policy, true)
      assert.are.equal(saved, gpu.policy())
    end)
  end)
end)
