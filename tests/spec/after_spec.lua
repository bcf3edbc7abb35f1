-- Host callbacks: s:after(fn) runs fn on the script's thread once the work
-- queued on s before it has finished, at a safe point (a gpulua call, a
-- wait, gpu.poll), in the order the streams reached them; errors in fn are
-- raised where it ran, naming where it was queued.
local gpu = require "gpulua"
local H = require "helpers"

local THIS = "after_spec%.lua"

describe("s:after", function()
  local dev, a, b
  before_each(function()
    dev = gpu.device(0)
    a = dev:stream{name = "a"}
    b = dev:stream{name = "b"}
  end)
  after_each(function()
    pcall(gpu.poll) -- a spec that failed must not leave its callbacks to the next
    gpu.sync()
    gpu.poll()
    a:close()
    b:close()
  end)

  it("runs fn once the work before it finished; the host then knows it (strict: no error)", function()
    local n = 1 << 16
    local x = H.upload(a, "f32", H.iota("f32", n):totable())
    local h = gpu.host("f32", n)
    a:copy(h, x)
    local got
    a:after(function() got = {h[1], h[n]} end) -- reading h would be the checker's error if the copy may run
    assert.is_nil(got, "fn ran before a safe point")
    local deadline = gpu.clock() + 10
    while not got and gpu.clock() < deadline do gpu.poll() end -- no sync: the point itself tells the host
    assert.are.same({1, n}, got)
    x:free()
  end)

  it("does not run inside the call that queued it, and runs at the next safe point", function()
    local ran = 0
    a:after(function() ran = ran + 1 end)
    assert.are.equal(0, ran)
    a:sync() -- a wait: the callbacks of a queued before it have run when it returns
    assert.are.equal(1, ran)
    a:after(function() ran = ran + 1 end)
    a:sync()
    a:sync()
    assert.are.equal(2, ran, "each callback runs once")
    local waits = {function() dev:sync() end, function() gpu.sync() end, function() a:record():sync() end,
                   function() dev:zeros("f32", 1, {stream = a}):read{stream = a} end}
    for _, wait in ipairs(waits) do
      local before = ran
      a:after(function() ran = ran + 1 end)
      wait()
      assert.are.equal(before + 1, ran, "every wait runs the callbacks it waited for")
    end
  end)

  it("runs in the order the streams reached them: a slow stream's callback after a fast one's", function()
    local order = {}
    H.slow(dev, a) -- milliseconds of work ahead of a's callback
    a:after(function() order[#order + 1] = "slow" end)
    local z = dev:zeros("f32", 4, {stream = b})
    b:after(function() order[#order + 1] = "fast" end)
    a:after(function() order[#order + 1] = "slow 2" end)
    gpu.sync()
    assert.are.same({"fast", "slow", "slow 2"}, order)
    z:free()
  end)

  it("gpu.poll runs what the device reached without waiting, and says how many", function()
    local ran = {}
    a:after(function() ran[#ran + 1] = 1 end)
    a:after(function() ran[#ran + 1] = 2 end)
    local total, tries = 0, 0
    while total < 2 and tries < 10000 do
      local before = #ran
      local n = gpu.poll()
      assert.are.equal(#ran - before, n, "gpu.poll counts every callback it ran")
      total = total + n
      tries = tries + 1
      local t = os.clock() + 0.0002
      while os.clock() < t do end -- no gpulua call: the next poll finds the callbacks reached meanwhile
    end
    assert.are.equal(2, total)
    assert.are.same({1, 2}, ran)
    assert.are.equal(0, gpu.poll())
  end)

  it("later work on the stream does not wait for fn", function()
    local h = gpu.host("f32", 4)
    local x = dev:zeros("f32", 4, {stream = a})
    local seen
    a:after(function() seen = a:query() end) -- when fn runs, later work may be done or not; never blocked by fn
    a:fill(x, 7)
    a:copy(h, x)
    a:sync()
    assert.is_boolean(seen)
    assert.are.same({7, 7, 7, 7}, h:totable())
    x:free()
  end)

  it("fn may call gpulua: its own callbacks run later, never inside it", function()
    local log = {}
    local x = dev:zeros("f32", 8, {stream = a})
    a:after(function()
      log[#log + 1] = "outer"
      a:fill(x, 3)                          -- a safe point: runs no other callback
      a:after(function() log[#log + 1] = "inner" end)
      b:sync()
      log[#log + 1] = "outer end"
    end)
    a:after(function() log[#log + 1] = "second" end)
    a:sync()
    a:sync()
    assert.are.same({"outer", "outer end", "second", "inner"}, log)
    assert.are.same({3, 3, 3, 3, 3, 3, 3, 3}, x:read{stream = a}:totable())
    x:free()
  end)

  it("an error in fn is raised at the safe point, naming where it was queued; the rest run later", function()
    local ran = {}
    local line = debug.getinfo(1, "l").currentline + 1
    a:after(function() error("boom") end)
    a:after(function() ran[#ran + 1] = "next" end)
    local err = H.fails("s:after callback", function() a:sync() end)
    assert.matches(THIS .. ":%d+: s:after callback %(queued at [^)]*" .. THIS .. ":" .. line .. "%) failed: [^\n]*"
                   .. THIS .. ":" .. line .. ": boom", err)
    assert.are.same({}, ran)
    gpu.poll()
    assert.are.same({"next"}, ran)
    a:after(function() error({code = 5}) end) -- not a string: still a message
    H.fails("failed: table", function() a:sync() end)
  end)

  it("refuses what is not a function, a closed stream and a capture", function()
    H.fails("s:after expects a function to run, got number 5", function() a:after(5) end)
    H.fails("s:after expects a function to run, got no value", function() a:after() end)
    local c = dev:stream{name = "c"}
    c:close()
    H.fails("stream 'c' of device 0 is closed", function() c:after(function() end) end)
    H.fails("s:after at [^\n]*: not allowed during the capture of graph", function()
      a:capture(function(s) s:after(function() end) end)
    end)
  end)
end)

describe("safe points", function()
  it("every gpulua call is one: a callback runs before the call's own work", function()
    local dev = gpu.device(0)
    local s = dev:stream{name = "sp"}
    local ran = false
    s:after(function() ran = true end)
    local deadline = gpu.clock() + 10
    while not s:query() and gpu.clock() < deadline do end -- a query that finds s finished is a safe point too
    assert.is_true(ran)
    ran = false
    s:after(function() ran = true end)
    while not ran and gpu.clock() < deadline do
      local _ = gpu.count() -- any call: runs it once the stream got there (the query moves the sim's workers)
      s:query()
    end
    assert.is_true(ran)
    s:close()
  end)
end)
