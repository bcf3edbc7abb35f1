-- bench/workloads/model_accuracy.lua: the pipeline of examples/pipeline.lua (copy in,
-- scale, axpy, copy out per chunk) at 1, 2, 4 and 8 streams and at three
-- chunk sizes (64 KiB, 1 MiB, 16 MiB), 12 configurations. Prints each one's
-- pipeline.run gpu_ms, the median of `reps` runs after a warm-up, as
-- "RESULT acc_<chunk>_s<streams> <ms> ms (spread <lo>-<hi>)".
--
-- Run it on the GPU (--backend=cuda) and on sim with a timing model
-- (GPULUA_SIM_MODEL=models/h200.json): bench/analysis/model_compare.py sets the
-- predictions beside the measurements (docs/BENCHMARKS.md, "Sim timing model").
--   gpulua bench/workloads/model_accuracy.lua [reps] [only_chunk_KiB]
local gpu = require "gpulua"
local pipeline = require "gpulua.pipeline"

local reps = tonumber(arg and arg[1]) or 3
local only = tonumber(arg and arg[2])
local dev = gpu.device(0)

-- chunk size in bytes, and the chunks each run moves (about 128 MiB or more each way)
local sizes = {{64 << 10, 2048}, {1 << 20, 128}, {16 << 20, 16}}
local most = 0
for _, sz in ipairs(sizes) do most = math.max(most, sz[1] * sz[2]) end
local input = gpu.host("f32", most // 4)
for i = 1, #input, 97 do input[i] = (i % 1000) * 0.5 end
local output = gpu.host("f32", most // 4)

local function median(t)
  local c = {}
  for i, v in ipairs(t) do c[i] = v end
  table.sort(c)
  return #c % 2 == 1 and c[(#c + 1) // 2] or 0.5 * (c[#c // 2] + c[#c // 2 + 1])
end

local function run(chunk_bytes, chunks, streams)
  local chunk = chunk_bytes // 4
  local cfg = gpu.config{grid = math.min((chunk + 255) // 256, dev.sms * 8), block = 256}
  return pipeline.run{
    device = dev, streams = streams, batches = chunks,
    setup = function(s)
      return {a = dev:alloc("f32", chunk, {stream = s}), b = dev:alloc("f32", chunk, {stream = s})}
    end,
    stage = function(c, s, buf)
      local off = (c - 1) * chunk
      s:copy(buf.a, input:view(off, chunk))
      s:launch(gpu.kernels.scale, cfg, 2.0, buf.a, buf.b, chunk)
      s:launch(gpu.kernels.axpy, cfg, 1.0, buf.a, buf.b, chunk)
      s:copy(output:view(off, chunk), buf.b)
    end,
  }.gpu_ms
end

print(("model accuracy: backend %s, device %s, %d runs per configuration"):format(gpu.backend(), dev.name, reps))
for _, sz in ipairs(sizes) do
  local bytes, chunks = sz[1], sz[2]
  if not only or only == bytes >> 10 then
    local label = bytes >= (1 << 20) and ("%dMiB"):format(bytes >> 20) or ("%dKiB"):format(bytes >> 10)
    for _, streams in ipairs{1, 2, 4, 8} do
      run(bytes, chunks, streams) -- warm-up: the built-ins, the memory pool
      local t = {}
      for r = 1, reps do t[r] = run(bytes, chunks, streams) end
      table.sort(t)
      print(("RESULT acc_%s_s%d %.4f ms (spread %.4f-%.4f)"):format(label, streams, median(t), t[1], t[#t]))
    end
  end
end
dev:sync()
