-- examples/pipeline_graph.lua: the main pipeline (examples/pipeline.lua) as
-- one CUDA graph. pipeline.graph captures every chunk's copy in, two kernels
-- and copy out, each chunk on a branch of its own stream, and the graph is
-- replayed; it is checked against the CPU and timed against pipeline.run.
--
--   gpulua examples/pipeline_graph.lua [chunk_elems] [chunks] [streams] [replays]
local gpu = require "gpulua"
local pipeline = require "gpulua.pipeline"

local on_gpu = gpu.backend() == "cuda"
local chunk = tonumber(arg and arg[1]) or (on_gpu and (1 << 14) or (1 << 12))
local chunks = tonumber(arg and arg[2]) or (on_gpu and 256 or 32)
local nstreams = tonumber(arg and arg[3]) or 4
local replays = tonumber(arg and arg[4]) or 10
local dev = gpu.device(0)
local n = chunk * chunks

local input = gpu.host("f32", n)
for i = 1, n do input[i] = (i % 1000) * 0.5 end
local output = gpu.host("f32", n)
local cfg = gpu.config{grid = math.min((chunk + 255) // 256, dev.sms * 8), block = 256}

local opts = {
  device = dev,
  streams = nstreams,
  batches = chunks,
  setup = pipeline.buffers{a = {"f32", chunk}, b = {"f32", chunk}},
  stage = function(c, s, buf)
    local off = (c - 1) * chunk
    s:copy(buf.a, input:view(off, chunk))                            -- copy in
    s:launch(gpu.kernels.scale, cfg, 2.0, buf.a, buf.b, chunk)        -- b = 2 a
    s:launch(gpu.kernels.axpy, cfg, 1.0, buf.a, buf.b, chunk)         -- b = a + b
    s:copy(output:view(off, chunk), buf.b)                           -- copy out
  end,
}

pipeline.run(opts) -- warm-up: compiles the built-ins, fills the memory pool
dev:sync()
local t0 = gpu.clock()
for _ = 1, replays do pipeline.run(opts) end
dev:sync()
local run_ms = (gpu.clock() - t0) * 1e3 / replays

local g = pipeline.graph(opts)
dev.main:sync()
g:launch(dev.main)
dev.main:sync()
t0 = gpu.clock()
for _ = 1, replays do g:launch(dev.main) end
dev.main:sync()
local graph_ms = (gpu.clock() - t0) * 1e3 / replays

local bad = 0
for i = 1, n do
  if output[i] ~= 3 * input[i] then bad = bad + 1 end
end
print(string.format("backend %s: %d chunks of %d f32 on %d streams, graph '%s' of %d nodes", gpu.backend(), chunks,
  chunk, nstreams, g.name, g.nodes))
print(string.format("pipeline.run:   %8.3f ms per run (queue + wait)", run_ms))
print(string.format("pipeline.graph: %8.3f ms per replay, speed-up %.2fx", graph_ms, run_ms / graph_ms))
if not on_gpu then
  local model = gpu.sim_model()
  print(model and ("(sim backend: times predicted by the timing model of " .. model .. ", not measured on a GPU)")
    or "(sim backend: these are host timings of the software device, not GPU timings)")
end
g:close()
if bad > 0 then error(string.format("pipeline result is wrong: %d of %d elements differ", bad, n)) end
print("result verified: " .. n .. " elements match")
