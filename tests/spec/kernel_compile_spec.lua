-- Kernels: gpu.compile (NVRTC, its options, its log, the kernel cache),
-- gpu.load of .cu, .ptx, .cubin and .fatbin files, and m:kernel (signatures
-- checked against the compiled kernel). Launching is in kernel_launch_spec.lua.
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
local check_map, cfg_for = H.check_map, H.cfg_for

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

-- Inputs: H.values("f32", n, seed, -8, 8), pseudo-random f32 values in
-- [-8, 8), uploaded with H.upload(s, "f32", t).

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
      -- a list's length as its __len says, not cut to an int (2^32 + 1 would read as 1 option)
      local function len(n) return setmetatable({"-DX"}, {__len = function() return n end}) end
      H.fails(H.lit("gpu.compile: kernel.cu: at most 63 options, got a list of length 4294967297") .. "$",
        gpu.compile, TWICE_SRC, {options = len((1 << 32) + 1)})
      H.fails(H.lit("gpu.compile: kernel.cu: at most 63 options, got a list of length -2147483647") .. "$",
        gpu.compile, TWICE_SRC, {options = len(-(1 << 31) + 1)})
    end)

    it("rejects a device that does not exist", function()
      H.fails("ordinal 7 is out of range", gpu.compile, TWICE_SRC, {device = 7})
      H.fails("ordinal %-1 is out of range", gpu.compile, TWICE_SRC, {device = -1})
    end)

    it("rejects a device option that is not a device, naming the option", function()
      -- regression (once broken): gives "bad argument #-1 to 'gpulua.compile' (gpulua%.Device expected, got string)":
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

  -- gpu.compile gives NVRTC the toolkit's headers (-I after the user's
  -- options): beside the NVRTC library it loaded (lib64/ -> include/), else
  -- $CUDA_HOME/include, else $CUDA_PATH/include. Each spec runs a child
  -- process with GPULUA_NVRTC, CUDA_HOME and CUDA_PATH set, so it knows
  -- which library and folders the child sees.
  describe("the toolkit's headers", function()
    -- y[i] = x[i] / 2 in __half, from cuda_fp16.h
    local HALVE_SRC = [[
#include <cuda_fp16.h>
extern "C" __global__ void halve(const __half *x, __half *y, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = __hmul(x[i], __float2half(0.5f));
}
]]
    -- the child: compile SRC with the options OPTS, launch it on 2, -6, 1024,
    -- 0.5 and print the result, or print why it did not compile
    local CHILD = [[
local gpu = require "gpulua"
local dev = gpu.device(0)
local ok, m = pcall(gpu.compile, SRC, {name = "halve.cu", options = OPTS})
if not ok then print("compile failed: " .. tostring(m)) return end
local k = m:kernel("halve", "const f16*, f16*, u64")
k:host(function(_, x, y, n) for i = 1, n do y[i] = x[i] * 0.5 end end)
local x = dev:alloc("f16", 4)
dev.main:copy(x, gpu.host("f16", {2, -6, 1024, 0.5}))
local y = dev:zeros("f16", 4)
dev.main:launch(k, {grid = 1, block = 32}, x, y, 4)
print("result: " .. table.concat(y:read():totable(), " "))
]]
    local HALVED = "result: 1%.0 %-3%.0 512%.0 0%.25\n"
    local function child(src, opts, env)
      local script = ("local SRC, OPTS = %q, {%s}\n"):format(src, opts and ("%q"):format(opts) or "") .. CHILD
      local out, status = H.run_child(script, env, 120)
      assert.are.equal(0, status, "the child failed:\n" .. out)
      return out
    end
    local function exists(path)
      local f = io.open(path, "r")
      if f then f:close() end
      return f ~= nil
    end
    -- an NVRTC library with the toolkit's headers beside it: GPULUA_NVRTC's,
    -- else /usr/local/cuda's
    local lib = os.getenv("GPULUA_NVRTC")
    if not lib or lib == "" then lib = "/usr/local/cuda/lib64/libnvrtc.so" end
    local root = lib:match("^(.*)/[^/]+/[^/]+$") or "."
    local why
    if type(arg) ~= "table" then
      why = "needs the interpreter's arg table to start a child process"
    elseif not exists(lib) then
      why = "no NVRTC library at " .. lib .. " (set GPULUA_NVRTC)"
    elseif not exists(root .. "/include/cuda_fp16.h") then
      why = "no cuda_fp16.h in " .. root .. "/include, beside " .. lib
    end
    if why then
      pending("#include <cuda_fp16.h> with no options, and the headers' other sources (" .. why .. ")")
      return
    end

    it("are found beside NVRTC: #include <cuda_fp16.h> compiles with no options", function()
      local out = child(HALVE_SRC, nil, {GPULUA_NVRTC = lib, CUDA_HOME = "", CUDA_PATH = ""})
      assert.matches(HALVED, out)
    end)

    describe("with no headers beside NVRTC", function()
      -- a folder with a link to the library: nothing beside it
      local tmp
      before_each(function()
        tmp = os.tmpname()
        os.remove(tmp)
        assert(os.execute("mkdir -p " .. H.quote(tmp .. "/lib") .. " && ln -s " .. H.quote(lib) .. " " ..
          H.quote(tmp .. "/lib/libnvrtc.so")))
      end)
      after_each(function() os.execute("rm -rf " .. H.quote(tmp)) end)

      it("are taken from CUDA_HOME, else CUDA_PATH", function()
        local env = {GPULUA_NVRTC = tmp .. "/lib/libnvrtc.so", CUDA_HOME = root, CUDA_PATH = ""}
        assert.matches(HALVED, child(HALVE_SRC, nil, env))
        env.CUDA_HOME, env.CUDA_PATH = tmp .. "/nowhere", root
        assert.matches(HALVED, child(HALVE_SRC, nil, env))
      end)

      it("are missing: NVRTC's log says so, with where gpulua looked; -I gives them", function()
        local env = {GPULUA_NVRTC = tmp .. "/lib/libnvrtc.so", CUDA_HOME = tmp .. "/nowhere", CUDA_PATH = ""}
        local out = child(HALVE_SRC, nil, env)
        assert.matches("compile failed: gpu%.compile: halve%.cu: compilation failed", out)
        assert.matches("open source file \"cuda_fp16%.h\"", out)
        assert.matches("no CUDA headers were found beside NVRTC %(" .. H.lit(tmp) .. "/lib/libnvrtc%.so%), in " ..
          "%$CUDA_HOME/include or in %$CUDA_PATH/include: give their folder with the option %-I<folder>", out)
        assert.matches(HALVED, child(HALVE_SRC, "-I" .. root .. "/include", env))
      end)
    end)

    it("come after the user's options: a folder given with -I is searched first", function()
      local mine = os.tmpname()
      os.remove(mine)
      finally(function() os.execute("rm -rf " .. H.quote(mine)) end)
      assert(os.execute("mkdir -p " .. H.quote(mine)))
      local f = assert(io.open(mine .. "/cuda_fp16.h", "w"))
      f:write("#define MY_OWN_FP16 1\n#include \"" .. root .. "/include/cuda_fp16.h\"\n")
      f:close()
      local check = "#ifndef MY_OWN_FP16\n#error the toolkit's cuda_fp16.h came first\n#endif\n"
      local src = HALVE_SRC:gsub("extern", check .. "extern", 1)
      local out = child(src, "-I" .. mine, {GPULUA_NVRTC = lib, CUDA_HOME = "", CUDA_PATH = ""})
      assert.matches(HALVED, out)
    end)
  end)

  -- GPULUA_NVRTC names the one library tried: one that is not there, or one
  -- that is a shared library but not NVRTC, makes gpu.compile fail with the
  -- reason, every time, and the rest of gpulua goes on (a child process: the
  -- library is loaded once per process)
  describe("without NVRTC", function()
    it("gpu.compile says why the library named by GPULUA_NVRTC did not load, every time", function()
      local script = [[
local gpu = require "gpulua"
for _ = 1, 2 do print(pcall(gpu.compile, "extern \"C\" __global__ void k() {}")) end
local d = gpu.device(0)
local x = d:zeros("f32", 4)
d.main:fill(x, 3)
print("after", x:read()[4])
]]
      for lib, why in pairs{["/nonexistent/libnvrtc.so"] = "/nonexistent/libnvrtc.so: cannot open shared object file",
                            ["libm.so.6"] = "libm.so.6 lacks nvrtc"} do
        local out, status = H.run_child(script, {GPULUA_NVRTC = lib}, 60)
        assert.are.equal(0, status, out)
        local missing = "false\tgpu.compile: kernel.cu: cannot compile: GPULUA_NVRTC=" .. lib
          .. " could not be loaded: " .. why
        local _, times = out:gsub(H.lit(missing), "")
        assert.are.equal(2, times, out)
        assert.matches("after\t3", out)
      end
    end)
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
      H.fails("gpulua.Kernel has no field 'no_such_field' %(fields: name, signature, doc; methods: cost, host%)",
              function() return k.no_such_field end)
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
      H.fails("gpulua%.Module expected, got table", m.kernel, {}, "twice", TWICE_SIG)
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
end)
