-- examples/graph.lua: a CUDA graph. One step of 64 small kernels is captured
-- once and replayed; the result is checked against the same steps queued
-- one kernel at a time, and the two are timed.
--
--   gpulua examples/graph.lua [steps] [elements]
local gpu = require "gpulua"

local on_gpu = gpu.backend() == "cuda"
local steps = tonumber(arg and arg[1]) or (on_gpu and 200 or 20)
local n = tonumber(arg and arg[2]) or 1 << 16
local dev = gpu.device(0)
local s = dev:stream{name = "work"}
local cfg = gpu.config{grid = math.min((n + 255) // 256, dev.sms * 4), block = 256}
local k = gpu.kernels
local KERNELS = 64

local start = gpu.host("f32", n)
for i = 1, n do start[i] = (i % 97) * 0.25 end

-- one step: 32 pairs of b = a + 0.5 b and a = 0.999 b
local function step(st, a, b)
  for _ = 1, KERNELS // 2 do
    st:launch(k.axpy, cfg, 1.0, a, b, n)     -- b = a + b
    st:launch(k.scale, cfg, 0.5, b, a, n)    -- a = b / 2
  end
end

local function fresh()
  local a, b = dev:alloc("f32", n, {stream = s}), dev:zeros("f32", n, {stream = s})
  s:copy(a, start)
  return a, b
end

-- eager: every kernel launched from Lua
local a1, b1 = fresh()
step(s, a1, b1) -- warm-up (compiles the built-ins)
s:sync()
local t0 = gpu.clock()
for _ = 1, steps do step(s, a1, b1) end
s:sync()
local eager_ms = (gpu.clock() - t0) * 1e3

-- the same steps as replays of one graph
local a2, b2 = fresh()
local c0 = gpu.clock()
local g = s:capture(function(cs) step(cs, a2, b2) end, {name = "step"})
local capture_ms = (gpu.clock() - c0) * 1e3
g:launch(s) -- as the warm-up above
s:sync()
t0 = gpu.clock()
for _ = 1, steps do g:launch(s) end
s:sync()
local graph_ms = (gpu.clock() - t0) * 1e3

local r1, r2 = a1:read{stream = s}, a2:read{stream = s}
local bad = 0
for i = 1, n do
  if r1[i] ~= r2[i] then bad = bad + 1 end
end
print(string.format("backend %s: %d steps of %d kernels on %d f32 (graph '%s', %d nodes, captured in %.2f ms)",
  gpu.backend(), steps, KERNELS, n, g.name, g.nodes, capture_ms))
print(string.format("eager: %8.2f ms  %6.2f us per kernel", eager_ms, eager_ms * 1e3 / (steps * KERNELS)))
print(string.format("graph: %8.2f ms  %6.2f us per kernel, speed-up %.2fx", graph_ms,
  graph_ms * 1e3 / (steps * KERNELS), eager_ms / graph_ms))
if not on_gpu then
  local model = gpu.sim_model()
  print(model and ("(sim backend: times predicted by the timing model of " .. model .. ", not measured on a GPU)")
    or "(sim backend: these are host timings of the software device, not GPU timings)")
end
g:close()
if bad > 0 then error(string.format("graph result differs from eager: %d of %d elements", bad, n)) end
print("result verified: the replays match eager execution (" .. n .. " elements)")
