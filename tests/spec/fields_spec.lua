-- Indexing a gpulua object with a field it does not have is an error that
-- names the key, the object's fields and its methods (x[1] on a slice says
-- to read it with x:read()); a released object's fields still answer.
local gpu = require "gpulua"
local H = require "helpers"

-- pcall(f, ...)'s error, raised again: the message as luaL made it for a
-- function called by pcall, which has no name of its own at the call
local function pcall_error(f, ...)
  local ok, err = pcall(f, ...)
  if not ok then error(err, 0) end
end

describe("fields", function()
  local dev
  before_each(function() dev = gpu.device(0) end)

  it("a field an object does not have is an error naming it, the fields and the methods", function()
    local x = dev:zeros("f32", 4)
    H.fails(H.lit("gpulua.Slice has no field 'lenght' (fields: dtype, bytes, device; methods: free, read, split, "
                  .. "view)"), function() return x.lenght end)
    H.fails(H.lit("gpulua.Stream has no field 'nmae' (fields: name, device; methods: after, await, capture, close, "
                  .. "copy, fill, fork, gemm, join, launch, query, record, sync, wait)"),
            function() return dev.main.nmae end)
    local g = dev.main:capture(function() end)
    H.fails(H.lit("gpulua.Graph has no field 'node' (fields: name, nodes, device, launches; methods: close, launch, "
                  .. "update)"), function() return g.node end)
    g:close()
    H.fails(H.lit("gpulua.Device has no field 'memroy' (fields: ordinal, name, memory, cc, sms, copy_engines, main; "
                  .. "methods:"),
            function() return dev.memroy end)
    H.fails(H.lit("gpulua.Event has no field 'seq' (fields: none; methods: await, elapsed, query, sync)"),
            function() return dev.main:record().seq end)
    H.fails(H.lit("gpulua.Module has no field 'kernels' (fields: name, device; methods: global, kernel)"),
            function() return gpu.load("tests/data/twice.ptx").kernels end)
  end)

  it("x[1] on a slice says to read it into a host buffer", function()
    local x = dev:zeros("f32", 4)
    H.fails(H.lit("gpulua.Slice: [1]: a slice's elements are in device memory: read them into a host buffer with "
                  .. "x:read() (x:read()[1])"), function() return x[1] end)
    assert.are.equal(0, x:read()[1])
  end)

  it("the fields every object has answer as before", function()
    local x = dev:zeros("f32", 4)
    assert.are.same({"f32", 16, true}, {x.dtype, x.bytes, rawequal(dev, x.device)})
    assert.are.same({"main", true}, {dev.main.name, rawequal(dev, dev.main.device)})
    assert.is_string(gpu.kernels.axpy.doc)
    assert.is_nil(gpu.load("tests/data/twice.ptx"):kernel("twice", "const f32*, f32*, u64").doc)
  end)

  it("streams and graphs (own methods tables) share their methods and answer their fields", function()
    local s, t = dev:stream{name = "own1"}, dev:stream{name = "own2"}
    assert.are.equal(s.launch, t.launch)
    assert.are.equal(s.launch, dev.main.launch)
    assert.are.same({"own1", "own2", true}, {s.name, t.name, rawequal(dev, t.device)})
    assert.are.equal("gpulua.Stream", getmetatable(s).__name)
    assert.are.equal(getmetatable(s).__gc, getmetatable(t).__gc)
    H.fails(H.lit("gpulua.Stream has no field 'lanch'"), function() return s.lanch end)
    H.fails(H.lit("gpulua.Stream has no field '1'"), function() return s[1] end)
    local x = dev:zeros("f32", 4, {stream = s})
    local g = s:capture(function(cs) cs:fill(x, 1) end, {name = "own"})
    assert.are.same({"own", 1, 0}, {g.name, g.nodes, g.launches})
    g:launch(s)
    g:launch(s)
    assert.are.equal(2, g.launches) -- a field that changes is read from the graph each time
    dev:sync()
    g:close()
    assert.is_nil(g.name)
    s:close()
    H.fails("is closed", function() s:sync() end)
  end)

  it("a freed host buffer's fields stay readable", function()
    local h = gpu.host("f32", 8, {pinned = false})
    local v = h:view(2, 3)
    h:free()
    assert.are.same({8, "f32", 32, false}, {#h, h.dtype, h.bytes, h.pinned})
    assert.are.same({3, "f32", 12, false}, {#v, v.dtype, v.bytes, v.pinned})
    H.fails("is freed", function() return h[1] end)
  end)

  it("a method called as a plain function is named in its argument errors", function()
    local s = dev.main
    H.fails(H.lit("bad argument #1 to 'gpulua.Stream.sync' (gpulua.Stream expected, got no value)"), pcall_error,
            s.sync)
    H.fails(H.lit("bad argument #3 to 'gpulua.Device.alloc' (element count must be positive, got -1)"), pcall_error,
            dev.alloc, dev, "f32", -1)
    H.fails(H.lit("to 'gpulua.Slice.view'"), pcall_error, dev:zeros("f32", 4).view)
    H.fails(H.lit("to 'gpulua.HostBuffer.view'"), pcall_error, gpu.host("f32", 4).view)
    -- called through a field, they are named by it as before
    H.fails(H.lit("bad argument #1 to 'sync' (gpulua.Stream expected, got number)"), function() return s.sync(1) end)
  end)
end)
