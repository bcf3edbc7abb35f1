-- gpulua.pipeline: multi-stream batch pipelines.
--
--   local pipeline = require "gpulua.pipeline"
--   local stats = pipeline.run{
--     device = dev,            -- a device or ordinal (default device 0), or
--     devices = {0, 1},        -- several: batches spread over devices, then over their streams
--     streams = 4,             -- per device: a count (created and closed by run) or a list of streams
--     batches = n,             -- number of batches
--     setup = function(s, i) return {...} end,  -- optional: per-stream state, the `ctx` of its batches
--     stage = function(b, s, ctx) end,         -- queue batch b's work on stream s
--     progress = true,         -- optional: a progress line on stderr when it is a terminal
--   }
--
-- The streams of all devices are interleaved into one list (device 1's first
-- stream, device 2's first stream, ..., device 1's second stream, ...), and
-- batch b (1-based) runs on streams[(b - 1) % #streams + 1]: with one device,
-- exactly the contract's rule. When run returns, every stream has been joined
-- into its device's main stream. stats = {batches = n, wall_ms = ..., gpu_ms
-- = ..., streams = {{name =, device =, batches =, ms =}, ...}}: wall_ms is
-- the host time to queue everything, gpu_ms the device time from the first
-- to the last operation (timing events on each main stream; the largest over
-- the devices; it waits for the work to finish), ms each stream's own span.
--
-- progress = true shows, when stderr is a terminal (nothing otherwise), one
-- line redrawn in place at most every 0.1 s: batches queued and finished,
-- seconds since run began and finished batches a second; the last state
-- stays on its line when run returns (or the line is ended when a stage
-- raises). "Finished" is counted with an event recorded on the batch's
-- stream after each batch (once 64 of a stream's are pending, its newest one
-- is recorded again instead), asked without waiting and without telling the
-- checker (so its verdicts never depend on how far the GPU got); once every
-- batch is queued, run waits for those events in turn, as it would have
-- waited for the work anyway. Nothing else changes: no stream waits for
-- another and no batch waits for the host.
--
-- pipeline.graph{...} takes run's options (one device; `streams` a count;
-- `name` the graph's name; progress = true is refused: nothing runs during
-- a capture) and returns the whole pipeline as one graph
-- (API.md "CUDA graphs"): it is captured on the device's main stream, each of
-- the `streams` becomes a branch forked from it (batch b on branch
-- (b - 1) % streams + 1, as in run) and is joined back at the end. `setup` is
-- called before the capture, with the main stream, since nothing can be
-- allocated inside one. Replay it with g:launch(s) as often as needed.
--
-- Host stages: with load and/or store, run keeps a ring of host_buffers
-- (default: streams + 1) slots, each a pinned input buffer (with load) and a
-- pinned output buffer (with store) of chunk = {dtype, n} elements. Batch b
-- takes slot (b - 1) % host_buffers + 1: run waits until that slot's last
-- batch has finished and been stored, calls load(b, h_in) (the host fills
-- it, while the GPU works on the batches queued before; it may return the
-- elements it filled, 1 to n, for a short chunk: stage and store then get
-- views of that many), then
-- stage(b, s, h_in, h_out, ctx), then queues an s:after point and records
-- the slot's event after it. Once the batch has finished, store(b, h_out)
-- runs (between batches: after a stage is queued, or while run waits for a
-- slot or its end; never inside a stage), in batch order: a batch that
-- finished early waits for the ones before it, so store may write a file in
-- sequence. A buffer is
-- never reused while a copy may still read or write it, or before its store
-- ran; an error in store is raised by run (at its next batch, or at its
-- end) with store's own line, and no later store runs. Before run returns,
-- every batch has been stored.
--
-- pipeline.buffers{a = {"f32", n}, h = {"f32", n, host = true}} makes a
-- `setup` that gives each stream its own device slices (allocated on that
-- stream) and pinned host buffers: double buffering without bookkeeping.
local gpu = require "gpulua"
local internal = require "gpulua.internal"

local pipeline = {}

local here_info = debug.getinfo(1, "S")
local here = here_info.source
local here_at = here_info.short_src .. ":" -- how an error raised at a line of this file begins

-- Raise msg at the line of the script that called pipeline.run or
-- pipeline.graph (the first frame outside this file), as gpulua's own errors are.
local fname = "pipeline.run"
local function fail(msg)
  local level = 2
  while true do
    local info = debug.getinfo(level, "S")
    if not info or info.source ~= here then break end
    level = level + 1
  end
  error(fname .. ": " .. msg, level)
end

-- The results of pcall(f, ...), f a function of this file making gpulua calls
-- for the script: f's results, or its error raised again. An error raised at a
-- line of this file (a gpulua error takes its caller's line) is raised at the
-- script's line instead, with fname before it; any other error (a stage's or
-- setup's, at their own lines) goes on as it is.
local function rethrow(ok, ...)
  if ok then return ... end
  local err = ...
  if type(err) == "string" and err:sub(1, #here_at) == here_at then
    local _, stop = err:find("^%d+: ", #here_at + 1)
    if stop then fail(err:sub(stop + 1)) end
  end
  error(err, 0)
end

local function call(f, ...) return rethrow(pcall(f, ...)) end

-- Is v a gpulua object of the type named `name` ("gpulua.Device")?
local function is_a(v, name)
  local mt = type(v) == "userdata" and getmetatable(v)
  return type(mt) == "table" and mt.__name == name
end

-- What v is, for "got X".
local given = internal.given

local function as_device(d)
  if math.type(d) == "integer" then return call(function() return gpu.device(d) end) end
  if is_a(d, "gpulua.Device") then return d end
  fail("expected a device or a device ordinal, got " .. given(d))
end

local OPTIONS = {"device", "devices", "streams", "batches", "setup", "stage", "progress", "chunk", "host_buffers",
                 "load", "store"}
local GRAPH_OPTIONS = {"device", "devices", "streams", "batches", "setup", "stage", "progress", "name", "chunk",
                       "host_buffers", "load", "store"}

local function check_opts(opts, known_options)
  if type(opts) ~= "table" then fail("expected a table of options, got " .. type(opts)) end
  for k in pairs(opts) do
    local known = false
    for _, name in ipairs(known_options) do known = known or k == name end
    if not known then
      fail(("unknown option '%s' (the options are: %s)"):format(tostring(k), table.concat(known_options, ", ")))
    end
  end
  if type(opts.stage) ~= "function" then fail("option 'stage' expected a function, got " .. type(opts.stage)) end
  local b = opts.batches
  if math.type(b) ~= "integer" or b < 0 then
    fail("option 'batches' expected a non-negative integer, got " .. given(b))
  end
  if opts.setup ~= nil and type(opts.setup) ~= "function" then
    fail("option 'setup' expected a function, got " .. type(opts.setup))
  end
  if opts.device ~= nil and opts.devices ~= nil then fail("give 'device' or 'devices', not both") end
  if opts.progress ~= nil and type(opts.progress) ~= "boolean" then
    fail("option 'progress' expected a boolean, got " .. given(opts.progress))
  end
  for _, name in ipairs{"load", "store"} do
    if opts[name] ~= nil and type(opts[name]) ~= "function" then
      fail(("option '%s' expected a function, got %s"):format(name, given(opts[name])))
    end
  end
  local host = opts.load ~= nil or opts.store ~= nil
  if not host then
    for _, name in ipairs{"chunk", "host_buffers"} do
      if opts[name] ~= nil then fail(("option '%s' needs 'load' or 'store' (the host stages)"):format(name)) end
    end
    return
  end
  local c = opts.chunk
  if type(c) ~= "table" or type(c[1]) ~= "string" or math.type(c[2]) ~= "integer" or c[2] < 1 then
    fail("option 'chunk' expected {dtype, n} (n a positive integer: the elements of a host buffer), got "
         .. (type(c) == "table" and ("{%s, %s}"):format(given(c[1]), given(c[2])) or given(c)))
  end
  local dtypes = internal.dtype_names()
  if not (" " .. dtypes .. " "):find(" " .. c[1] .. " ", 1, true) then
    fail(("option 'chunk': unknown dtype '%s' (expected %s)"):format(c[1], dtypes))
  end
  local k = opts.host_buffers
  if k ~= nil and (math.type(k) ~= "integer" or k < 1) then
    fail("option 'host_buffers' expected a positive integer, got " .. given(k))
  end
end

-- ---- host stages: the ring of pinned buffers ----------------------------

-- The ring: `count` slots of pinned buffers of chunk (h_in with load, h_out
-- with store), each free until a batch takes it.
local function host_ring(opts, count)
  local ring = {slots = {}, failed = nil, next_store = 1}
  local dtype, n = opts.chunk[1], opts.chunk[2]
  call(function()
    for i = 1, count do
      ring.slots[i] = {h_in = opts.load and gpu.host(dtype, n) or nil, h_out = opts.store and gpu.host(dtype, n) or nil}
    end
  end)
  return ring
end

-- Store the finished batches from ring.next_store on, in batch order (a
-- batch that finished early waits for the ones before it).
local function ring_flush(ring, store)
  while true do
    local nb = ring.next_store
    local slot = ring.slots[(nb - 1) % #ring.slots + 1]
    if slot.batch ~= nb or not slot.done then return end
    if store and not ring.failed then
      local ok, err = pcall(store, nb, slot.h_stored)
      if not ok then
        ring.failed = true -- whatever it raised, nil and false too
        ring.err = err or ("store(%d, h_out) raised %s"):format(nb, tostring(err))
      end
    end
    slot.done = false
    ring.next_store = nb + 1
  end
end

-- Batch b's work is queued on s: its slot is done once it has finished
-- (s:after), then the slot's event, which thus follows that callback's point.
-- The callback only marks it: run stores between batches (ring_flush after
-- each stage is queued, and while it waits), never inside a stage's calls,
-- so that a store's write does not hold back the batch being queued.
local function slot_queue(slot, b, s)
  slot.batch, slot.done = b, false
  call(function()
    s:after(function() slot.done = true end)
    slot.event = s:record(slot.event or {})
  end)
end

-- Wait until every batch up to `upto` has been stored: the event of the
-- oldest one not stored, then its callback at the sync's end (gpu.poll, for
-- a run inside a callback, whose safe points run no other callback).
local function wait_stored(ring, upto, store)
  ring_flush(ring, store)
  while ring.next_store <= upto do
    local nb = ring.next_store
    local slot = ring.slots[(nb - 1) % #ring.slots + 1]
    call(function() slot.event:sync() end)
    ring_flush(ring, store)
    if ring.next_store == nb then
      call(gpu.poll)
      ring_flush(ring, store)
    end
    if ring.next_store == nb then
      fail(("batch %d finished, but its store could not run here (a pipeline.run inside an s:after callback?)")
           :format(nb))
    end
  end
end

-- A store failed: its error, with its own line.
local function ring_check(ring)
  if ring.failed then error(ring.err, 0) end
end

-- load(b, h_in)'s result: nothing (the whole chunk) or the elements it
-- filled, 1 to n; then h_in and h_out for the stage and store: the slot's
-- buffers, or views of their first elements for a short chunk.
local function loaded(slot, b, got, n)
  if got == nil or got == n then return slot.h_in, slot.h_out end
  if math.type(got) ~= "integer" or got < 1 or got > n then
    fail(("load(%d, h_in) returned %s: expected the elements it filled, 1 to %d (or nothing: all %d)")
         :format(b, given(got), n, n))
  end
  return slot.h_in:view(0, got), slot.h_out and slot.h_out:view(0, got)
end

-- ---- the progress line -------------------------------------------------

local PENDING = 64   -- events a stream keeps pending; then its newest is recorded again
local REDRAW = 0.1   -- seconds between redraws

local Progress = {}
Progress.__index = Progress

-- A progress line for `total` batches over `nstreams` streams, or nil when
-- stderr is not a terminal.
local function progress_line(total, nstreams)
  if not internal.isatty(2) then return nil end
  local p = setmetatable({total = total, queued = 0, finished = 0, t0 = gpu.clock(), drawn_at = -math.huge,
                          marks = {}, done = {}, spare = {}}, Progress)
  for k = 1, nstreams do
    p.marks[k], p.done[k], p.spare[k] = {first = 1, last = 0}, 0, {}
  end
  return p
end

-- A stage raised: end the line, so that the error starts on its own.
function Progress.__close(p, err)
  if err ~= nil and p.drawn then io.stderr:write("\n") end
end

function Progress:draw(final)
  local now = gpu.clock()
  if not final and now - self.drawn_at < REDRAW then return end
  self.drawn_at = now
  local secs = now - self.t0
  local rate = secs > 0 and ("%.1f batches/s"):format(self.finished / secs) or "-"
  io.stderr:write(("\rpipeline.run: %d/%d batches queued, %d finished, %.1f s, %s\27[K%s"):format(
    self.queued, self.total, self.finished, secs, rate, final and "\n" or ""))
  self.drawn = not final
end

-- Take the finished events of stream k off its list (asked without waiting:
-- internal.peek tells the checker nothing).
function Progress:reap(k)
  local m = self.marks[k]
  while m.first <= m.last and internal.peek(m[m.first].event) do
    local mark = m[m.first]
    self.finished = self.finished + mark.count - self.done[k]
    self.done[k] = mark.count
    self.spare[k][#self.spare[k] + 1] = mark.event
    m[m.first] = nil
    m.first = m.first + 1
  end
end

-- Batch b, stream k's count-th, is queued on s.
function Progress:queued_on(k, s, b, count)
  self.queued = self.queued + 1
  local m = self.marks[k]
  if m.last - m.first + 1 >= PENDING then
    local newest = m[m.last]
    s:record(newest.event)
    newest.count, newest.batch = count, b
  else
    local spare = self.spare[k]
    local e = spare[#spare]
    if e then
      spare[#spare] = nil
      s:record(e)
    else
      e = s:record{}
    end
    m.last = m.last + 1
    m[m.last] = {event = e, count = count, batch = b}
  end
  if gpu.clock() - self.drawn_at >= REDRAW then
    for j in ipairs(self.marks) do self:reap(j) end
    self:draw(false)
  end
end

-- Every batch is queued: wait for the events in the order of their batches,
-- redrawing as they finish, then draw the last line.
function Progress:finish()
  while true do
    local oldest, k
    for j, m in ipairs(self.marks) do
      if m.first <= m.last and (not oldest or m[m.first].batch < oldest) then oldest, k = m[m.first].batch, j end
    end
    if not k then break end
    self.marks[k][self.marks[k].first].event:sync()
    for j in ipairs(self.marks) do self:reap(j) end
    self:draw(false)
  end
  self:draw(true)
end

local function devices_of(opts)
  if opts.devices == nil then return {as_device(opts.device or 0)} end
  if type(opts.devices) ~= "table" or #opts.devices == 0 then
    fail("option 'devices' expected a non-empty list of devices or ordinals")
  end
  local list = {}
  for i, d in ipairs(opts.devices) do list[i] = as_device(d) end
  return list
end

-- per device: the streams to use, and whether run created them
local function streams_of(opts, dev, ndevices)
  local want = opts.streams or 1
  local list = {}
  if type(want) == "table" then
    if ndevices > 1 then fail("a list of streams needs a single device; give a count with 'devices'") end
    if #want < 1 then fail("option 'streams' is an empty list") end
    for i, s in ipairs(want) do
      if not is_a(s, "gpulua.Stream") then
        fail(("option 'streams': entry %d expected a stream, got %s"):format(i, given(s)))
      end
      if s.device ~= dev then fail(("stream '%s' is not on device %d"):format(s.name, dev.ordinal)) end
      list[i] = s
    end
    return list, false
  elseif math.type(want) == "integer" and want >= 1 then
    for i = 1, want do
      list[i] = call(function()
        return dev:stream{name = ndevices > 1 and ("pipeline%d.%d"):format(dev.ordinal, i) or ("pipeline" .. i)}
      end)
    end
    return list, true
  end
  fail("option 'streams' expected a positive integer or a list of streams, got " .. given(want))
end

function pipeline.run(opts)
  fname = "pipeline.run"
  check_opts(opts, OPTIONS)
  local devs = devices_of(opts)
  local per_dev, owned, streams = {}, false, {}
  for d, dev in ipairs(devs) do
    per_dev[d], owned = streams_of(opts, dev, #devs)
  end
  for i = 1, #per_dev[1] do -- interleave: device first, then stream
    for d = 1, #devs do
      if per_dev[d][i] then streams[#streams + 1] = per_dev[d][i] end
    end
  end

  local ctx, counts, firsts = {}, {}, {}
  for i, s in ipairs(streams) do
    ctx[i] = opts.setup and opts.setup(s, i) or {}
    counts[i] = 0
  end

  local ring = (opts.load or opts.store) and host_ring(opts, opts.host_buffers or #streams + 1)
  local bar <close> = opts.progress and progress_line(opts.batches, #streams) or nil
  local t0 = gpu.clock()
  local starts, stops = {}, {}
  call(function()
    for d, dev in ipairs(devs) do
      starts[d] = dev.main:record{timing = true}
      for _, s in ipairs(per_dev[d]) do s:wait(starts[d]) end
    end
  end)
  local function first_mark(s) return s:record{timing = true} end
  for b = 1, opts.batches do
    local k = (b - 1) % #streams + 1
    local s = streams[k]
    firsts[k] = firsts[k] or call(first_mark, s)
    if ring then
      local slot = ring.slots[(b - 1) % #ring.slots + 1]
      wait_stored(ring, b - #ring.slots, opts.store) -- the slot's last batch
      ring_check(ring)
      local h_in, h_out = slot.h_in, slot.h_out
      if opts.load then h_in, h_out = loaded(slot, b, opts.load(b, slot.h_in), opts.chunk[2]) end
      slot.h_stored = h_out
      opts.stage(b, s, h_in, h_out, ctx[k])
      slot_queue(slot, b, s)
      ring_flush(ring, opts.store) -- the batches finished meanwhile
    else
      opts.stage(b, s, ctx[k])
    end
    counts[k] = counts[k] + 1
    if bar then call(bar.queued_on, bar, k, s, b, counts[k]) end
  end
  local lasts = {}
  call(function()
    for k, s in ipairs(streams) do lasts[k] = s:record{timing = true} end
    for d, dev in ipairs(devs) do
      for _, s in ipairs(per_dev[d]) do
        if s ~= dev.main then dev.main:join(s) end -- dev.main may be one of the streams
      end
      stops[d] = dev.main:record{timing = true}
    end
  end)
  local wall_ms = (gpu.clock() - t0) * 1e3
  if bar then call(bar.finish, bar) end
  if ring then
    wait_stored(ring, opts.batches, opts.store)
    ring_check(ring)
  end

  local stats = {batches = opts.batches, streams = {}, wall_ms = wall_ms, gpu_ms = 0}
  call(function()
    for d = 1, #devs do stats.gpu_ms = math.max(stats.gpu_ms, starts[d]:elapsed(stops[d])) end
    for k, s in ipairs(streams) do
      stats.streams[k] = {name = s.name, device = s.device.ordinal, batches = counts[k],
                          ms = firsts[k] and firsts[k]:elapsed(lasts[k]) or 0}
    end
    if owned then
      for _, s in ipairs(streams) do s:close() end
    end
  end)
  return stats
end

function pipeline.graph(opts)
  fname = "pipeline.graph"
  check_opts(opts, GRAPH_OPTIONS)
  local devs = devices_of(opts)
  if #devs > 1 then fail("a graph's work is on one device: give 'device', not several 'devices'") end
  local dev = devs[1]
  local n = opts.streams or 1
  if math.type(n) ~= "integer" or n < 1 then
    fail("option 'streams' expected a positive integer (the branches are forked inside the capture), got "
      .. given(n))
  end
  if opts.progress then
    fail("option 'progress' is pipeline.run's: nothing runs while a graph is captured (time its replays instead)")
  end
  if opts.load or opts.store then
    fail("options 'load' and 'store' are pipeline.run's: a graph's replay runs no host code between its batches")
  end
  if opts.name ~= nil and type(opts.name) ~= "string" then
    fail("option 'name' expected a string, got " .. type(opts.name))
  end
  local ctx = {}
  for i = 1, n do ctx[i] = opts.setup and opts.setup(dev.main, i) or {} end
  local stage, batches = opts.stage, opts.batches
  return call(function()
    return dev.main:capture(function(cs)
      local branches = {}
      for i = 1, n do branches[i] = cs:fork{name = "pipeline" .. i} end
      for b = 1, batches do
        local k = (b - 1) % n + 1
        stage(b, branches[k], ctx[k])
      end
      for i = 1, n do cs:join(branches[i]) end
    end, {name = opts.name or "pipeline"})
  end)
end

-- A `setup` giving each stream its own buffers: spec maps a name to
-- {dtype, count} (a device slice allocated on the stream) or
-- {dtype, count, host = true} (a pinned host buffer).
function pipeline.buffers(spec)
  if type(spec) ~= "table" then error("pipeline.buffers: expected a table of {dtype, count}", 2) end
  for name, b in pairs(spec) do
    if type(b) ~= "table" or type(b[1]) ~= "string" or math.type(b[2]) ~= "integer" then
      error(("pipeline.buffers: buffer '%s' expected {dtype, count[, host = true]}"):format(tostring(name)), 2)
    end
  end
  return function(s)
    local bufs = {}
    for name, b in pairs(spec) do
      bufs[name] = call(function()
        return b.host and gpu.host(b[1], b[2]) or s.device:alloc(b[1], b[2], {stream = s})
      end)
    end
    return bufs
  end
end

return pipeline
