-- gpulua.pipeline: multi-stream batch pipelines.
--
--   local pipeline = require "gpulua.pipeline"
--   local stats = pipeline.run{
--     device = dev,            -- a device (default gpu.device(0))
--     streams = 4,             -- a count (streams are created and closed by run) or a list of streams
--     batches = n,             -- number of batches
--     setup = function(s, i) return {...} end,  -- optional: per-stream state, the `ctx` of its batches
--     stage = function(b, s, ctx) end,         -- queue batch b's work on stream s
--   }
--
-- Batch b (1-based) runs on streams[(b - 1) % #streams + 1]. When run returns,
-- every stream has been joined into dev.main. stats = {batches = n, gpu_ms = ...,
-- streams = {{name = ..., batches = k}, ...}}; gpu_ms is measured with timing
-- events on dev.main around the whole run and waits for the work to finish.
local gpu = require "gpulua"

local pipeline = {}

local function check_opts(opts)
  if type(opts) ~= "table" then
    error("pipeline.run: expected a table of options, got " .. type(opts), 3)
  end
  if type(opts.stage) ~= "function" then
    error("pipeline.run: option 'stage' expected a function, got " .. type(opts.stage), 3)
  end
  local b = opts.batches
  if math.type(b) ~= "integer" or b < 0 then
    error("pipeline.run: option 'batches' expected a non-negative integer, got " .. tostring(b), 3)
  end
  if opts.setup ~= nil and type(opts.setup) ~= "function" then
    error("pipeline.run: option 'setup' expected a function, got " .. type(opts.setup), 3)
  end
end

function pipeline.run(opts)
  check_opts(opts)
  local dev = opts.device or gpu.device(0)
  local streams, owned = {}, false
  local want = opts.streams or 1
  if type(want) == "table" then
    if #want < 1 then error("pipeline.run: option 'streams' is an empty list", 2) end
    for i, s in ipairs(want) do streams[i] = s end
  elseif math.type(want) == "integer" and want >= 1 then
    owned = true
    for i = 1, want do streams[i] = dev:stream{name = "pipeline" .. i} end
  else
    error("pipeline.run: option 'streams' expected a positive integer or a list of streams, got "
      .. tostring(want), 2)
  end

  local ctx, counts = {}, {}
  for i, s in ipairs(streams) do
    ctx[i] = opts.setup and opts.setup(s, i) or {}
    counts[i] = 0
  end

  local start = dev.main:record{timing = true}
  for _, s in ipairs(streams) do s:wait(start) end
  for b = 1, opts.batches do
    local k = (b - 1) % #streams + 1
    opts.stage(b, streams[k], ctx[k])
    counts[k] = counts[k] + 1
  end
  for _, s in ipairs(streams) do dev.main:join(s) end
  local stop = dev.main:record{timing = true}

  local stats = {batches = opts.batches, streams = {}}
  for i, s in ipairs(streams) do
    stats.streams[i] = {name = s.name, batches = counts[i]}
  end
  if owned then
    for _, s in ipairs(streams) do s:close() end
  end
  stats.gpu_ms = start:elapsed(stop)
  return stats
end

return pipeline
