-- tests/ptx/corpus.lua: the interpreter's corpus (tests/ptx/*.cu) run through gpulua on the
-- backend in use, with fixed inputs, every output written to a dump as integers (the bits of
-- floats), so that a run on a GPU and a run on sim can be compared element by element
-- (tests/ptx/corpus_compare.lua). The kernels' sources are compiled with NVRTC, as a script's.
--   gpulua --backend=cuda tests/ptx/corpus.lua gpu.dump
--   gpulua --backend=sim  tests/ptx/corpus.lua sim.dump
--   gpulua tests/ptx/corpus_compare.lua gpu.dump sim.dump
-- scripts/device-run.sh corpus does all three on a GPU machine; ctest's ptx.corpus runs the
-- corpus on sim under two schedules and compares those.
local gpu = require "gpulua"

local out_path = assert(arg[1], "usage: corpus.lua OUT.dump")
local here = (arg[0]:match("^(.*)/[^/]*$") or ".") .. "/"
local dev = gpu.device(0)
local s = dev.main

-- a deterministic generator (xorshift32), the same on every machine
local state = 2463534242
local function rnd()
  state = state ~ ((state << 13) & 0xffffffff)
  state = state ~ (state >> 17)
  state = state ~ ((state << 5) & 0xffffffff)
  return state
end

local function source(name)
  local f = assert(io.open(here .. name .. ".cu"))
  local text = f:read("a")
  f:close()
  return text
end

local modules = {}
local function kernel(file, name, sig)
  modules[file] = modules[file] or gpu.compile(source(file), {name = file .. ".cu", device = dev})
  return modules[file]:kernel(name, sig)
end

-- a slice of dtype holding the values of t (a table), or n zeros
local function input(dtype, t)
  local h = gpu.host(dtype, #t)
  for i = 1, #t do h[i] = t[i] end
  local x = dev:alloc(dtype, #t)
  s:copy(x, h)
  return x
end
local function zeros(dtype, n) return dev:zeros(dtype, n) end
local function gen(n, f)
  local t = {}
  for i = 1, n do t[i] = f(i) end
  return t
end

-- the bits of a float read back as a Lua number
local function f32_bits(v) return (string.unpack("<I4", string.pack("<f", v))) end

local results = {}
local function keep(case, outs)
  local r = {name = case, outs = {}}
  for _, o in ipairs(outs) do
    local h = o.slice:read()
    local vals = {}
    for i = 1, #h do vals[i] = o.bits and o.bits(h[i]) or h[i] end
    r.outs[#r.outs + 1] = {name = o.name, kind = o.kind or "int", values = vals}
  end
  results[#results + 1] = r
end

local function f32_specials(i)
  local sp = {0.0, -0.0, 1 / 0, -1 / 0, 1e-45, -1e-45, 1.17549435e-38, 3.4028235e38, 65504.0, 65520.0, 5.9604645e-8,
              2.9802322e-8, 1.0009765625, 1.00048828125, -2.5}
  return sp[(i - 1) % #sp + 1]
end

-- saxpy: y = a x + y
do
  local n = 1000
  local k = kernel("saxpy", "saxpy", "i32, f32, const f32*, f32*")
  local x = input("f32", gen(n, function(i) return math.sin(i) * 100 end))
  local y = input("f32", gen(n, function(i) return math.cos(i) end))
  s:launch(k, {grid = (n + 127) // 128, block = 128}, n, 2.5, x, y)
  keep("saxpy", {{name = "y", slice = y, bits = f32_bits, kind = "f32"}})
end

-- a 2-D grid
do
  local w, h = 37, 22
  local k = kernel("grid2d", "grid2d", "u32*, i32, i32")
  local o = zeros("u32", w * h)
  s:launch(k, {grid = {5, 6}, block = {8, 4}}, o, w, h)
  keep("grid2d", {{name = "out", slice = o}})
end

-- a block reduction in shared memory
do
  local n = 2000
  local k = kernel("reduce", "reduce", "const f32*, f32*, i32")
  local x = input("f32", gen(n, function() return (rnd() % 20001 - 10000) / 64 end))
  local o = zeros("f32", 8)
  s:launch(k, {grid = 8, block = 256}, x, o, n)
  keep("reduce", {{name = "out", slice = o, bits = f32_bits, kind = "f32"}})
end

-- warp shuffles
do
  local n = 256
  local k = kernel("warpsum", "warpsum", "const i32*, i32*, i32*, i32*, i32*")
  local x = input("i32", gen(n, function() return rnd() % 2001 - 1000 end))
  local sum, up, bfly, idx = zeros("i32", n // 32), zeros("i32", n), zeros("i32", n), zeros("i32", n)
  s:launch(k, {grid = 1, block = n}, x, sum, up, bfly, idx)
  keep("warpsum", {{name = "sum", slice = sum}, {name = "up", slice = up}, {name = "bfly", slice = bfly},
                   {name = "idx", slice = idx}})
end

-- a histogram by atomics
do
  local n = 5000
  local k = kernel("histo", "histo", "const u8*, i32, u32*")
  local x = input("u8", gen(n, function() return rnd() % 256 end))
  local bins = zeros("u32", 64)
  s:launch(k, {grid = 3, block = 128}, x, n, bins)
  keep("histo", {{name = "bins", slice = bins}})
end

-- votes and the active mask
do
  local n = 128
  local k = kernel("vote", "vote", "const i32*, u32*, i32*, i32*, u32*")
  local x = input("i32", gen(n, function(i) return (i % 7 == 0 or i > 96) and 1 or -(rnd() % 3) end))
  local ballot, all, any, active = zeros("u32", n // 32), zeros("i32", n // 32), zeros("i32", n // 32), zeros("u32", n)
  s:launch(k, {grid = 1, block = n}, x, ballot, all, any, active)
  keep("vote", {{name = "ballot", slice = ballot}, {name = "all", slice = all}, {name = "any", slice = any},
                {name = "active", slice = active}})
end

-- divergent loops, reconverged
do
  local n = 64
  local k = kernel("collatz", "collatz", "const u32*, u32*, u32*, u32*")
  local x = input("u32", gen(n, function(i) return i + rnd() % 1000 end))
  local steps, pair, mask = zeros("u32", n), zeros("u32", n), zeros("u32", n)
  s:launch(k, {grid = 1, block = n}, x, steps, pair, mask)
  keep("collatz", {{name = "steps", slice = steps}, {name = "pair", slice = pair}, {name = "mask", slice = mask}})
end

-- device functions, recursion
do
  local n = 64
  local k = kernel("fact", "factorials", "u64*, i32*, i32")
  local o, fibs = zeros("u64", n), zeros("i32", n)
  s:launch(k, {grid = 2, block = 32}, o, fibs, n)
  keep("fact", {{name = "out", slice = o}, {name = "fibs", slice = fibs}})
end

-- dynamic shared memory
do
  local g, b = 4, 64
  local k = kernel("dynshared", "reverse", "i32*")
  local x = input("i32", gen(g * b, function(i) return i * 3 - 100 end))
  s:launch(k, {grid = g, block = b, shared = b * 4}, x)
  keep("dynshared", {{name = "data", slice = x}})
end

-- 64-bit integers
do
  local n = 64
  local k = kernel("int64", "int64ops", "const i64*, const i64*, i64*, i32")
  local a = input("i64", gen(n, function(i) return i == 1 and 0 or (rnd() << 32 | rnd()) - (1 << 62) end))
  local b = input("i64", gen(n, function(i)
    if i % 5 == 0 then return 0 end
    if i % 5 == 1 then return -(rnd() % 1000) - 1 end
    return (rnd() << (i % 30)) | rnd()
  end))
  local o = zeros("i64", 10 * n)
  s:launch(k, {grid = 2, block = 32}, a, b, o, n)
  keep("int64", {{name = "out", slice = o}})
end

-- doubles, with the values IEEE arithmetic finds awkward; the outputs read as their bits
do
  local n = 64
  local sp = {0.0, -0.0, 1 / 0, -1 / 0, 0 / 0, 5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
              1.5, -2.5, 3.0, 1e-300, 1e300}
  local k = kernel("f64", "f64ops", "const f64*, const f64*, u64*, i32")
  local a = input("f64", gen(n, function(i) return i <= #sp and sp[i] or (rnd() / 7.0 - 3e8) end))
  local b = input("f64", gen(n, function(i) return i <= #sp and sp[#sp + 1 - i] or (rnd() / 13.0 - 1e8) end))
  local o = zeros("u64", 8 * n)
  s:launch(k, {grid = 2, block = 32}, a, b, o, n)
  keep("f64", {{name = "out", slice = o, kind = "f64"}})
end

-- f16 and bf16: 16-bit patterns in, patterns out
do
  local n = 640
  local pat = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7d00, 0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff, 0x3c00, 0xbc00,
               0x3c01, 0x7f80, 0xff80, 0x7fc0, 0x0080, 0x007f, 0x3f80}
  local function p16(i) return i <= #pat and pat[i] or rnd() % 65536 end
  local k = kernel("half", "halfops", "const u16*, const u16*, const u16*, const f32*, const i32*, u16*, u32*, i32*, "
                                      .. "u32*, i32")
  local a = input("u16", gen(n, p16))
  local b = input("u16", gen(n, function(i) return p16((i * 7) % n + 1) end))
  local c = input("u16", gen(n, function(i) return p16((i * 13) % n + 1) end))
  local f = input("f32", gen(n, function(i) return i <= 60 and f32_specials(i) or (rnd() % 200001 - 100000) / 37 end))
  local v = input("i32", gen(n, function(i) return i < 20 and (1 << (i + 10)) + i or rnd() % 4000001 - 2000000 end))
  local o, flags, iout, fout = zeros("u16", 44 * n), zeros("u32", n), zeros("i32", 4 * n), zeros("u32", 2 * n)
  s:launch(k, {grid = n // 64, block = 64}, a, b, c, f, v, o, flags, iout, fout, n)
  keep("half", {{name = "out", slice = o, kind = "f16"}, {name = "flags", slice = flags},
                {name = "iout", slice = iout}, {name = "fout", slice = fout, kind = "f32"}})
end

-- dp4a, redux, match
do
  local n = 64
  local k = kernel("warpops", "warpops", "const i32*, const i32*, const i64*, i32*")
  local a = input("i32", gen(n, function() return rnd() - (1 << 31) end))
  local b = input("i32", gen(n, function() return rnd() - (1 << 31) end))
  local w = input("i64", gen(n, function(i) return (i % 5) << 40 | (i % 3) end))
  local o = zeros("i32", 20 * n)
  s:launch(k, {grid = 1, block = n}, a, b, w, o)
  keep("warpops", {{name = "out", slice = o}})
end

-- a race-free block sum with an atomic total (the same under every schedule)
do
  local g, b = 6, 256
  local k = kernel("schedule", "blocksum", "const i32*, i32*, i32*")
  local x = input("i32", gen(g * b, function() return rnd() % 1001 - 500 end))
  local part, total = zeros("i32", g), zeros("i32", 1)
  s:launch(k, {grid = g, block = b}, x, part, total)
  keep("blocksum", {{name = "part", slice = part}, {name = "total", slice = total}})
end

-- shared-memory tiles (matmul), a two-kernel scan, a bitonic sort in shared memory, a 3-D grid
do
  local m, n, k = 37, 29, 45
  local mm = kernel("tiles", "matmul", "const f32*, const f32*, f32*, i32, i32, i32")
  local a = input("f32", gen(m * k, function() return (rnd() % 2001 - 1000) / 256 end))
  local b = input("f32", gen(k * n, function() return (rnd() % 2001 - 1000) / 128 end))
  local c = zeros("f32", m * n)
  s:launch(mm, {grid = {(n + 15) // 16, (m + 15) // 16}, block = {16, 16}}, a, b, c, m, n, k)
  local len, blocks = 1000, 4
  local x = input("i32", gen(len, function() return rnd() % 2001 - 1000 end))
  local y, totals = zeros("i32", len), zeros("i32", blocks)
  local scan = kernel("tiles", "scan_blocks", "const i32*, i32*, i32*, i32")
  s:launch(scan, {grid = blocks, block = 256}, x, y, totals, len)
  s:launch(kernel("tiles", "scan_add", "i32*, const i32*, i32"), {grid = blocks, block = 256}, y, totals, len)
  local keys = input("u32", gen(3 * 512, function() return rnd() end))
  s:launch(kernel("tiles", "bitonic", "u32*"), {grid = 3, block = 128}, keys)
  local g = zeros("u32", 19 * 11 * 7)
  s:launch(kernel("tiles", "grid3d", "u32*, i32, i32, i32"), {grid = {3, 2, 4}, block = {8, 8, 2}}, g, 19, 11, 7)
  keep("tiles", {{name = "matmul", slice = c, bits = f32_bits, kind = "f32"}, {name = "scan", slice = y},
                 {name = "sorted", slice = keys}, {name = "grid3d", slice = g}})
end

-- NaN, infinities and values past an integer's range through conversions and float operations
-- (tests/ptx/specials.cu: one row of n results an instruction)
do
  local n = 10
  local function f64_bits(v) return (string.unpack("<i8", string.pack("<d", v))) end
  local d = {0x7ff8000000000000, 0xfff8000000000000, 0x7ff0000000000001, 0x7ff0000000000000, 0xfff0000000000000}
  local f = {0x7fc00000, 0xffc00000, 0x7f800001, 0x7f800000, 0xff800000}
  local dv = {1e30, -1e30, -0.5, 3.7}
  local k = kernel("specials", "specials", "const u64*, const u32*, const u16*, u64*, i32")
  local a = input("u64", gen(n, function(i) return d[i] or dv[i - 5] and f64_bits(dv[i - 5]) or 0x7ff8000000012345 end))
  local b = input("u32", gen(n, function(i) return f[i] or dv[i - 5] and f32_bits(dv[i - 5]) or 0x7fc12345 end))
  local h = input("u16", {0x7e00, 0xfe00, 0x7c01, 0x7c00, 0xfc00, 0x7bff, 0xfbff, 0xb800, 0x4366, 0x7e55})
  local o = zeros("u64", 80 * n)
  s:launch(k, {grid = 1, block = 32}, a, b, h, o, n)
  keep("specials", {{name = "out", slice = o}})
end

local f = assert(io.open(out_path, "w"))
f:write(("-- %s backend, %s\nreturn {\n"):format(gpu.backend(), dev.name))
for _, r in ipairs(results) do
  f:write(("  {name = %q, outs = {\n"):format(r.name))
  for _, o in ipairs(r.outs) do
    f:write(("    {name = %q, kind = %q, values = {%s}},\n"):format(o.name, o.kind, table.concat(o.values, ",")))
  end
  f:write("  }},\n")
end
f:write("}\n")
f:close()
print(("corpus: %d kernels run on %s (%s), written to %s"):format(#results, gpu.backend(), dev.name, out_path))
