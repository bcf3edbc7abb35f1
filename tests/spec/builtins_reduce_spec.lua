-- The built-in reductions (sum, dot, min, max) beyond their values
-- (builtins_dtypes_spec.lua has those): the same bits on every run and every
-- stream layout, grid "auto", each stream's scratch under the checker, in
-- graphs and at its stream's close; and kernels/builtins.cu compiling for
-- every dtype with NVRTC.
local gpu = require "gpulua"
local H = require "helpers"

local K = gpu.kernels

-- n f32 values of every magnitude down to 2^-12 (a sum of them rounds at
-- almost every step, so its bits depend on the order of the additions)
local function rough(dev, n, seed)
  local h = gpu.host("f32", n)
  local s = seed
  for i = 1, n do
    s = s * 6364136223846793005 + 1442695040888963407
    h[i] = ((s >> 11) / (1 << 53) * 4 - 2) / (1 << ((s >> 3) % 12))
  end
  local x = dev:alloc("f32", n)
  dev.main:copy(x, h)
  return x, h
end

local function bits(v) return string.pack("<f", v) end

describe("built-in reductions", function()
  local dev, main
  before_each(function()
    dev = gpu.device(0)
    main = dev.main
  end)

  describe("are deterministic", function()
    it("the same bits on every run, for a given grid and block", function()
      local n = 200003
      local x = rough(dev, n, 1)
      local out = dev:zeros("f32", 20)
      for _, cfg in ipairs{{grid = 37, block = 128}, {grid = 1, block = 1024}, {block = 256}} do
        for r = 0, 19 do main:launch(K.sum, cfg, x, out:view(r, 1), n) end
        local h = out:read()
        for r = 2, 20 do assert.are.equal(bits(h[1]), bits(h[r]), "run " .. r) end
      end
      -- and the order matters for these values: another grid gives other last bits
      local sums = {}
      for g = 1, 8 do
        main:launch(K.sum, {grid = g, block = 64}, x, out:view(g - 1, 1), n)
      end
      local h = out:read()
      for g = 1, 8 do sums[bits(h[g])] = true end
      local distinct = 0
      for _ in pairs(sums) do distinct = distinct + 1 end
      assert.is_true(distinct > 1, "the values are too tame to show the order")
    end)

    it("the same bits whatever the streams and whatever runs beside them", function()
      local n = 100001
      local x = rough(dev, n, 2)
      local y = rough(dev, n, 3)
      local want = dev:zeros("f32", 2)
      main:launch(K.dot, {grid = 20, block = 96}, x, y, want, n)
      main:launch(K.max, {grid = 20, block = 96}, x, want:view(1, 1), n)
      local w = want:read()
      local streams, outs = {}, {}
      for i = 1, 4 do
        streams[i] = main:fork{name = "red" .. i}
        outs[i] = dev:zeros("f32", 2, {stream = streams[i]})
      end
      local busy = dev:zeros("f32", n, {stream = streams[4]})
      for round = 1, 5 do
        for i = 1, 4 do
          local s = streams[i]
          if i == 4 then s:launch(K.scale, {block = 128}, round, x, busy, n) end -- other work between
          s:launch(K.dot, {grid = 20, block = 96}, x, y, outs[i], n)
          s:launch(K.max, {grid = 20, block = 96}, x, outs[i]:view(1, 1), n)
        end
        for i = 1, 4 do
          local h = outs[i]:read{stream = streams[i]}
          assert.are.equal(bits(w[1]), bits(h[1]), ("dot on stream %d, round %d"):format(i, round))
          assert.are.equal(w[2], h[2])
        end
      end
      for i = 1, 4 do streams[i]:close() end
    end)
  end)

  describe("with grid \"auto\"", function()
    it("take a cfg without a grid, or grid = \"auto\", prepared or not", function()
      local n = 10007
      local t = {}
      for i = 1, n do t[i] = i % 97 end
      local x = H.upload(dev, "f64", t)
      local out = dev:zeros("f64", 4)
      local c = gpu.config{block = 128}
      assert.are.equal("auto", c.grid)
      assert.are.equal("gpulua.Config(grid auto, block 128x1x1, shared 0)", tostring(c))
      assert.are.equal("auto", gpu.config{grid = "auto", block = {64}}.grid)
      main:launch(K.sum, c, x, out, n)
      main:launch(K.sum, {block = 64}, x, out:view(1, 1), n)
      main:launch(K.sum, {grid = "auto", block = 1024}, x, out:view(2, 1), n)
      local want = 0
      for i = 1, n do want = want + t[i] end
      H.check_all(out:view(0, 3):read(), want)
      main:launch(K.axpy, {block = 256}, 2, x, x, n)
      main:launch(K.max, c, x, out:view(3, 1), n)
      assert.are.equal(3 * 96, out:read()[4])
    end)

    it("is for the built-ins only: a kernel of the script's own needs its grid", function()
      local m = gpu.load("tests/data/twice.ptx")
      local k = m:kernel("twice", "const f32*, f32*, u64")
      k:host(H.twice_host)
      local x = dev:zeros("f32", 4)
      H.fails("s:launch: kernel 'twice': cfg%.grid is required %(a number or {x, y, z}%); only the built%-in " ..
        "kernels %(gpu%.kernels%) choose their own grid", main.launch, main, k, gpu.config{block = 32}, x, x, 4)
      H.fails('gpu%.config: cfg%.grid expected a number, {x, y, z} or "auto", got string', gpu.config,
        {grid = "all", block = 32})
    end)

    it("a reduction's grid is capped at its scratch's 4096 slots", function()
      local n = 300007
      local x = rough(dev, n, 4)
      local out = dev:zeros("f32", 2)
      main:launch(K.sum, {grid = 4096, block = 32}, x, out, n)
      main:launch(K.sum, {grid = 100000, block = 32}, x, out:view(1, 1), n)
      local h = out:read()
      assert.are.equal(bits(h[1]), bits(h[2]))
    end)
  end)

  describe("use a scratch of each stream's", function()
    it("so streams that reduce at once never conflict under strict", function()
      assert.are.equal("strict", gpu.policy())
      local n = 50000
      local x, h = rough(dev, n, 5)
      local a, b = main:fork{name = "ra"}, main:fork{name = "rb"}
      local oa, ob = dev:zeros("f32", 1, {stream = a}), dev:zeros("f32", 1, {stream = b})
      for _ = 1, 10 do
        a:launch(K.sum, {grid = 8, block = 64}, x:view(0, n // 2), oa, n // 2)
        b:launch(K.sum, {grid = 8, block = 64}, x:view(n // 2), ob, n - n // 2)
      end
      local sa, sb, want = oa:read{stream = a}[1], ob:read{stream = b}[1], 0
      for i = 1, n do want = want + h[i] end
      assert.is_true(math.abs(sa + sb - want) < 1e-3, ("%g + %g, want %g"):format(sa, sb, want))
      a:close()
      b:close()
    end)

    it("which a graph holds: its replays on another stream are checked against the stream's reductions", function()
      local x = dev:zeros("f32", 1000)
      local out = dev:zeros("f32", 2)
      local a = main:fork{name = "cap_a"}
      a:launch(K.sum, {block = 64}, x, out, 1000) -- a's scratch
      local line = H.here() + 1 -- a replay's records name the line of its node's capture
      local g = a:capture(function(s) s:launch(K.max, {block = 64}, x, out:view(1, 1), 1000) end, {name = "gmax"})
      local b = main:fork{name = "cap_b"}
      b:wait(a:record())
      g:launch(b) -- its replay uses a's scratch, on b
      local other = dev:zeros("f32", 1, {stream = a}) -- apart from what the graph touches, but for the scratch
      local err = H.fails("s:launch of 'sum_f32': the reduction scratch of stream 'cap_a' is written on stream " ..
        "'cap_a' %(device 0%) at [^\n]*, while stream 'cap_b' %(device 0%) may still be writing it", a.launch, a,
        K.sum, {block = 64}, x, other, 1000)
      assert.matches("%(queued at [^\n]*builtins_reduce_spec%.lua:" .. line .. "%)", err)
      a:join(b)
      a:launch(K.sum, {block = 64}, x, out, 1000) -- ordered: fine
      g:launch(a)
      a:sync()
      g:close()
      a:close()
      b:close()
    end)

    it("made before a capture for the streams that reduce inside it", function()
      local n = 3000
      local t = {}
      for i = 1, n do t[i] = (i % 7) - 3 end
      local x = H.upload(dev, "i32", t)
      local out = dev:zeros("i32", 4)
      main:launch(K.sum, {block = 64}, x, out, n) -- the device has reduced: captures prepare scratch
      local s = dev:stream{name = "fresh"} -- no scratch of its own yet
      s:join(main)
      local g = s:capture(function(cs)
        cs:launch(K.min, {block = 64}, x, out:view(1, 1), n)
        local f = cs:fork{name = "forked"}
        f:launch(K.max, {block = 64}, x, out:view(2, 1), n)
        f:launch(K.dot, {block = 64}, x, x, out:view(3, 1), n)
        cs:join(f)
      end)
      for _ = 1, 3 do g:launch(s) end -- the ticket is zero again after each
      s:sync()
      local dot = 0
      for i = 1, n do dot = dot + t[i] * t[i] end
      local sum = 0
      for i = 1, n do sum = sum + t[i] end
      assert.are.same({sum, -3, 3, dot}, out:read():totable())
      g:close()
      s:close()
    end)

    it("a capture takes no spare an earlier capture left on a stream it is not ordered after", function()
      local n = 1000
      local t = {}
      for i = 1, n do t[i] = i % 5 end
      local x = H.upload(dev, "i32", t)
      local out = dev:zeros("i32", 4)
      main:launch(K.sum, {block = 64}, x, out, n) -- the device has reduced: captures prepare scratch
      local first = dev:stream{name = "first"}
      first:join(main)
      local g0 = first:capture(function(cs) -- takes every spare made before, wherever they were made
        for i = 1, 4 do
          local f = cs:fork{name = "fa" .. i}
          f:launch(K.sum, {block = 64}, x, out:view(0, 1), n)
          cs:join(f)
        end
      end)
      local g1 = first:capture(function(cs) -- makes four spares and leaves them
        cs:launch(K.fill, {block = 32}, out, 0, 4)
      end)
      local second = dev:stream{name = "second"} -- never ordered after 'first'
      second:join(main)
      local g2 = second:capture(function(cs) -- three forks: more spares than this capture made itself
        local f = {}
        for i = 1, 3 do
          f[i] = cs:fork{name = "f" .. i}
          f[i]:launch(K.sum, {block = 64}, x, out:view(i, 1), n)
        end
        for i = 1, 3 do cs:join(f[i]) end
      end)
      g2:launch(second) -- the checker would refuse this if spares were made on 'first'
      local sum = 0
      for i = 1, n do sum = sum + t[i] end
      assert.are.same({sum, sum, sum, sum}, out:read{stream = second}:totable())
      for _, g in ipairs{g0, g1, g2} do g:close() end
      first:close()
      second:close()
    end)

    it("and a capture on a device that never reduced says what to do (in a child process)", function()
      local out, status = H.run_child([[
        local gpu = require "gpulua"
        local dev = gpu.device(0)
        local x, out = dev:zeros("f32", 10), dev:zeros("f32", 1)
        print(pcall(dev.main.capture, dev.main, function(s) s:launch(gpu.kernels.sum, {block = 32}, x, out, 10) end))
        dev.main:launch(gpu.kernels.sum, {block = 32}, x, out, 10)
        local g = dev.main:capture(function(s) s:launch(gpu.kernels.sum, {block = 32}, x, out, 10) end)
        g:launch(dev.main)
        -- spares are made apart from every stream: captures on streams not ordered after each other take them
        local p1, p2 = dev:stream{name = "p1"}, dev:stream{name = "p2"}
        p1:join(dev.main)
        p2:join(dev.main)
        local out1, out2 = dev:zeros("f32", 1, {stream = p1}), dev:zeros("f32", 1, {stream = p2})
        local g1 = p1:capture(function(s) s:launch(gpu.kernels.sum, {block = 32}, x, out1, 10) end) -- takes a spare
        local g1b = p1:capture(function(s) s:launch(gpu.kernels.sum, {block = 32}, x, out1, 10) end) -- one made on p1
        local g2 = p2:capture(function(s) s:launch(gpu.kernels.sum, {block = 32}, x, out2, 10) end)
        g1:launch(p1)
        g1b:launch(p1)
        g2:launch(p2)
        dev:sync()
        print("end")
      ]])
      assert.are.equal(0, status, out)
      assert.matches("false\t[^\n]*s:launch: a reduction on stream 'main' needs scratch memory of its own, and " ..
        "inside a capture nothing is allocated: run one reduction on this device before capturing", out)
      assert.matches("\nend\n", out)
    end)

    it("given back when its stream closes: streams made and closed in a loop keep memory flat", function()
      local x = dev:zeros("f32", 64)
      dev:sync()
      local function cycle()
        local st = dev:stream{name = "cycle"}
        st:join(main)
        st:launch(K.sum, {block = 64}, x, dev:zeros("f32", 1, {stream = st}), 64)
        st:close()
        dev:sync()
      end
      H.memory_flat(dev, cycle)
    end)
  end)

  it("kernels/builtins.cu compiles for every dtype with NVRTC, each kernel as gpulua declares it", function()
    local ok, why = pcall(gpu.compile, 'extern "C" __global__ void k() {}', {name = "probe.cu"})
    if not ok then
      assert.matches("cannot compile", why)
      pending("NVRTC is not available: " .. tostring(why))
      return
    end
    local root = debug.getinfo(1, "S").source:match("^@(.*)tests/spec/[^/]*$") or ""
    local f = assert(io.open(root .. "kernels/builtins.cu"))
    local src = f:read("a")
    f:close()
    for _, dt in ipairs(H.dtypes) do
      local m = gpu.compile(src, {name = "builtins.cu", options = {"-DGL_DTYPE_" .. dt}})
      for name, k in pairs(K) do
        local sig = k.signature:gsub("T", dt)
        if name == "sum" or name == "dot" or name == "min" or name == "max" then
          sig = sig .. ", void*, void*" -- the stream's scratch: the ticket and the partials
        end
        m:kernel(name .. "_" .. dt, sig) -- checked against the compiled parameters
      end
      H.fails("has no kernel named 'sum_" .. (dt == "f32" and "f64" or "f32") .. "'", m.kernel, m,
        "sum_" .. (dt == "f32" and "f64" or "f32"), "const f32*, f32*, u64, void*, void*")
    end
  end)
end)
