-- bench/workloads/pipeline_bench.lua: the pipeline of examples/pipeline.lua (copy in,
-- scale, axpy, copy out per chunk) with 1 and 4 streams, against the ideal
-- overlap: the slowest stage's total plus one chunk of the other stages,
-- max(T) + (sum(T) - max(T)) / chunks, with each stage's total T measured alone.
-- Prints "RESULT name value unit". Same sizes as bench/baselines/cupy_bench.py.
local gpu = require "gpulua"
local pipeline = require "gpulua.pipeline"

local on_gpu = gpu.backend() == "cuda"
local chunk, chunks, REPS = on_gpu and (1 << 22) or (1 << 14), 32, 5
local dev = gpu.device(0)
local n = chunk * chunks
local input = gpu.host("f32", n)
for i = 1, n do input[i] = (i % 1000) * 0.5 end
local output = gpu.host("f32", n)
local cfg = {grid = math.min((chunk + 255) // 256, dev.sms * 8), block = 256}

local function median(t)
  table.sort(t)
  return #t % 2 == 1 and t[(#t + 1) // 2] or 0.5 * (t[#t // 2] + t[#t // 2 + 1])
end

-- pipeline.run's (or pipeline.graph's) options for `batches` chunks of
-- `size` elements on `streams` streams, doing the given stages
local function options(streams, stages, size, batches)
  local kcfg = size == chunk and cfg or {grid = math.min((size + 255) // 256, dev.sms * 8), block = 256}
  return {
    device = dev, streams = streams, batches = batches or chunks,
    setup = function(s)
      return {a = dev:alloc("f32", size, {stream = s}), b = dev:alloc("f32", size, {stream = s})}
    end,
    stage = function(c, s, buf)
      local off = (c - 1) * size
      if stages.copy_in then s:copy(buf.a, input:view(off, size)) end
      if stages.compute then
        s:launch(gpu.kernels.scale, kcfg, 2.0, buf.a, buf.b, size)
        s:launch(gpu.kernels.axpy, kcfg, 1.0, buf.a, buf.b, size)
      end
      if stages.copy_out then s:copy(output:view(off, size), buf.b) end
    end,
  }
end

local function run(streams, stages)
  return pipeline.run(options(streams, stages, chunk)).gpu_ms
end

local all = {copy_in = true, compute = true, copy_out = true}
local function timed(streams, stages)
  run(streams, stages)
  local t = {}
  for r = 1, REPS do t[r] = run(streams, stages) end
  return median(t)
end

local t_in = timed(1, {copy_in = true})
local t_comp = timed(1, {compute = true})
local t_out = timed(1, {copy_out = true})
local one = timed(1, all)
local four = timed(4, all)
local eight = timed(8, all) -- for reference: does more overlap than 4 streams give reach the limit?
dev:sync()
for i = 1, n, 4099 do assert(output[i] == 3 * input[i], "pipeline result is wrong") end
local mx = math.max(t_in, t_comp, t_out)
local ideal = mx + (t_in + t_comp + t_out - mx) / chunks
-- the physical limit: the slowest of copy-in, copy-out, both together over
-- the host link's bidirectional aggregate (raw.c measures it; passed as
-- arg[1] in GB/s), and compute; plus one batch's fill and drain
-- (arg[2], when given: the aggregate of the pipeline's own 16 MiB copies back
-- to back both ways at once, bench/baselines/layouts.c: the limit at this copy size)
local function limit(agg)
  local both_ms = 2 * n * 4 / (agg * 1e9) * 1e3
  return math.max(mx, both_ms) + (t_in + t_comp + t_out - mx) / chunks
end
local agg, agg16 = tonumber(arg and arg[1]), tonumber(arg and arg[2])
if agg then print(string.format("RESULT pipeline_link_limit %.4f ms", limit(agg))) end
if agg16 then print(string.format("RESULT pipeline_link_limit_16MiB %.4f ms", limit(agg16))) end
print(string.format("RESULT pipeline_copy_in %.4f ms", t_in))
print(string.format("RESULT pipeline_compute %.4f ms", t_comp))
print(string.format("RESULT pipeline_copy_out %.4f ms", t_out))
print(string.format("RESULT pipeline_1stream %.4f ms", one))
print(string.format("RESULT pipeline_4stream %.4f ms", four))
print(string.format("RESULT pipeline_8stream %.4f ms", eight))
print(string.format("RESULT pipeline_ideal %.4f ms", ideal))

-- the same 4-stream pipeline as one graph (pipeline.graph), against
-- pipeline.run: device time (timing events around the work) and wall time
-- (queueing it and waiting for it), at the default size and at 256 batches
-- of 64 KiB, where queueing each operation from Lua costs more than running it
local function graph_vs_run(label, size, batches)
  local all_stages = {copy_in = true, compute = true, copy_out = true}
  local g = pipeline.graph(options(4, all_stages, size, batches))
  local main = dev.main
  local tg, wg, tr, wr = {}, {}, {}, {}
  for r = 0, REPS do
    main:sync()
    local w0 = gpu.clock()
    local e0 = main:record{timing = true}
    g:launch(main)
    local e1 = main:record{timing = true}
    main:sync()
    if r > 0 then tg[r], wg[r] = e0:elapsed(e1), (gpu.clock() - w0) * 1e3 end
    w0 = gpu.clock()
    local stats = pipeline.run(options(4, all_stages, size, batches))
    dev:sync()
    if r > 0 then tr[r], wr[r] = stats.gpu_ms, (gpu.clock() - w0) * 1e3 end
  end
  for i = 1, size * batches, 4099 do assert(output[i] == 3 * input[i], "pipeline result is wrong") end
  g:close()
  print(string.format("RESULT pipeline_graph_%s %.4f ms", label, median(tg)))
  print(string.format("RESULT pipeline_run_%s %.4f ms", label, median(tr)))
  print(string.format("RESULT pipeline_graph_%s_wall %.4f ms", label, median(wg)))
  print(string.format("RESULT pipeline_run_%s_wall %.4f ms", label, median(wr)))
end
graph_vs_run("default", chunk, chunks)
local small = math.min(256, n // 16384) -- 256 on the GPU; fewer on sim, whose buffers are smaller
graph_vs_run(small .. "x64KiB", 16384, small)
