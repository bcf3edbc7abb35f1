-- Tasks: gpu.spawn(fn, ...) and gpu.loop(); inside a task s:await(),
-- e:await() and x:read{} yield until the device got there, so tasks on
-- streams of different speed interleave; outside a task they wait as sync
-- does. An error in a task ends gpu.loop with its traceback.
local gpu = require "gpulua"
local H = require "helpers"

local THIS = "task_spec%.lua"

describe("tasks", function()
  local dev, a, b
  before_each(function()
    dev = gpu.device(0)
    a = dev:stream{name = "a"}
    b = dev:stream{name = "b"}
  end)
  after_each(function()
    gpu.sync()
    a:close()
    b:close()
  end)

  it("gpu.spawn passes its arguments; gpu.loop runs every task to its end", function()
    local got = {}
    gpu.spawn(function(p, q) got[#got + 1] = p + q end, 2, 3)
    gpu.spawn(function(...) got[#got + 1] = select("#", ...) end, nil, nil)
    assert.are.same({}, got, "a task runs only inside gpu.loop")
    gpu.loop()
    assert.are.same({5, 2}, got)
    gpu.loop() -- none left: returns at once
  end)

  it("awaits interleave two streams of different speed: the fast one goes on meanwhile", function()
    local log = {}
    gpu.spawn(function()
      H.slow(dev, a) -- milliseconds of work
      a:await()
      log[#log + 1] = "slow"
    end)
    gpu.spawn(function()
      local z = dev:zeros("f32", 4, {stream = b})
      for i = 1, 3 do
        b:fill(z, i)
        b:await()
        log[#log + 1] = "fast " .. i
      end
      z:free()
    end)
    gpu.loop()
    assert.are.same({"fast 1", "fast 2", "fast 3", "slow"}, log)
  end)

  it("x:read in a task yields and returns the data; the host knows the copy finished (strict)", function()
    local n = 1 << 12
    local results = {}
    for i, s in ipairs{a, b} do
      gpu.spawn(function()
        local x = dev:alloc("i32", n, {stream = s})
        s:copy(x, H.iota("i32", n, 100 * i))
        local h = x:read{stream = s}
        results[i] = {h[1], h[n], h.pinned}
        x:free()
      end)
    end
    gpu.loop()
    assert.are.same({{100, 100 + n - 1, true}, {200, 200 + n - 1, true}}, results)
  end)

  it("s:await lets the host read a copy's buffer under strict, as a sync would", function()
    local x = H.upload(a, "f32", {1, 2, 3})
    local h = gpu.host("f32", 3)
    local got
    gpu.spawn(function()
      a:copy(h, x)
      assert.are.equal(a, a:await())
      got = h:totable()
    end)
    gpu.loop()
    assert.are.same({1, 2, 3}, got)
    x:free()
  end)

  it("e:await yields until the event's work finished", function()
    local log = {}
    local x = dev:zeros("f32", 4, {stream = a})
    H.busy(dev, a, 16)
    a:fill(x, 9)
    local e = a:record()
    gpu.spawn(function()
      assert.are.equal(e, e:await())
      log[#log + 1] = "event"
      local h = gpu.host("f32", 4)
      b:wait(e)
      b:copy(h, x)
      b:await()
      log[#log + 1] = h[1]
    end)
    gpu.spawn(function() log[#log + 1] = "other" end)
    gpu.loop()
    assert.are.same({"other", "event", 9}, log)
    x:free()
  end)

  it("a plain coroutine.yield lets the other tasks run first", function()
    local log = {}
    gpu.spawn(function()
      log[#log + 1] = "a1"
      coroutine.yield()
      log[#log + 1] = "a2"
    end)
    gpu.spawn(function() log[#log + 1] = "b" end)
    gpu.loop()
    assert.are.same({"a1", "b", "a2"}, log)
  end)

  it("outside a task the awaits wait as sync does", function()
    local x = H.upload(a, "f32", {4, 5})
    local h = gpu.host("f32", 2)
    a:copy(h, x)
    assert.are.equal(a, a:await())
    assert.are.same({4, 5}, h:totable())
    local e = a:record()
    assert.are.equal(e, e:await())
    local co = coroutine.wrap(function() a:await(); return x:read{stream = a}:totable() end) -- not a task
    assert.are.same({4, 5}, co())
    x:free()
  end)

  it("callbacks run between the tasks' turns", function()
    local log = {}
    gpu.spawn(function()
      a:after(function() log[#log + 1] = "callback" end)
      a:await()
      log[#log + 1] = "task"
    end)
    gpu.loop()
    assert.are.same({"callback", "task"}, log)
  end)

  it("an error in a task ends gpu.loop with it and its traceback; the others are discarded", function()
    local closed, after = false, false
    local line = debug.getinfo(1, "l").currentline + 3
    gpu.spawn(function()
      a:await()
      error("bad batch")
    end)
    gpu.spawn(function()
      local _ <close> = setmetatable({}, {__close = function() closed = true end})
      H.busy(dev, b, 16)
      b:await()
      after = true
    end)
    local err = H.fails(THIS .. ":" .. line .. ": bad batch", gpu.loop)
    assert.matches("stack traceback:", err)
    assert.matches(THIS .. ":" .. line .. ":", err)
    assert.is_true(closed, "a discarded task's <close> variables are closed")
    gpu.loop()
    assert.is_false(after, "a discarded task never resumes")
  end)

  it("discarding closes every waiting task, discards those a <close> handler spawns, adds a handler's error",
     function()
    local closed, spawned_ran = 0, false
    H.slow(dev, b)
    for i = 1, 8 do
      gpu.spawn(function()
        local _ <close> = setmetatable({}, {__close = function()
          closed = closed + 1
          gpu.spawn(function() spawned_ran = true end)
          if i == 3 then error("closing task 3 failed") end
        end})
        b:await()
      end)
    end
    gpu.spawn(function() error("the first error") end)
    local err = H.fails("the first error", gpu.loop)
    assert.matches("%(and closing the tasks, a <close> handler failed: [^\n]*closing task 3 failed%)", err)
    assert.are.equal(8, closed)
    gpu.loop()
    assert.is_false(spawned_ran)
  end)

  it("an error in a callback ends gpu.loop too, naming where it was queued", function()
    gpu.spawn(function()
      a:after(function() error("callback failed") end)
      a:await()
    end)
    H.fails("s:after callback %(queued at [^)]*" .. THIS .. ":%d+%) failed: [^\n]*callback failed", gpu.loop)
    gpu.loop()
  end)

  it("refuses bad input: a non-function, gpu.loop inside a task or a callback, an unrecorded event", function()
    H.fails("gpu.spawn expects a function, got number 5", gpu.spawn, 5)
    H.fails("gpu.spawn expects a function, got no value", gpu.spawn)
    local inner
    gpu.spawn(function() inner = select(2, pcall(gpu.loop)) end)
    gpu.loop()
    assert.matches("gpu.loop: the loop is running already", inner)
    a:after(function() inner = select(2, pcall(gpu.loop)) end)
    gpu.spawn(function() a:await() end)
    gpu.loop()
    assert.matches("gpu.loop: the loop is running already", inner)
    inner = nil -- a callback outside the loop: its loop could take no point until the callback returns
    a:after(function() inner = select(2, pcall(gpu.loop)) end)
    a:sync()
    assert.matches("gpu.loop: not inside an s:after callback", inner)
    H.fails("gpu.loop", function() a:capture(function() gpu.loop() end) end)
    local ev
    local g = a:capture(function(s) ev = s:record() end)
    gpu.spawn(function() ev:await() end)
    H.fails("e:await[^\n]*captur", gpu.loop)
    H.fails("e:await[^\n]*captur", function() ev:await() end)
    g:close()
  end)
end)

describe("tasks on a device that fails #fault", function()
  if type(arg) ~= "table" then
    pending("needs the interpreter's arg table to start a child process")
    return
  end

  it("gpu.loop raises the fault instead of waiting forever", function()
    local out, status = H.run_child([[
      local gpu = require "gpulua"
      local dev = gpu.device(0)
      local m = gpu.compile([=[
        extern "C" __global__ void trap(float *y) { if (threadIdx.x == 0) __trap(); y[0] = 1.0f; }
      ]=], {name = "faults.cu"})
      local trap = m:kernel("trap", "f32*")
      trap:host(function() error("trap") end)
      local y = dev:zeros("f32", 64)
      gpu.spawn(function()
        dev.main:launch(trap, {grid = 1, block = 32}, y)
        dev.main:await()
        print("resumed")
      end)
      print("loop:", pcall(gpu.loop))
      print("again:", pcall(gpu.loop))
      print("end")
    ]], nil, 60)
    assert.are.equal(0, status, "the child failed:\n" .. out)
    assert.matches("loop:\tfalse\t[^\n]*device 0 is poisoned by a fault", out)
    assert.matches("again:\ttrue", out)
    assert.not_matches("resumed", out)
    assert.matches("end", out)
  end)
end)
