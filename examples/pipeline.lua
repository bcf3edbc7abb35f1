-- examples/pipeline.lua: a multi-stream batch pipeline.
--
-- A large host array is cut into chunks; each chunk is copied in, moved
-- through device memory, and copied out, every chunk on the next stream of a
-- small pool, so copies of different chunks overlap. The result is checked
-- against the input, and the run is timed with 1 stream and with S streams.
--
--   gpulua examples/pipeline.lua [chunk_elems] [chunks] [streams]
--
-- (The compute stage is a device-to-device copy until the kernel library
-- lands; see docs/ROADMAP.md.)
local gpu = require "gpulua"

local chunk = tonumber(arg and arg[1]) or (gpu.backend() == "cuda" and (1 << 22) or (1 << 16))
local chunks = tonumber(arg and arg[2]) or 16
local nstreams = tonumber(arg and arg[3]) or 4
local dev = gpu.device(0)
local n = chunk * chunks

local input = gpu.host("f32", n)
for i = 1, n do input[i] = (i % 1000) * 0.5 end
local output = gpu.host("f32", n)

local function run(streams_wanted)
  local streams, bufs = {}, {}
  for i = 1, streams_wanted do
    local s = dev:stream{name = "batch" .. i}
    streams[i] = s
    bufs[i] = {a = dev:alloc("f32", chunk, {stream = s}), b = dev:alloc("f32", chunk, {stream = s})}
  end
  output:fill(0)
  dev:sync()
  local t0 = dev.main:record{timing = true}
  for _, s in ipairs(streams) do s:wait(t0) end
  for c = 1, chunks do
    local k = (c - 1) % #streams + 1
    local s, b = streams[k], bufs[k]
    local off = (c - 1) * chunk
    s:copy(b.a, input:view(off, chunk))   -- copy in
    s:copy(b.b, b.a)                      -- "compute"
    s:copy(output:view(off, chunk), b.b)  -- copy out
  end
  for _, s in ipairs(streams) do dev.main:join(s) end
  local t1 = dev.main:record{timing = true}
  local ms = t0:elapsed(t1)
  for _, s in ipairs(streams) do s:close() end
  return ms
end

local ms1 = run(1)
local msS = run(nstreams)
dev.main:sync()

local bad = 0
for i = 1, n do
  if output[i] ~= input[i] then bad = bad + 1 end
end
local gb = 2 * n * 4 / 1e9
print(string.format("backend %s, device %s: %d chunks of %d f32, %d streams", gpu.backend(), dev.name,
  chunks, chunk, nstreams))
print(string.format("1 stream:  %8.2f ms  %7.2f GB/s (host<->device)", ms1, gb / (ms1 / 1e3)))
print(string.format("%d streams: %8.2f ms  %7.2f GB/s, speed-up %.2fx", nstreams, msS, gb / (msS / 1e3), ms1 / msS))
if bad > 0 then
  error(string.format("pipeline result is wrong: %d of %d elements differ", bad, n))
end
print("result verified: " .. n .. " elements match")
