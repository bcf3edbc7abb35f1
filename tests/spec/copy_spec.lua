local gpu = require "gpulua"
local H = require "helpers"

local N = 1 << 16

describe("copies and fills", function()
  local dev, main
  before_each(function()
    dev = gpu.device(0)
    main = dev.main
  end)

  describe("s:copy", function()
    it("copies host to device and device to host, returning the stream", function()
      local x = dev:alloc("i32", N)
      assert.is_true(rawequal(main, main:copy(x, H.iota("i32", N, -100))))
      local out = gpu.host("i32", N)
      assert.is_true(rawequal(main, main:copy(out, x)))
      main:sync()
      H.check_iota(out, -100)
    end)

    it("copies device to device", function()
      local x = dev:alloc("f64", N)
      main:copy(x, H.iota("f64", N, 0.5))
      local y = dev:zeros("f64", N)
      main:copy(y, x)
      H.check_iota(y:read(), 0.5)
    end)

    H.it_devices(2, "copies between devices (peer)", function()
      local d1 = gpu.device(1)
      local x = dev:alloc("i32", N)
      main:copy(x, H.iota("i32", N, 1))
      local y = d1:zeros("i32", N)
      d1:sync() -- y is ready before device 0's stream writes it
      main:copy(y, x) -- on a stream of the source's device
      main:sync()
      H.check_iota(y:read(), 1)
      -- and back, on a stream of the destination's device, into a view
      local z = dev:zeros("i32", N + 4)
      main:sync()
      local s1 = d1:stream{name = "peer1"}
      s1:copy(z:view(2, N), y)
      s1:sync()
      local back = z:read()
      assert.are.equal(0, back[1])
      assert.are.equal(0, back[2])
      assert.are.equal(1, back[3])
      assert.are.equal(N, back[N + 2])
      assert.are.equal(0, back[N + 3])
    end)

    it("refuses overlapping ranges of one allocation, naming both; disjoint ones copy", function()
      local x = dev:zeros("f32", 8)
      H.fails(H.lit("s:copy: dst (elements 1 to 7 of f32[8] on device 0) overlaps src (elements 0 to 6 of it): a "
                    .. "copy between overlapping ranges of one allocation is undefined on the GPU; copy through a "
                    .. "separate slice, or between disjoint ranges"),
              function() main:copy(x:view(1, 7), x:view(0, 7)) end)
      H.fails(H.lit("s:copy: dst (elements 0 to 3 of f32[8] on device 0) overlaps src (elements 3 to 6 of it)"),
              function() main:copy(x:view(0, 4), x:view(3, 4)) end)
      H.fails(H.lit("s:copy: dst (elements 0 to 7 of f32[8] on device 0) overlaps src (elements 0 to 7 of it)"),
              function() main:copy(x, x) end)
      -- nothing was queued; disjoint (and touching) ranges of one allocation copy
      main:copy(x:view(0, 4), gpu.host("f32", {1, 2, 3, 4}))
      main:copy(x:view(4, 4), x:view(0, 4))
      assert.are.same({1, 2, 3, 4, 1, 2, 3, 4}, x:read():totable())
      main:copy(x:view(0, 2), x:view(6, 2))
      assert.are.same({3, 4, 3, 4, 1, 2, 3, 4}, x:read():totable())
    end)

    it("copies through views at offsets", function()
      local x = dev:zeros("i32", 10)
      main:copy(x:view(3, 4), gpu.host("i32", {1, 2, 3, 4}))
      assert.are.same({0, 0, 0, 1, 2, 3, 4, 0, 0, 0}, x:read():totable())
      local out = gpu.host("i32", 6)
      out:fill(-1)
      main:copy(out:view(1, 4), x:view(4, 4))
      main:sync()
      assert.are.same({-1, 2, 3, 4, 0, -1}, out:totable())
      local y = dev:zeros("i32", 10)
      main:copy(y:view(0, 5), x:view(5))
      assert.are.same({3, 4, 0, 0, 0, 0, 0, 0, 0, 0}, y:read():totable())
    end)

    it("copies between same-sized operands of different dtypes, byte for byte", function()
      local x = dev:alloc("f32", 2)
      main:copy(x, gpu.host("u32", {0x3f800000, 0xc0490fdb}))
      local h = x:read()
      assert.are.equal(1.0, h[1])
      assert.are.equal(H.f32(-3.14159274101257324), h[2])
      local y = dev:alloc("u32", 2)
      main:copy(y, x)
      assert.are.same({0x3f800000, 0xc0490fdb}, y:read():totable())
      local bytes = gpu.host("u8", 8)
      local z = dev:alloc("i64", 1)
      main:copy(z, gpu.host("i64", {0x0807060504030201}))
      main:copy(bytes, z):sync()
      assert.are.same({1, 2, 3, 4, 5, 6, 7, 8}, bytes:totable()) -- little-endian
    end)

    it("returns the stream for empty views and queues nothing", function()
      local x = dev:zeros("f32", 4)
      local h = gpu.host("f32", 4)
      assert.is_true(rawequal(main, main:copy(x:view(4), h:view(4))))
      assert.is_true(rawequal(main, main:fill(x:view(4), 1)))
    end)

    it("rejects sizes that differ in bytes before queueing anything", function()
      local x = dev:alloc("i32", 4)
      main:copy(x, gpu.host("i32", {1, 2, 3, 4}))
      main:sync()
      H.fails("s:copy: sizes differ: dst is a slice i32%[4%] on device 0 %(16 bytes%), "
              .. "src is a host buffer i32%[5%] %(20 bytes%)", function() return main:copy(x, gpu.host("i32", 5)) end)
      H.fails("sizes differ: dst is a slice i32%[4%] on device 0 %(16 bytes%), "
              .. "src is a host buffer i16%[4%] %(8 bytes%)",
              function() return main:copy(x, gpu.host("i16", 4)) end)
      H.fails("sizes differ: dst is a slice i32%[4%] on device 0 %(16 bytes%), src is a slice i32%[3%] %(view at "
              .. "offset 1 of i32%[4%]%) on device 0 %(12 bytes%)", function() return main:copy(x, x:view(1)) end)
      local out = gpu.host("i32", {9, 9, 9})
      H.fails("sizes differ: dst is a host buffer i32%[3%] %(12 bytes%), src is a slice i32%[4%]",
              function() return main:copy(out, x) end)
      -- nothing was queued: under strict the host buffer may be read at once
      local old = gpu.policy("strict")
      finally(function() gpu.policy(old) end)
      assert.are.same({9, 9, 9}, out:totable())
      main:sync()
      assert.are.same({1, 2, 3, 4}, x:read():totable())
    end)

    it("rejects a copy between two host buffers", function()
      H.fails("s:copy: both dst and src are host buffers", function()
        return main:copy(gpu.host("f32", 4), gpu.host("f32", 4))
      end)
    end)

    it("rejects operands that are not slices or host buffers", function()
      local x = dev:zeros("f32", 4)
      H.fails("s:copy: src %(argument #2%) expected a slice or a host buffer, got number",
              function() return main:copy(x, 5) end)
      H.fails("s:copy: dst %(argument #1%) expected a slice or a host buffer, got string",
              function() return main:copy("x", x) end)
      H.fails("s:copy: dst %(argument #1%) expected a slice or a host buffer, got table",
              function() return main:copy({}, x) end)
      H.fails("s:copy: src %(argument #2%) expected a slice or a host buffer, got no value",
              function() return main:copy(x) end)
      H.fails("s:copy: src %(argument #2%) expected a slice or a host buffer, got gpulua%.Stream",
              function() return main:copy(x, main) end)
      H.fails("gpulua%.Stream expected, got gpulua%.Slice", function() return main.copy(x, x, x) end)
    end)

    it("rejects a closed stream", function()
      local s = dev:stream{name = "shut"}
      s:close()
      local x = dev:zeros("f32", 4)
      H.fails("stream 'shut' of device 0 is closed", function() return s:copy(x, gpu.host("f32", 4)) end)
    end)

    it("rejects a freed slice on either side", function()
      local x = dev:zeros("f32", 4)
      local y = dev:zeros("f32", 4)
      x:free()
      H.fails("bad argument #1: use of a freed slice f32%[4%] on device 0 %(freed at [^)]*copy_spec%.lua:%d+%)",
              function() return main:copy(x, y) end)
      H.fails("bad argument #2: use of a freed slice f32%[4%] on device 0 %(freed at [^)]*copy_spec%.lua:%d+%)",
              function() return main:copy(y, x) end)
      H.fails("use of a freed slice", function() return main:copy(gpu.host("f32", 4), x) end)
    end)

    H.it_devices(2, "rejects a host copy on a stream of another device", function()
      local s1 = gpu.device(1):stream{name = "s1"}
      local x = dev:zeros("f32", 4)
      H.fails("s:copy: the dst slice is on device 0, but stream 's1' is on device 1",
              function() return s1:copy(x, gpu.host("f32", 4)) end)
      H.fails("s:copy: the src slice is on device 0, but stream 's1' is on device 1",
              function() return s1:copy(gpu.host("f32", 4), x) end)
    end)

    H.it_devices(2, "rejects a copy between two slices of another device", function()
      local a, b = gpu.device(1):zeros("f32", 4), gpu.device(1):zeros("f32", 4)
      gpu.device(1):sync()
      H.fails("s:copy: dst and src are both on device 1, but stream 'main' is on device 0; queue a copy on a " ..
              "stream of the device of one of its ends", function() return dev.main:copy(b, a) end)
    end)
  end)

  describe("s:fill", function()
    it("fills every dtype, 8-byte patterns included", function()
      local cases = {
        {"i8", -128, -128}, {"i8", 5, 5}, {"u8", 255, 255}, {"i16", -32768, -32768}, {"u16", 65535, 65535},
        {"i32", -70000, -70000}, {"u32", 4000000000, 4000000000},
        {"i64", (1 << 40) | 3, (1 << 40) | 3}, {"i64", -2, -2}, {"i64", (1 << 32) | 1, (1 << 32) | 1},
        {"i64", math.mininteger, math.mininteger}, {"i64", 0, 0},
        {"u64", math.maxinteger, math.maxinteger}, {"u64", 2.0 ^ 63, math.mininteger},
        {"f16", 1.5, 1.5}, {"f16", 1 / 3, 0.333251953125}, {"bf16", -2.5, -2.5}, {"bf16", 1 / 3, 0.333984375},
        {"f32", 0.1, H.f32(0.1)}, {"f32", -0.0, 0},
        {"f64", 1.25, 1.25}, {"f64", 1 / 3, 1 / 3}, {"f64", -math.huge, -math.huge},
      }
      for _, c in ipairs(cases) do
        local dt, v, want = c[1], c[2], c[3]
        local x = dev:alloc(dt, 7)
        assert.is_true(rawequal(main, main:fill(x, v)))
        local h = x:read()
        for i = 1, 7 do
          if h[i] ~= want then assert.are.equal(want, h[i], ("%s fill %s, element %d"):format(dt, v, i)) end
        end
      end
    end)

    it("fills only the view it is given", function()
      for _, dt in ipairs{"u8", "i16", "f32", "f64", "i64"} do
        local x = dev:zeros(dt, 9)
        main:fill(x:view(2, 5), dt == "i64" and (1 << 40) | 3 or 3)
        local want = dt == "i64" and (1 << 40) | 3 or 3
        assert.are.same({0, 0, want, want, want, want, want, 0, 0}, x:read():totable(), dt)
      end
    end)

    it("is ordered on its stream", function()
      local s = dev:stream{name = "fill"}
      local x = dev:alloc("f32", N, {stream = s})
      H.busy(dev, s)
      s:fill(x, 1)
      s:fill(x:view(0, N // 2), 2)
      local h = x:read{stream = s}
      assert.are.equal(2, h[1])
      assert.are.equal(2, h[N // 2])
      assert.are.equal(1, h[N // 2 + 1])
      assert.are.equal(1, h[N])
    end)

    it("rejects values the dtype cannot hold", function()
      local x = dev:zeros("u8", 4)
      H.fails("s:fill: value: out of range for u8, got number 256", function() return main:fill(x, 256) end)
      H.fails("s:fill: value: out of range for u8, got number %-1", function() return main:fill(x, -1) end)
      H.fails("s:fill: value: expected an integer value for i32, got number 1%.5",
              function() return main:fill(dev:zeros("i32", 1), 1.5) end)
      H.fails("s:fill: value: NaN is not an integer for i64, got number NaN$",
              function() return main:fill(dev:zeros("i64", 1), 0 / 0) end)
      H.fails("s:fill: value: out of range for u64, got number " .. H.lit(tostring(2.0 ^ 64)),
              function() return main:fill(dev:zeros("u64", 1), 2.0 ^ 64) end)
      H.fails("s:fill: value: expected a number for f32, got string",
              function() return main:fill(dev:zeros("f32", 1), "1") end)
      H.fails("value expected", function() return main:fill(x) end)
      assert.are.same({0, 0, 0, 0}, x:read():totable())
    end)

    it("rejects a host buffer, saying to use h:fill", function()
      H.fails("s:fill: argument #1 is a host buffer; fill it with h:fill%(value%)",
              function() return main:fill(gpu.host("f32", 4), 1) end)
    end)

    it("rejects what is not a slice, a freed slice and a closed stream", function()
      H.fails("gpulua%.Slice expected, got number", function() return main:fill(5, 1) end)
      H.fails("gpulua%.Slice expected, got no value", function() return main:fill() end)
      local x = dev:zeros("f32", 4)
      local s = dev:stream{name = "shut"}
      s:close()
      H.fails("stream 'shut' of device 0 is closed", function() return s:fill(x, 1) end)
      x:free()
      H.fails("use of a freed slice f32%[4%] on device 0 %(freed at [^)]*copy_spec%.lua:%d+%)",
              function() return main:fill(x, 1) end)
    end)

    H.it_devices(2, "rejects a slice of another device", function()
      local x = dev:zeros("f32", 4)
      local m1 = gpu.device(1).main
      H.fails("s:fill: the slice is on device 0, but stream 'main' is on device 1", function() return m1:fill(x, 1) end)
    end)
  end)

  describe("x:read", function()
    it("reads on the main stream by default", function()
      local x = dev:alloc("u32", N)
      main:copy(x, H.iota("u32", N, 1000))
      local h = x:read()
      assert.are.equal("u32", h.dtype)
      assert.are.equal(N, #h)
      H.check_iota(h, 1000)
      H.check_iota(x:read({}), 1000)
    end)

    it("reads on the stream it is given, after that stream's work", function()
      local s = dev:stream{name = "reader"}
      local x = dev:alloc("i16", 60000, {stream = s})
      local src = H.iota("i16", 60000, -30000)
      H.busy(dev, s)
      s:copy(x, src)
      local h = x:read{stream = s}
      H.check_iota(h, -30000)
      -- the returned buffer is not pending: it may be written at once
      local old = gpu.policy("strict")
      finally(function() gpu.policy(old) end)
      h[1] = 0
      assert.are.equal(0, h[1])
    end)

    it("reads a view", function()
      local x = dev:alloc("i32", 10)
      main:copy(x, H.iota("i32", 10, 0))
      assert.are.same({6, 7, 8}, x:view(6, 3):read():totable())
    end)

    it("rejects a bad stream option", function()
      local x = dev:zeros("f32", 4)
      H.fails("x:read: option 'stream' expected a gpulua%.Stream, got string$",
        function() return x:read{stream = "main"} end)
      H.fails("table expected, got number", function() return x:read(5) end)
    end)

    H.it_devices(2, "rejects a stream of another device", function()
      local x = dev:zeros("f32", 4)
      H.fails("x:read: stream 'main' is on device 1, but the slice is on device 0",
              function() return x:read{stream = gpu.device(1).main} end)
    end)
  end)
end)
