-- examples/allreduce.lua: data parallel over every device. The batches of
-- one input are spread over the devices with pipeline.run{devices = ...};
-- each device adds its batches into a partial sum of its own (one stream per
-- device, so the partial sum is only ever written in one stream's order);
-- then comm:all_reduce sums the partials across the devices, in place, and
-- every device holds the total, checked against the CPU. Runs on one device
-- too (a communicator of one rank). On sim, GPULUA_SIM_DEVICES sets the count.
--
--   gpulua examples/allreduce.lua
local gpu = require "gpulua"
local pipeline = require "gpulua.pipeline"

local width, batches = 1 << 14, 12
local devs = {}
for i = 0, gpu.count() - 1 do devs[#devs + 1] = gpu.device(i) end

-- the input: `batches` rows of `width` values
local input = gpu.host("f64", width * batches)
for i = 1, #input do input[i] = (i * 7) % 101 - 50 end

-- per device: a partial sum of the rows it was given, and a staging buffer
local partial = {}
local stats = pipeline.run{
  devices = devs, streams = 1, batches = batches,
  setup = function(s)
    local ctx = {row = s.device:alloc("f64", width, {stream = s}), sum = s.device:zeros("f64", width, {stream = s})}
    partial[s.device.ordinal + 1] = ctx.sum
    return ctx
  end,
  stage = function(b, s, ctx)
    s:copy(ctx.row, input:view((b - 1) * width, width))
    s:launch(gpu.kernels.axpy, {grid = 32, block = 256}, 1.0, ctx.row, ctx.sum, width) -- sum += row
  end,
}

-- every device's partial sums the same way: all_reduce in place, on each device's main
-- stream (pipeline.run joined its streams there)
local comm = gpu.comm{devices = devs}
comm:all_reduce(partial, {op = "sum"})

local want = {}
for j = 1, width do
  local v = 0
  for b = 0, batches - 1 do v = v + input[b * width + j] end
  want[j] = v
end
for r, d in ipairs(devs) do
  local got = partial[r]:read{stream = d.main}
  for j = 1, width, 97 do
    assert(got[j] == want[j], ("device %d element %d: %g, want %g"):format(d.ordinal, j, got[j], want[j]))
  end
end
comm:close()
for _, st in ipairs(stats.streams) do print(("device %d: %d batches"):format(st.device, st.batches)) end
print(("all_reduce over %d device%s verified: %d sums match"):format(#devs, #devs == 1 and "" or "s", width))
