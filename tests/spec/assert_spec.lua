-- gpulua.assert: luassert assertions for slices and host buffers.
local gpu = require "gpulua"
local H = require "helpers"
require "gpulua.assert"

local FILE = "assert_spec.lua"

-- The failure (or error) message of fn(...), which must fail.
local function failure(fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok, "expected the assertion to fail, but it passed")
  return tostring(err)
end

-- The message of fn(), a function written on one line that calls an
-- assertion, which must fail; it must be located at that line.
local function failure_at(fn)
  local msg = failure(fn)
  assert.matches("^[^:]*" .. H.at(FILE, debug.getinfo(fn, "S").linedefined) .. ": ", msg)
  return msg
end

describe("gpulua.assert", function()
  local dev
  before_each(function()
    dev = gpu.device(0)
  end)

  it("returns luassert's assert, with the assertions registered", function()
    local a = require "gpulua.assert"
    assert.are.equal(require "luassert", a)
    a.slice_equal(gpu.host("i32", {1, 2}), {1, 2})
  end)

  describe("slice_equal", function()
    it("passes for every kind of expected: a table, a host buffer, a slice", function()
      for _, dt in ipairs(H.dtypes) do
        local t = {1, 2, 3, 4, 5, 6, 7}
        local x = H.upload(dev, dt, t)
        assert.slice_equal(x, t)
        assert.slice_equal(x, gpu.host(dt, t))
        assert.slice_equal(x, H.upload(dev, dt, t))
        assert.slice_equal(gpu.host(dt, t), x)
        assert.slice_equal(gpu.host(dt, t), t)
      end
    end)

    it("takes a table's values as x's dtype stores them", function()
      local x = H.upload(dev, "f32", {0.1, 1 / 3})
      assert.slice_equal(x, {0.1, 1 / 3})
      assert.slice_near(x, {0.1, 1 / 3}, 1e-7)
      -- near compares with the values as given: 0.1f is not 0.1
      assert.is_not.slice_near(x, {0.1, 1 / 3}, 0)
      assert.slice_equal(H.upload(dev, "f16", {1 / 3}), {1 / 3})
      assert.slice_equal(H.upload(dev, "u64", {-1}), {-1})
    end)

    it("fails naming the first differing elements, both values and the count", function()
      local s = dev:stream{name = "work"}
      local x = dev:alloc("f32", 8, {stream = s})
      s:copy(x, gpu.host("f32", {1, 2, 3, 4, 5, 6, 7, 8}))
      local msg = failure_at(function() assert.slice_equal(x, {1, 2, 3.5, 4, 5, 6, 7, -8}) end)
      assert.matches(": Expected slice f32%[8%] on device 0 %(read on stream 'work'%)\n"
        .. "to equal table of 8 values:\n"
        .. "2 of 8 elements differ %(index 1%-based, offset 0%-based%):\n"
        .. "  %[3%] %(offset 2%): 3%.0, expected 3%.5\n"
        .. "  %[8%] %(offset 7%): 8%.0, expected %-8%.0$", msg)
    end)

    it("lists the first 5 differences and counts them all", function()
      local x = dev:zeros("i32", 100)
      local t = {}
      for i = 1, 100 do t[i] = i % 10 == 0 and 0 or i end
      local msg = failure(assert.slice_equal, x, t)
      assert.matches("90 of 100 elements differ; the first 5 %(index 1%-based, offset 0%-based%):\n"
        .. "  %[1%] %(offset 0%): 0, expected 1\n.*  %[5%] %(offset 4%): 0, expected 5$", msg)
      local _, shown = msg:gsub("\n  %[", "")
      assert.are.equal(5, shown)
    end)

    it("fails when the lengths differ, saying both", function()
      local x = dev:zeros("i32", 3)
      local msg = failure(assert.slice_equal, x, {0, 0, 0, 0})
      assert.matches("to equal table of 4 values:\nlengths differ: 3 elements, expected 4\n"
        .. "the first 3 elements are equal$", msg)
      msg = failure(assert.slice_equal, x, {0, 1})
      assert.matches("lengths differ: 3 elements, expected 2\n1 of the first 2 elements differs", msg)
      assert.matches("%[2%] %(offset 1%): 0, expected 1", msg)
      assert.matches("lengths differ: 1 element, expected 0", failure(assert.slice_equal, dev:zeros("u8", 1), {}))
    end)

    it("fails when the dtypes differ, though the values are equal", function()
      local msg = failure(assert.slice_equal, dev:zeros("i32", 3), gpu.host("f32", 3))
      assert.matches("Expected slice i32%[3%] on device 0 %(read on stream 'main'%)\n"
        .. "to equal host buffer f32%[3%]:\ndtypes differ: i32, expected f32\nall 3 elements are equal$", msg)
      msg = failure(assert.slice_equal, gpu.host("f64", {0, 2}), dev:zeros("f32", 2))
      assert.matches("dtypes differ: f64, expected f32\n1 of 2 elements differs", msg)
    end)

    it("takes NaN as equal to NaN, and 0 as equal to -0", function()
      local nan = 0 / 0
      assert.slice_equal(gpu.host("f64", {nan, 1, -0.0}), {nan, 1, 0})
      if gpu.backend() == "sim" then -- sim fills new memory with NaN (on a GPU it is undefined)
        assert.slice_equal(dev:alloc("f32", 5), {nan, nan, nan, nan, nan})
      end
      local msg = failure(assert.slice_equal, gpu.host("f64", {1, nan}), {nan, 1})
      assert.matches("%[1%] %(offset 0%): 1%.0, expected nan\n  %[2%] %(offset 1%): nan, expected 1%.0", msg)
    end)

    it("shows floats with enough digits to tell them apart", function()
      local msg = failure(assert.slice_equal, gpu.host("f64", {0.1 + 0.2}), {0.3})
      assert.matches("0%.30000000000000004, expected 0%.3$", msg)
      msg = failure(assert.slice_equal, gpu.host("f64", {1 / 0, 1e300}), {-1 / 0, 1e301})
      assert.matches("inf, expected %-inf\n.*1e%+300, expected 1e%+301", msg)
    end)

    it("works negated, as luassert's own assertions", function()
      local x = H.upload(dev, "i16", {1, 2, 3})
      assert.is_not.slice_equal(x, {1, 2, 4})
      assert.is_not.slice_equal(x, {1, 2})
      assert.is_not.slice_equal(x, gpu.host("i32", {1, 2, 3}))
      assert.are_not.slice_equal(x, H.upload(dev, "i16", {0, 2, 3}))
      local msg = failure(assert.is_not.slice_equal, x, {1, 2, 3})
      assert.matches("Expected slice i16%[3%] on device 0 %(read on stream 'main'%)\n"
        .. "not to equal table of 3 values,\nbut all 3 elements are equal$", msg)
    end)

    it("puts a message given after the arguments first", function()
      local msg = failure_at(function() assert.slice_equal(gpu.host("u8", {1}), {2}, "the saxpy result") end)
      assert.matches(": the saxpy result\nExpected host buffer u8%[1%]", msg)
      msg = failure(assert.is_not.slice_equal, gpu.host("u8", {1}), {1}, "must change")
      assert.matches("^must change\nExpected host buffer u8%[1%]\nnot to equal", msg)
    end)

    it("compares views at offsets, naming offsets within the view", function()
      local x = H.upload(dev, "i32", {10, 11, 12, 13, 14, 15, 16, 17})
      local v = x:view(2, 3)
      assert.slice_equal(v, {12, 13, 14})
      assert.slice_equal(x:view(5), x:view(5, 3))
      assert.slice_equal(x:view(8), {})
      local msg = failure(assert.slice_equal, v, {12, 13, 15})
      assert.matches("Expected slice i32%[3%] %(view at offset 2 of i32%[8%]%) on device 0 %(read on stream 'main'%)",
        msg)
      assert.matches("%[3%] %(offset 2%): 14, expected 15$", msg)
      assert.slice_equal(x:split(2)[2], gpu.host("i32", {14, 15, 16, 17}))
    end)

    H.it_devices(2, "reads a slice of device 1 on device 1", function()
      local d1 = gpu.device(1)
      local s = d1:stream{name = "one"}
      local x = H.upload(s, "f64", {1.5, 2.5})
      assert.slice_equal(x, {1.5, 2.5})
      assert.slice_equal(x, H.upload(dev, "f64", {1.5, 2.5}))
      local msg = failure(assert.slice_equal, x, {1.5, 3})
      assert.matches("Expected slice f64%[2%] on device 1 %(read on stream 'one'%)", msg)
      s:close()
      msg = failure(assert.slice_equal, H.upload(dev, "f64", {0, 0}), x)
      assert.matches("to equal slice f64%[2%] on device 1 %(read on stream 'main'%)", msg)
    end)
  end)

  describe("which stream reads a slice", function()
    H.checker_hooks()

    it("reads on the slice's home stream: work queued there needs no join", function()
      local s = dev:stream{name = "home"}
      H.busy(dev, s)
      local x = dev:alloc("i64", 1000, {stream = s})
      s:fill(x, 7)
      local t = {}
      for i = 1, 1000 do t[i] = 7 end
      assert.slice_equal(x, t)
      assert.matches("read on stream 'home'", failure(assert.slice_equal, x, {7}))
    end)

    it("reads on the main stream once the home stream is closed", function()
      local s = dev:stream{name = "gone"}
      local x = dev:alloc("u32", 4, {stream = s})
      s:fill(x, 9)
      s:close() -- the main stream waits for it
      assert.slice_equal(x, {9, 9, 9, 9})
      assert.matches("read on stream 'main'", failure(assert.slice_equal, x, {1}))
    end)

    it("is the checker's error at the assertion's line when another stream may still write", function()
      local s, t = dev:stream{name = "a"}, dev:stream{name = "b"}
      local x = dev:zeros("f32", 4, {stream = s})
      t:join(s)
      local wrote = H.here() + 1
      t:fill(x, 2)
      local line = H.here() + 1
      local err = failure_at(function() assert.slice_equal(x, {2, 2, 2, 2}) end)
      assert.matches(H.at(FILE, line) .. ": assert%.slice_equal: x: ", err)
      H.assert_conflict(err, FILE, {op = "x:read", what = H.slice_desc("f32", 4), rw = "read",
                                    s = "a", s_at = line, t = "b", t_at = wrote, prev = "writing"})
      assert.matches("assert%.slice_equal reads x on its home stream", err)
      s:join(t)
      assert.slice_equal(x, {2, 2, 2, 2})
    end)

    it("under the policy auto waits for that stream instead", function()
      gpu.policy("auto")
      local s, t = dev:stream{name = "a"}, dev:stream{name = "b"}
      local x = dev:zeros("f32", 4, {stream = s})
      t:join(s)
      H.busy(dev, t)
      t:fill(x, 3)
      assert.slice_equal(x, {3, 3, 3, 3})
    end)

    it("reads a host buffer after checking its pending copies", function()
      local s = dev:stream{name = "c"}
      local x = H.upload(s, "i32", {4, 5})
      local h = gpu.host("i32", 2)
      H.busy(dev, s)
      local copied = H.here() + 1
      s:copy(h, x)
      local line = H.here() + 1
      local err = failure_at(function() assert.slice_equal(h, {4, 5}) end)
      assert.matches(": assert%.slice_equal: x: host buffer i32%[2%]: read from Lua at [^ ]*" .. H.at(FILE, line)
        .. " while stream 'c' of device 0 may still write it %(copy queued at [^)]*" .. H.at(FILE, copied), err)
      s:sync()
      assert.slice_equal(h, {4, 5})
    end)

    it("is refused inside a capture, naming the graph", function()
      local x = dev:zeros("f32", 2)
      local line
      local err = H.refused(dev.main.capture, dev.main, function()
        line = H.here() + 1
        assert.slice_equal(x, {0, 0})
      end, {name = "g"})
      assert.matches("assert%.slice_equal at [^ ]*" .. H.at(FILE, line)
        .. ": not allowed during the capture of graph 'g'", err)
    end)
  end)

  describe("slice_near", function()
    it("measures integers' distance without wrapping", function()
      local h = gpu.host("i64", {0, math.maxinteger})
      assert.is_not.slice_near(h, {math.mininteger, math.mininteger}, 1)
      assert.is_not.slice_near(h, {math.mininteger, math.mininteger}, {rel = 0.5})
      assert.slice_near(h, {1, math.maxinteger - 1}, 1)
    end)

    it("takes an absolute tolerance", function()
      local x = H.upload(dev, "f32", {1, 2, 3})
      assert.slice_near(x, {1.05, 1.95, 3}, 0.05 + 1e-7)
      assert.slice_near(x, gpu.host("f64", {1, 2, 3}), 0)
      assert.is_not.slice_near(x, {1.05, 1.95, 3}, 0.04)
      local msg = failure(assert.slice_near, x, {1, 2.5, 3}, 0.1)
      assert.matches("Expected slice f32%[3%] on device 0 %(read on stream 'main'%)\n"
        .. "to be near table of 3 values %(|actual %- expected| <= 0%.1%):\n"
        .. "1 of 3 elements differs %(index 1%-based, offset 0%-based%):\n"
        .. "  %[2%] %(offset 1%): 2%.0, expected 2%.5, off by 0%.5 %(allowed 0%.1%)$", msg)
    end)

    it("takes {abs =, rel =}: |actual - expected| <= abs + rel * |expected|", function()
      local x = gpu.host("f64", {100, -1000, 0})
      assert.slice_near(x, {101, -1010, 0}, {rel = 0.01})
      assert.is_not.slice_near(x, {101, -1010, 1e-9}, {rel = 0.01})
      assert.slice_near(x, {101, -1010, 1e-9}, {rel = 0.01, abs = 1e-9})
      assert.is_not.slice_near(x, {101.5, -1010, 0}, {rel = 0.01, abs = 0.4})
      assert.slice_near(x, {101.5, -1010, 0}, {rel = 0.01, abs = 0.5})
      local msg = failure(assert.slice_near, x, {110, -1000, 0}, {abs = 1, rel = 0.05})
      assert.matches("%(|actual %- expected| <= 1 %+ 0%.05 %* |expected|%)", msg)
      assert.matches("%[1%] %(offset 0%): 100%.0, expected 110, off by 10 %(allowed 6%.5%)$", msg)
      msg = failure(assert.slice_near, x, {0, 0, 0}, {rel = 0.5})
      assert.matches("%(|actual %- expected| <= 0%.5 %* |expected|%)", msg)
    end)

    it("compares across dtypes and against an f16 result", function()
      local x = H.upload(dev, "f16", {1 / 3, 2 / 3})
      assert.slice_near(x, {1 / 3, 2 / 3}, {rel = 1e-3})
      assert.slice_near(x, H.upload(dev, "f64", {1 / 3, 2 / 3}), {rel = 1e-3})
      assert.slice_near(H.upload(dev, "i32", {5}), {5.4}, 0.5)
    end)

    it("is near NaN only for NaN, and an infinity only for the same one", function()
      local nan, inf = 0 / 0, 1 / 0
      local x = gpu.host("f32", {nan, inf, -inf})
      assert.slice_near(x, {nan, inf, -inf}, 1)
      local msg = failure(assert.slice_near, x, {0, -inf, inf}, math.huge)
      assert.matches("3 of 3 elements differ.*\n  %[1%] %(offset 0%): nan, expected 0\n"
        .. "  %[2%] %(offset 1%): inf, expected %-inf\n  %[3%] %(offset 2%): %-inf, expected inf$", msg)
      assert.is_not.slice_near(gpu.host("f32", {1}), {nan}, math.huge)
    end)

    it("fails when lengths differ and works negated", function()
      local msg = failure(assert.slice_near, gpu.host("f32", 2), {0, 0, 0}, 1)
      assert.matches("lengths differ: 2 elements, expected 3\nthe first 2 elements are near$", msg)
      msg = failure(assert.is_not.slice_near, gpu.host("f32", 2), {0.5, -0.5}, 1, "moved")
      assert.matches("^moved\nExpected host buffer f32%[2%]\nnot to be near table of 2 values "
        .. "%(|actual %- expected| <= 1%),\nbut all 2 elements are near$", msg)
    end)
  end)

  describe("bad arguments are errors at the assertion's line", function()
    -- fn: a function written on one line that calls an assertion
    local function refused(pattern, fn)
      assert.matches(pattern, failure_at(fn))
    end

    it("x must be a slice or a host buffer", function()
      local expected = "bad argument #1 %(x%): expected a gpulua%.Slice or gpulua%.HostBuffer, got "
      refused("assert%.slice_equal: " .. expected .. "table$",
        function() assert.slice_equal({1}, {1}) end)
      refused("assert%.slice_near: " .. expected .. "number 3$",
        function() assert.slice_near(3, {1}, 0) end)
      refused("assert%.slice_equal: " .. expected .. "gpulua%.Stream$",
        function() assert.slice_equal(dev.main, {1}) end)
    end)

    it("expected must be a list of numbers, a host buffer or a slice", function()
      local h = gpu.host("f32", 2)
      refused("assert%.slice_equal: bad argument #2 %(expected%): expected a table of numbers, a host buffer or "
        .. "a slice, got string$", function() assert.slice_equal(h, "1, 2") end)
      refused("assert%.slice_near: expected%[2%]: expected a number, got string$",
        function() assert.slice_near(h, {1, "2"}, 0) end)
      refused("assert%.slice_equal: expected: a table of expected values is a list %(1 to #t%), but it has the key 'n'",
        function() assert.slice_equal(h, {1, 2, n = 2}) end)
      refused("assert%.slice_equal: expected%[1%] is not a value of x's dtype u8: .*got number 300$",
        function() assert.slice_equal(gpu.host("u8", 1), {300}) end)
      refused("assert%.slice_equal: expected%[2%] is not a value of x's dtype i32: .*got number 1%.5$",
        function() assert.slice_equal(gpu.host("i32", 2), {1, 1.5}) end)
    end)

    it("the arguments must all be there", function()
      refused("assert%.slice_equal: expected 2 arguments %(x, expected%[, message%]%), got 1$",
        function() assert.slice_equal(gpu.host("f32", 1)) end)
      refused("assert%.slice_near: expected 3 arguments %(x, expected, tol%[, message%]%), got 2$",
        function() assert.slice_near(gpu.host("f32", 1), {0}) end)
    end)

    it("tol is a number >= 0 or {abs =, rel =}", function()
      local h = gpu.host("f32", 1)
      refused("assert%.slice_near: tol expected a number >= 0, got number %-1$",
        function() assert.slice_near(h, {0}, -1) end)
      refused("assert%.slice_near: tol expected a number >= 0, got number NaN$",
        function() assert.slice_near(h, {0}, 0 / 0) end)
      refused("assert%.slice_near: tol expected a number %(absolute%) or a table {abs =, rel =}, got string$",
        function() assert.slice_near(h, {0}, "0.1") end)
      refused("assert%.slice_near: tol: unknown key 'ab' %(the keys are: abs, rel%)$",
        function() assert.slice_near(h, {0}, {ab = 1}) end)
      refused("assert%.slice_near: tol: give abs, rel or both$", function() assert.slice_near(h, {0}, {}) end)
      refused("assert%.slice_near: tol%.rel expected a number >= 0, got string$",
        function() assert.slice_near(h, {0}, {abs = 1, rel = "1"}) end)
    end)

    it("a freed slice or host buffer says where it was freed", function()
      local x = dev:zeros("i32", 3)
      local freed = H.here() + 1
      x:free()
      refused("assert%.slice_equal: x: use of a freed slice i32%[3%] on device 0 %(freed at [^)]*"
        .. H.at(FILE, freed) .. "%)$", function() assert.slice_equal(x, {0, 0, 0}) end)
      local h = gpu.host("f32", 2)
      freed = H.here() + 1
      h:free()
      refused("assert%.slice_near: expected: host buffer f32%[2%] is freed %(at [^)]*" .. H.at(FILE, freed) .. "%)$",
        function() assert.slice_near(gpu.host("f32", 2), h, 0) end)
    end)
  end)
end)
