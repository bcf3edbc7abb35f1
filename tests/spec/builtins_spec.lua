-- The built-in kernel library gpu.kernels: results against a CPU reference
-- computed in Lua, for f32 and f64, and the checks of their launches
-- (builtins_dtypes_spec.lua: every dtype, bit for bit, determinism, grid
-- "auto" and the reductions' scratch).
local gpu = require "gpulua"
local H = require "helpers"

local K = gpu.kernels
local CFG = {grid = 4, block = 128} -- grid-stride loops: any grid covers any n

-- Inputs: H.values(dt, n, seed), pseudo-random in [-2, 2) (never all zeros),
-- uploaded with H.upload(dev, dt, t).

-- Relative tolerances: elementwise results, and sums (relative to the sum, or
-- for values of both signs to the sum of the magnitudes). f64 is tight:
-- elementwise at most an FMA's difference, sums at most a reordering's.
local TOL = {f32 = {elem = 1e-6, sum = 1e-5}, f64 = {elem = 1e-15, sum = 1e-12}}

-- Assert that host buffer h holds want[i] for every i; scale[i] (default
-- |want[i]|) is the magnitude the tolerance is relative to.
local function check(h, want, tol, scale)
  assert.are.equal(#want, #h, "length")
  for i = 1, #want do
    local got, w = h[i], want[i]
    local s = scale and scale[i] or math.abs(w)
    local d = math.abs(got - w)
    if got ~= w and (d ~= d or d > tol * s) then -- a NaN fails too
      assert.are.equal(w, got, ("element %d of %d (tolerance %g of %g)"):format(i, #want, tol, s))
    end
  end
end

local function copy_of(t)
  local c = {}
  for i = 1, #t do c[i] = t[i] end
  return c
end

describe("built-in kernels", function()
  local dev, main
  before_each(function()
    dev = gpu.device(0)
    main = dev.main
  end)

  it("are the library of the contract, with T-templated signatures", function()
    local sigs = {
      axpy = "T, const T*, T*, u64",
      scale = "T, const T*, T*, u64",
      fill = "T*, T, u64",
      add = "const T*, const T*, T*, u64",
      mul = "const T*, const T*, T*, u64",
      copy = "const T*, u64, T*, u64, u64",
      sum = "const T*, T*, u64",
      dot = "const T*, const T*, T*, u64",
      min = "const T*, T*, u64",
      max = "const T*, T*, u64",
    }
    for name, sig in pairs(sigs) do
      local k = K[name]
      assert.is_not_nil(k, "gpu.kernels." .. name)
      assert.are.equal(name, k.name)
      assert.are.equal(sig, k.signature, name)
      assert.are.equal(("gpulua.Kernel(%s(%s))"):format(name, sig), tostring(k))
      assert.is_string(k.doc)
    end
    assert.are.equal("T, const T*, T*, u64", gpu.kernels.axpy.signature)
  end)

  it("have their host implementations built in", function()
    H.fails("k:host: 'axpy' is a built%-in kernel; its host implementation is part of gpulua", K.axpy.host, K.axpy,
      function() end)
    H.fails("k:host: 'sum' is a built%-in kernel", K.sum.host, K.sum, function() end)
    H.fails("k:host: 'dot' is a built%-in kernel", K.dot.host, K.dot, function() end)
  end)

  for _, dt in ipairs{"f32", "f64"} do
    local tol = TOL[dt]
    describe(dt, function()
      it("axpy: y = a * x + y", function()
        local n = 3000
        local a = H.round(dt, -0.3)
        local tx, ty = H.values(dt, n, 11), H.values(dt, n, 12)
        local x, y = H.upload(dev, dt, tx), H.upload(dev, dt, ty)
        assert.is_true(rawequal(main, main:launch(K.axpy, CFG, -0.3, x, y, n)))
        local want, scale = {}, {}
        for i = 1, n do
          want[i] = a * tx[i] + ty[i]
          scale[i] = math.abs(a * tx[i]) + math.abs(ty[i])
        end
        check(y:read(), want, tol.elem, scale)
        check(x:read(), tx, 0) -- x is only read
      end)

      it("axpy on views at offsets, with n smaller than the slices", function()
        local n = 1000
        local tx, ty = H.values(dt, 1500, 13), H.values(dt, 1400, 14)
        local x, y = H.upload(dev, dt, tx), H.upload(dev, dt, ty)
        main:launch(K.axpy, CFG, 2.5, x:view(7, n + 100), y:view(13, n + 50), n)
        local want, scale = copy_of(ty), {}
        for i = 1, #ty do scale[i] = math.abs(ty[i]) end
        for i = 1, n do
          want[13 + i] = 2.5 * tx[7 + i] + ty[13 + i]
          scale[13 + i] = math.abs(2.5 * tx[7 + i]) + math.abs(ty[13 + i])
        end
        check(y:read(), want, tol.elem, scale)
      end)

      it("scale: y = a * x, only the first n", function()
        local n = 2500
        local a = H.round(dt, 1 / 3)
        local tx, ty = H.values(dt, 3000, 15), H.values(dt, 3000, 16)
        local x, y = H.upload(dev, dt, tx), H.upload(dev, dt, ty)
        main:launch(K.scale, CFG, 1 / 3, x, y, n)
        local want = copy_of(ty)
        for i = 1, n do want[i] = a * tx[i] end
        check(y:read(), want, dt == "f64" and 0 or tol.elem)
      end)

      it("scale on views at offsets", function()
        local n = 1200
        local tx, ty = H.values(dt, 1300, 17), H.values(dt, 1300, 18)
        local x, y = H.upload(dev, dt, tx), H.upload(dev, dt, ty)
        main:launch(K.scale, CFG, -4, x:view(100, n), y:view(1, n), n)
        local want = copy_of(ty)
        for i = 1, n do want[1 + i] = -4 * tx[100 + i] end
        check(y:read(), want, 0) -- times a power of two is exact
      end)

      it("fill: y = v, only the first n, and on a view", function()
        local n = 4000
        local ty = H.values(dt, 5000, 19)
        local y = H.upload(dev, dt, ty)
        main:launch(K.fill, CFG, y, 0.1, n)
        local want = copy_of(ty)
        for i = 1, n do want[i] = H.round(dt, 0.1) end
        check(y:read(), want, 0)
        main:launch(K.fill, CFG, y:view(4500, 300), -7.25, 300)
        for i = 4501, 4800 do want[i] = -7.25 end
        check(y:read(), want, 0)
      end)

      it("add: c = a + b", function()
        local n = 3500
        local ta, tb, tc = H.values(dt, n, 21), H.values(dt, n, 22), H.values(dt, n + 10, 23)
        local a, b, c = H.upload(dev, dt, ta), H.upload(dev, dt, tb), H.upload(dev, dt, tc)
        main:launch(K.add, CFG, a, b, c, n)
        local want, scale = copy_of(tc), {}
        for i = 1, #tc do scale[i] = math.abs(tc[i]) end
        for i = 1, n do
          want[i] = ta[i] + tb[i]
          scale[i] = math.abs(ta[i]) + math.abs(tb[i])
        end
        check(c:read(), want, dt == "f64" and 0 or tol.elem, scale)
      end)

      it("add on views at offsets, one of them in place", function()
        local n = 1000
        local ta, tc = H.values(dt, 2000, 24), H.values(dt, 1100, 25)
        local a, c = H.upload(dev, dt, ta), H.upload(dev, dt, tc)
        -- c[50 + i] = a[i] + a[1000 + i]
        main:launch(K.add, CFG, a:view(0, n), a:view(1000, n), c:view(50, n), n)
        local want, scale = copy_of(tc), {}
        for i = 1, #tc do scale[i] = math.abs(tc[i]) end
        for i = 1, n do
          want[50 + i] = ta[i] + ta[1000 + i]
          scale[50 + i] = math.abs(ta[i]) + math.abs(ta[1000 + i])
        end
        check(c:read(), want, dt == "f64" and 0 or tol.elem, scale)
      end)

      it("mul: c = a * b", function()
        local n = 3333
        local ta, tb, tc = H.values(dt, n, 26), H.values(dt, n, 27), H.values(dt, n, 28)
        local a, b, c = H.upload(dev, dt, ta), H.upload(dev, dt, tb), H.upload(dev, dt, tc)
        main:launch(K.mul, CFG, a, b, c, n - 33)
        local want = copy_of(tc)
        for i = 1, n - 33 do want[i] = ta[i] * tb[i] end
        check(c:read(), want, dt == "f64" and 0 or tol.elem)
      end)

      it("mul on views at offsets", function()
        local n = 800
        local ta, tb, tc = H.values(dt, 900, 29), H.values(dt, 900, 30), H.values(dt, 900, 31)
        local a, b, c = H.upload(dev, dt, ta), H.upload(dev, dt, tb), H.upload(dev, dt, tc)
        main:launch(K.mul, CFG, a:view(3, n), b:view(5, n), c:view(99, n), n)
        local want = copy_of(tc)
        for i = 1, n do want[99 + i] = ta[3 + i] * tb[5 + i] end
        check(c:read(), want, dt == "f64" and 0 or tol.elem)
      end)

      it("copy: contiguous, and n smaller than the slices", function()
        local n = 2000
        local tx, ty = H.values(dt, 2500, 32), H.values(dt, 2500, 33)
        local x, y = H.upload(dev, dt, tx), H.upload(dev, dt, ty)
        main:launch(K.copy, CFG, x, 1, y, 1, n)
        local want = copy_of(ty)
        for i = 1, n do want[i] = tx[i] end
        check(y:read(), want, 0)
      end)

      it("copy with strides: y[i * 3] = x[i * 2]", function()
        local n = 1000
        local tx = H.values(dt, 2 * (n - 1) + 1, 34)
        local ty = H.values(dt, 3 * (n - 1) + 1, 35)
        local x, y = H.upload(dev, dt, tx), H.upload(dev, dt, ty)
        main:launch(K.copy, CFG, x, 2, y, 3, n)
        local want = copy_of(ty)
        for i = 0, n - 1 do want[3 * i + 1] = tx[2 * i + 1] end
        check(y:read(), want, 0)
        -- the elements between the strided ones are untouched
        local h = y:read()
        assert.are.equal(ty[2], h[2])
        assert.are.equal(ty[3], h[3])
        assert.are.equal(tx[3], h[4])
      end)

      it("copy with strides on views, and a zero stride broadcasting x[0]", function()
        local n = 500
        local tx, ty = H.values(dt, 1600, 36), H.values(dt, 1600, 37)
        local x, y = H.upload(dev, dt, tx), H.upload(dev, dt, ty)
        main:launch(K.copy, CFG, x:view(10, 1000), 2, y:view(20, 1500), 3, n)
        local want = copy_of(ty)
        for i = 0, n - 1 do want[20 + 3 * i + 1] = tx[10 + 2 * i + 1] end
        check(y:read(), want, 0)
        local z = H.upload(dev, dt, H.values(dt, 300, 38))
        main:launch(K.copy, CFG, x:view(1234, 1), 0, z, 1, 300)
        local all = {}
        for i = 1, 300 do all[i] = tx[1235] end
        check(z:read(), all, 0)
      end)

      it("sum: out[1] = the sum of x", function()
        local n = 5000
        local tx = H.values(dt, n, 39, 0.5, 4.5) -- in [0.5, 4.5): relative to the sum itself
        local x = H.upload(dev, dt, tx)
        local out = dev:zeros(dt, 1)
        main:launch(K.sum, CFG, x, out, n)
        local want = 0
        for i = 1, n do want = want + tx[i] end
        check(out:read(), {want}, tol.sum)
      end)

      it("sum writes out's first element, whatever it held, over a view, with n smaller than the slice", function()
        local n = 3000
        local tx = H.values(dt, 4000, 40, 0.5, 4.5)
        local x = H.upload(dev, dt, tx)
        local out = H.upload(dev, dt, {7, 10.5, 7})
        main:launch(K.sum, CFG, x:view(100, 3500), out:view(1, 2), n)
        local want = 0
        for i = 101, 100 + n do want = want + tx[i] end
        check(out:read(), {7, want, 7}, tol.sum) -- only the first element of the view, and no accumulation
        local first = out:read()[2]
        -- again: the same, bit for bit (it does not add to what is there)
        main:launch(K.sum, CFG, x:view(100, 3500), out:view(1, 2), n)
        assert.are.equal(first, out:read()[2])
      end)

      it("sum of values of both signs, with any block that is a multiple of 32 and any grid", function()
        local n = 1000
        local tx = H.values(dt, n, 41)
        local x = H.upload(dev, dt, tx)
        local want, mag = 0, 0
        for i = 1, n do
          want = want + tx[i]
          mag = mag + math.abs(tx[i])
        end
        for _, cfg in ipairs{{grid = 1, block = 32}, {grid = 3, block = 96}, {grid = 2, block = {256, 1, 1}},
                             {grid = 16, block = 1024}} do
          local out = dev:zeros(dt, 1)
          main:launch(K.sum, cfg, x, out, n)
          check(out:read(), {want}, tol.sum, {mag})
        end
      end)

      it("n = 0 changes nothing", function()
        local tx, ty = H.values(dt, 100, 42), H.values(dt, 100, 43)
        local x, y = H.upload(dev, dt, tx), H.upload(dev, dt, ty)
        main:launch(K.axpy, CFG, 2, x, y, 0)
        main:launch(K.scale, CFG, 2, x, y, 0)
        main:launch(K.fill, CFG, y, 2, 0)
        main:launch(K.add, CFG, x, x, y, 0)
        main:launch(K.mul, CFG, x, x, y, 0)
        main:launch(K.copy, CFG, x, 2, y, 3, 0)
        check(y:read(), ty, 0)
        -- a reduction of nothing writes its identity
        local out = H.upload(dev, dt, {1.5, 1.5, 1.5, 1.5})
        main:launch(K.sum, CFG, x, out:view(0, 1), 0)
        main:launch(K.dot, CFG, x, x, out:view(1, 1), 0)
        main:launch(K.min, CFG, x, out:view(2, 1), 0)
        main:launch(K.max, CFG, x, out:view(3, 1), 0)
        check(out:read(), {0, 0, math.huge, -math.huge}, 0)
      end)

      it("take the dtype from the first slice: another dtype after it is an error", function()
        local other = dt == "f32" and "f64" or "f32"
        local x, y = dev:zeros(dt, 10), dev:zeros(other, 10)
        H.fails(("s:launch: kernel 'axpy_%s': argument 3 expected an %s slice, got an %s slice"):format(dt, dt, other),
          main.launch, main, K.axpy, CFG, 1, x, y, 10)
        H.fails(("kernel 'sum_%s': argument 2 expected an %s slice, got an %s slice"):format(dt, dt, other),
          main.launch, main, K.sum, CFG, x, y, 10)
      end)
    end)
  end

  describe("launch checks", function()
    local x, y
    before_each(function()
      x = dev:zeros("f32", 100)
      y = dev:zeros("f32", 100)
    end)

    it("reject n larger than a slice, naming the argument and the counts", function()
      H.fails("s:launch: built%-in kernel 'axpy_f32': argument 2 has 100 elements, but n = 101 needs 101",
        main.launch, main, K.axpy, CFG, 2, x, y, 101)
      H.fails("built%-in kernel 'axpy_f32': argument 3 has 50 elements, but n = 100 needs 100", main.launch, main,
        K.axpy, CFG, 2, x, y:view(0, 50), 100)
      H.fails("built%-in kernel 'fill_f64': argument 1 has 10 elements, but n = 11 needs 11", main.launch, main,
        K.fill, CFG, dev:zeros("f64", 10), 0, 11)
      H.fails("built%-in kernel 'add_f32': argument 2 has 99 elements, but n = 100 needs 100", main.launch, main,
        K.add, CFG, x, y:view(1, 99), x, 100)
      H.fails("built%-in kernel 'mul_f32': argument 1 has 100 elements, but n = 1099511627776 needs 1099511627776",
        main.launch, main, K.mul, CFG, x, y, x, 1 << 40)
      H.fails("built%-in kernel 'sum_f32': argument 1 has 100 elements, but n = 1000 needs 1000", main.launch, main,
        K.sum, CFG, x, y, 1000)
      H.fails("built%-in kernel 'scale_f32': argument 2 has 100 elements", main.launch, main, K.scale, CFG, 2, x, y,
        200)
      H.check_all(y:read(), 0) -- nothing ran
    end)

    it("reject a strided copy that runs past the end", function()
      H.fails("s:launch: built%-in kernel 'copy_f32': argument 3 has 100 elements, but n = 50 with its stride " ..
        "needs 148", main.launch, main, K.copy, CFG, x, 2, y, 3, 50)
      H.fails("built%-in kernel 'copy_f32': argument 1 has 100 elements, but n = 51 with its stride needs 101",
        main.launch, main, K.copy, CFG, x, 2, y, 1, 51)
      -- exactly to the end is fine
      main:launch(K.copy, CFG, x, 2, y, 3, 34)
      main:launch(K.copy, CFG, x, 3, y, 1, 34)
      main:sync()
    end)

    it("reject a strided copy whose stride times n overflows 64 bits", function()
      -- regression (once broken): (n - 1) * stride wraps around: 2 * 2^63 = 0 passes the check (needs 1), and the
      -- kernel reads x[2^63] (which, times 4 bytes, wraps again to x[0] here)
      H.fails("built%-in kernel 'copy_f32': argument 1 has 100 elements", main.launch, main, K.copy, CFG, x, 2.0 ^ 63,
        y, 1, 3)
    end)

    it("reject a strided copy whose stride overflow would read outside the slice (in a child process)", function()
      local interp = H.interpreter()
      assert.is_string(interp, "cannot tell which interpreter runs the suite")
      -- regression (once broken): (9 - 1) * (2^61 + 1) wraps to 8: the check passes, and the kernel reads
      -- x[2^61 + 1], 2^63 bytes past x: the sim backend crashes (segmentation fault)
      local out, status = H.run_child([[
        local gpu = require "gpulua"
        local dev = gpu.device(0)
        local x, y = dev:zeros("f32", 100), dev:zeros("f32", 100)
        print("launch:", pcall(dev.main.launch, dev.main, gpu.kernels.copy, {grid = 1, block = 32},
          x, (1 << 61) + 1, y, 1, 9))
        dev:sync()
        print("end")
      ]])
      assert.are.equal(0, status, "the child process failed:\n" .. out)
      assert.matches("launch:\tfalse\t[^\n]*built%-in kernel 'copy_f32': argument 1 has 100 elements", out)
      assert.matches("\nend\n", out)
    end)

    it("sum needs a block that is a multiple of 32, in one dimension", function()
      H.fails("s:launch: built%-in kernel 'sum_f32' needs a one%-dimensional block of a multiple of 32 threads, got " ..
        "48x1x1", main.launch, main, K.sum, {grid = 4, block = 48}, x, y, 10)
      H.fails("needs a one%-dimensional block of a multiple of 32 threads, got 1x1x1", main.launch, main, K.sum,
        {grid = 4, block = 1}, x, y, 10)
      H.fails("needs a one%-dimensional grid and block .*, got grid 4x1x1, block 32x2x1", main.launch, main, K.sum,
        {grid = 4, block = {32, 2}}, x, y, 10)
      H.fails("built%-in kernel 'sum_f64' needs a one%-dimensional block", main.launch, main, K.sum,
        {grid = 4, block = 100}, dev:zeros("f64", 10), dev:zeros("f64", 1), 10)
      -- other built-ins take any block
      main:launch(K.fill, {grid = 4, block = 48}, y, 1, 100)
      H.check_all(y:read(), 1)
    end)

    it("need a one-dimensional grid and block (threads along y or z would repeat the work)", function()
      local msg = "s:launch: built-in kernel '%s' needs a one-dimensional grid and block (threads along y or z would "
        .. "repeat the work), got grid %s, block %s"
      H.fails(H.lit(msg:format("axpy_f32", "4x2x1", "64x1x1")), main.launch, main, K.axpy, {grid = {4, 2}, block = 64},
        2, x, y, 100)
      H.fails(H.lit(msg:format("sum_f32", "1x1x3", "64x1x1")), main.launch, main, K.sum, {grid = {1, 1, 3}, block = 64},
        x, y, 100)
      H.fails(H.lit(msg:format("axpy_f32", "8x1x1", "32x32x1")), main.launch, main, K.axpy,
        {grid = 8, block = {32, 32}}, 2, x, y, 100)
      H.fails(H.lit(msg:format("fill_f32", '"auto"', "32x1x2")), main.launch, main, K.fill, {block = {32, 1, 2}}, y, 2,
        100)
      main:launch(K.fill, {grid = {4, 1, 1}, block = 64}, y, 2, 100)
      H.check_all(y:read(), 2)
    end)

    it("need a slice where the signature has the first pointer", function()
      H.fails("s:launch: built%-in kernel 'axpy' %(T, const T%*, T%*, u64%) expects a slice as argument 2",
        main.launch, main, K.axpy, CFG, 2.0)
      H.fails("built%-in kernel 'axpy' %(T, const T%*, T%*, u64%) expects a slice as argument 2", main.launch, main,
        K.axpy, CFG, 2.0, 3.0, y, 10)
      H.fails("built%-in kernel 'fill' %(T%*, T, u64%) expects a slice as argument 1", main.launch, main, K.fill, CFG,
        3, 2.0, 10)
      H.fails("built%-in kernel 'copy' %(const T%*, u64, T%*, u64, u64%) expects a slice as argument 1", main.launch,
        main, K.copy, CFG, gpu.host("f32", 10), 1, y, 1, 10)
    end)

    it("check the arguments after the first slice against the chosen variant", function()
      H.fails("s:launch: kernel 'axpy_f32' %(f32, const f32%*, f32%*, u64%) takes 4 arguments, got 2", main.launch,
        main, K.axpy, CFG, 2.0, x)
      H.fails("kernel 'add_f32' %(const f32%*, const f32%*, f32%*, u64%) takes 4 arguments, got 5", main.launch, main,
        K.add, CFG, x, x, y, 10, 10)
      H.fails("kernel 'add_f32' %(const f32%*, const f32%*, f32%*, u64%): argument 2 expected a slice " ..
        "%(const f32%*%), got number", main.launch, main, K.add, CFG, x, 1, y, 10)
      H.fails("kernel 'axpy_f32': argument 1 %(f32%): expected a number, got string", main.launch, main, K.axpy, CFG,
        "2", x, y, 10)
      -- a u64 takes -1 as 2^64 - 1 (as it reads back), which the bounds check then refuses
      H.fails(H.lit("kernel 'axpy_f32': argument 2 has 100 elements, but n = 18446744073709551615 needs "
                    .. "18446744073709551615 (n was -1 as a signed integer: a count cannot be negative)"), main.launch,
        main, K.axpy, CFG, 2, x, y, -1)
      H.fails("kernel 'copy_f32': argument 2 %(u64%): expected an integer value, got number 1%.5", main.launch, main,
        K.copy, CFG, x, 1.5, y, 1, 10)
    end)

    it("reject a freed slice", function()
      local z = dev:zeros("f32", 10)
      z:free()
      H.fails("use of a freed slice f32%[10%] on device 0 %(freed at [^\n]*builtins_spec%.lua:%d+%)", main.launch,
        main, K.axpy, CFG, 2, z, y, 10)
      H.fails("s:launch: kernel 'axpy_f32': argument 3: use of a freed slice f32%[10%]", main.launch, main, K.axpy, CFG,
        2, x, z, 10)
    end)

    H.it_devices(2, "run on another device, and reject a slice of another device", function()
      local d1 = gpu.device(1)
      local t = H.values("f64", 1000, 44)
      local a = H.upload(d1, "f64", t)
      local b = d1:zeros("f64", 1000)
      d1.main:launch(K.scale, CFG, 3, a, b, 1000)
      local want = {}
      for i = 1, 1000 do want[i] = 3 * t[i] end
      check(b:read(), want, 0)
      local out = d1:zeros("f64", 1)
      d1.main:launch(K.sum, CFG, a, out, 1000)
      local s, mag = 0, 0
      for i = 1, 1000 do
        s = s + t[i]
        mag = mag + math.abs(t[i])
      end
      check(out:read(), {s}, TOL.f64.sum, {mag})
      H.fails("s:launch: kernel 'axpy_f64': argument 3 is a slice of device 1, but stream 'main' is on device 0",
        main.launch, main, K.axpy, CFG, 2, dev:zeros("f64", 10), b, 10)
      H.fails("kernel 'axpy_f64': argument 2 is a slice of device 1, but stream 'main' is on device 0", main.launch,
        main, K.axpy, CFG, 2, a, dev:zeros("f64", 1000), 10)
    end)
  end)
end)
