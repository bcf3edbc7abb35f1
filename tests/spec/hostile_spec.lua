-- A hostile, randomised sweep of the whole Lua API: thousands of calls of every
-- gpu.* function and every method of every object type, with arguments of every
-- wrong type and extreme values, each under pcall. The process must never crash
-- or hang, every error must be a non-empty Lua string, and once the sweep is over
-- the runtime must still move data correctly.
--
-- The sequence is a fixed-seed xorshift64 on Lua integers (not math.random), so a
-- run is reproducible. GPULUA_FUZZ_SEED=N runs that seed instead of the defaults;
-- GPULUA_FUZZ_TRACE=1 prints every call on stderr before it is made, to find the
-- call that crashes or hangs.
local gpu = require "gpulua"
local H = require "helpers"

local TRACE = os.getenv("GPULUA_FUZZ_TRACE")
local SEEDS = {0x9E3779B97F4A7C15, 20240607}
if os.getenv("GPULUA_FUZZ_SEED") then
  local seed = math.tointeger(tonumber(os.getenv("GPULUA_FUZZ_SEED")))
  SEEDS = {(assert(seed, "GPULUA_FUZZ_SEED must be an integer"))}
end
local CALLS = tonumber(os.getenv("GPULUA_FUZZ_CALLS")) or 6000 -- per seed
local MAX_COMPILES = 4 -- per seed: NVRTC takes tens of ms per failing compile
local RESET = 250 -- calls between fresh sets of live objects
local BIG = 4096       -- results with more elements than this are dropped at once

local NOP_SRC = [[
extern "C" __global__ void nop(float *y, unsigned long long n) {}
extern "C" __global__ void nop2(const double *x, int c) {}
]]

-- xorshift64: a generator of integers in 1..n
local function prng(seed)
  local x = seed ~= 0 and seed or 0x2545F4914F6CDD1D
  local r = {}
  function r.int(n)
    x = x ~ (x << 13)
    x = x ~ (x >> 7)
    x = x ~ (x << 17)
    return (x >> 11) % n + 1
  end
  function r.pick(t) return t[r.int(#t)] end
  function r.chance(p) return r.int(1000) <= p * 1000 end
  return r
end

local function nop() end

-- The live objects of one run, each with a label and a kind.
local function make_objects()
  local o = {}
  local function add(kind, label, v) o[#o + 1] = {kind = kind, label = label, v = v} end
  local dev0 = gpu.device(0)
  local dev1 = gpu.count() > 1 and gpu.device(1) or dev0
  add("device", "dev0", dev0)
  add("device", "dev1", dev1)
  local s1 = dev0:stream{name = "fz1"}
  local s2 = dev1:stream{name = "fz2"}
  local closed = dev0:stream{name = "fzclosed"}
  closed:close()
  add("stream", "dev0.main", dev0.main)
  add("stream", "dev1.main", dev1.main)
  add("stream", "s1", s1)
  add("stream", "s2", s2)
  add("stream", "closed", closed)
  add("event", "e1", s1:record())
  add("event", "e1t", s1:record{timing = true})
  add("event", "e2t", s2:record{timing = true})
  add("event", "emain", dev0.main:record{timing = true})
  local x = dev0:zeros("f32", 64)
  add("slice", "x f32[64]", x)
  add("slice", "xv view(8,16)", x:view(8, 16))
  add("slice", "x0 view(64,0)", x:view(64, 0))
  add("slice", "z i32[16] on s1", dev0:zeros("i32", 16, {stream = s1}))
  add("slice", "y f64[8] dev1", dev1:zeros("f64", 8))
  add("slice", "w u8[4]", dev0:alloc("u8", 4))
  local freed = dev0:alloc("f32", 4)
  freed:free()
  add("slice", "freed", freed)
  local fv = dev0:zeros("f32", 8)
  local fview = fv:view(2, 2)
  fv:free()
  add("slice", "view of freed", fview)
  local h1 = gpu.host("f32", 64)
  add("host", "h1 f32[64]", h1)
  add("host", "h1 view(2,4)", h1:view(2, 4))
  add("host", "h2 u8 pageable", gpu.host("u8", {1, 2, 3}, {pinned = false}))
  add("host", "h3 f16[8]", gpu.host("f16", 8))
  add("host", "h4 i64[8]", gpu.host("i64", 8))
  add("host", "h5 u64[2]", gpu.host("u64", 2))
  add("host", "h6 f32[16]", gpu.host("f32", 16))
  local hf = gpu.host("f32", 8)
  local hfv = hf:view(1, 2)
  hf:free()
  add("host", "freed host", hf)
  add("host", "view of freed host", hfv)
  for _, name in ipairs{"axpy", "scale", "fill", "add", "mul", "copy", "sum"} do
    add("kernel", "builtin " .. name, gpu.kernels[name])
  end
  local m = gpu.compile(NOP_SRC, {name = "fuzz_nop.cu"})
  add("module", "module dev0", m)
  local k = m:kernel("nop", "f32*, u64")
  k:host(nop)
  add("kernel", "nop (host impl)", k)
  add("kernel", "nop2 (no host impl)", m:kernel("nop2", "const f64*, i32"))
  local m1 = gpu.compile(NOP_SRC, {name = "fuzz_nop.cu", device = dev1})
  add("module", "module dev1", m1)
  local k1 = m1:kernel("nop", "void*, u64")
  k1:host(nop)
  add("kernel", "nop dev1 (host impl)", k1)
  return o, s1
end

-- The plain values every argument is drawn from (live objects come on top).
local function make_values(s1)
  local big = string.rep("x", 100 * 1024)
  local co = coroutine.create(nop)
  return {
    {"nil", nil}, {"true", true}, {"false", false}, {"0", 0}, {"-1", -1}, {"1", 1},
    {"2", 2}, {"3", 3}, {"2^31", 1 << 31}, {"2^32", 1 << 32}, {"2^53", 1 << 53},
    {"2^63 float", 2.0 ^ 63}, {"maxinteger", math.maxinteger}, {"mininteger", math.mininteger},
    {"1.5", 1.5}, {"-0.0", -0.0}, {"NaN", 0 / 0}, {"huge", math.huge}, {"-huge", -math.huge},
    {'""', ""}, {'"f32"', "f32"}, {'"u8"', "u8"}, {'"x"', "x"}, {"100KB string", big},
    {'"strict"', "strict"}, {'"auto"', "auto"}, {'"off"', "off"},
    {"{}", {}}, {"{1,2,3}", {1, 2, 3}}, {"{grid=1,block=32}", {grid = 1, block = 32}},
    {"{stream=s1}", {stream = s1}}, {"function", nop}, {"coroutine", co},
  }
end

-- A short description of a value, for the trace.
local function show(v, labels)
  if v ~= v then return "NaN" end
  if labels[v] then return labels[v] end
  local t = type(v)
  if t == "string" then
    return #v > 20 and ("string[%d]"):format(#v) or ("%q"):format(v)
  elseif t == "userdata" then
    local ok, s = pcall(tostring, v)
    return ok and s or "userdata"
  elseif t == "table" then
    local parts = {}
    for k, x in pairs(v) do parts[#parts + 1] = tostring(k) .. "=" .. show(x, labels) end
    return "{" .. table.concat(parts, ",") .. "}"
  end
  return tostring(v)
end

local OPT_KEYS = {"stream", "pinned", "name", "priority", "timing", "device", "grid", "block", "shared", "options"}

local function sweep(seed, counts)
  local R = prng(seed)
  -- the sweep closes streams and frees slices as it goes: the objects are made
  -- anew every RESET calls, so that later calls still meet live ones
  local objects, values, labels, by_kind, proto
  local function reset()
    local s1
    objects, s1 = make_objects()
    values = make_values(s1)
    labels = {}
    for _, o in ipairs(objects) do labels[o.v] = o.label end
    for _, v in ipairs(values) do
      if v[2] ~= nil and v[2] == v[2] then labels[v[2]] = labels[v[2]] or v[1] end
    end
    by_kind = {}
    for _, o in ipairs(objects) do
      by_kind[o.kind] = by_kind[o.kind] or {}
      table.insert(by_kind[o.kind], o.v)
    end
    proto = {} -- an object of each kind, to take its methods from
    for kind, list in pairs(by_kind) do proto[kind] = list[1] end
    proto.kernel = by_kind.kernel[8] -- nop, with its host implementation
  end
  reset()
  local dyn = {} -- objects the sweep itself made, bounded

  local any -- forward
  local function object()
    if #dyn > 0 and R.chance(0.3) then return R.pick(dyn) end
    return R.pick(objects).v
  end
  local function opts()
    local t = {}
    for _ = 1, R.int(3) do t[R.pick(OPT_KEYS)] = any(1) end
    return t
  end
  local function cfg()
    local c = R.int(10)
    if c <= 3 then return {grid = R.int(4), block = R.pick{1, 32, 64, 1024}, shared = R.pick{0, 16}} end
    if c <= 5 then
      local t = {grid = any(1), block = any(1)}
      if R.chance(0.3) then t.shared = any(1) end
      return t
    end
    if c <= 6 then return {grid = {R.int(3), R.int(3), R.int(3)}, block = {32, R.int(2), 1}} end
    return any(1)
  end
  function any(depth)
    local c = R.int(10)
    if c <= 5 then return R.pick(values)[2] end
    if c <= 8 then return object() end
    if c <= 9 and (depth or 0) == 0 then return opts() end
    return R.pick{R.int(70) - 5, R.pick(H.dtypes), -R.int(100)} -- small numbers and dtypes
  end

  local function keep(v)
    if type(v) ~= "userdata" then return end
    local ok, n = pcall(function() return #v end)
    if ok and type(n) == "number" and n > BIG then
      pcall(function() v:free() end)
      collectgarbage()
      return
    end
    if #dyn < 40 then dyn[#dyn + 1] = v else dyn[R.int(#dyn)] = v end
  end

  local compiles = 0
  -- the callables: name, receiver kind (nil for gpu.*), function making the argument list
  local function nargs(max) return R.int(max + 1) - 1 end
  local function args(max)
    local t = {}
    local n = nargs(max)
    for i = 1, n do t[i] = any() end
    return t, n
  end
  local targets = {}
  local function gpu_fn(name, mk) targets[#targets + 1] = {name = "gpu." .. name, fn = gpu[name], mk = mk} end
  local function method(kind, name, mk) targets[#targets + 1] = {kind = kind, name = name, mk = mk} end
  local function std(max) return function() return args(max) end end

  gpu_fn("device", std(2))
  gpu_fn("host", function()
    local r = R.int(4)
    if r == 1 then return args(4) end
    local t = {R.chance(0.7) and R.pick(H.dtypes) or any(), any(), R.chance(0.5) and opts() or any()}
    if r == 2 then t[2] = {any(1), any(1), 1} end
    return t, 3
  end)
  -- paths that map nothing (or a device, a directory, a file the sweep never writes) and odd options
  gpu_fn("map", function()
    local o = R.chance(0.5) and {dtype = R.pick(H.dtypes), mode = R.pick{"r", "rw", "w", any(1)}} or opts()
    return {R.pick{"/nonexistent/fuzz.bin", "/dev/null", "/", "", any(1)}, R.chance(0.8) and o or any(1)}, 2
  end)
  gpu_fn("sync", std(2))
  gpu_fn("count", std(2))
  gpu_fn("backend", std(2))
  gpu_fn("clock", std(2))
  gpu_fn("policy", function()
    if R.chance(0.5) then return {R.pick{"strict", "auto", "off"}}, 1 end
    return args(2)
  end)
  -- a peer grant lasts as long as the process and would change what later spec
  -- files see: every call that could grant one (two distinct valid ordinals) is skipped
  gpu_fn("peer", function()
    local a, n = args(3)
    local i, j = math.tointeger(a[1]), math.tointeger(a[2])
    local valid = function(o) return o and o >= 0 and o < gpu.count() end
    if valid(i) and valid(j) and i ~= j then return a, n, "skip" end
    return a, n
  end)
  gpu_fn("compile", function()
    if compiles >= MAX_COMPILES then return {nil}, 1, "skip" end
    local src = R.pick{NOP_SRC, NOP_SRC, "", "x", "f32", "extern \"C\" __global__ void nop(", 0, {}, true, nop}
    if src == "x" or src == "f32" or src == "" or type(src) == "string" and src ~= NOP_SRC then
      compiles = compiles + 1
    end
    local o = R.chance(0.7) and opts() or any(1)
    if type(o) == "table" and type(o.options) == "table" then compiles = compiles + 1 end
    return {src, o}, 2
  end)
  gpu_fn("load", function()
    local path = R.pick{"/nonexistent/fuzz.cu", "/nonexistent/fuzz.ptx", "no_such_dir/k.cubin",
      "no_such.fatbin", any(1)}
    return {path, R.chance(0.5) and opts() or any(1), any(1)}, 3
  end)
  for _, name in ipairs{"stream", "alloc", "zeros", "sync", "free_memory"} do
    method("device", name, function()
      if (name == "alloc" or name == "zeros") and R.chance(0.5) then
        return {R.chance(0.7) and R.pick(H.dtypes) or any(), any(), R.chance(0.5) and opts() or any()}, 3
      end
      return args(3)
    end)
  end
  for _, name in ipairs{"record", "fork", "sync", "query", "close"} do
    method("stream", name, std(3))
  end
  -- mostly well-typed arguments, so that some of these calls get through
  local function mem() return R.pick(R.chance(0.5) and by_kind.slice or by_kind.host) end
  local function small() return R.pick{0, 1, 2, 4, 8, 16, 64, -1, 1.5, 3.0} end
  method("stream", "copy", function()
    if R.chance(0.3) then return args(3) end
    return {mem(), mem()}, 2
  end)
  method("stream", "fill", function()
    if R.chance(0.3) then return args(3) end
    return {R.pick(by_kind.slice), R.chance(0.7) and small() or any()}, 2
  end)
  method("stream", "join", function()
    if R.chance(0.3) then return args(2) end
    return {R.pick(by_kind.stream)}, 1
  end)
  method("stream", "wait", function()
    if R.chance(0.3) then return args(2) end
    return {R.pick(by_kind.event)}, 1
  end)
  method("stream", "launch", function()
    if R.chance(0.4) then -- the f32 nop or a built-in, with plausible arguments
      local k = R.pick{proto.kernel, gpu.kernels.fill, gpu.kernels.scale, gpu.kernels.axpy, gpu.kernels.sum}
      local sl = function() return R.chance(0.8) and R.pick(by_kind.slice) or any() end
      local t
      if k == proto.kernel then t = {sl(), small()}
      elseif k == gpu.kernels.fill then t = {sl(), small(), small()}
      elseif k == gpu.kernels.sum then t = {sl(), sl(), small()}
      else t = {small(), sl(), sl(), small()} end
      table.insert(t, 1, cfg())
      table.insert(t, 1, k)
      return t, #t
    end
    local t = {R.chance(0.8) and R.pick(by_kind.kernel) or any(), cfg()}
    for i = 3, 2 + nargs(5) do t[i] = R.chance(0.5) and object() or any() end
    return t, #t
  end)
  for _, name in ipairs{"sync", "query", "elapsed"} do method("event", name, std(2)) end
  for _, name in ipairs{"view", "split", "read", "free"} do method("slice", name, std(3)) end
  for _, name in ipairs{"totable", "fill", "view", "free"} do method("host", name, std(3)) end
  method("kernel", "host", function()
    return {R.chance(0.6) and nop or any()}, 1
  end)
  method("module", "kernel", function()
    local fname = R.pick{"nop", "nop2", "missing", any(1)}
    local sig = R.pick{"f32*, u64", "const f64*, i32", "void*, u64", "f32", "", "const", "f32**", "u64,",
      "int, int, int", any(1)}
    return {fname, sig}, 2
  end)
  targets[#targets + 1] = {name = "index", op = function(o, k) return o[k] end}
  targets[#targets + 1] = {name = "newindex", op = function(o, k, v) o[k] = v end}
  targets[#targets + 1] = {name = "len", op = function(o) return #o end}
  targets[#targets + 1] = {name = "tostring", op = function(o) return tostring(o) end}
  targets[#targets + 1] = {name = "host[k]", op = function(h, k) return h[k] end, kind = "host", raw = true}
  targets[#targets + 1] = {name = "host[k]=v", op = function(h, k, v) h[k] = v end, kind = "host", raw = true}

  local fails, oks = 0, 0
  for n = 1, CALLS do
    local tg = R.pick(targets)
    local f, a, na, skip
    if tg.op then
      local recv
      if tg.kind and R.chance(0.85) then recv = R.pick(by_kind[tg.kind]) else recv = object() end
      if R.chance(0.1) then recv = any() end
      local k = any()
      if tg.kind == "host" and R.chance(0.5) then k = R.int(70) - 2 end
      local v = any()
      if tg.kind == "host" and R.chance(0.3) then v = R.int(600) - 300 end
      f, a, na = tg.op, {recv, k, v}, 3
    elseif tg.kind then
      local recv
      if R.chance(0.85) then recv = R.pick(by_kind[tg.kind]) else recv = any() end
      f = proto[tg.kind][tg.name]
      a, na, skip = tg.mk()
      table.insert(a, 1, recv)
      na = na + 1
    else
      f = tg.fn
      a, na, skip = tg.mk()
    end
    if not skip then
      if TRACE then
        local d = {}
        for i = 1, na do d[i] = show(a[i], labels) end
        io.stderr:write(("[%d:%d] %s(%s)\n"):format(seed, n, tg.kind and (tg.kind .. ":" .. tg.name) or tg.name,
          table.concat(d, ", ")))
        io.stderr:flush()
      end
      local res = table.pack(pcall(f, table.unpack(a, 1, na)))
      counts.calls = counts.calls + 1
      local key = tg.kind and (tg.kind .. ":" .. tg.name) or tg.name
      if res[1] then
        counts.by[key] = (counts.by[key] or 0) + 1
        oks = oks + 1
        for i = 2, res.n do
          local r = res[i]
          if type(r) == "table" and tg.name == "split" then
            for j = 1, math.min(#r, 4) do keep(r[j]) end
          else
            keep(r)
          end
        end
      else
        fails = fails + 1
        local err = res[2]
        if os.getenv("GPULUA_FUZZ_ERRS") and key:match(os.getenv("GPULUA_FUZZ_ERRS")) then
          io.stderr:write(key, ": ", tostring(err):sub(1, 200), "\n")
        end
        if type(err) ~= "string" or err == "" then
          error(("call %d of seed %d, %s: error is %s (%s), not a non-empty string"):format(n, seed, tg.name,
            type(err), tostring(err)))
        end
      end
    end
    if n % RESET == 0 then
      gpu.policy("strict")
      reset()
      collectgarbage()
    end
  end
  counts.oks, counts.fails = counts.oks + oks, counts.fails + fails
  gpu.policy("strict")
end

describe("hostile sweep", function()
  it("thousands of calls with wrong and extreme arguments only ever raise string errors", function()
    local counts = {calls = 0, oks = 0, fails = 0, by = {}}
    local t0 = gpu.clock()
    for _, seed in ipairs(SEEDS) do
      local ok, err = pcall(sweep, seed, counts)
      gpu.policy("strict")
      assert(ok, err)
      collectgarbage()
    end
    if TRACE then
      io.stderr:write(("hostile: %d calls (%d ok, %d errors) over %d seeds in %.2f s\n"):format(counts.calls,
        counts.oks, counts.fails, #SEEDS, gpu.clock() - t0))
      local names = {}
      for k in pairs(counts.by) do names[#names + 1] = k end
      table.sort(names)
      for _, k in ipairs(names) do io.stderr:write(("  %-20s %d ok\n"):format(k, counts.by[k])) end
    end
    assert.is_true(counts.calls >= (#SEEDS > 1 and 5000 or 1000))
    assert.is_true(counts.fails > counts.calls // 2) -- mostly refused, as it should be
    assert.is_true(counts.oks > 0)
  end)

  it("afterwards the runtime still works: an alloc, copy and read round trip gives the data", function()
    gpu.policy("strict")
    assert.are.equal("strict", gpu.policy())
    collectgarbage()
    local ok, err = pcall(gpu.sync)
    assert(ok, err)
    for ordinal = 0, math.min(gpu.count(), 2) - 1 do
      local dev = gpu.device(ordinal)
      ok, err = pcall(dev.sync, dev)
      assert(ok, err)
      local n = 1000
      local src = H.iota("f32", n, 7)
      local x = dev:alloc("f32", n)
      dev.main:copy(x, src)
      local y = dev:zeros("f32", n)
      dev.main:copy(y, x)
      local back = y:read()
      H.check_iota(back, 7)
      local s = dev:stream{name = "after"}
      s:join(dev.main)
      s:fill(y, 3)
      local out = gpu.host("f32", n)
      s:copy(out, y)
      s:sync()
      H.check_all(out, 3)
      s:close()
      x:free()
      y:free()
    end
  end)
end)
