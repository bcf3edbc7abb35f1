-- Kernels: k:host and launches on sim (the host function's arguments and
-- views, stream order, a raising host function), and the checks of s:launch
-- (arguments, cfg, the device's and the kernel's limits, other devices).
-- Compiling, loading and m:kernel are in kernel_compile_spec.lua.
--
-- The same specs run on sim and on a GPU (--backend=cuda): every user kernel
-- has a host implementation (k:host) that computes what its CUDA code does,
-- so a result is checked the same way whichever of the two ran.
local gpu = require "gpulua"
local H = require "helpers"

local SIM = gpu.backend() == "sim"

-- y[i] = 2 * x[i], like tests/data/twice.cu
local TWICE_SRC, TWICE_SIG, twice_host = H.TWICE_SRC, H.TWICE_SIG, H.twice_host
local check_map, cfg_for = H.check_map, H.cfg_for

-- y[i] = x[i] + c
local SHIFT_SRC = [[
extern "C" __global__ void shift(const float *x, float *y, int c, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + (float)c;
}
]]
local function shift_host(_, x, y, c, n)
  for i = 1, n do y[i] = x[i] + c end
end

-- the first byte of p becomes v (when n > 0)
local POKE_SRC = [[
extern "C" __global__ void poke(void *p, unsigned char v, unsigned long long n) {
  if (n > 0 && blockIdx.x == 0 && threadIdx.x == 0) ((unsigned char *)p)[0] = v;
}
]]

-- Inputs: H.values("f32", n, seed, -8, 8), pseudo-random f32 values in
-- [-8, 8), uploaded with H.upload(s, "f32", t).

describe("kernels", function()
  local dev, main
  before_each(function()
    dev = gpu.device(0)
    main = dev.main
  end)

  describe("k:host and launches on sim", function()
    local k
    before_each(function() k = gpu.compile(TWICE_SRC, {name = "twice.cu"}):kernel("twice", TWICE_SIG) end)

    it("k:host returns the kernel and needs a function", function()
      assert.is_true(rawequal(k, k:host(twice_host)))
      H.fails("function expected, got nil", k.host, k, nil)
      H.fails("function expected, got number", k.host, k, 1)
    end)

    if H.host_kernels() then
      it("a kernel without a host implementation cannot launch on sim, and the error says k:host #simhost", function()
        local x, y = dev:zeros("f32", 8), dev:zeros("f32", 8)
        H.fails("s:launch: kernel 'twice' has no host implementation, and the sim backend cannot run device " ..
          "code: give one with k:host%(function%(cfg, %.%.%.%) end%)", main.launch, main, k, cfg_for(8), x, y, 8)
      end)

      it("the host function gets a copy of cfg taken at launch, views for pointers and numbers for scalars #simhost",
         function()
        local p = gpu.compile([[
          extern "C" __global__ void mix(const float *x, float *y, float a, double b, int c,
                                         unsigned long long n) {
            unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < 10) y[i] = x[i] + (float)(i + 1);
          }
        ]], {name = "mix.cu"})
        local km = p:kernel("mix", "const f32*, f32*, f32, f64, i32, u64")
        local seen = {}
        km:host(function(cfg, x, y, a, b, c, n)
          seen.cfg, seen.nargs = cfg, select("#", cfg, x, y, a, b, c, n)
          seen.xlen, seen.ylen, seen.xdt, seen.ydt = #x, #y, x.dtype, y.dtype
          seen.x1, seen.xlast = x[1], x[#x]
          seen.a, seen.b, seen.c, seen.n = a, b, c, n
          seen.atype, seen.ctype, seen.ntype = math.type(a), math.type(c), math.type(n)
          for i = 1, #y do y[i] = x[i] + i end
        end)
        local t = H.values("f32", 20, 6, -8, 8)
        local x = H.upload(main, "f32", t)
        local y = dev:zeros("f32", 10)
        local cfg = {grid = {2, 1, 1}, block = 64, shared = 16}
        main:launch(km, cfg, x:view(3, 10), y, 0.1, 0.1, -7, 12345)
        -- changed after the launch, before the kernel runs: the kernel sees the cfg it was launched with
        cfg.block, cfg.grid[1], cfg.shared = 128, 9, nil
        local out = y:read()
        assert.is_false(rawequal(cfg, seen.cfg), "the host kernel got the table given to launch")
        assert.are.same({grid = {2, 1, 1}, block = 64, shared = 16}, seen.cfg)
        assert.are.equal(7, seen.nargs)
        assert.are.equal(10, seen.xlen) -- the view's length, not the allocation's
        assert.are.equal(10, seen.ylen)
        assert.are.equal("f32", seen.xdt)
        assert.are.equal("f32", seen.ydt)
        assert.are.equal(t[4], seen.x1) -- x:view(3, 10) starts at element 3 (0-based)
        assert.are.equal(t[13], seen.xlast)
        assert.are.equal(H.f32(0.1), seen.a) -- as the device sees an f32
        assert.are.equal(0.1, seen.b)
        assert.are.equal(-7, seen.c)
        assert.are.equal(12345, seen.n)
        assert.are.equal("float", seen.atype)
        assert.are.equal("integer", seen.ctype)
        assert.are.equal("integer", seen.ntype)
        for i = 1, 10 do assert.are.equal(H.f32(t[i + 3] + i), out[i]) end
      end)

      it("views expire when the host function returns #simhost", function()
        local kept
        k:host(function(cfg, x, y, n)
          kept = x
          twice_host(cfg, x, y, n)
        end)
        local x, y = dev:zeros("f32", 16), dev:zeros("f32", 16)
        main:launch(k, cfg_for(16), x, y, 16)
        main:sync()
        assert.is_not_nil(kept)
        local expired = "a host view of a slice %(f32%[16%]%) is only valid during the host kernel call that " ..
          "received it"
        H.fails(expired, function() return kept[1] end)
        H.fails(expired, function() kept[1] = 1 end)
        H.fails(expired, function() return #kept end)
        H.fails(expired, function() return kept:totable() end)
      end)

      it("views are bounds-checked like host buffers #simhost", function()
        local msg
        k:host(function(_, x, y, n)
          local ok, err = pcall(function() return x[n + 1] end)
          msg = not ok and tostring(err) or "no error"
          for i = 1, n do y[i] = 2 * x[i] end
        end)
        local x, y = dev:zeros("f32", 16), dev:zeros("f32", 16)
        main:launch(k, cfg_for(16), x, y, 16)
        main:sync()
        assert.matches("host buffer f32%[16%]: index 17 is out of range %(1 to 16%)", msg)
      end)
    else
      pending("the host function's arguments and views: " .. (SIM and H.HOST_MODE_ONLY or "on cuda k:host is not used"))
    end

    it("runs in stream order with copies", function()
      k:host(twice_host)
      local n = 4096
      local s = dev:stream{name = "ordered"}
      local t = H.values("f32", n, 7, -8, 8)
      local x = dev:alloc("f32", n, {stream = s})
      local y = dev:alloc("f32", n, {stream = s})
      H.busy(dev, s)
      s:copy(x, gpu.host("f32", t))
      s:launch(k, cfg_for(n), x, y, n) -- y = 2x
      s:launch(k, cfg_for(n), y, x, n) -- x = 4x
      local out = gpu.host("f32", n)
      s:copy(out, x)
      s:sync()
      check_map(out, t, function(v) return 4 * v end)
    end)

    if SIM then -- the child runs in the sim's host mode
      it("a raising host function fails the launch: the next sync raises its message, the device is poisoned",
        function()
          local interp = H.interpreter()
          assert.is_string(interp, "cannot tell which interpreter runs the suite")
          -- in a process of its own: a poisoned device stays poisoned
          local out, status = H.run_child([[
            local gpu = require "gpulua"
            local dev = gpu.device(0)
            local k = gpu.load("tests/data/twice.ptx"):kernel("twice", "const f32*, f32*, u64")
            k:host(function(cfg, x, y, n) error("host kernel gave up at " .. n) end)
            local x, y = dev:zeros("f32", 8), dev:zeros("f32", 8)
            dev.main:launch(k, {grid = 1, block = 32}, x, y, 8)
            print("sync:", pcall(dev.main.sync, dev.main))
            print("later:", pcall(dev.zeros, dev, "f32", 4))
            if gpu.count() >= 2 then
              local d1 = gpu.device(1)
              print("other device:", pcall(function() return d1:zeros("i32", 4):read()[1] end))
            end
            print("end")
          ]], {GPULUA_SIM_KERNELS = "host"})
          assert.are.equal(0, status, "the child process failed:\n" .. out)
          assert.matches("\nend\n", out)
          local sync = out:match("sync:\t([^\n]*)")
          assert.is_not_nil(sync, out)
          assert.matches("^false\t", sync)
          assert.matches("poisoned", sync)
          -- regression (once broken): the message is "device 0 is poisoned by a fault:
          -- CUDA_ERROR_LAUNCH_FAILED: unspecified launch
          -- failure (cuStreamSynchronize, ...)": it does not hold the host kernel's error
          assert.matches("host kernel gave up at 8", sync)
          assert.matches("twice", sync)
          local later = out:match("later:\t([^\n]*)")
          assert.matches("^false\t.*device 0 is poisoned", later)
          if gpu.count() >= 2 then assert.matches("other device:\ttrue\t0", out) end
        end)
    else
      pending("a raising host function poisons the device "
              .. "(sim only: host kernels; on cuda fault_spec.lua runs real faulting kernels)")
    end
  end)

  describe("on sim, what a launch runs", function()
    if not SIM then
      pending("sim only: on a GPU every kernel runs its own code")
      return
    end

    it("a kernel from a CUBIN runs its k:host function, and without one the launch says why", function()
      local k = gpu.load("tests/data/twice.cubin"):kernel("twice", TWICE_SIG)
      local x, y = H.upload(main, "f32", {1, 2, 3}), dev:zeros("f32", 3)
      local why = H.host_kernels() and "has no host implementation, and the sim backend cannot run device code" or
                  "comes from a binary module %(CUBIN or fatbin%), whose code the sim backend cannot run: load its " ..
                  "PTX or CUDA source, or give a host implementation with k:host"
      H.fails("s:launch: kernel 'twice' " .. why, main.launch, main, k, cfg_for(3), x, y, 3)
      k:host(twice_host)
      main:launch(k, cfg_for(3), x, y, 3)
      check_map(y:read(), {1, 2, 3}, function(v) return 2 * v end)
    end)

    it("a kernel with PTX runs its own code by default, not its k:host function", function()
      if H.sim_kernels() ~= "ptx" then return pending("GPULUA_SIM_KERNELS=ptx, the default, only") end
      local k = gpu.load("tests/data/twice.ptx"):kernel("twice", TWICE_SIG)
      local called = false
      k:host(function() called = true end)
      local x, y = H.upload(main, "f32", {1, 2, 3}), dev:zeros("f32", 3)
      main:launch(k, cfg_for(3), x, y, 3)
      check_map(y:read(), {1, 2, 3}, function(v) return 2 * v end)
      assert.is_false(called)
    end)
  end)

  describe("s:launch checks", function()
    local k, x, y
    before_each(function()
      k = gpu.compile(TWICE_SRC, {name = "twice.cu"}):kernel("twice", TWICE_SIG):host(twice_host)
      x = H.upload(main, "f32", H.values("f32", 64, 8, -8, 8))
      y = dev:zeros("f32", 64)
    end)

    local function launch(cfg, ...) return main:launch(k, cfg, ...) end
    local CFG = {grid = 1, block = 64}

    it("a good launch returns the stream; a failed check queues nothing", function()
      local calls = 0
      k:host(function(...)
        calls = calls + 1
        twice_host(...)
      end)
      assert.is_true(rawequal(main, launch(CFG, x, y, 0)))
      main:sync()
      if H.host_kernels() then assert.are.equal(1, calls) end
      assert.is_false(pcall(launch, CFG, x, y, 1.5))
      assert.is_false(pcall(launch, CFG, x, y))
      assert.is_false(pcall(launch, {grid = 0, block = 64}, x, y, 64))
      assert.is_false(pcall(launch, {grid = 1, block = 2048}, x, y, 64))
      assert.is_false(pcall(launch, CFG, x, dev:zeros("f64", 64), 64))
      main:sync()
      if H.host_kernels() then assert.are.equal(1, calls) end
      H.check_all(y:read(), 0)
    end)

    it("checks the argument count", function()
      H.fails("s:launch: kernel 'twice' %(const f32%*, f32%*, u64%) takes 3 arguments, got 2", launch, CFG, x, y)
      H.fails("takes 3 arguments, got 4", launch, CFG, x, y, 64, 64)
      H.fails("takes 3 arguments, got 0", launch, CFG)
    end)

    it("checks the kernel and the cfg table", function()
      H.fails("gpulua%.Kernel expected, got string", main.launch, main, "twice", CFG, x, y, 64)
      H.fails("gpulua%.Kernel expected, got no value", main.launch, main)
      H.fails("s:launch: cfg expected a table {grid =, block =, shared =} or a gpu.config, got number 1", main.launch,
        main, k, 1, x, y, 64)
    end)

    it("checks scalar types", function()
      H.fails("s:launch: kernel 'twice': argument 3 %(u64%): expected a number, got string", launch, CFG, x, y, "64")
      H.fails("argument 3 %(u64%): expected a number, got nil", launch, CFG, x, y, nil)
      H.fails("argument 3 %(u64%): expected a number, got boolean", launch, CFG, x, y, true)
    end)

    it("checks integer ranges and integrality", function()
      H.fails("argument 3 %(u64%): expected an integer value, got number 1%.5", launch, CFG, x, y, 1.5)
      H.fails("argument 3 %(u64%): NaN is not an integer, got number NaN$", launch, CFG, x, y, 0 / 0)
      H.fails("argument 3 %(u64%): out of range", launch, CFG, x, y, 2.0 ^ 64)
      local ks = gpu.compile(SHIFT_SRC, {name = "shift.cu"}):kernel("shift", "const f32*, f32*, i32, u64")
      ks:host(shift_host)
      H.fails("s:launch: kernel 'shift': argument 3 %(i32%): out of range, got number 1099511627776", main.launch, main,
        ks, CFG, x, y, 2 ^ 40, 64)
      H.fails("argument 3 %(i32%): out of range, got number 2147483648", main.launch, main, ks, CFG, x, y, 1 << 31, 64)
      H.fails("argument 3 %(i32%): out of range, got number %-2147483649", main.launch, main, ks, CFG, x, y,
        -(1 << 31) - 1, 64)
      -- the extremes are taken, and an integral float is an integer
      main:launch(ks, CFG, x, y, -(1 << 31), 0)
      main:launch(ks, CFG, x, y, (1 << 31) - 1, 0)
      main:launch(ks, CFG, x, y, -3.0, 64)
      local t = H.values("f32", 64, 8, -8, 8)
      check_map(y:read(), t, function(v) return H.f32(v - 3) end)
    end)

    it("checks that a slice is given for a pointer", function()
      H.fails("s:launch: kernel 'twice' %(const f32%*, f32%*, u64%): argument 2 expected a slice %(f32%*%), got number",
        launch, CFG, x, 5, 64)
      H.fails("argument 1 expected a slice %(const f32%*%), got nil", launch, CFG, nil, y, 64)
      H.fails("argument 1 expected a slice %(const f32%*%), got table", launch, CFG, {1, 2}, y, 64)
    end)

    it("rejects a host buffer for a pointer, saying what it is", function()
      -- regression (once broken): says "got userdata": the message should say a host buffer was given
      H.fails("argument 1 expected a slice %(const f32%*%), got [^\n]*[Hh]ost", launch, CFG, gpu.host("f32", 64), y,
        64)
    end)

    it("rejects any other userdata for a slice, a stream, a kernel or a config", function()
      -- a type check compares the object's tag word (l_types.c): another library's userdata, another
      -- gpulua type, or a userdata whose first bytes a script chose must never pass for a slice
      local others = {io.stdout, main, main:record(), gpu.config{grid = 1, block = 64}, dev}
      for _, u in ipairs(others) do
        H.fails("argument 1 expected a slice %(const f32%*%), got ", launch, CFG, u, y, 64)
      end
      H.fails("bad argument #1 to 'gpulua.Stream.launch' %(gpulua%.Stream expected, got ", main.launch, io.stdout, k,
        CFG, x, y, 64)
      H.fails("bad argument #1 to 'gpulua.Stream.launch' %(gpulua%.Stream expected, got ", main.launch, x, k, CFG, x,
        y, 64)
      H.fails("bad argument #2 to 'gpulua.Stream.launch' %(gpulua%.Kernel expected, got ", main.launch, main, x, CFG,
        x, y, 64)
      H.fails("cfg", main.launch, main, k, io.stdout, x, y, 64)
      H.fails("cfg", main.launch, main, k, x, x, y, 64)
    end)

    it("rejects a slice for a scalar, saying what it is", function()
      -- regression (once broken): says "expected a number, got userdata": the message should say a slice was given
      H.fails("argument 3 %(u64%): expected a number, got [^\n]*[Ss]lice", launch, CFG, x, y, x)
    end)

    it("checks slice dtypes, except for void*", function()
      H.fails("s:launch: kernel 'twice': argument 1 expected an f32 slice, got an f64 slice", launch, CFG,
        dev:zeros("f64", 64), y, 64)
      H.fails("argument 2 expected an f32 slice, got an i32 slice", launch, CFG, x, dev:zeros("i32", 64), 64)
      H.fails("argument 2 expected an f32 slice, got a u64 slice", launch, CFG, x, dev:zeros("u64", 64), 64)
      H.fails("argument 2 expected an f32 slice, got a bf16 slice", launch, CFG, x, dev:zeros("bf16", 64), 64)
      local kp = gpu.compile(POKE_SRC, {name = "poke.cu"}):kernel("poke", "void*, u8, u64")
      assert.are.equal("void*, u8, u64", kp.signature)
      kp:host(function(_, p, v, n)
        if n > 0 then p[1] = v end -- the tests give n > 0 only with u8 slices
      end)
      for _, dt in ipairs{"f64", "i16", "i64", "bf16"} do
        local z = dev:zeros(dt, 4)
        assert.is_true(rawequal(main, main:launch(kp, CFG, z, 200, 0)))
        H.check_all(z:read(), 0)
      end
      local b = dev:zeros("u8", 4)
      main:launch(kp, CFG, b, 200, 1)
      assert.are.same({200, 0, 0, 0}, b:read():totable())
      H.fails("argument 2 %(u8%): out of range, got number 256", main.launch, main, kp, CFG, b, 256, 1)
    end)

    it("rejects a freed slice", function()
      local z = dev:zeros("f32", 64)
      z:free()
      -- the message names the launch, the kernel and the argument
      H.fails("^[^\n]*kernel_launch_spec%.lua:%d+: s:launch: kernel 'twice': argument 1: use of a freed slice "
        .. "f32%[64%] on device 0 %(freed at [^\n]*kernel_launch_spec%.lua:%d+%)", launch, CFG, z, y, 64)
      local w = dev:zeros("f32", 64)
      local v = w:view(0, 64)
      w:free()
      H.fails("s:launch: kernel 'twice': argument 2: use of a freed slice f32%[64%] %(view at offset 0 of f32%[64%]%) "
        .. "on device 0 %(its memory was freed at", launch, CFG, x, v, 64)
    end)

    it("rejects a closed stream", function()
      local s = dev:stream{name = "closing"}
      s:close()
      H.fails("stream 'closing' of device 0 is closed %(closed at [^\n]*kernel_launch_spec%.lua:%d+%)", s.launch, s, k,
        CFG, x, y, 64)
    end)

    it("checks grid and block values", function()
      local cases = {
        {{grid = 0, block = 64}, "cfg%.grid must be a positive integer, got number 0"},
        {{grid = -1, block = 64}, "cfg%.grid must be a positive integer, got number %-1"},
        {{grid = 1.5, block = 64}, "cfg%.grid must be a positive integer, got number 1%.5"},
        {{grid = "x", block = 64}, 'cfg%.grid expected a number, {x, y, z} or "auto", got string'},
        {{grid = true, block = 64}, 'cfg%.grid expected a number, {x, y, z} or "auto", got boolean'},
        {{grid = {1, 1, 1, 1}, block = 64}, "cfg%.grid must have 1 to 3 dimensions, a list {x%[, y%[, z%]%]} of "
          .. "positive integers, got a table of length 4$"},
        {{grid = {}, block = 64}, "cfg%.grid must have 1 to 3 dimensions, a list {x%[, y%[, z%]%]} of positive "
          .. "integers, got a table of length 0$"},
        {{grid = {1, 0, 1}, block = 64}, "cfg%.grid%.y must be a positive integer, got number 0"},
        {{grid = {1, 1, "z"}, block = 64}, "cfg%.grid%.z must be a positive integer, got string"},
        {{grid = 1, block = 0}, "cfg%.block must be a positive integer, got number 0"},
        {{grid = 1, block = -32}, "cfg%.block must be a positive integer, got number %-32"},
        {{grid = 1, block = 32.5}, "cfg%.block must be a positive integer, got number 32%.5"},
        {{grid = 1, block = "x"}, "cfg%.block expected a number or {x, y, z}, got string"},
        {{grid = 1, block = {32, 1, 1, 1}}, "cfg%.block must have 1 to 3 dimensions, a list {x%[, y%[, z%]%]} of "
          .. "positive integers, got a table of length 4$"},
        {{grid = 1, block = {32, 1.5}}, "cfg%.block%.y must be a positive integer, got number 1%.5"},
        {{grid = 1, block = {-1}}, "cfg%.block%.x must be a positive integer, got number %-1"},
        -- no grid, or "auto": the built-ins choose one; a kernel of the script's own needs its grid
        {{block = 64}, "kernel 'twice': cfg%.grid is required %(a number or {x, y, z}%); only the built%-in kernels " ..
          "%(gpu%.kernels%) choose their own grid"},
        {{grid = "auto", block = 64}, "kernel 'twice': cfg%.grid is required"},
        {{grid = 1}, "cfg%.block is required %(a number or {x, y, z}%)"},
        {{grid = 1, block = 64, shared = -1}, "cfg%.shared must be a non%-negative integer %(bytes%), got number %-1"},
        {{grid = 1, block = 64, shared = 1.5},
         "cfg%.shared must be a non%-negative integer %(bytes%), got number 1%.5"},
        {{grid = 1, block = 64, shared = "big"}, "cfg%.shared must be a non%-negative integer %(bytes%), got string"},
      }
      for _, c in ipairs(cases) do H.fails("s:launch: " .. c[2], launch, c[1], x, y, 64) end
    end)

    it("checks the device's limits", function()
      local lim = "s:launch: kernel 'twice': "
      H.fails(lim .. "block%.x = 2048 exceeds device 0's limit of 1024", launch, {grid = 1, block = 2048}, x, y, 64)
      H.fails(lim .. "a block of 32x32x2 = 2048 threads exceeds device 0's limit of 1024", launch,
        {grid = 1, block = {32, 32, 2}}, x, y, 64)
      H.fails(lim .. "block%.z = 128 exceeds device 0's limit of 64", launch, {grid = 1, block = {1, 1, 128}}, x, y,
        64)
      H.fails(lim .. "grid%.y = 65536 exceeds device 0's limit of 65535", launch, {grid = {1, 65536}, block = 64},
        x, y, 64)
      H.fails(lim .. "grid%.z = 65536 exceeds device 0's limit of 65535", launch,
        {grid = {1, 1, 65536}, block = 64}, x, y, 64)
      -- past what any device takes, the cfg itself is refused, with the value as given
      H.fails("s:launch: cfg%.grid must be at most 2147483647 %(no device takes a larger grid or block dimension%), "
        .. "got number 2147483648$", launch, {grid = 1 << 31, block = 64}, x, y, 64)
      H.fails(lim .. "cfg%.shared = 1048576 bytes exceeds device 0's limit of %d+ bytes per block", launch,
        {grid = 1, block = 64, shared = 1 << 20}, x, y, 64)
    end)

    it("checks the kernel's own limit on threads per block (__launch_bounds__) before the launch", function()
      local m = gpu.compile([[
        extern "C" __global__ void __launch_bounds__(64) bounded(float *y) { y[threadIdx.x] = threadIdx.x; }
      ]], {name = "bounded.cu"})
      local kb = m:kernel("bounded", "f32*")
      kb:host(function(cfg, out)
        for i = 1, cfg.block do out[i] = i - 1 end
      end)
      local z = dev:zeros("f32", 128)
      H.fails("s:launch: kernel 'bounded': a block of 128x1x1 = 128 threads exceeds the kernel's limit of 64 "
              .. "%(set by its __launch_bounds__ or its register use; device 0 allows 1024%)",
              main.launch, main, kb, {grid = 1, block = 128}, z)
      H.fails("the kernel's limit of 64", main.launch, main, kb, {grid = 1, block = {8, 8, 2}}, z)
      main:launch(kb, {grid = 1, block = 64}, z)
      local h = z:read()
      assert.are.equal(63, h[64])
      assert.are.equal(0, h[65])
    end)

    it("takes grid and block as {x, y, z} and shared memory within the limit", function()
      local t = H.values("f32", 64, 8, -8, 8)
      main:launch(k, {grid = {1, 1, 1}, block = {64, 1, 1}, shared = 0}, x, y, 64)
      check_map(y:read(), t, function(v) return 2 * v end)
      local z = dev:zeros("f32", 64)
      main:launch(k, {grid = {2}, block = {32}, shared = 1024}, x, z, 64)
      check_map(z:read(), t, function(v) return 2 * v end)
      local w = dev:zeros("f32", 64)
      main:launch(k, {grid = 1, block = {1024}}, x, w, 64)
      check_map(w:read(), t, function(v) return 2 * v end)
    end)

    H.it_devices(2, "rejects a kernel of another device's module", function()
      local d1 = gpu.device(1)
      local k1 = gpu.compile(TWICE_SRC, {name = "twice.cu", device = d1}):kernel("twice", TWICE_SIG)
      k1:host(twice_host)
      H.fails("kernel 'twice' was loaded on device 1, but stream 'main' is on device 0", main.launch, main, k1, CFG,
        x, y, 64)
      -- and it works on its own device
      local t = H.values("f32", 64, 9, -8, 8)
      local y1 = d1:zeros("f32", 64)
      d1.main:launch(k1, CFG, H.upload(d1.main, "f32", t), y1, 64)
      check_map(y1:read(), t, function(v) return 2 * v end)
    end)

    -- (slices of device 0 on device 1: checker_policy_spec.lua grants only gpu.peer(1, 0),
    -- and a grant lasts for the process)
    H.it_devices(2, "rejects a slice of another device", function()
      local d1 = gpu.device(1)
      local y1 = d1:zeros("f32", 64)
      d1:sync()
      H.fails("s:launch: kernel 'fill_f32': argument 1 is a slice of device 0, but stream 'main' is on device 1",
        d1.main.launch, d1.main, gpu.kernels.fill, CFG, x, 1.0, 64)
      H.fails("s:launch: kernel 'axpy_f32': argument 3 is a slice of device 0, but stream 'main' is on device 1",
        d1.main.launch, d1.main, gpu.kernels.axpy, CFG, 1.0, y1, y, 64)
    end)
  end)
end)
