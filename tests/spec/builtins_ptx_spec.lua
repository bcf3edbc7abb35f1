-- GPULUA_SIM_BUILTINS=ptx: the built-in kernels' CUDA source, kernels/builtins.cu,
-- run through the sim's interpreter, against their C implementations (the
-- default, c): every built-in of every dtype on the same awkward inputs (NaNs
-- with payloads, infinities, signed zeros, subnormals, the extremes of the
-- integer ranges, counts that are no multiple of the block, views that break
-- the 16-byte vectors), the results compared bit for bit. So a run without a GPU
-- proves what the CUDA code computes. Each side runs in a child process with
-- its setting and writes its results' bytes to a file. On cuda the built-ins
-- run on the GPU: these cases are the sim's.
local gpu = require "gpulua"
local H = require "helpers"

-- The child: every case, one line each to the file $BUILTINS_OUT: "KEY HEX",
-- KEY naming the kernel, the dtype and the case, HEX the bytes of the result
-- (an elementwise kernel's whole output, a reduction's first element). With
-- $BUILTINS_DTYPES, the dtypes it names (comma-separated) alone.
local CHILD = [=[
local gpu = require "gpulua"
local dev = gpu.device(0)
local main = dev.main
local K = gpu.kernels
local only = os.getenv("BUILTINS_DTYPES")
local SIZE = {i8 = 1, u8 = 1, i16 = 2, u16 = 2, i32 = 4, u32 = 4, i64 = 8, u64 = 8,
              f16 = 2, bf16 = 2, f32 = 4, f64 = 8}
local INT = {i8 = true, u8 = true, i16 = true, u16 = true, i32 = true, u32 = true, i64 = true, u64 = true}

-- bit patterns of each float dtype: +0, -0, +inf, -inf, the canonical NaN, a
-- quiet NaN with a payload, a negative NaN, a signalling NaN, the least and the
-- greatest subnormal, the least normal, the greatest finite (both signs), 1, -1,
-- the least negative subnormal
local SPECIAL = {
  f16 = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7e01, 0xfe00, 0x7c01, 0x0001, 0x03ff, 0x0400, 0x7bff,
         0xfbff, 0x3c00, 0xbc00, 0x8001},
  bf16 = {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0x7fc1, 0xffc0, 0x7f81, 0x0001, 0x007f, 0x0080, 0x7f7f,
          0xff7f, 0x3f80, 0xbf80, 0x8001},
  f32 = {0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fffffff, 0x7fc00001, 0xffc00000, 0x7f800001,
         0x00000001, 0x007fffff, 0x00800000, 0x7f7fffff, 0xff7fffff, 0x3f800000, 0xbf800000, 0x80000001},
  f64 = {0, math.mininteger, 0x7ff0000000000000, -0x10000000000000, 0x7fffffffffffffff, 0x7ff8000000000001,
         -0x8000000000000, 0x7ff0000000000001, 1, 0x000fffffffffffff, 0x0010000000000000, 0x7fefffffffffffff,
         -0x10000000000001, 0x3ff0000000000000, -0x4010000000000000, math.mininteger + 1},
}
-- the exponent bits, their width and the finite ones' span for "rough" values
local FLOAT = {f16 = {10, 5, 8, 22}, bf16 = {7, 8, 110, 140}, f32 = {23, 8, 110, 140}, f64 = {52, 11, 1010, 1040}}
for dt, s in pairs(SIZE) do
  if INT[dt] then -- 0, 1, all ones, the least and the greatest, 2, 0x55..., 0xaa...
    local b = 8 * s
    local ones = b == 64 and -1 or (1 << b) - 1
    SPECIAL[dt] = {0, 1, ones, 1 << (b - 1), (1 << (b - 1)) - 1, 2, 0x5555555555555555 & ones,
                   0xaaaaaaaaaaaaaaaa & ones}
  end
end

local rng = 0
local function seed(s) rng = s * 0x9E3779B97F4A7C15 + 1 end
local function bits64()
  rng = rng * 6364136223846793005 + 1442695040888963407
  return rng ~ (rng >> 29)
end
local function mask(dt, v) return SIZE[dt] == 8 and v or v & ((1 << (8 * SIZE[dt])) - 1) end

-- one element's bits: "raw" any pattern; "rough" a finite float of every
-- magnitude in a span (sums round at every step), any integer; "special" one
-- of SPECIAL in turn; "mixed" each third special, the rest raw; "zeros" +0 and
-- -0 (and small values) in a row, for min and max
local function element(dt, kind, i)
  if kind == "mixed" then kind = i % 3 == 0 and "special" or "raw" end
  if kind == "special" then return SPECIAL[dt][(i // 3) % #SPECIAL[dt] + 1] end
  local r = bits64()
  if INT[dt] or kind == "raw" then return mask(dt, r) end
  local m, e, lo, hi = table.unpack(FLOAT[dt])
  local exp = kind == "zeros" and ((r >> 40) % 4 == 0 and 0 or lo) or lo + (r >> 40) % (hi - lo)
  local sign = (r >> 63) & 1
  local man = kind == "zeros" and 0 or r & ((1 << m) - 1)
  return mask(dt, (sign << (m + e)) | (exp << m) | man)
end

-- a slice of n elements of dtype dt (with room for offsets) from the bytes of kind
local function input(dt, kind, n, s)
  seed(s)
  local room = n + 8
  local t = {}
  local fmt = "<I" .. SIZE[dt]
  for i = 0, room - 1 do t[#t + 1] = string.pack(fmt, element(dt, kind, i)) end
  local bytes = table.concat(t)
  local h = gpu.host("u8", #bytes)
  for i = 1, #bytes do h[i] = bytes:byte(i) end
  local x = dev:alloc(dt, room)
  main:copy(x, h)
  return x
end

local out = assert(io.open(assert(os.getenv("BUILTINS_OUT")), "w"))
local function hexof(x)
  local h = gpu.host("u8", x.bytes)
  main:copy(h, x)
  main:sync()
  local t = h:totable()
  for i = 1, #t do t[i] = ("%02x"):format(t[i]) end
  return table.concat(t)
end
local function emit(key, x) out:write(key, " ", x.bytes > 0 and hexof(x) or "-", "\n") end

-- the scalars a, v of axpy, scale and fill, as Lua numbers
local function scalars(dt)
  if INT[dt] then
    local b = 8 * SIZE[dt]
    local signed = dt:sub(1, 1) == "i"
    return {3, signed and -1 or (b == 64 and -1 or (1 << b) - 1), signed and -(1 << (b - 1)) or 0x80}
  end
  local tiny = {f16 = 2.0^-24, bf16 = 2.0^-133, f32 = 2.0^-149, f64 = 2.0^-1074}
  return {1.75, -0.0, math.huge, 0 / 0, tiny[dt], -3.0e38}
end

-- views of x, y, out: all aligned; all at offset 1 (a scalar head, then
-- vectors); x at 1, y and out at 2 (no vectors: scalars throughout)
local LAYOUTS = {{"aligned", 0, 0}, {"offset", 1, 1}, {"skewed", 1, 2}}
local CFGS = {{"g5b96", {grid = 5, block = 96}}, {"g1b32", {grid = 1, block = 32}}, {"auto", {block = 128}}}

local function elementwise(dt)
  local n = 1003
  local x, y = input(dt, "mixed", n, 1), input(dt, "mixed", n, 2)
  local o = dev:alloc(dt, n + 8)
  local pattern = input(dt, "raw", n, 3)
  for _, lay in ipairs(LAYOUTS) do
    local name, ox, oy = lay[1], lay[2], lay[3]
    local xv, yv, ov = x:view(ox, n), y:view(oy, n), o:view(oy, n)
    local function run(k, key, cfg, ...)
      main:copy(o, pattern)
      main:launch(k, cfg, ...)
      emit(key, o)
    end
    local cfg = {grid = 3, block = 96}
    for i, a in ipairs(scalars(dt)) do
      run(K.axpy, ("axpy %s %s a%d"):format(dt, name, i), cfg, a, xv, ov, n) -- y is o: copied in first
      run(K.scale, ("scale %s %s a%d"):format(dt, name, i), cfg, a, xv, ov, n)
      run(K.fill, ("fill %s %s v%d"):format(dt, name, i), cfg, ov, a, n)
    end
    run(K.add, ("add %s %s"):format(dt, name), cfg, xv, yv, ov, n)
    run(K.mul, ("mul %s %s"):format(dt, name), cfg, xv, yv, ov, n)
    run(K.copy, ("copy %s %s"):format(dt, name), cfg, xv, 1, ov, 1, n)
    run(K.add, ("add %s %s g1"):format(dt, name), {grid = 1, block = 32}, xv, yv, ov, n - 2)
  end
  -- axpy in place (its y is both read and written), strided copies
  main:copy(o, x)
  main:launch(K.axpy, {block = 64}, scalars(dt)[1], y:view(0, n), o:view(0, n), n)
  emit(("axpy %s y-in-place"):format(dt), o)
  for _, inc in ipairs{{2, 3}, {3, 1}, {1, 2}, {0, 1}} do
    main:copy(o, pattern)
    local m = (n + 7) // 3
    main:launch(K.copy, {grid = 2, block = 64}, x, inc[1], o, inc[2], m)
    emit(("copy %s inc%d,%d"):format(dt, inc[1], inc[2]), o)
  end
end

local function reductions(dt)
  local r = dev:alloc(dt, 1)
  local kinds = {"rough", "mixed", "special", "zeros"}
  local data = {}
  for i, kind in ipairs(kinds) do data[kind] = {input(dt, kind, 5000, 10 + i), input(dt, kind, 5000, 20 + i)} end
  local function run(kname, key, cfg, x, y, n)
    main:copy(r, gpu.host("u8", SIZE[dt]):fill(0xa5))
    if kname == "dot" then main:launch(K.dot, cfg, x, y, r, n) else main:launch(K[kname], cfg, x, r, n) end
    emit(key, r)
  end
  for _, kname in ipairs{"sum", "dot", "min", "max"} do
    for _, kind in ipairs(kinds) do
      local x, y = data[kind][1], data[kind][2]
      for _, lay in ipairs(LAYOUTS) do
        for _, c in ipairs(CFGS) do
          run(kname, ("%s %s %s %s %s n1003"):format(kname, dt, kind, lay[1], c[1]), c[2], x:view(lay[2], 1003),
              y:view(lay[3], 1003), 1003)
        end
      end
      run(kname, ("%s %s %s n4999"):format(kname, dt, kind), {grid = 7, block = 160}, x:view(1, 4999),
          y:view(1, 4999), 4999)
    end
    local x = data.mixed[1]
    for _, n in ipairs{0, 1, 2, 31, 33} do
      run(kname, ("%s %s n%d"):format(kname, dt, n), {grid = 3, block = 64}, x:view(0, n), x:view(0, n), n)
    end
  end
end

for dt in pairs(SIZE) do
  if not only or ("," .. only .. ","):find("," .. dt .. ",", 1, true) then
    elementwise(dt)
    reductions(dt)
  end
end
out:close()
dev:sync()
print("done")
]=]

-- the lines of file path as a table KEY -> HEX, and the keys in order
local function results(path)
  local t, keys = {}, {}
  for line in io.lines(path) do
    local k, v = line:match("^(.-) (%S+)$")
    t[k] = v
    keys[#keys + 1] = k
  end
  return t, keys
end

local SIZE = H.sizes

-- Whether the element hex strings ea and eb of dtype dt, from kernel k, are the
-- same result: the same bytes; or, for an f32 or f64 result of arithmetic (axpy,
-- scale, add, mul, sum, dot), both NaN. PTX does not define a NaN result's
-- payload: the GPU gives the canonical NaN, and both of the sim's ways compute
-- on the host CPU, which keeps one operand's, which one up to the compiler (two
-- builds of gpulua can differ). min and max keep an element, fill and copy move
-- one, f16 and bf16 results are rounded to the canonical NaN: their bytes must
-- agree.
local ARITH = {axpy = true, scale = true, add = true, mul = true, sum = true, dot = true}
local UNPACK = {f32 = "<f", f64 = "<d"}
local function same(k, dt, ea, eb)
  if ea == eb then return true end
  if not (ARITH[k] and UNPACK[dt]) or #ea ~= #eb then return false end
  local function value(e) return (string.unpack(UNPACK[dt], (e:gsub("%x%x", function(h)
    return string.char(tonumber(h, 16)) end)))) end
  local a, b = value(ea), value(eb)
  return a ~= a and b ~= b
end

-- nil when two results (hex) are the same, else the first element where they
-- differ, in words
local function first_difference(key, a, b, name)
  local k, dt = key:match("^(%S+) (%S+)")
  local w = 2 * SIZE[dt]
  if #a ~= #b then return ("%s: c gives %d bytes, %s %d"):format(key, #a // 2, name, #b // 2) end
  for i = 1, #a, w do
    local ea, eb = a:sub(i, i + w - 1), b:sub(i, i + w - 1)
    if not same(k, dt, ea, eb) then
      return ("%s: element %d: c gives bytes %s, %s %s"):format(key, (i - 1) // w, ea, name, eb)
    end
  end
  return nil
end

describe("GPULUA_SIM_BUILTINS=ptx #ptx", function()
  if gpu.backend() ~= "sim" then
    pending("the sim's interpreter against the C implementations: on cuda the built-ins run on the GPU")
    return
  end
  if not H.interpreter() then
    pending("needs the interpreter's arg table to start a child process")
    return
  end
  local nvrtc, why = pcall(gpu.compile, 'extern "C" __global__ void k() {}', {name = "probe.cu"})
  if not nvrtc then -- ptx compiles kernels/builtins.cu (c needs no NVRTC)
    pending("NVRTC is not available: " .. tostring(why))
    return
  end

  -- the results of the dtypes named (comma-separated) run with the settings
  -- of table env, as results gives them
  local function run(dtypes, env)
    local path = os.tmpname()
    env.BUILTINS_OUT, env.BUILTINS_DTYPES = path, dtypes
    local out, status = H.run_child(CHILD, env, 600)
    assert.are.equal(0, status, ("GPULUA_SIM_BUILTINS=%s: %s"):format(env.GPULUA_SIM_BUILTINS, out))
    assert.matches("done", out)
    local t, keys = results(path)
    os.remove(path)
    return t, keys
  end

  -- the keys where two results differ, in words (the first 20)
  local function differences(keys, c, other, name)
    local bad = {}
    for _, k in ipairs(keys) do
      local d = c[k] ~= other[k] and first_difference(k, c[k], other[k] or "", name)
      if d and #bad < 20 then bad[#bad + 1] = d end
    end
    return bad
  end

  for _, group in ipairs{"i8,u8,i16,u16", "i32,u32,i64,u64", "f16,bf16", "f32,f64"} do
    it("every built-in gives the same bits both ways, on any schedule: " .. group, function()
      local c, keys = run(group, {GPULUA_SIM_BUILTINS = "c"})
      local ptx, pkeys = run(group, {GPULUA_SIM_BUILTINS = "ptx"})
      -- the interpreter's random order of blocks, warps and atomics: the
      -- reductions' last block is another, their bits the same
      local random = run(group, {GPULUA_SIM_BUILTINS = "ptx", GPULUA_SIM_SCHEDULE = "random:7"})
      local kernels = {}
      for _, k in ipairs(keys) do kernels[k:match("^%S+ %S+")] = true end
      for dt in group:gmatch("[^,]+") do -- every built-in of every dtype of the group ran
        for _, kname in ipairs{"axpy", "scale", "fill", "add", "mul", "copy", "sum", "dot", "min", "max"} do
          assert.is_true(kernels[kname .. " " .. dt], kname .. " " .. dt .. " did not run")
        end
      end
      assert.are.equal(#keys, #pkeys)
      assert.are.same({}, differences(keys, c, ptx, "ptx"), "results differ")
      assert.are.same({}, differences(keys, c, random, "ptx on random:7"), "results differ")
    end)
  end
end)
