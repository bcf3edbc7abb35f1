-- pipeline.run's host stages: load fills a pinned input buffer before a
-- batch's stage is queued, store gets its output buffer once the batch has
-- finished, in batch order; a ring of host_buffers slots, none reused while
-- in use (the checker, under strict, would say so).
local gpu = require "gpulua"
local pipeline = require "gpulua.pipeline"
local H = require "helpers"

local THIS = "pipeline_host_spec%.lua"

describe("pipeline.run with load and store", function()
  local dev = gpu.device(0)
  local N = 512

  -- y = 2 * x on each batch: load writes b * 1000 + i, store keeps {b, first, last}
  local function doubling(opts)
    local log, stored = {}, {}
    local o = {device = dev, streams = 3, batches = 9, chunk = {"f32", N},
      setup = pipeline.buffers{x = {"f32", N}},
      load = function(b, h)
        log[#log + 1] = "load " .. b
        for i = 1, #h do h[i] = b * 1000 + i end
      end,
      stage = function(b, s, h_in, h_out, ctx)
        log[#log + 1] = "stage " .. b
        if opts.slow_batch == b then H.slow(dev, s) end
        s:copy(ctx.x, h_in)
        s:launch(gpu.kernels.scale, {grid = "auto", block = 256}, 2.0, ctx.x, ctx.x, N)
        s:copy(h_out, ctx.x)
      end,
      store = function(b, h)
        log[#log + 1] = "store " .. b
        stored[#stored + 1] = {b, h[1], h[N]}
      end}
    for k, v in pairs(opts) do if k ~= "slow_batch" then o[k] = v end end
    local stats = pipeline.run(o)
    return stats, stored, log
  end

  it("loads each batch before its stage and stores every batch, in order, before run returns", function()
    local stats, stored, log = doubling{}
    assert.are.equal(9, stats.batches)
    assert.are.equal(9, #stored)
    for b = 1, 9 do assert.are.same({b, 2 * (b * 1000 + 1), 2 * (b * 1000 + N)}, stored[b]) end
    local at = {}
    for i, what in ipairs(log) do at[what] = i end
    for b = 1, 9 do
      assert.is_true(at["load " .. b] < at["stage " .. b], "load before stage of batch " .. b)
      assert.is_true(at["stage " .. b] < at["store " .. b], "stage before store of batch " .. b)
      if b > 1 then assert.is_true(at["load " .. (b - 1)] < at["load " .. b]) end
    end
  end)

  it("with the caller's streams too, every batch is stored when run returns", function()
    local streams = {dev:stream{name = "ph_a"}, dev:stream{name = "ph_b"}}
    local _, stored = doubling{streams = streams}
    assert.are.equal(9, #stored)
    for _, s in ipairs(streams) do s:close() end
  end)

  it("never reuses a buffer still in use: one slot for three streams is still right (strict)", function()
    local _, stored = doubling{host_buffers = 1}
    for b = 1, 9 do assert.are.same({b, 2 * (b * 1000 + 1), 2 * (b * 1000 + N)}, stored[b]) end
  end)

  it("stores in batch order when a later batch finishes first", function()
    local _, stored, log = doubling{slow_batch = 1, host_buffers = 6}
    local order = {}
    for _, r in ipairs(stored) do order[#order + 1] = r[1] end
    assert.are.same({1, 2, 3, 4, 5, 6, 7, 8, 9}, order)
    local at = {}
    for i, what in ipairs(log) do at[what] = i end
    assert.is_true(at["load 3"] < at["store 1"], "later batches were loaded while batch 1 ran")
  end)

  it("runs no store inside a stage, even one that waits", function()
    local inside, stored = false, 0
    pipeline.run{device = dev, streams = 2, batches = 6, chunk = {"f32", 4},
      stage = function(_, s, _, h_out)
        inside = true
        s:copy(h_out, dev:zeros("f32", 4, {stream = s}))
        gpu.sync() -- a wait: the earlier batches' callbacks run here, their stores do not
        inside = false
      end,
      store = function()
        assert.is_false(inside, "a store ran inside a stage")
        stored = stored + 1
      end}
    assert.are.equal(6, stored)
  end)

  it("takes load or store alone: the other buffer is nil", function()
    local seen_in, seen_out = {}, {}
    pipeline.run{device = dev, streams = 2, batches = 3, chunk = {"i32", 4},
      load = function(_, h) h:fill(7) end,
      stage = function(b, s, h_in, h_out)
        seen_in[b], seen_out[b] = h_in ~= nil, h_out
        local x = dev:alloc("i32", 4, {stream = s})
        s:copy(x, h_in)
        x:free()
      end}
    assert.are.same({true, true, true}, seen_in)
    assert.are.same({}, seen_out)
    local got = {}
    pipeline.run{device = dev, streams = 2, batches = 3, chunk = {"i32", 4},
      stage = function(b, s, h_in, h_out)
        assert.is_nil(h_in)
        local x = dev:alloc("i32", 4, {stream = s})
        s:fill(x, b)
        s:copy(h_out, x)
        x:free()
      end,
      store = function(b, h) got[b] = h[1] end}
    assert.are.same({1, 2, 3}, got)
  end)

  it("raises a store's error with its own line, and runs no later store", function()
    local stores = 0
    local line = debug.getinfo(1, "l").currentline + 6
    local err = H.fails("disk full", function()
      pipeline.run{device = dev, streams = 2, batches = 6, chunk = {"f32", 4},
        stage = function(_, s, _, h_out) s:copy(h_out, dev:zeros("f32", 4, {stream = s})) end,
        store = function(b)
          stores = stores + 1
          if b == 2 then error("disk full") end
        end}
    end)
    assert.matches(THIS .. ":" .. line .. ": disk full", err)
    assert.are.equal(2, stores)
    gpu.sync()
    gpu.poll()
    assert.are.equal(2, stores, "no store after the failed one")
    stores = 0 -- an error value of nil: still an error, and the stores stop
    H.fails("store%(2, h_out%) raised nil", function()
      pipeline.run{device = dev, streams = 2, batches = 6, chunk = {"f32", 4},
        stage = function(_, s, _, h_out) s:copy(h_out, dev:zeros("f32", 4, {stream = s})) end,
        store = function(b)
          stores = stores + 1
          if b == 2 then error(nil) end
        end}
    end)
    assert.are.equal(2, stores)
    H.fails("the last one", function() -- the last batch's store: raised before run returns
      pipeline.run{device = dev, streams = 2, batches = 3, chunk = {"f32", 4},
        stage = function(_, s, _, h_out) s:copy(h_out, dev:zeros("f32", 4, {stream = s})) end,
        store = function(b) if b == 3 then error("the last one") end end}
    end)
  end)

  it("a load that fills fewer elements makes a short chunk: stage and store get views of that many", function()
    local out, seen = {}, {}
    pipeline.run{device = dev, streams = 2, batches = 3, chunk = {"f32", 4}, -- 10 elements: 4, 4, 2
      setup = pipeline.buffers{x = {"f32", 4}},
      load = function(b, h)
        local n = math.min(4, 10 - (b - 1) * 4)
        for i = 1, n do h[i] = (b - 1) * 4 + i end
        if n < 4 then return n end
      end,
      stage = function(b, s, h_in, h_out, ctx)
        seen[b] = {#h_in, #h_out}
        local x = ctx.x:view(0, #h_in)
        s:copy(x, h_in)
        s:launch(gpu.kernels.scale, {grid = "auto", block = 256}, 2.0, x, x, #x)
        s:copy(h_out, x)
      end,
      store = function(_, h) for i = 1, #h do out[#out + 1] = h[i] end end}
    assert.are.same({{4, 4}, {4, 4}, {2, 2}}, seen)
    local want = {}
    for i = 1, 10 do want[i] = 2 * i end
    assert.are.same(want, out, "no element of an earlier batch stored again")
  end)

  it("a load's result must be nothing or the elements it filled, 1 to n", function()
    for _, bad in ipairs{{0, "number 0"}, {5, "number 5"}, {"2", "string"}, {1.5, "number 1.5"}} do
      local line = debug.getinfo(1, "l").currentline + 2
      local err = H.fails("", function()
        pipeline.run{device = dev, batches = 2, chunk = {"f32", 4}, load = function() return bad[1] end,
                     stage = function() end}
      end)
      assert.matches(THIS .. ":" .. line .. ": pipeline.run: load%(1, h_in%) returned " .. bad[2]
                     .. "[^\n]*: expected the elements it filled, 1 to 4 %(or nothing: all 4%)", err)
    end
  end)

  it("rejects bad options, naming them", function()
    local function run(o)
      o.device, o.batches = o.device or dev, o.batches or 1
      o.stage = o.stage or function() end
      return function() pipeline.run(o) end
    end
    local load = function() end
    H.fails("pipeline.run: option 'chunk' expected {dtype, n} %(n a positive integer: the elements of a host "
            .. "buffer%), got nil", run{load = load})
    H.fails("option 'chunk' expected {dtype, n} .*got {string, number 0}", run{load = load, chunk = {"f32", 0}})
    H.fails("option 'chunk' expected .*got {number 4, nil}", run{store = load, chunk = {4}})
    H.fails("pipeline.run: option 'chunk': unknown dtype 'f33' %(expected i8 u8 ", run{load = load, chunk = {"f33", 4}})
    H.fails("option 'host_buffers' expected a positive integer, got number 0",
            run{load = load, chunk = {"f32", 4}, host_buffers = 0})
    H.fails("option 'load' expected a function, got number 5", run{load = 5, chunk = {"f32", 4}})
    H.fails("option 'store' expected a function, got string", run{store = "x", chunk = {"f32", 4}})
    H.fails("option 'chunk' needs 'load' or 'store'", run{chunk = {"f32", 4}})
    H.fails("option 'host_buffers' needs 'load' or 'store'", run{host_buffers = 2})
    H.fails("pipeline.graph: options 'load' and 'store' are pipeline.run's",
            function() pipeline.graph{device = dev, batches = 1, stage = function() end, load = load,
                                      chunk = {"f32", 4}} end)
  end)
end)
