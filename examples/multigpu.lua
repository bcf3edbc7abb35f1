-- examples/multigpu.lua: one pipeline per device, and a peer copy between
-- devices. With one device (a single GPU) it runs the pipeline there and says
-- that the peer copy needs two. On sim, GPULUA_SIM_DEVICES sets the count.
--
--   gpulua examples/multigpu.lua
local gpu = require "gpulua"
local pipeline = require "gpulua.pipeline"

local chunk, chunks = 1 << 14, 8
local devs = {}
for i = 0, gpu.count() - 1 do devs[#devs + 1] = i end
local n = chunk * chunks
local input = gpu.host("f32", n)
for i = 1, n do input[i] = i % 251 end
local output = gpu.host("f32", n)

-- batches go to device 0, 1, ..., then to each device's next stream
local stats = pipeline.run{
  devices = devs, streams = 2, batches = chunks,
  setup = pipeline.buffers{a = {"f32", chunk}},
  stage = function(b, s, buf)
    local off = (b - 1) * chunk
    s:copy(buf.a, input:view(off, chunk))
    s:launch(gpu.kernels.scale, {grid = 16, block = 256}, 0.5, buf.a, buf.a, chunk)
    s:copy(output:view(off, chunk), buf.a)
  end,
}
for _, d in ipairs(devs) do gpu.device(d):sync() end
for i = 1, n do assert(output[i] == 0.5 * input[i], "wrong result at " .. i) end
for _, st in ipairs(stats.streams) do
  print(("device %d %-12s %d batches"):format(st.device, st.name, st.batches))
end

if gpu.count() < 2 then
  print("peer copy: skipped, it needs 2 devices (this machine has " .. gpu.count() .. ")")
else
  local d0, d1 = gpu.device(0), gpu.device(1)
  local x0 = d0:alloc("f32", chunk, {stream = d0.main})
  d0.main:copy(x0, input:view(0, chunk))
  local x1 = d1:alloc("f32", chunk, {stream = d1.main})
  d1.main:wait(d0.main:record())          -- order the peer copy after x0's copy
  d1.main:copy(x1, x0)                    -- device 0 -> device 1
  local back = x1:read()
  for i = 1, chunk do assert(back[i] == input[i], "peer copy is wrong at " .. i) end
  print(("peer copy device 0 -> device 1: %d elements verified"):format(chunk))
end
print("multigpu verified")
