-- Every options table is checked: an unknown key (a misspelt option) is an
-- error that names it and the accepted keys, at the caller's line, and
-- nothing is done.
local gpu = require "gpulua"
local H = require "helpers"

describe("options tables", function()
  local dev, main
  before_each(function()
    dev = gpu.device(0)
    main = dev.main
  end)

  -- fn must fail naming `key` and listing `accepted`, reported at the line that called it
  local function rejects(fname, key, accepted, fn, ...)
    local args = table.pack(...)
    local err = H.fails(H.lit(fname .. ": unknown option '" .. key .. "' (the options are: " .. accepted .. ")"),
      function()
        local r = fn(table.unpack(args, 1, args.n)) -- not a tail call: this line is the caller
        return r
      end)
    assert.matches("^[^:]*options_spec%.lua:%d+:", err)
  end

  it("of streams and events", function()
    rejects("dev:stream", "nmae", "name, priority", dev.stream, dev, {nmae = "x"})
    rejects("s:fork", "prio", "name, priority", main.fork, main, {prio = 0})
    rejects("s:record", "timming", "timing", main.record, main, {timming = true})
  end)

  it("of allocations and reads", function()
    local free = dev:free_memory()
    rejects("dev:alloc", "strem", "stream", dev.alloc, dev, "f32", 16, {strem = main})
    rejects("dev:zeros", "strem", "stream", dev.zeros, dev, "f32", 16, {strem = main})
    collectgarbage()
    dev:sync()
    assert.are.equal(free, dev:free_memory()) -- nothing was allocated
    local x = dev:zeros("f32", 4)
    rejects("x:read", "steam", "stream", x.read, x, {steam = main})
    rejects("gpu.host", "pined", "pinned", gpu.host, "f32", 4, {pined = false})
  end)

  it("of kernels and launches", function()
    rejects("gpu.compile", "nmae", "name, options, device", gpu.compile, "__global__ void k() {}", {nmae = "k.cu"})
    rejects("gpu.load", "devcie", "device, options", gpu.load, "tests/data/twice.ptx", {devcie = 0})
    local x, y = dev:zeros("f32", 8), dev:zeros("f32", 8)
    rejects("s:launch: cfg", "shmem", "grid, block, shared", main.launch, main, gpu.kernels.axpy,
      {grid = 1, block = 32, shmem = 0}, 2.0, x, y, 8)
    assert.are.same({0, 0}, {y:read()[1], y:read()[8]}) -- nothing ran
  end)

  it("names a key that is not a string", function()
    H.fails("dev:stream: unknown option %[1%] %(the options are: name, priority; each is a string key%)",
      dev.stream, dev, {"main"})
  end)

  it("accepts every documented option", function()
    local s = dev:stream{name = "opts", priority = 0}
    local t = s:fork{name = "opts2", priority = 0}
    local e = t:record{timing = true}
    local x = dev:alloc("f32", 4, {stream = s})
    local z = dev:zeros("f32", 4, {stream = s})
    s:copy(x, z)
    local h = x:read{stream = s}
    assert.are.equal(0, h[1])
    assert.is_false(gpu.host("f32", 4, {pinned = false}).pinned)
    e:sync()
  end)
end)
