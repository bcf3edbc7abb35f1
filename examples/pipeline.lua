-- examples/pipeline.lua: the main job, a multi-stream batch pipeline.
--
-- A large host array is cut into chunks. Each chunk is copied in, transformed
-- by two kernels (b = 2 a, then b = a + b, so b = 3 a), and copied out, every
-- chunk on the next stream of a pool, so copies of one chunk overlap the
-- kernels of another. Each stream owns its device buffers (double buffering).
-- The result is checked against the CPU, and the run is timed with 1 stream
-- and with S streams.
--
--   gpulua examples/pipeline.lua [chunk_elems] [chunks] [streams]
local gpu = require "gpulua"
local pipeline = require "gpulua.pipeline"

local on_gpu = gpu.backend() == "cuda"
local chunk = tonumber(arg and arg[1]) or (on_gpu and (1 << 22) or (1 << 14))
local chunks = tonumber(arg and arg[2]) or (on_gpu and 32 or 16)
local nstreams = tonumber(arg and arg[3]) or 4
local dev = gpu.device(0)
local n = chunk * chunks

local input = gpu.host("f32", n)
for i = 1, n do input[i] = (i % 1000) * 0.5 end
local output = gpu.host("f32", n)
local cfg = {grid = math.min((chunk + 255) // 256, dev.sms * 8), block = 256}

local function run(streams)
  return pipeline.run{
    device = dev,
    streams = streams,
    batches = chunks,
    setup = function(s)
      return {a = dev:alloc("f32", chunk, {stream = s}), b = dev:alloc("f32", chunk, {stream = s})}
    end,
    stage = function(c, s, buf)
      local off = (c - 1) * chunk
      s:copy(buf.a, input:view(off, chunk))                            -- copy in
      s:launch(gpu.kernels.scale, cfg, 2.0, buf.a, buf.b, chunk)        -- b = 2 a
      s:launch(gpu.kernels.axpy, cfg, 1.0, buf.a, buf.b, chunk)         -- b = a + b
      s:copy(output:view(off, chunk), buf.b)                           -- copy out
    end,
  }
end

run(nstreams) -- warm-up: compiles the built-ins, fills the memory pool
local one = run(1)
local many = run(nstreams)
dev:sync()

local bad = 0
for i = 1, n do
  if output[i] ~= 3 * input[i] then bad = bad + 1 end
end
local gb = 2 * n * 4 / 1e9
print(string.format("backend %s, device %s: %d chunks of %d f32, %d streams", gpu.backend(), dev.name,
  chunks, chunk, nstreams))
print(string.format("1 stream:  %8.2f ms  %7.2f GB/s (host<->device)", one.gpu_ms, gb / (one.gpu_ms / 1e3)))
print(string.format("%d streams: %8.2f ms  %7.2f GB/s, speed-up %.2fx", nstreams, many.gpu_ms,
  gb / (many.gpu_ms / 1e3), one.gpu_ms / many.gpu_ms))
if not on_gpu then
  local model = gpu.sim_model()
  print(model and ("(sim backend: times predicted by the timing model of " .. model .. ", not measured on a GPU)")
    or "(sim backend: these are host timings of the software device, not GPU timings)")
end
for i, st in ipairs(many.streams) do
  io.write(string.format("%s%s: %d batches", i == 1 and "  " or ", ", st.name, st.batches))
end
print()
if bad > 0 then
  error(string.format("pipeline result is wrong: %d of %d elements differ", bad, n))
end
print("result verified: " .. n .. " elements match")
