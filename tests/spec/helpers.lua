-- Shared helpers of the gpulua spec suite (not a spec file itself: the
-- .busted pattern only runs files whose name contains "_spec").
local gpu = require "gpulua"
-- a module required from a spec runs in the real globals, not in busted's
-- spec environment: take busted's assert and pending from its API
local busted = require "busted"
local assert, pending = busted.assert, busted.pending

local H = {}

H.sizes = {
  i8 = 1, u8 = 1, i16 = 2, u16 = 2, i32 = 4, u32 = 4,
  i64 = 8, u64 = 8, f16 = 2, bf16 = 2, f32 = 4, f64 = 8,
}

H.dtypes = {"i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f16", "bf16", "f32", "f64"}

-- Call fn(...) expecting an error whose message matches the Lua pattern;
-- returns the message.
function H.fails(pattern, fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok, "expected an error matching '" .. pattern .. "', but the call succeeded")
  err = tostring(err)
  assert.matches(pattern, err)
  return err
end

-- Call fn(...) expecting an error, whatever its message; returns the message
-- (tostring of the error value) and the error value itself.
function H.refused(fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok, "expected an error, but the call succeeded")
  return tostring(err), err
end

-- Escape a plain string for use inside a Lua pattern.
function H.lit(s)
  return (s:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0"))
end

-- A host buffer of n elements holding start, start + 1, ... (start defaults to 1).
function H.iota(dtype, n, start, opts)
  start = start or 1
  local h = gpu.host(dtype, n, opts)
  for i = 1, n do h[i] = start + i - 1 end
  return h
end

-- Assert that host buffer h holds start, start + 1, ...; reports the first mismatch.
function H.check_iota(h, start)
  start = start or 1
  for i = 1, #h do
    local want = start + i - 1
    if h[i] ~= want then
      assert.are.equal(want, h[i], ("element %d of %d"):format(i, #h))
    end
  end
end

-- Assert that every element of host buffer h equals v.
function H.check_all(h, v)
  for i = 1, #h do
    if h[i] ~= v then assert.are.equal(v, h[i], ("element %d of %d"):format(i, #h)) end
  end
end

-- Number v rounded to f32 precision (the float a device would store).
function H.f32(v) return (string.unpack("<f", string.pack("<f", v))) end

-- Number v as dtype "f32" or "f64" holds it: rounded to f32 precision for
-- f32, unchanged for f64.
function H.round(dtype, v) return dtype == "f32" and H.f32(v) or v end

-- A fixed pseudo-random sequence (seed picks it) of n values in [lo, hi),
-- by default [-2, 2), rounded to dtype ("f32" or "f64"), as a Lua table.
-- With hi - lo a power of two, every value is exact before the rounding.
function H.values(dtype, n, seed, lo, hi)
  lo, hi = lo or -2, hi or 2
  local s, t = seed, {}
  for i = 1, n do
    s = (s * 1103515245 + 12345) % 2147483648
    t[i] = H.round(dtype, s / 2147483648 * (hi - lo) + lo)
  end
  return t
end

-- A new slice of dtype holding the values of Lua table t, allocated on and
-- copied in by stream `on` (a stream; or a device, for its main stream).
function H.upload(on, dtype, t)
  local s = getmetatable(on).__name == "gpulua.Device" and on.main or on
  local x = s.device:alloc(dtype, #t, {stream = s})
  s:copy(x, gpu.host(dtype, t))
  return x
end

-- Keep stream s busy for a while (on the sim: milliseconds), so that work
-- queued on another stream without ordering would really overtake it.
function H.busy(dev, s, rounds)
  local scratch = dev:alloc("u8", 16 << 20, {stream = s})
  for r = 1, rounds or 4 do s:fill(scratch, r) end
  scratch:free()
end

-- Keep stream s busy for milliseconds on every backend and kernel mode: the
-- fills of H.busy (real work on sim, in every mode, under valgrind too),
-- then the spin kernel over 40 elements a thread (H.SPIN cycles each on a
-- GPU, where fills are quick). The kernel's memory is freed on s.
function H.slow(dev, s)
  H.busy(dev, s, 32)
  local n = 32 * 40
  local x, y = dev:zeros("f32", n, {stream = s}), dev:zeros("f32", n, {stream = s})
  s:launch(H.spin_kernel(dev), {grid = 1, block = 32}, x, y, 1.0, n, H.SPIN)
  x:free()
  y:free()
end

-- Run cycle() once (its first run may make what is kept for good), then
-- 20 times more, and assert that dev's free memory came back to what it
-- was after the first: nothing a cycle makes outlives it.
function H.memory_flat(dev, cycle)
  cycle()
  collectgarbage()
  dev:sync()
  local before = dev:free_memory()
  for _ = 1, 20 do cycle() end
  collectgarbage()
  dev:sync()
  assert.are.equal(before, dev:free_memory())
end

-- it(title, fn) when there are at least n devices; otherwise a pending spec
-- saying why it was skipped.
function H.it_devices(n, title, fn)
  if gpu.count() >= n then
    busted.it(title, fn)
  else
    pending(("%s (needs %d devices: only %d here)"):format(title, n, gpu.count()))
  end
end

-- Whether the suite runs under the gpulua host (which opens the module as the
-- global `gpu`), not lua5.4 with gpulua.so: some specs signal or drive a host.
H.in_host = rawget(_G, "gpu") ~= nil

-- The interpreter running this suite (gpulua or lua), for specs that must run
-- in a process of their own (nil when there is no arg table).
function H.interpreter()
  if type(arg) ~= "table" then return nil end
  local i = -1
  while arg[i - 1] ~= nil do i = i - 1 end
  return arg[i]
end

function H.quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- Run a Lua script in a child process of the same interpreter and backend,
-- with the environment variables of table env added, killed after `secs`
-- seconds (default 120; then the status is 124); returns its output (stdout
-- and stderr) and its exit status.
function H.run_child(script, env, secs)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(script)
  f:close()
  local vars = {}
  for k, v in pairs(env or {}) do vars[#vars + 1] = k .. "=" .. H.quote(tostring(v)) end
  local cmd = ("GPULUA_BACKEND=%s %s timeout %d %s %s 2>&1; echo \"exit status $?\""):format(
    gpu.backend(), table.concat(vars, " "), secs or 120, H.quote(H.interpreter()), H.quote(path))
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  p:close()
  os.remove(path)
  return out, tonumber(out:match("exit status (%d+)%s*$"))
end

-- The bytes of file p, and a file p made to hold the bytes of string s.
function H.read_file(p)
  local f = assert(io.open(p, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

function H.write_file(p, s)
  local f = assert(io.open(p, "wb"))
  f:write(s)
  f:close()
end

-- Temporary files for a describe block: path() names a new one; each is
-- removed after each test (H.temp_paths(after_each): Busted's, which the
-- spec file sees).
function H.temp_paths(after_each)
  local paths = {}
  after_each(function()
    for _, p in ipairs(paths) do os.remove(p) end
    paths = {}
  end)
  return function()
    local p = os.tmpname()
    paths[#paths + 1] = p
    return p
  end
end

-- What a compiled kernel runs on sim (GPULUA_SIM_KERNELS, docs/KERNELS.md):
-- "ptx" (the default: its own code), "host" (its k:host function) or
-- "compare"; nil on cuda.
function H.sim_kernels()
  if gpu.backend() ~= "sim" then return nil end
  local v = os.getenv("GPULUA_SIM_KERNELS")
  return (v == nil or v == "") and "ptx" or v
end

-- Whether launches run their k:host functions: the sim's host mode. Specs of
-- that mode are tagged #simhost, which ctest runs under GPULUA_SIM_KERNELS=host
-- (tests/CMakeLists.txt); run another way, they say so and are pending.
function H.host_kernels() return H.sim_kernels() == "host" end
H.HOST_MODE_ONLY = "the sim's host mode only (GPULUA_SIM_KERNELS=host: k:host functions run; "
                   .. "ctest runs the #simhost specs so)"

-- The line this is called from, to name script locations in messages.
function H.here() return debug.getinfo(2, "l").currentline end

-- A pattern for "<file>:<line>" (the whole line number), file the name of a
-- spec file ("checker_order_spec.lua"), as messages name script locations.
function H.at(file, line) return H.lit(file) .. ":" .. line .. "%f[^%d]" end

-- The ordering checker's name for a slice: "slice i32[4096] on device 0"
-- (ordinal defaults to 0).
function H.slice_desc(dtype, n, ordinal)
  return ("slice %s[%d] on device %d"):format(dtype, n, ordinal or 0)
end

-- Assert a strict ordering error, both accesses made in spec file `file` (as
-- H.at takes it). c: op (e.g. "s:copy src"), what (the slice or buffer
-- description), rw ("read" or "written"), s and s_at (the refused access:
-- stream name and line), t and t_at (the earlier access), prev ("writing" or
-- "reading"), sdev and tdev (device ordinals, default 0).
function H.assert_conflict(err, file, c)
  local sdev, tdev = c.sdev or 0, c.tdev or 0
  local function stream(name, d) -- streams of two devices: "stream 'main' of device 1"
    if sdev ~= tdev then return "stream '" .. name .. "' of device " .. d end
    return "stream '" .. name .. "' (device " .. d .. ")"
  end
  local parts = {
    H.lit(c.op .. ": " .. c.what .. " is " .. c.rw),
    H.lit(stream(c.s, sdev)),
    "at [^%s,]*" .. H.at(file, c.s_at),
    H.lit(stream(c.t, tdev)),
    H.lit("may still be " .. c.prev .. " it"),
    "queued at [^%s)]*" .. H.at(file, c.t_at),
  }
  assert.matches(table.concat(parts, ".-"), err)
end

-- The hooks of the ordering checker's specs, registered in the describe that
-- calls this: each spec runs under policy "strict" with nothing pending, and
-- leaves the policy in force before and nothing queued behind it.
function H.checker_hooks()
  local saved
  busted.before_each(function()
    saved = gpu.policy("strict")
    -- nothing pending from earlier specs: a finalizer that waits for old
    -- copies then has nothing to wait for (see "garbage collection" in
    -- checker_order_spec.lua)
    gpu.sync()
  end)
  busted.after_each(function()
    gpu.policy(saved)
    -- leave nothing behind for later specs: closes and frees done by the
    -- collector queue work on the main streams, so collect, then drain
    gpu.sync()
    collectgarbage()
    collectgarbage()
    gpu.sync()
  end)
end

-- A compiled kernel that reads x (const), writes y = a * x, and takes its
-- time on a GPU (`spin` clock cycles per element); on sim its host
-- implementation does the same computation.
local SPIN_SOURCE = [[
extern "C" __global__ void ck_spin_scale(const float *x, float *y, float a, unsigned long long n,
                                         unsigned long long spin) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    long long t0 = clock64();
    while ((unsigned long long)(clock64() - t0) < spin) {
    }
    y[i] = a * x[i];
  }
}
]]
local spin_kernels = {}

-- The kernel ck_spin_scale(const f32* x, f32* y, f32 a, u64 n, u64 spin) of
-- device dev (compiled once a device): y = a * x, spin clock cycles an element.
function H.spin_kernel(dev)
  local k = spin_kernels[dev.ordinal]
  if not k then
    local m = gpu.compile(SPIN_SOURCE, {name = "ck_spin_scale.cu", device = dev})
    k = m:kernel("ck_spin_scale", "const f32*, f32*, f32, u64, u64")
    k:host(function(_, x, y, a, n)
      for i = 1, n do y[i] = a * x[i] end
    end)
    spin_kernels[dev.ordinal] = k
  end
  return k
end

H.SPIN = 250000 -- clock cycles per element: about half a millisecond per launch on a GPU

-- The kernel twice, y[i] = 2 * x[i] like tests/data/twice.cu: its CUDA
-- source, its signature and its host implementation (for k:host).
H.TWICE_SRC = [[
extern "C" __global__ void twice(const float *x, float *y, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
]]
H.TWICE_SIG = "const f32*, f32*, u64"
function H.twice_host(_, x, y, n)
  for i = 1, n do y[i] = 2 * x[i] end
end

-- A launch configuration covering n elements, in blocks of 128 threads.
function H.cfg_for(n) return {grid = (n + 127) // 128, block = 128} end

-- Assert that host buffer h holds f(t[i]) for every i of Lua table t.
function H.check_map(h, t, f)
  assert.are.equal(#t, #h)
  for i = 1, #t do
    local want = f(t[i])
    if h[i] ~= want then assert.are.equal(want, h[i], ("element %d of %d"):format(i, #t)) end
  end
end

return H
