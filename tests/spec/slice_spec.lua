local gpu = require "gpulua"
local H = require "helpers"

local FREED_HERE = "[^)]*slice_spec%.lua:%d+%)"

describe("device memory (slices)", function()
  local dev, main
  before_each(function()
    dev = gpu.device(0)
    main = dev.main
  end)

  describe("alloc and zeros", function()
    it("allocate every dtype with its size, length and device", function()
      for _, dt in ipairs(H.dtypes) do
        for _, make in ipairs{"alloc", "zeros"} do
          local x = dev[make](dev, dt, 37)
          assert.are.equal(dt, x.dtype)
          assert.are.equal(37, #x)
          assert.are.equal(37 * H.sizes[dt], x.bytes)
          assert.are.equal("integer", math.type(x.bytes))
          assert.is_true(rawequal(dev, x.device))
          assert.are.equal(("gpulua.Slice(%s[37] on device 0, home stream main)"):format(dt), tostring(x))
        end
      end
    end)

    it("zeros reads back zeros for every dtype", function()
      for _, dt in ipairs(H.dtypes) do
        local h = dev:zeros(dt, 1000):read()
        assert.are.equal(dt, h.dtype)
        assert.are.equal(1000, #h)
        H.check_all(h, 0)
      end
    end)

    it("zeros on a stream is ordered on that stream", function()
      local s = dev:stream{name = "z"}
      H.busy(dev, s)
      local x = dev:zeros("i64", 1 << 16, {stream = s})
      H.check_all(x:read{stream = s}, 0)
    end)

    it("alloc on a stream gives memory the stream can write and read", function()
      local s = dev:stream{name = "a"}
      local x = dev:alloc("u16", 300, {stream = s})
      s:copy(x, H.iota("u16", 300, 1000))
      H.check_iota(x:read{stream = s}, 1000)
    end)

    H.it_devices(2, "allocates on other devices", function()
      local d1 = gpu.device(1)
      local x = d1:zeros("f32", 10)
      assert.is_true(rawequal(d1, x.device))
      assert.matches("on device 1, home stream main%)$", tostring(x))
      d1.main:fill(x, 1.5)
      H.check_all(x:read(), 1.5)
    end)

    it("rejects a dtype that is not one", function()
      local list = "i8 u8 i16 u16 i32 u32 i64 u64 f16 bf16 f32 f64"
      H.fails("unknown dtype 'f128' %(expected " .. list .. "%)", function() return dev:alloc("f128", 4) end)
      H.fails("unknown dtype 'F32'", function() return dev:zeros("F32", 4) end)
      H.fails("expected a dtype %(" .. list .. "%), got nil", function() return dev:alloc(nil, 4) end)
      H.fails("expected a dtype .*, got number", function() return dev:zeros(4, 4) end)
    end)

    it("rejects element counts that are not positive integers", function()
      for _, make in ipairs{"alloc", "zeros"} do
        local f = dev[make]
        H.fails("element count must be positive, got 0", f, dev, "f32", 0)
        H.fails("element count must be positive, got %-1", f, dev, "f32", -1)
        H.fails("expected an integer element count, got number 1%.5%)$", f, dev, "f32", 1.5)
        H.fails("expected an integer element count, got number NaN%)$", f, dev, "f32", 0 / 0)
        H.fails("expected an integer element count, got number inf%)$", f, dev, "f32", 1 / 0)
        H.fails("expected an integer element count, got number 9%.2233720368548e%+18%)$", f, dev, "f32", 2 ^ 63)
        H.fails("integer element count expected, got string", f, dev, "f32", "x")
        H.fails("integer element count expected, got no value", f, dev, "f32")
        H.fails("element count 1152921504606846976 is too large", f, dev, "f32", 2 ^ 60)
        H.fails("element count 1152921504606846976 is too large", f, dev, "u8", 1 << 60)
      end
    end)

    it("fails like a real out-of-memory past the device's memory, and recovers", function()
      local err = H.fails("out of memory on device 0", function() return dev:alloc("u8", dev.memory + 1) end)
      assert.matches("requested u8%[" .. (dev.memory + 1) .. "%]", err)
      H.fails("dev:zeros: out of memory on device 0", function() return dev:zeros("f64", dev.memory // 8 + 1) end)
      local x = dev:zeros("f32", 64)
      main:fill(x:view(10, 5), 3)
      local h = x:read()
      for i = 1, 64 do assert.are.equal((i >= 11 and i <= 15) and 3 or 0, h[i]) end
    end)

    H.it_devices(2, "rejects a stream of another device", function()
      local s1 = gpu.device(1):stream{name = "far"}
      H.fails("dev:alloc: option 'stream' %('far'%) is on device 1, but the memory is on device 0",
              function() return dev:alloc("f32", 4, {stream = s1}) end)
      H.fails("dev:zeros: option 'stream' %('far'%) is on device 1, but the memory is on device 0",
              function() return dev:zeros("f32", 4, {stream = s1}) end)
    end)

    it("rejects options that are not a table or a stream", function()
      H.fails("table expected, got number", function() return dev:alloc("f32", 4, 5) end)
      local line = H.here() + 1
      local err = H.fails("got number NaN", function() local x = dev:alloc("f32", 0 / 0); return x end)
      assert.matches("^[^:]*slice_spec%.lua:" .. line .. ": bad argument #2 to 'alloc' %(expected an integer element "
        .. "count, got number NaN%)$", err)
      H.fails("dev:alloc: option 'stream' expected a gpulua%.Stream, got string$",
              function() return dev:alloc("f32", 4, {stream = "main"}) end)
      H.fails("dev:zeros: option 'stream' expected a gpulua%.Stream, got number 1$",
              function() return dev:zeros("f32", 4, {stream = 1}) end)
    end)
  end)

  describe("views", function()
    it("are bounds-checked windows at a 0-based offset", function()
      local x = dev:zeros("f32", 10)
      local v = x:view(2, 3)
      assert.are.equal(3, #v)
      assert.are.equal("f32", v.dtype)
      assert.are.equal(12, v.bytes)
      assert.is_true(rawequal(dev, v.device))
      assert.matches("view at offset 2 of f32%[10%]", tostring(v))
      assert.are.equal(7, #x:view(3))   -- the count defaults to the rest
      assert.are.equal(10, #x:view(0))
      assert.are.equal(1, #x:view(9, 1))
      assert.are.equal(0, #x:view(10)) -- an empty view at the end
    end)

    it("reject offsets and counts outside the slice", function()
      local x = dev:zeros("f32", 10)
      H.fails("offset %-1 is outside the slice's 10 elements", function() return x:view(-1) end)
      H.fails("offset 11 is outside the slice's 10 elements", function() return x:view(11, 0) end)
      H.fails("count 9 from offset 2 runs past the slice's 10 elements", function() return x:view(2, 9) end)
      H.fails("count %-1 from offset 2 runs past the slice's 10 elements", function() return x:view(2, -1) end)
      H.fails("number has no integer representation", function() return x:view(1.5) end)
      H.fails("number expected, got string", function() return x:view("a") end)
      H.fails("number expected, got no value", function() return x:view() end)
      local v = x:view(4, 4)
      H.fails("count 5 from offset 0 runs past the slice's 4 elements", function() return v:view(0, 5) end)
    end)

    it("share the memory of the slice", function()
      local x = dev:zeros("i32", 10)
      local v = x:view(4, 2)
      main:copy(v, gpu.host("i32", {7, 8}))
      local h = x:read()
      assert.are.same({0, 0, 0, 0, 7, 8, 0, 0, 0, 0}, h:totable())
      main:fill(x, 5)
      assert.are.same({5, 5}, v:read():totable())
    end)

    it("of views are offset from the view", function()
      local x = dev:alloc("i32", 10)
      main:copy(x, H.iota("i32", 10, 0))
      local v = x:view(2, 6)  -- elements 2..7
      local w = v:view(1, 3)  -- elements 3..5
      assert.are.same({3, 4, 5}, w:read():totable())
      assert.matches("view at offset 3 of i32%[10%]", tostring(w))
      main:fill(w, -1)
      assert.are.same({0, 1, 2, -1, -1, -1, 6, 7, 8, 9}, x:read():totable())
    end)

    it("split into k views of near-equal sizes covering the slice in order", function()
      local x = dev:zeros("i16", 10)
      local parts = x:split(3)
      assert.are.equal(3, #parts)
      assert.are.same({4, 3, 3}, {#parts[1], #parts[2], #parts[3]})
      for i, p in ipairs(parts) do
        assert.are.equal("i16", p.dtype)
        main:fill(p, i)
      end
      assert.are.same({1, 1, 1, 1, 2, 2, 2, 3, 3, 3}, x:read():totable())
    end)

    it("split sizes differ by at most one and add up to #x", function()
      local x = dev:alloc("u8", 1000)
      for _, k in ipairs{1, 2, 7, 10, 333, 999, 1000} do
        local parts = x:split(k)
        assert.are.equal(k, #parts)
        local total, lo, hi = 0, math.huge, 0
        for _, p in ipairs(parts) do
          total = total + #p
          lo, hi = math.min(lo, #p), math.max(hi, #p)
        end
        assert.are.equal(1000, total)
        assert.is_true(hi - lo <= 1, ("k = %d: sizes from %d to %d"):format(k, lo, hi))
      end
      -- the parts are consecutive: write each part's index, read the whole back
      local parts = x:split(7)
      for i, p in ipairs(parts) do main:fill(p, i) end
      local h, at = x:read(), 1
      for i, p in ipairs(parts) do
        for j = at, at + #p - 1 do assert.are.equal(i, h[j]) end
        at = at + #p
      end
    end)

    it("split rejects part counts out of range", function()
      local x = dev:zeros("f32", 10)
      H.fails("part count must be from 1 to #x %(10%), got 0", function() return x:split(0) end)
      H.fails("part count must be from 1 to #x %(10%), got 11", function() return x:split(11) end)
      H.fails("part count must be from 1 to #x %(10%), got %-2", function() return x:split(-2) end)
      H.fails("number has no integer representation", function() return x:split(1.5) end)
      H.fails("number expected, got string", function() return x:split("x") end)
    end)
  end)

  describe("free", function()
    it("makes later use an error naming where it was freed", function()
      local x = dev:zeros("i32", 4)
      x:free()
      local msg = "use of a freed slice i32%[4%] on device 0 %(freed at " .. FREED_HERE
      H.fails(msg, function() return x:read() end)
      H.fails(msg, function() return x:view(0) end)
      H.fails(msg, function() return x:split(2) end)
      H.fails(msg, function() return main:fill(x, 1) end)
      H.fails(msg, function() return main:copy(x, gpu.host("i32", 4)) end)
      H.fails(msg, function() return main:copy(gpu.host("i32", 4), x) end)
      assert.matches(", freed%)$", tostring(x))
    end)

    it("refuses a second free", function()
      local x = dev:alloc("f32", 4)
      x:free()
      H.fails("x:free: slice f32%[4%] on device 0 is already freed %(at " .. FREED_HERE,
              function() return x:free() end)
    end)

    it("of the slice makes its views unusable", function()
      local x = dev:zeros("f32", 8)
      local v = x:view(2, 2)
      x:free()
      H.fails("use of a freed slice f32%[2%] %(view at offset 2 of f32%[8%]%) on device 0 %(its memory was freed at "
              .. FREED_HERE, function() return v:read() end)
      H.fails("already freed", function() return v:free() end)
    end)

    it("of a view leaves the slice usable", function()
      local x = dev:alloc("i32", 8)
      main:copy(x, H.iota("i32", 8, 1))
      local v = x:view(2, 3)
      v:free()
      H.fails("use of a freed slice i32%[3%] %(view at offset 2 of i32%[8%]%) on device 0 %(freed at " .. FREED_HERE,
              function() return v:read() end)
      H.check_iota(x:read(), 1)
      assert.are.same({5, 6}, x:view(4, 2):read():totable())
      x:free()
    end)

    it("happens for a <close> variable at the end of its scope", function()
      local kept
      do
        local x <close> = dev:zeros("f32", 4)
        kept = x
        assert.are.same({0, 0, 0, 0}, x:read():totable())
      end
      H.fails("use of a freed slice f32%[4%] on device 0 %(freed at " .. FREED_HERE, function() return kept:read() end)
      assert.has_no.errors(function()
        local y <close> = dev:zeros("f32", 4)
        y:free() -- then the <close> at the end of the scope does nothing
      end)
    end)

    it("waits for queued work of other streams that uses the memory", function()
      local n = 1 << 16
      local x = dev:alloc("i32", n) -- on the main stream
      main:fill(x, 77)
      local s = dev:stream{name = "user"}
      s:join(main)
      local out = gpu.host("i32", n)
      H.busy(dev, s)
      s:copy(out, x)
      x:free()    -- queued on main, ordered after the copy on s
      main:sync() -- so this waits for the copy on s too
      assert.is_true(s:query(), "main:sync() returned while the copy on s before the free was queued")
      local reuse = dev:alloc("i32", n) -- may get the same memory
      main:fill(reuse, -1)
      s:sync()
      H.check_all(out, 77)
    end)
  end)

  it("views keep the memory alive after the slice's handle is collected", function()
    local n = 1 << 16
    collectgarbage()
    collectgarbage()
    local x = dev:alloc("i32", n)
    main:copy(x, H.iota("i32", n, 1))
    local v = x:view(n // 2, n // 4)
    main:sync()
    local before = dev:free_memory()
    x = nil -- luacheck: no unused
    collectgarbage()
    collectgarbage()
    if gpu.backend() == "sim" then assert.are.equal(before, dev:free_memory()) end
    -- new allocations must not get the view's memory
    local others = {}
    for i = 1, 4 do
      others[i] = dev:alloc("i32", n)
      main:fill(others[i], -i)
    end
    H.check_iota(v:read(), n // 2 + 1)
    if gpu.backend() == "sim" then
      local with_others = dev:free_memory()
      v = nil -- luacheck: no unused
      collectgarbage()
      collectgarbage()
      assert.are.equal(with_others + 4 * n, dev:free_memory()) -- the view was the last handle
    end
  end)

  it("rejects slice methods called on something else", function()
    local x = dev:zeros("f32", 4)
    H.fails("gpulua%.Slice expected, got number", x.read, 5)
    H.fails("gpulua%.Slice expected, got gpulua%.HostBuffer", x.view, gpu.host("f32", 4), 0)
    H.fails("gpulua%.Slice expected, got table", x.free, {})
  end)
end)
