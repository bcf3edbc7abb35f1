-- bench/workloads/sim_builtins.lua: on sim, every built-in kernel of every dtype through
-- the PTX interpreter (GPULUA_SIM_BUILTINS=ptx) beside its C implementation (c, the
-- default), in the same run: child processes of each setting in turn, ROUNDS of each
-- (alternating, so that the machine's load falls on both alike). Each child times each
-- kernel at n elements, grid "auto", block 256: the median of 3 launches (each waited
-- for, by the host's clock) after a warm-up. Prints each kernel's ratio ptx / c (the
-- median of the rounds' ratios, with their least and greatest), then the worst and
-- the geometric mean; "RESULT name value unit" lines for bench/analysis.
--
--   gpulua bench/workloads/sim_builtins.lua [log2 n] [rounds] [racecheck]
--
-- log2 n defaults to 18, rounds to 3; racecheck "off" runs the ptx side with
-- GPULUA_SIM_RACECHECK=off (the default is the interpreter's default, on).
local gpu = require "gpulua"

local CHILD = os.getenv("SIM_BUILTINS_CHILD")
local log2n = tonumber(arg and arg[1]) or 18
local n = 1 << log2n
local DTYPES = {"i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f16", "bf16", "f32", "f64"}
local ORDER = {"fill", "copy", "scale", "axpy", "add", "mul", "sum", "dot", "min", "max"}

local function median(t)
  local s = {table.unpack(t)}
  table.sort(s)
  local m = #s
  return m % 2 == 1 and s[(m + 1) // 2] or 0.5 * (s[m // 2] + s[m // 2 + 1])
end

if CHILD then -- one setting's times: "T kernel dtype ms" per kernel
  local K = gpu.kernels
  local dev = gpu.device(0)
  local s = dev.main
  local auto = gpu.config{block = 256}
  for _, dt in ipairs(DTYPES) do
    local x, y, z = dev:alloc(dt, n), dev:alloc(dt, n), dev:alloc(dt, n)
    local out = dev:alloc(dt, 1)
    s:launch(K.fill, auto, x, 1, n)
    s:launch(K.fill, auto, y, 2, n)
    local a = 3
    local runs = {
      fill = function() s:launch(K.fill, auto, z, 3, n) end,
      copy = function() s:launch(K.copy, auto, x, 1, z, 1, n) end,
      scale = function() s:launch(K.scale, auto, a, x, z, n) end,
      axpy = function() s:launch(K.axpy, auto, a, x, y, n) end,
      add = function() s:launch(K.add, auto, x, y, z, n) end,
      mul = function() s:launch(K.mul, auto, x, y, z, n) end,
      sum = function() s:launch(K.sum, auto, x, out, n) end,
      dot = function() s:launch(K.dot, auto, x, y, out, n) end,
      min = function() s:launch(K.min, auto, x, out, n) end,
      max = function() s:launch(K.max, auto, x, out, n) end,
    }
    for _, k in ipairs(ORDER) do
      runs[k]()
      s:sync()
      local t = {}
      for r = 1, 3 do
        local t0 = gpu.clock()
        runs[k]()
        s:sync()
        t[r] = (gpu.clock() - t0) * 1e3
      end
      print(("T %s %s %.6f"):format(k, dt, median(t)))
    end
    x:free()
    y:free()
    z:free()
    out:free()
  end
  return
end

assert(gpu.backend() == "sim", "sim_builtins.lua compares the sim's two ways of running the built-ins: run it on sim")
local rounds = tonumber(arg and arg[2]) or 3
local racecheck = arg and arg[3] or "on"

local function interpreter()
  local i = -1
  while arg[i - 1] ~= nil do i = i - 1 end
  return arg[i]
end
local script = debug.getinfo(1, "S").source:match("^@(.*)$")

-- one child's times, {["kernel dtype"] = ms}
local function child(mode)
  local cmd = ("GPULUA_BACKEND=sim SIM_BUILTINS_CHILD=1 GPULUA_SIM_BUILTINS=%s GPULUA_SIM_RACECHECK=%s '%s' '%s' %d"
               .. " 2>&1")
    :format(mode, racecheck, interpreter(), script, log2n)
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  local ok = p:close()
  assert(ok, mode .. ": the child failed:\n" .. out)
  local t = {}
  for k, dt, ms in out:gmatch("T (%S+) (%S+) (%S+)") do t[k .. " " .. dt] = tonumber(ms) end
  return t
end

local ratios, c_ms, ptx_ms = {}, {}, {}
for _ = 1, rounds do
  local c, p = child("c"), child("ptx")
  for key, ms in pairs(c) do
    ratios[key] = ratios[key] or {}
    c_ms[key], ptx_ms[key] = c_ms[key] or {}, ptx_ms[key] or {}
    table.insert(ratios[key], p[key] / ms)
    table.insert(c_ms[key], ms)
    table.insert(ptx_ms[key], p[key])
  end
end

print(("built-ins on sim, n = 2^%d, grid auto, block 256, %d rounds, racecheck %s: ptx / c"):format(
  log2n, rounds, racecheck))
print(("%-6s %-5s %10s %10s %8s %17s"):format("kernel", "dtype", "c ms", "ptx ms", "ratio", "rounds' range"))
local worst, worst_key, logsum, count, over, results = 0, nil, 0, 0, 0, {}
for _, dt in ipairs(DTYPES) do
  for _, k in ipairs(ORDER) do
    local key = k .. " " .. dt
    local r = ratios[key]
    local m = median(r)
    print(("%-6s %-5s %10.3f %10.3f %8.1f %8.1f..%-8.1f"):format(k, dt, median(c_ms[key]), median(ptx_ms[key]), m,
      math.min(table.unpack(r)), math.max(table.unpack(r))))
    results[#results + 1] = ("RESULT sim_builtin_ratio_%s_%s %.4f x"):format(k, dt, m)
    if m > worst then worst, worst_key = m, key end
    logsum, count = logsum + math.log(m), count + 1
    if m > 20 then over = over + 1 end
  end
end
local per_round = {} -- each round's geometric mean over every kernel
for r = 1, rounds do
  local sum = 0
  for key in pairs(ratios) do sum = sum + math.log(ratios[key][r]) end
  per_round[r] = ("%.1f"):format(math.exp(sum / count))
end
print(("worst: %s at %.1fx; geometric mean %.1fx (each round's: %s); %d of %d over 20x"):format(worst_key, worst,
  math.exp(logsum / count), table.concat(per_round, ", "), over, count))
print(table.concat(results, "\n"))
print(("RESULT sim_builtin_ratio_worst %.4f x"):format(worst))
print(("RESULT sim_builtin_ratio_geomean %.4f x"):format(math.exp(logsum / count)))
