-- Kernels: gpu.compile, gpu.load, m:kernel, k:host and the checks of s:launch.
--
-- The same specs run on sim and on a GPU (--backend=cuda): every user kernel
-- has a host implementation (k:host) that computes what its CUDA code does,
-- so a result is checked the same way whichever of the two ran.
local gpu = require "gpulua"
local H = require "helpers"

local SIM = gpu.backend() == "sim"
local DATA = "tests/data/"

-- y[i] = 2 * x[i], like tests/data/twice.cu
local TWICE_SRC, TWICE_SIG, twice_host = H.TWICE_SRC, H.TWICE_SIG, H.twice_host

-- y[i] = FACTOR * x[i]; FACTOR comes from the options
local TIMES_SRC = [[
#ifndef FACTOR
#error FACTOR is not defined
#endif
extern "C" __global__ void times(const float *x, float *y, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = FACTOR * x[i];
}
]]

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

local check_map, cfg_for = H.check_map, H.cfg_for

-- name -> inode of the files in folder dir
local function listing(dir)
  local t = {}
  local p = assert(io.popen("ls -i " .. H.quote(dir) .. " 2>/dev/null"))
  for inode, name in p:read("a"):gmatch("(%d+)%s+([^\n]+)") do t[name] = inode end
  p:close()
  return t
end

describe("kernels", function()
  local dev, main
  before_each(function()
    dev = gpu.device(0)
    main = dev.main
  end)

  describe("gpu.compile", function()
    it("returns a module with its name and device", function()
      local m = gpu.compile(TWICE_SRC, {name = "twice.cu", device = dev})
      assert.are.equal("userdata", type(m))
      assert.are.equal("twice.cu", m.name)
      assert.is_true(rawequal(dev, m.device))
      assert.are.equal("gpulua.Module(twice.cu on device 0)", tostring(m))
    end)

    it("defaults to the name kernel.cu and device 0, and takes a device ordinal", function()
      local m = gpu.compile(TWICE_SRC)
      assert.are.equal("kernel.cu", m.name)
      assert.is_true(rawequal(gpu.device(0), m.device))
      assert.is_true(rawequal(gpu.device(0), gpu.compile(TWICE_SRC, {device = 0}).device))
    end)

    it("compiles a kernel that computes", function()
      local k = gpu.compile(TWICE_SRC, {name = "twice.cu"}):kernel("twice", TWICE_SIG)
      k:host(twice_host)
      local n = 1000
      local t = H.values("f32", n, 1, -8, 8)
      local x = H.upload(main, "f32", t)
      local y = dev:zeros("f32", n)
      assert.is_true(rawequal(main, main:launch(k, cfg_for(n), x, y, n)))
      check_map(y:read(), t, function(v) return 2 * v end)
    end)

    it("passes the options to NVRTC", function()
      H.fails("FACTOR is not defined", gpu.compile, TIMES_SRC, {name = "times.cu"})
      local n = 500
      local t = H.values("f32", n, 2, -8, 8)
      local x = H.upload(main, "f32", t)
      for _, factor in ipairs{3, 5} do
        local opts = {"-DFACTOR=" .. factor}
        if factor == 5 then opts[2] = "-use_fast_math" end
        local m = gpu.compile(TIMES_SRC, {name = "times.cu", options = opts})
        local k = m:kernel("times", TWICE_SIG)
        k:host(function(_, a, b, count)
          for i = 1, count do b[i] = factor * a[i] end
        end)
        local y = dev:zeros("f32", n)
        main:launch(k, cfg_for(n), x, y, n)
        check_map(y:read(), t, function(v) return H.f32(factor * v) end)
      end
    end)

    it("passes the options' values to NVRTC's preprocessor", function()
      local src = "#if FACTOR == 3\n#error saw FACTOR 3\n#endif\n" .. TWICE_SRC
      H.fails("saw FACTOR 3", gpu.compile, src, {options = {"-DFACTOR=3"}})
      assert.are.equal("kernel.cu", gpu.compile(src, {options = {"-DFACTOR=4"}}).name)
      assert.are.equal("kernel.cu", gpu.compile(src, {options = {}}).name)
    end)

    it("raises NVRTC's log, naming the source, on a compile error", function()
      local err = H.fails("gpu%.compile: broken%.cu: compilation failed", gpu.compile,
        "this is not CUDA\n" .. TWICE_SRC, {name = "broken.cu"})
      assert.matches("expected a declaration", err)
      assert.matches("broken%.cu%(1%)", err) -- the log's own file:line
      err = H.fails("gpu%.compile: kernel%.cu: compilation failed", gpu.compile,
        [[extern "C" __global__ void f(float *y) { y[0] = undeclared_thing; }]])
      assert.matches("undeclared_thing", err)
    end)

    it("raises NVRTC's complaint about an unknown option", function()
      H.fails("gpu%.compile: opts%.cu: .*%-%-no%-such%-option", gpu.compile, TWICE_SRC,
        {name = "opts.cu", options = {"--no-such-option"}})
    end)

    it("rejects arguments and options of the wrong type", function()
      H.fails("string expected, got no value", gpu.compile)
      H.fails("string expected, got table", gpu.compile, {})
      H.fails("table expected, got string", gpu.compile, TWICE_SRC, "twice.cu")
      H.fails("gpu%.compile: opt%.cu: option 1 expected a string, got number", gpu.compile, TWICE_SRC,
        {name = "opt.cu", options = {3}})
      H.fails("option 2 expected a string, got table", gpu.compile, TWICE_SRC, {options = {"-DX", {}}})
      H.fails("option 'options' expected a list of strings, got string", gpu.compile, TWICE_SRC,
        {options = "-use_fast_math"})
      H.fails("option 'name' expected a string, got number", gpu.compile, TWICE_SRC, {name = 3})
    end)

    it("rejects a device that does not exist", function()
      H.fails("ordinal 7 is out of range", gpu.compile, TWICE_SRC, {device = 7})
      H.fails("ordinal %-1 is out of range", gpu.compile, TWICE_SRC, {device = -1})
    end)

    it("rejects a device option that is not a device, naming the option", function()
      -- regression (once broken): gives "bad argument #-1 to 'gpulua.compile' (gpulua device expected, got string)":
      -- no such argument; the message should name the option 'device'
      local err = H.fails("device", gpu.compile, TWICE_SRC, {device = "gpu0"})
      assert.matches("gpu%.compile", err)
      assert.matches("'device'", err)
      assert.matches("got string", err)
      assert.does_not.match("#%-1", err)
    end)

    H.it_devices(2, "compiles for the device given", function()
      local d1 = gpu.device(1)
      local m = gpu.compile(TWICE_SRC, {device = d1})
      assert.is_true(rawequal(d1, m.device))
      assert.are.equal("gpulua.Module(kernel.cu on device 1)", tostring(m))
      assert.is_true(rawequal(d1, gpu.compile(TWICE_SRC, {device = 1}).device))
      local k = m:kernel("twice", TWICE_SIG):host(twice_host)
      local t = H.values("f32", 300, 3, -8, 8)
      local x = H.upload(d1.main, "f32", t)
      local y = d1:zeros("f32", 300)
      d1.main:launch(k, cfg_for(300), x, y, 300)
      check_map(y:read(), t, function(v) return 2 * v end)
    end)

    local dir = os.getenv("GPULUA_CACHE_DIR")
    if dir and dir ~= "" then
      it("keeps NVRTC's output in GPULUA_CACHE_DIR, and a second compile reuses it", function()
        -- a source never compiled before
        local tag = ("%d %d"):format(os.time(), math.random(1 << 30))
        local src = "// cache probe " .. tag .. "\n" .. TWICE_SRC
        local before = listing(dir)
        gpu.compile(src, {name = "probe.cu"})
        local after = listing(dir)
        local new = {}
        for name, inode in pairs(after) do
          if not before[name] and name:match("%.bin$") then new[name] = inode end
        end
        assert.is_not_nil(next(new), "no new entry in " .. dir .. " after a compile")
        -- the same source and options again: the entry is read, not rewritten
        local k = gpu.compile(src, {name = "probe.cu"}):kernel("twice", TWICE_SIG):host(twice_host)
        local again = listing(dir)
        for name, inode in pairs(new) do
          assert.are.equal(inode, again[name], "cache entry " .. name .. " was rewritten by a second compile")
        end
        -- the module from the cache works
        local t = H.values("f32", 200, 4, -8, 8)
        local y = dev:zeros("f32", 200)
        main:launch(k, cfg_for(200), H.upload(main, "f32", t), y, 200)
        check_map(y:read(), t, function(v) return 2 * v end)
        -- other options: another entry
        gpu.compile(src, {name = "probe.cu", options = {"-DOTHER=1"}})
        local third = listing(dir)
        local more = 0
        for name in pairs(third) do
          if not again[name] and name:match("%.bin$") then more = more + 1 end
        end
        assert.is_true(more >= 1, "no new entry for a compile with other options")
      end)
    else
      pending("the kernel cache folder (GPULUA_CACHE_DIR is not set, so the suite does not know the folder)")
    end
  end)

  describe("gpu.load", function()
    -- each image of tests/data/twice.cu computes y = 2 * x on both backends
    for _, ext in ipairs{"cu", "ptx", "cubin", "fatbin"} do
      it("loads a ." .. ext .. " file whose kernel computes", function()
        local path = DATA .. "twice." .. ext
        local m = gpu.load(path)
        assert.are.equal(path, m.name)
        assert.is_true(rawequal(dev, m.device))
        assert.are.equal("gpulua.Module(" .. path .. " on device 0)", tostring(m))
        local k = m:kernel("twice", TWICE_SIG):host(twice_host)
        local n = 777
        local t = H.values("f32", n, 5, -8, 8)
        local y = dev:zeros("f32", n)
        main:launch(k, cfg_for(n), H.upload(main, "f32", t), y, n)
        check_map(y:read(), t, function(v) return 2 * v end)
      end)
    end

    it("compiles a .cu file with the options given", function()
      local m = gpu.load(DATA .. "twice.cu", {options = {"-DUNUSED=1", "-use_fast_math"}, device = dev})
      assert.are.equal("twice", m:kernel("twice", TWICE_SIG).name)
      H.fails("tests/data/twice%.cu: option 1 expected a string, got boolean", gpu.load, DATA .. "twice.cu",
        {options = {true}})
    end)

    it("raises NVRTC's log, naming the file, when a .cu file does not compile", function()
      local path = os.tmpname()
      finally(function() os.remove(path) end)
      local cu = path .. ".cu"
      local f = assert(io.open(cu, "w"))
      f:write("this is not CUDA\n")
      f:close()
      local ok, err = pcall(gpu.load, cu)
      os.remove(cu)
      assert.is_false(ok)
      err = tostring(err)
      assert.matches(H.lit(cu) .. ": compilation failed", err)
      assert.matches("expected a declaration", err)
      -- regression (once broken): the message starts "gpu.compile: ..." although gpu.load was called
      assert.matches("^gpu%.load: ", err)
    end)

    H.it_devices(2, "loads onto the device given", function()
      local m = gpu.load(DATA .. "twice.ptx", {device = 1})
      assert.are.equal(1, m.device.ordinal)
      assert.are.equal("gpulua.Module(" .. DATA .. "twice.ptx on device 1)", tostring(m))
      assert.are.equal(1, gpu.load(DATA .. "twice.cubin", {device = gpu.device(1)}).device.ordinal)
    end)

    it("rejects a missing file, naming the path", function()
      H.fails("gpu%.load: cannot open tests/data/no_such%.ptx: No such file or directory", gpu.load,
        DATA .. "no_such.ptx")
      H.fails("gpu%.load: cannot open tests/data/no_such%.cu", gpu.load, DATA .. "no_such.cu")
    end)

    it("rejects a file whose extension it does not know", function()
      H.fails("gpu%.load: tests/data/make%.sh: expected a %.cu, %.ptx, %.cubin or %.fatbin file", gpu.load,
        DATA .. "make.sh")
      H.fails("expected a %.cu, %.ptx, %.cubin or %.fatbin file", gpu.load, DATA .. "twice")
      H.fails("string expected, got no value", gpu.load)
    end)

    it("rejects an empty file, naming it", function()
      local base = os.tmpname()
      finally(function() os.remove(base) end)
      for _, ext in ipairs{".ptx", ".cubin", ".fatbin"} do
        local path = base .. ext
        assert(io.open(path, "w")):close()
        local ok, err = pcall(gpu.load, path)
        os.remove(path)
        assert.is_false(ok)
        assert.matches("gpu%.load: " .. H.lit(path) .. " is empty", tostring(err))
      end
    end)

    it("rejects a .ptx file that is not PTX", function()
      local path = os.tmpname()
      finally(function() os.remove(path) end)
      local ptx = path .. ".ptx"
      local f = assert(io.open(ptx, "w"))
      f:write("this is not PTX\n")
      f:close()
      local ok, err = pcall(gpu.load, ptx)
      os.remove(ptx)
      assert.is_false(ok)
      assert.matches("gpu%.load: " .. H.lit(ptx) .. ": the driver refused the module", tostring(err))
    end)
  end)

  describe("m:kernel", function()
    local m
    before_each(function() m = gpu.load(DATA .. "twice.ptx") end)

    it("declares a kernel: name, canonical signature, tostring", function()
      local k = m:kernel("twice", "const f32*, f32*, u64")
      assert.are.equal("userdata", type(k))
      assert.are.equal("twice", k.name)
      assert.are.equal("const f32*, f32*, u64", k.signature)
      assert.are.equal("gpulua.Kernel(twice(const f32*, f32*, u64))", tostring(k))
      assert.is_nil(k.no_such_field)
    end)

    it("takes C spellings and any spacing, and prints the canonical signature", function()
      assert.are.equal("const f32*, f32*, u64", m:kernel("twice", "const float*, float*, size_t").signature)
      assert.are.equal("const f32*, f32*, u64",
        m:kernel("twice", "  const   float *,float*  ,  unsigned long long ").signature)
      assert.are.equal("const f32*, f32*, u64", m:kernel("twice", "const f32 *, f32 *, uint64_t").signature)
      local p = gpu.compile([[
        extern "C" __global__ void many(char a, short b, int c, unsigned d, long e, double f,
                                        const void *p, void *q, unsigned short *h) {}
      ]])
      assert.are.equal("i8, i16, i32, u32, i64, f64, const void*, void*, f16*",
        p:kernel("many", "char, short, int, unsigned, long, double, const void*, void*, half*").signature)
    end)

    it("takes an empty signature for a kernel without parameters", function()
      local p = gpu.compile([[extern "C" __global__ void nothing() {}]])
      local k = p:kernel("nothing", "")
      assert.are.equal("", k.signature)
      assert.are.equal("gpulua.Kernel(nothing())", tostring(k))
    end)

    it("rejects a malformed signature, naming it", function()
      H.fails("m:kernel: bad signature 'const floaty%*, f32%*, u64': parameter 1: unknown type 'floaty'",
        m.kernel, m, "twice", "const floaty*, f32*, u64")
      H.fails("bad signature 'f32, void, u64': parameter 2: void is only allowed as a pointer", m.kernel, m,
        "twice", "f32, void, u64")
      H.fails("bad signature 'f32%*%*, f32%*, u64': parameter 1 .*pointers to pointers are not supported",
        m.kernel, m, "twice", "f32**, f32*, u64")
      H.fails("bad signature 'f32,,f32': parameter 2 is empty", m.kernel, m, "twice", "f32,,f32")
      H.fails("bad signature 'const f32%*, f32%*, u64,': parameter 4 is empty", m.kernel, m, "twice",
        "const f32*, f32*, u64,")
      H.fails("bad signature 'f32 x, f32%*, u64': parameter 1: unknown type 'f32 x'", m.kernel, m, "twice",
        "f32 x, f32*, u64")
    end)

    it("rejects arguments of the wrong type", function()
      H.fails("string expected, got no value", m.kernel, m, "twice")
      H.fails("string expected, got nil", m.kernel, m, nil, TWICE_SIG)
      H.fails("gpulua module expected, got table", m.kernel, {}, "twice", TWICE_SIG)
    end)

    it("rejects a name the module does not have, naming it and saying to declare it extern \"C\"", function()
      H.fails("m:kernel: module 'tests/data/twice%.ptx' has no kernel named 'thrice' %(declare it extern \"C\"",
        m.kernel, m, "thrice", TWICE_SIG)
      -- a C++ kernel's name is mangled: its plain name is not found
      local cpp = gpu.compile([[__global__ void mangled(float *y) { y[0] = 1.0f; }]], {name = "cpp.cu"})
      H.fails("module 'cpp%.cu' has no kernel named 'mangled' %(declare it extern \"C\" __global__%)", cpp.kernel,
        cpp, "mangled", "f32*")
      -- a prefix of a kernel's name is another name
      H.fails("has no kernel named 'twic'", m.kernel, m, "twic", TWICE_SIG)
    end)

    it("rejects a signature whose parameter count differs from the compiled kernel's", function()
      for _, mod in ipairs{m, gpu.compile(TWICE_SRC, {name = "twice.cu"})} do
        H.fails("kernel 'twice': the signature declares 2 parameters, but the compiled kernel takes 3", mod.kernel,
          mod, "twice", "const f32*, f32*")
        H.fails("kernel 'twice': the signature declares 4 parameters, but the compiled kernel takes 3", mod.kernel,
          mod, "twice", "const f32*, f32*, u64, u64")
        H.fails("the signature declares 0 parameters, but the compiled kernel takes 3", mod.kernel, mod, "twice", "")
      end
    end)

    it("rejects a parameter whose size differs from the compiled kernel's", function()
      H.fails("kernel 'twice': parameter 3 is declared u32 %(4 bytes%) in 'const f32%*, f32%*, u32', but the " ..
        "compiled kernel's parameter 3 takes 8 bytes", m.kernel, m, "twice", "const f32*, f32*, u32")
      H.fails("parameter 1 is declared f32 %(4 bytes%)", m.kernel, m, "twice", "f32, f32*, u64")
    end)

    for _, ext in ipairs{"cubin", "fatbin"} do
      if SIM then
        pending("m:kernel checks names and parameters in a ." .. ext ..
          " image (the sim backend cannot read CUBIN or fatbin images)")
      else
        it("checks the name and the parameters against a ." .. ext .. " image", function()
          local b = gpu.load(DATA .. "twice." .. ext)
          H.fails("has no kernel named 'thrice'", b.kernel, b, "thrice", TWICE_SIG)
          H.fails("the signature declares 2 parameters, but the compiled kernel takes 3", b.kernel, b, "twice",
            "const f32*, f32*")
        end)
      end
    end
  end)

  describe("k:host and launches on sim", function()
    local k
    before_each(function() k = gpu.compile(TWICE_SRC, {name = "twice.cu"}):kernel("twice", TWICE_SIG) end)

    it("k:host returns the kernel and needs a function", function()
      assert.is_true(rawequal(k, k:host(twice_host)))
      H.fails("function expected, got nil", k.host, k, nil)
      H.fails("function expected, got number", k.host, k, 1)
    end)

    if SIM then
      it("a kernel without a host implementation cannot launch on sim, and the error says k:host", function()
        local x, y = dev:zeros("f32", 8), dev:zeros("f32", 8)
        H.fails("s:launch: kernel 'twice' has no host implementation, and the sim backend cannot run device " ..
          "code: give one with k:host%(function%(cfg, %.%.%.%) end%)", main.launch, main, k, cfg_for(8), x, y, 8)
      end)

      it("the host function gets cfg as given, views for pointers and numbers for scalars", function()
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
        local out = y:read()
        assert.is_true(rawequal(cfg, seen.cfg), "cfg is not the table given to launch")
        assert.are.same({2, 1, 1}, seen.cfg.grid)
        assert.are.equal(64, seen.cfg.block)
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

      it("views expire when the host function returns", function()
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

      it("views are bounds-checked like host buffers", function()
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
      pending("the host function's arguments and views (sim only: on cuda k:host is not used)")
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

    if SIM then
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
          ]])
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
      if SIM then assert.are.equal(1, calls) end
      assert.is_false(pcall(launch, CFG, x, y, -1))
      assert.is_false(pcall(launch, CFG, x, y))
      assert.is_false(pcall(launch, {grid = 0, block = 64}, x, y, 64))
      assert.is_false(pcall(launch, {grid = 1, block = 2048}, x, y, 64))
      assert.is_false(pcall(launch, CFG, x, dev:zeros("f64", 64), 64))
      main:sync()
      if SIM then assert.are.equal(1, calls) end
      H.check_all(y:read(), 0)
    end)

    it("checks the argument count", function()
      H.fails("s:launch: kernel 'twice' %(const f32%*, f32%*, u64%) takes 3 arguments, got 2", launch, CFG, x, y)
      H.fails("takes 3 arguments, got 4", launch, CFG, x, y, 64, 64)
      H.fails("takes 3 arguments, got 0", launch, CFG)
    end)

    it("checks the kernel and the cfg table", function()
      H.fails("gpulua kernel expected, got string", main.launch, main, "twice", CFG, x, y, 64)
      H.fails("gpulua kernel expected, got no value", main.launch, main)
      H.fails("table expected, got number", main.launch, main, k, 1, x, y, 64)
    end)

    it("checks scalar types", function()
      H.fails("s:launch: kernel 'twice': argument 3 %(u64%): expected a number, got string", launch, CFG, x, y, "64")
      H.fails("argument 3 %(u64%): expected a number, got nil", launch, CFG, x, y, nil)
      H.fails("argument 3 %(u64%): expected a number, got boolean", launch, CFG, x, y, true)
    end)

    it("checks integer ranges and integrality", function()
      H.fails("argument 3 %(u64%): out of range, got number %-1", launch, CFG, x, y, -1)
      H.fails("argument 3 %(u64%): expected an integer value, got number 1%.5", launch, CFG, x, y, 1.5)
      H.fails("argument 3 %(u64%): NaN is not an integer", launch, CFG, x, y, 0 / 0)
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

    it("rejects a slice for a scalar, saying what it is", function()
      -- regression (once broken): says "expected a number, got userdata": the message should say a slice was given
      H.fails("argument 3 %(u64%): expected a number, got [^\n]*[Ss]lice", launch, CFG, x, y, x)
    end)

    it("checks slice dtypes, except for void*", function()
      H.fails("s:launch: kernel 'twice': argument 1 expected a f32 slice, got a f64 slice", launch, CFG,
        dev:zeros("f64", 64), y, 64)
      H.fails("argument 2 expected a f32 slice, got a i32 slice", launch, CFG, x, dev:zeros("i32", 64), 64)
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
      H.fails("use of a freed slice f32%[64%] on device 0 %(freed at [^\n]*kernel_spec%.lua:%d+%)", launch, CFG,
        z, y, 64)
      local w = dev:zeros("f32", 64)
      local v = w:view(0, 64)
      w:free()
      H.fails("freed", launch, CFG, x, v, 64)
    end)

    it("rejects a closed stream", function()
      local s = dev:stream{name = "closing"}
      s:close()
      H.fails("stream 'closing' of device 0 is closed %(closed at [^\n]*kernel_spec%.lua:%d+%)", s.launch, s, k,
        CFG, x, y, 64)
    end)

    it("checks grid and block values", function()
      local cases = {
        {{grid = 0, block = 64}, "cfg%.grid must be a positive integer, got number 0"},
        {{grid = -1, block = 64}, "cfg%.grid must be a positive integer, got number %-1"},
        {{grid = 1.5, block = 64}, "cfg%.grid must be a positive integer, got number 1%.5"},
        {{grid = "x", block = 64}, "cfg%.grid expected a number or {x, y, z}, got string"},
        {{grid = true, block = 64}, "cfg%.grid expected a number or {x, y, z}, got boolean"},
        {{grid = {1, 1, 1, 1}, block = 64}, "cfg%.grid must have 1 to 3 dimensions, got 4"},
        {{grid = {}, block = 64}, "cfg%.grid must have 1 to 3 dimensions, got 0"},
        {{grid = {1, 0, 1}, block = 64}, "cfg%.grid%.y must be a positive integer, got number 0"},
        {{grid = {1, 1, "z"}, block = 64}, "cfg%.grid%.z must be a positive integer, got string"},
        {{grid = 1, block = 0}, "cfg%.block must be a positive integer, got number 0"},
        {{grid = 1, block = -32}, "cfg%.block must be a positive integer, got number %-32"},
        {{grid = 1, block = 32.5}, "cfg%.block must be a positive integer, got number 32%.5"},
        {{grid = 1, block = "x"}, "cfg%.block expected a number or {x, y, z}, got string"},
        {{grid = 1, block = {32, 1, 1, 1}}, "cfg%.block must have 1 to 3 dimensions, got 4"},
        {{grid = 1, block = {32, 1.5}}, "cfg%.block%.y must be a positive integer, got number 1%.5"},
        {{grid = 1, block = {-1}}, "cfg%.block%.x must be a positive integer, got number %-1"},
        {{block = 64}, "cfg%.grid is required %(a number or {x, y, z}%)"},
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
      H.fails(lim .. "grid%.x = 2147483648 exceeds device 0's limit of 2147483647", launch,
        {grid = 1 << 31, block = 64}, x, y, 64)
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
