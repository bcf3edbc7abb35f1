-- The built-in library for every dtype (gpu.kernels: KERNELS.md, "The built-in
-- library"): every kernel against a reference computed in Lua, bit for bit;
-- views at offsets that break the 16-byte vectors; the float reductions
-- against a Lua emulation of their documented order of operations (so a run
-- on the GPU and one on sim give these same bits). builtins_reduce_spec.lua
-- has the reductions' determinism, grid "auto" and the streams' scratch.
local gpu = require "gpulua"
local H = require "helpers"

local K = gpu.kernels
local BITS = {i8 = 8, u8 = 8, i16 = 16, u16 = 16, i32 = 32, u32 = 32, i64 = 64, u64 = 64}
local FLOATS = {"f16", "bf16", "f32", "f64"}

-- v (any Lua integer) as integer dtype dt holds it: modulo 2^bits, read back
-- as h[i] gives it (u64 from 2^63 as a negative integer, as Lua's own
-- wrapping arithmetic leaves it)
local function wrap(dt, v)
  local b = BITS[dt]
  if b == 64 then return v end
  local m = v & ((1 << b) - 1)
  if dt:sub(1, 1) == "i" and m >= 1 << (b - 1) then m = m - (1 << b) end
  return m
end

-- each value of table t as dtype dt stores it (floats rounded as the device
-- rounds, to nearest even: through a host buffer of that dtype)
local function stored(dt, t)
  local h = gpu.host(dt, #t)
  for i = 1, #t do h[i] = t[i] end
  return h:totable()
end

-- n values of dtype dt from seed: integers over the type's whole range (sums
-- and products wrap); floats in (-2, 2), of magnitudes down to 2^-8 and with
-- every bit of their mantissa random (so sums round in any precision), as dt
-- stores them; fine: floats with at most 11 significant bits (f16's), whose
-- products are exact in f32
local function values(dt, n, seed, fine)
  local t, s = {}, seed * 0x9E3779B97F4A7C15 + 1
  for i = 1, n do
    s = s * 6364136223846793005 + 1442695040888963407
    if BITS[dt] then
      t[i] = wrap(dt, s >> 17)
    else
      t[i] = ((s >> 11) / (1 << 53) * 4 - 2) / (1 << ((s >> 3) % 8))
    end
  end
  if BITS[dt] then return t end
  if fine then t = stored("f16", t) end
  return stored(dt, t)
end

local function upload(dev, dt, t, offset)
  offset = offset or 0
  local x = dev:alloc(dt, #t + offset + 5)
  local h = gpu.host(dt, #t)
  for i = 1, #t do h[i] = t[i] end
  dev.main:copy(x:view(offset, #t), h)
  return x:view(offset, #t)
end

-- exact comparison, NaN equal to NaN; floats compared as numbers (-0 == 0)
local function same(want, got, what)
  if want ~= got and not (want ~= want and got ~= got) then
    assert.are.equal(want, got, what)
  end
end

local function check_exact(h, want, what)
  assert.are.equal(#want, #h, what .. ": length")
  for i = 1, #want do
    local got = h[i]
    if got ~= want[i] and not (got ~= got and want[i] ~= want[i]) then
      assert.are.equal(want[i], got, ("%s: element %d of %d"):format(what, i, #want))
    end
  end
end

-- unsigned comparison for u64 (read back as Lua's signed integers)
local function less(dt, a, b)
  if dt == "u64" then return math.ult(a, b) end
  return a < b
end

-- The reference of each elementwise kernel, element by element; a is the
-- scalar as dt stores it.
local function ref_elementwise(dt, name, a, x, y)
  if BITS[dt] then
    if name == "axpy" then return wrap(dt, a * x + y) end
    if name == "scale" then return wrap(dt, a * x) end
    if name == "add" then return wrap(dt, x + y) end
    if name == "mul" then return wrap(dt, x * y) end
  else -- one rounding of the exact result (exact in f64 for these inputs), to dt (through f32 for f16 and bf16)
    if name == "axpy" then return a * x + y end
    if name == "scale" then return a * x end
    if name == "add" then return x + y end
    if name == "mul" then return x * y end
  end
end

-- The reductions' order of operations (kernels/builtins.cu), in Lua: n
-- elements of x (and y), mx and my their misalignment in bytes (from a
-- 16-byte boundary), grid G, block B; step(acc, i) folds element i (0-based)
-- into a thread's accumulator, join(a, b) two accumulators, id the start.
local function emulate(size, n, mx, my, G, B, step, join, id)
  local V, nt = 16 // size, G * B
  local head, nv = n, 0
  if mx == my then
    head = math.min(n, ((16 - mx) % 16) // size)
    nv = (n - head) // V
  end
  local rest = head + nv * V
  local acc = {}
  for g = 0, nt - 1 do acc[g] = id end
  for i = 0, head - 1 do acc[i % nt] = step(acc[i % nt], i) end
  for j = 0, nv - 1 do
    local g = j % nt
    for e = 0, V - 1 do acc[g] = step(acc[g], head + j * V + e) end
  end
  for i = rest, n - 1 do acc[(i - rest) % nt] = step(acc[(i - rest) % nt], i) end
  local function tree(v, base) -- a warp's shuffle tree: lane i takes lane i + off
    local c = {}
    for i = 0, 31 do c[i] = v[base + i] end
    local off = 16
    while off > 0 do
      for i = 0, 31 - off do c[i] = join(c[i], c[i + off]) end
      off = off // 2
    end
    return c[0]
  end
  local function block(v, base)
    local w = {}
    for i = 0, 31 do w[i] = i < B // 32 and tree(v, base + 32 * i) or id end
    return tree(w, 0)
  end
  local part = {}
  for b = 0, G - 1 do part[b] = block(acc, b * B) end
  local last = {}
  for t = 0, B - 1 do
    local a = id
    for i = t, G - 1, B do a = join(a, part[i]) end
    last[t] = a
  end
  return block(last, 0)
end

describe("built-in kernels for every dtype", function()
  local dev, main
  before_each(function()
    dev = gpu.device(0)
    main = dev.main
  end)

  for _, dt in ipairs(H.dtypes) do
    local int = BITS[dt] ~= nil
    describe(dt, function()
      -- a the scalar of axpy and scale: of the dtype (integers in its range)
      local a = int and (dt:sub(1, 1) == "u" and 201 or -103) or dt == "f64" and -0.5 or 1 / 3
      if dt == "i8" then a = -103 elseif dt == "u8" then a = 201 end
      local as = stored(dt, {a})[1]

      it("axpy, scale, add and mul, as the reference computes them, on views at any offset", function()
        -- offsets: co-aligned at 0, co-aligned off the 16-byte boundary, and not co-aligned (the scalar loop)
        for _, o in ipairs{{0, 0, 0}, {3, 3, 3}, {1, 3, 2}, {5, 0, 7}} do
          local n = 1000 + 37
          local tx, ty, tz = values(dt, n, 1), values(dt, n, 2), values(dt, n, 3)
          local where = ("offsets %d, %d, %d"):format(o[1], o[2], o[3])
          for _, name in ipairs{"axpy", "scale", "add", "mul"} do
            local x, y = upload(dev, dt, tx, o[1]), upload(dev, dt, ty, o[2])
            local want = {}
            if name == "axpy" or name == "scale" then
              main:launch(K[name], {grid = 3, block = 64}, a, x, y, n - 5)
              for i = 1, n do want[i] = i <= n - 5 and ref_elementwise(dt, name, as, tx[i], ty[i]) or ty[i] end
              check_exact(y:read(), int and want or stored(dt, want), name .. " " .. where)
              check_exact(x:read(), tx, name .. " leaves x " .. where)
            else
              local z = upload(dev, dt, tz, o[3])
              main:launch(K[name], {grid = 5, block = 32}, x, y, z, n - 5)
              for i = 1, n do want[i] = i <= n - 5 and ref_elementwise(dt, name, nil, tx[i], ty[i]) or tz[i] end
              check_exact(z:read(), int and want or stored(dt, want), name .. " " .. where)
            end
          end
        end
      end)

      it("fill and copy move the elements' bits, strided or not", function()
        local n = 777
        local tx, ty = values(dt, 2 * n, 4), values(dt, 3 * n, 5)
        local v = int and (dt == "u64" and -2 or wrap(dt, 0x5a5a5a5a5a5a5a5a)) or 0.1
        for _, off in ipairs{0, 1, 3} do
          local y = upload(dev, dt, ty, off)
          main:launch(K.fill, {block = 64}, y, v, n)
          local want = {}
          local vs = stored(dt, {v})[1]
          for i = 1, #ty do want[i] = i <= n and vs or ty[i] end
          check_exact(y:read(), want, "fill at offset " .. off)
          local x = upload(dev, dt, tx, off + 2)
          main:launch(K.copy, {grid = 2, block = 64}, x, 1, y, 1, n + 3)
          for i = 1, n + 3 do want[i] = tx[i] end
          check_exact(y:read(), want, "copy at offset " .. off)
          main:launch(K.copy, {grid = 2, block = 64}, x, 2, y, 3, n)
          for i = 0, n - 1 do want[3 * i + 1] = tx[2 * i + 1] end
          check_exact(y:read(), want, "strided copy at offset " .. off)
        end
      end)

      it("sum, dot, min and max write out's first element, as the reference computes them", function()
        for _, o in ipairs{{0, 0}, {3, 3}, {1, 2}} do
          local n = 2053
          local tx = values(dt, n, 6) -- sum, min, max; dot: products exact in the accumulator
          local fx, fy = values(dt, n, 7, true), values(dt, n, 8, true)
          local x, px, py = upload(dev, dt, tx, o[1]), upload(dev, dt, fx, o[1]), upload(dev, dt, fy, o[2])
          local before = values(dt, 8, 9)
          local out = upload(dev, dt, before, 1)
          main:launch(K.sum, {grid = 3, block = 64}, x, out:view(0, 1), n)
          main:launch(K.dot, {grid = 4, block = 96}, px, py, out:view(2, 2), n)
          main:launch(K.min, {grid = 5, block = 32}, x, out:view(4, 1), n)
          main:launch(K.max, {block = 128}, x, out:view(5, 1), n)
          local got = out:read()
          local where = ("offsets %d, %d"):format(o[1], o[2])
          local lo, hi = tx[1], tx[1]
          for i = 2, n do
            if less(dt, tx[i], lo) then lo = tx[i] end
            if less(dt, hi, tx[i]) then hi = tx[i] end
          end
          same(lo, got[5], "min " .. where)
          same(hi, got[6], "max " .. where)
          if int then
            local s, d = 0, 0
            for i = 1, n do
              s = s + tx[i]
              d = d + fx[i] * fy[i]
            end
            same(wrap(dt, s), got[1], "sum " .. where)
            same(wrap(dt, d), got[3], "dot " .. where)
          else -- the documented order of operations, each step rounded to the accumulator (f32, or f64 for f64)
            local acc = dt == "f64" and function(v) return v end or H.f32
            local size = H.sizes[dt]
            local mx, my = o[1] * size % 16, o[2] * size % 16
            local add = function(p, q) return acc(p + q) end
            local s = emulate(size, n, mx, mx, 3, 64, function(c, i) return acc(c + tx[i + 1]) end, add, 0)
            local d = emulate(size, n, mx, my, 4, 96, function(c, i) return acc(c + fx[i + 1] * fy[i + 1]) end, add, 0)
            same(stored(dt, {s})[1], got[1], "sum " .. where)
            same(stored(dt, {d})[1], got[3], "dot " .. where)
          end
          for _, i in ipairs{2, 4, 7, 8} do same(before[i], got[i], "out's element " .. i .. " is left alone") end
        end
      end)

      it("reductions of nothing write their identity", function()
        local x = dev:zeros(dt, 4)
        local out = upload(dev, dt, values(dt, 4, 9))
        main:launch(K.sum, {block = 64}, x, out, 0)
        main:launch(K.dot, {block = 64}, x, x, out:view(1, 1), 0)
        main:launch(K.min, {block = 64}, x, out:view(2, 1), 0)
        main:launch(K.max, {block = 64}, x, out:view(3, 1), 0)
        local b, signed = BITS[dt], dt:sub(1, 1) == "i"
        local top = not int and math.huge or b == 64 and (signed and math.maxinteger or -1)
                    or signed and (1 << (b - 1)) - 1 or (1 << b) - 1
        local bottom = not int and -math.huge or signed and wrap(dt, 1 << (b - 1)) or 0
        check_exact(out:read(), {0, 0, top, bottom}, "identities")
      end)

      it("check n against every slice", function()
        local x, y = dev:zeros(dt, 50), dev:zeros(dt, 40)
        local name = function(k) return ("built%%-in kernel '%s_%s'"):format(k, dt) end
        H.fails(name("axpy") .. ": argument 3 has 40 elements, but n = 50 needs 50", main.launch, main, K.axpy,
          {block = 64}, 1, x, y, 50)
        H.fails(name("dot") .. ": argument 2 has 40 elements, but n = 41 needs 41", main.launch, main, K.dot,
          {block = 64}, x, y, x, 41)
        H.fails(name("sum") .. ": argument 1 has 50 elements, but n = 51 needs 51", main.launch, main, K.sum,
          {block = 64}, x, y, 51)
        H.fails(name("min") .. ": argument 1 has 40 elements", main.launch, main, K.min, {block = 64}, y, x, 41)
        H.fails(name("max") .. ": argument 1 has 40 elements", main.launch, main, K.max, {block = 64}, y, x, 41)
        H.fails(name("add") .. ": argument 2 has 40 elements", main.launch, main, K.add, {block = 64}, x, y, x, 45)
        H.fails(name("fill") .. ": argument 1 has 40 elements", main.launch, main, K.fill, {block = 64}, y, 0, 45)
        H.fails(name("copy") .. ": argument 3 has 40 elements, but n = 20 with its stride needs 58", main.launch, main,
          K.copy, {block = 64}, x, 1, y, 3, 20)
        H.check_all(y:read(), 0) -- nothing ran
      end)

      it("write in place or apart from their inputs, never overlapping them otherwise", function()
        local t = values(dt, 24, 10)
        local x = upload(dev, dt, t)
        local name = function(k) return ("built%%-in kernel '%s_%s'"):format(k, dt) end
        local over = function(o, i)
          return H.lit((": argument %d, which it writes, overlaps argument %d without being the same elements")
            :format(o, i))
        end
        -- shifted by one: on the GPU each thread would read an element that another writes
        H.fails(name("copy") .. over(3, 1), main.launch, main, K.copy, {block = 32}, x:view(0, 10), 1, x:view(1, 10),
          1, 10)
        H.fails(name("axpy") .. over(3, 2), main.launch, main, K.axpy, {block = 32}, 1, x:view(1, 10), x:view(0, 10),
          10)
        H.fails(name("scale") .. over(3, 2), main.launch, main, K.scale, {block = 32}, 1, x:view(0, 12),
          x:view(11, 12), 12)
        H.fails(name("add") .. over(3, 2), main.launch, main, K.add, {block = 32}, x:view(0, 8), x:view(8, 8),
          x:view(12, 8), 8)
        H.fails(name("mul") .. over(3, 1), main.launch, main, K.mul, {block = 32}, x:view(2, 8), x:view(16, 8),
          x:view(0, 8), 8)
        H.fails(name("copy") .. H.lit(": argument 4's stride is 0, so its one element would be written by 3 threads "
                                      .. "at once (n = 3)"), main.launch, main, K.copy, {block = 32}, x, 1,
          x:view(20), 0, 3)
        check_exact(x:read(), t, "nothing ran")
        -- allowed: in place, apart, interleaved strides, inputs that overlap each other, a stride 0 for n = 1
        local want = {}
        for i = 1, 24 do want[i] = t[i] end
        main:launch(K.mul, {block = 32}, x:view(0, 8), x:view(4, 8), x:view(16, 8), 8)
        for i = 1, 8 do
          want[16 + i] = stored(dt, {int and wrap(dt, t[i] * t[4 + i]) or t[i] * t[4 + i]})[1]
        end
        main:launch(K.copy, {block = 32}, x, 2, x:view(1), 2, 4) -- evens to odds: never the same element
        for i = 0, 3 do want[2 * i + 2] = want[2 * i + 1] end
        main:launch(K.copy, {block = 32}, x:view(23), 0, x:view(12), 0, 1)
        want[13] = want[24]
        main:launch(K.scale, {block = 32}, 1, x:view(8, 4), x:view(8, 4), 4) -- in place
        check_exact(x:read(), want, "in place, apart, interleaved")
      end)

      it("check that a reduction's out has its first element, and say when a count or stride was negative", function()
        local x, guard = dev:zeros(dt, 8), dev:zeros(dt, 4)
        local name = function(k) return ("built%%-in kernel '%s_%s'"):format(k, dt) end
        local empty = guard:view(1, 0) -- no element: the kernel would write guard[2]
        for _, k in ipairs{"sum", "min", "max"} do
          H.fails(name(k) .. H.lit(": argument 2 (out) has 0 elements: a reduction writes its result to out's first "
                                   .. "element"), main.launch, main, K[k], {block = 32}, x, empty, 8)
        end
        H.fails(name("dot") .. H.lit(": argument 3 (out) has 0 elements"), main.launch, main, K.dot, {block = 32}, x, x,
          guard:view(4, 0), 8)
        H.fails(name("fill") .. H.lit(": argument 1 has 4 elements, but n = 18446744073709551615 needs "
                                      .. "18446744073709551615 (n was -1 as a signed integer: a count cannot be "
                                      .. "negative)"), main.launch, main, K.fill, {block = 32}, guard, 1, -1)
        H.fails(name("copy") .. H.lit(": argument 3 has 4 elements, but n = 2 with its stride needs "
                                      .. "18446744073709551615 (the stride was negative as a signed integer: strides "
                                      .. "cannot be)"), main.launch, main, K.copy, {block = 32}, x, 1, guard, -2, 2)
        H.fails(name("copy") .. H.lit(": argument 3 has 4 elements, but n = 3 with a stride of 18446744073709551614 "
                                      .. "reaches past them (the stride was negative"), main.launch,
          main, K.copy, {block = 32}, x, 1, guard, -2, 3)
        H.check_all(guard:read(), 0) -- nothing ran
      end)
    end)
  end

  describe("integers", function()
    it("wrap as C's unsigned arithmetic does, and the scalar is checked for the type's range", function()
      local x = upload(dev, "i8", {100, -128, 127})
      local y = upload(dev, "i8", {100, 1, -1})
      main:launch(K.axpy, {block = 32}, 2, x, y, 3)
      check_exact(y:read(), {wrap("i8", 300), wrap("i8", -255), wrap("i8", 253)}, "i8 axpy")
      local u = upload(dev, "u64", {-1, 1 << 63})
      local out = dev:zeros("u64", 1)
      main:launch(K.sum, {block = 32}, u, out, 2)
      check_exact(out:read(), {(1 << 63) - 1}, "u64 sum") -- 2^64 - 1 + 2^63, modulo 2^64
      main:launch(K.max, {block = 32}, u, out, 2)
      check_exact(out:read(), {-1}, "u64 max: 2^64 - 1 reads back as -1")
      H.fails("kernel 'axpy_i8': argument 1 %(i8%): out of range", main.launch, main, K.axpy, {block = 32}, 128, x, y,
        3)
      H.fails("kernel 'scale_u16': argument 1 %(u16%)", main.launch, main, K.scale, {block = 32}, -1,
        dev:zeros("u16", 1), dev:zeros("u16", 1), 1)
      H.fails("kernel 'fill_i32': argument 2 %(i32%): expected an integer value", main.launch, main, K.fill,
        {block = 32}, dev:zeros("i32", 1), 1.5, 1)
    end)
  end)

  describe("floats", function()
    it("min and max: a NaN wins, and the element itself is kept", function()
      for _, dt in ipairs(FLOATS) do
        local t = values(dt, 300, 10)
        t[123] = 0 / 0
        local x = upload(dev, dt, t)
        local out = dev:zeros(dt, 2)
        main:launch(K.min, {grid = 2, block = 64}, x, out, 300)
        main:launch(K.max, {grid = 2, block = 64}, x, out:view(1, 1), 300)
        local h = out:read()
        assert.is_true(h[1] ~= h[1] and h[2] ~= h[2], dt .. ": NaN propagates")
        main:launch(K.min, {grid = 2, block = 64}, x, out, 122)
        local lo = t[1]
        for i = 2, 122 do lo = math.min(lo, t[i]) end
        same(lo, out:read()[1], dt .. ": before the NaN")
        -- of equal values the first met stays: -0 then 0 gives -0 (1 / -0 is -inf)
        main:launch(K.min, {block = 32}, upload(dev, dt, {-0.0, 0.0}), out, 2)
        assert.are.equal(-math.huge, 1 / out:read()[1], dt .. ": -0 first")
        main:launch(K.max, {block = 32}, upload(dev, dt, {0.0, -0.0}), out, 2)
        assert.are.equal(math.huge, 1 / out:read()[1], dt .. ": 0 first")
      end
    end)

    it("f16 and bf16 scalars and host elements round once from the Lua number, to nearest even", function()
      -- through f32 first, each of these rounds twice and lands one step low
      local f16 = {1 + 2 ^ -11 + 2 ^ -30, -(1 + 2 ^ -11 + 2 ^ -40), 2 ^ -25 + 2 ^ -50, 1 + 2 ^ -11, 1 + 3 * 2 ^ -11}
      local f16_want = {1 + 2 ^ -10, -(1 + 2 ^ -10), 2 ^ -24, 1, 1 + 2 ^ -9} -- the last two: ties, to even
      local bf16 = {1 + 2 ^ -8 + 2 ^ -30, -(1 + 2 ^ -8 + 2 ^ -40), 1 + 2 ^ -8, 1 + 3 * 2 ^ -8}
      local bf16_want = {1 + 2 ^ -7, -(1 + 2 ^ -7), 1, 1 + 2 ^ -6}
      for _, c in ipairs{{"f16", f16, f16_want}, {"bf16", bf16, bf16_want}} do
        local dt, v, want = c[1], c[2], c[3]
        local h = gpu.host(dt, #v)
        for i = 1, #v do h[i] = v[i] end
        check_exact(h, want, dt .. " host buffer")
        local y = dev:zeros(dt, #v)
        for i = 1, #v do
          main:launch(K.fill, {block = 32}, y:view(i - 1, 1), v[i], 1)
        end
        check_exact(y:read(), want, dt .. " fill's scalar")
        local z = dev:alloc(dt, #v)
        for i = 1, #v do
          main:launch(K.scale, {block = 32}, v[i], upload(dev, dt, {1}), z:view(i - 1, 1), 1)
        end
        check_exact(z:read(), want, dt .. " scale's scalar times 1")
      end
    end)

    it("f16 and bf16 round once, to nearest even, and overflow to infinity", function()
      local x = upload(dev, "f16", {60000, 60000, 1, 2049})
      local y = upload(dev, "f16", {10000, 0, 1, 0})
      local z = dev:zeros("f16", 4)
      main:launch(K.add, {block = 32}, x, y, z, 4)
      check_exact(z:read(), {math.huge, 60000, 2, 2048}, "f16 add") -- 2049 is stored as 2048: even
      local out = dev:zeros("f16", 1)
      main:launch(K.sum, {block = 32}, upload(dev, "f16", {2048, 1, 1}), out, 3)
      check_exact(out:read(), {2050}, "f16 sum in f32, rounded once") -- in f16 steps: 2048 + 1 = 2048 twice
      local b = upload(dev, "bf16", {256, 1, 1})
      local bo = dev:zeros("bf16", 1)
      main:launch(K.sum, {block = 32}, b, bo, 3)
      check_exact(bo:read(), {258}, "bf16 sum in f32")
      -- NaN from arithmetic: a NaN on every backend
      local inf = upload(dev, "bf16", {math.huge})
      main:launch(K.add, {block = 32}, inf, upload(dev, "bf16", {-math.huge}), bo, 1)
      local v = bo:read()[1]
      assert.is_true(v ~= v, "inf - inf is a NaN")
    end)
  end)
end)
