-- Freeing twice behaves the same for every type (API.md, "Releasing an
-- object"): a second x:free(), h:free(), s:close(), g:close() or
-- comm:close() is an error naming the object and where it was released; a
-- <close> variable after a release, and a finalizer after anything, do
-- nothing; the method after the finalizer is an error saying so.
local gpu = require "gpulua"
local H = require "helpers"

describe("freeing twice", function()
  local dev = gpu.device(0)

  local function finalize(o) getmetatable(o).__gc(o) end

  -- one maker per type with a release method: the object, its method's
  -- name, what a second release says before the location, and the noun
  -- of the message after the finalizer
  local kinds = {
    {"slice", function() return dev:alloc("f32", 4) end, "free",
      "x:free: slice f32[4] on device 0 is already freed (at ", "the slice is freed already"},
    {"view of a slice", function() return dev:alloc("f32", 4):view(1, 2) end, "free",
      "x:free: slice f32[2] (view at offset 1 of f32[4]) on device 0 is already freed (at ",
      "the slice is freed already"},
    {"host buffer", function() return gpu.host("f32", 4) end, "free",
      "h:free: host buffer f32[4] is already freed (at ", "the host buffer is freed already"},
    {"stream", function() return dev:stream{name = "twice"} end, "close",
      "s:close: stream 'twice' of device 0 is already closed (closed at ", "the stream is closed already"},
    {"graph", function() return dev.main:capture(function() end, {name = "twice"}) end, "close",
      "g:close: graph 'twice' is already closed (at ", "the graph is closed already"},
    {"communicator", function() return gpu.comm{devices = {dev}} end, "close",
      "comm:close: the communicator was closed already (at ", "the communicator is closed already"},
  }

  for _, k in ipairs(kinds) do
    local what, make, method, again, collected = k[1], k[2], k[3], k[4], k[5]

    it(what .. ": the method twice is an error naming the object and the first release's line", function()
      local o = make()
      o[method](o)
      local first = H.here() - 1
      local pattern = H.lit(again) .. "[^)]*" .. H.at("free_twice_spec.lua", first) .. "%)$"
      local err = H.fails(pattern, function() o[method](o) end)
      assert.matches("^[^:]*free_twice_spec%.lua:" .. (H.here() - 1) .. ": ", err) -- the second call's line
      do local _ <close> = o end -- a <close> after the release: nothing
      finalize(o) -- the finalizer after it: nothing
      finalize(o)
    end)

    it(what .. ": a <close> variable, then the method, is an error too", function()
      local o = make()
      do local _ <close> = o end
      H.fails(H.lit(again), function() o[method](o) end)
      finalize(o)
    end)

    it(what .. ": after the finalizer the method says so, and a <close> and the finalizer do nothing", function()
      local o = make()
      finalize(o)
      local call = again:match("^%a+:%a+")
      H.fails(H.lit(call .. ": " .. collected .. ": its finalizer (__gc) released it") .. "$",
        function() o[method](o) end)
      do local _ <close> = o end
      finalize(o)
    end)
  end

  it("events, modules and kernels: a finalizer twice does nothing", function()
    local e = dev.main:record()
    local m = gpu.compile('extern "C" __global__ void twice_noop() {}', {name = "twice.cu"})
    local kern = m:kernel("twice_noop", "")
    for _, o in ipairs{e, kern, m} do
      finalize(o)
      finalize(o)
    end
    dev:sync()
  end)
end)
