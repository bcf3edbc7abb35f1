-- gpu.config{grid =, block =, shared =}: a launch configuration checked once
-- into an immutable object, accepted wherever a cfg table is; a launch then
-- copies it without reading a table. Its limits are still checked against
-- each kernel and device it is launched with.
local gpu = require "gpulua"
local H = require "helpers"

describe("gpu.config", function()
  local dev, main
  before_each(function()
    dev = gpu.device(0)
    main = dev.main
  end)

  it("holds the fields as given, and says what it is", function()
    local c = gpu.config{grid = {4, 2}, block = 128, shared = 256}
    assert.are.same({4, 2}, c.grid)
    assert.are.equal(128, c.block)
    assert.are.equal(256, c.shared)
    assert.are.equal("gpulua.Config(grid 4x2x1, block 128x1x1, shared 256)", tostring(c))
    assert.are.equal(0, gpu.config{grid = 1, block = 32}.shared)
  end)

  it("is immutable", function()
    local c = gpu.config{grid = 1, block = 32}
    H.fails(H.lit("gpulua.Config is immutable: make another with gpu.config{...} (cannot set 'block')"),
            function() c.block = 64 end)
    local g = c.grid
    assert.are.equal(1, g) -- a number given stays a number
    local t = gpu.config{grid = {2, 2}, block = 32}
    t.grid[1] = 99 -- a copy: the config is unchanged
    assert.are.same({2, 2}, t.grid)
    H.fails(H.lit("gpulua.Config has no field 'blok' (fields: grid, block, shared; methods: none)"),
            function() return c.blok end)
  end)

  it("checks what a launch checks of a cfg table, once", function()
    H.fails("gpu.config: cfg.grid must be a positive integer, got number 0", gpu.config, {grid = 0, block = 1})
    H.fails("gpu.config: cfg.block is required", gpu.config, {grid = 1})
    H.fails(H.lit("gpu.config: cfg.block must have 1 to 3 dimensions, a list {x[, y[, z]]} of positive integers, got "
      .. "a table of length 4") .. "$", gpu.config, {grid = 1, block = {1, 1, 1, 1}})
    H.fails(H.lit("gpu.config: cfg.shared must be a non-negative integer (bytes), got number -1"), gpu.config,
            {grid = 1, block = 1, shared = -1})
    H.fails("gpu.config: cfg: unknown option 'shmem' %(the options are: grid, block, shared%)", gpu.config,
            {grid = 1, block = 1, shmem = 4})
    H.fails("table expected, got number", gpu.config, 5)
  end)

  it("says what a grid or block table must be, and what was given", function()
    local line = H.here() + 2
    local function at(msg, t)
      local err = H.fails(H.lit(msg) .. "$", function() local c = gpu.config(t); return c end)
      assert.matches("^[^:]*config_spec%.lua:" .. line .. ": ", err)
    end
    local shape = "cfg.grid must have 1 to 3 dimensions, a list {x[, y[, z]]} of positive integers, got a table of "
    -- a __len past int's range is not cut to an int (2^32 + 1 read as 1, 2^60 as 0)
    local function len(n) return setmetatable({}, {__len = function() return n end}) end
    at("gpu.config: " .. shape .. "length 4294967297", {grid = len((1 << 32) + 1), block = 1})
    at("gpu.config: " .. shape .. "length 1152921504606846976", {grid = len(1 << 60), block = 1})
    at("gpu.config: " .. shape .. "length -1", {grid = len(-1), block = 1})
    at("gpu.config: " .. shape:gsub("grid", "block") .. "length 4294967298", {grid = 1, block = len((1 << 32) + 2)})
    -- named fields are not dimensions
    at("gpu.config: " .. shape .. "length 0 with key 'x' (the dimensions are a list: {4, 2}, not {x = 4, y = 2})",
       {grid = {x = 4}, block = 1})
    local err = H.fails("got a table of length 0 with key '[xy]' %(the dimensions are a list", gpu.config,
                        {grid = {x = 4, y = 4}, block = 1})
    assert.does_not.match("got 0$", err)
    at("gpu.config: " .. shape .. "length 0", {grid = {}, block = 1})
    -- past the largest dimension any device takes: the value as given
    at("gpu.config: cfg.grid must be at most 2147483647 (no device takes a larger grid or block dimension), got "
       .. "number 2147483648.0", {grid = 2 ^ 31, block = 1})
    at("gpu.config: cfg.grid.y must be at most 2147483647 (no device takes a larger grid or block dimension), got "
       .. "number 4294967295", {grid = {1, 0xffffffff}, block = 1})
    at("gpu.config: cfg.block must be at most 2147483647 (no device takes a larger grid or block dimension), got "
       .. "number 2147483648", {grid = 1, block = 1 << 31})
    -- the largest is taken, and printed as given
    assert.are.equal("gpulua.Config(grid 2147483647x1x1, block 1x1x1, shared 0)",
                     tostring(gpu.config{grid = 2 ^ 31 - 1, block = 1}))
  end)

  it("a launch's cfg table is read the same way", function()
    H.fails(H.lit("s:launch: cfg.grid must be at most 2147483647 (no device takes a larger grid or block "
      .. "dimension), got number 2147483648.0"), main.launch, main, gpu.kernels.fill, {grid = 2 ^ 31, block = 1},
      dev:zeros("f32", 1), 1, 1)
    H.fails(H.lit("s:launch: cfg.block must have 1 to 3 dimensions, a list {x[, y[, z]]} of positive integers, "
      .. "got a table of length 0 with key 'x'"), main.launch, main, gpu.kernels.fill, {grid = 1, block = {x = 32}},
      dev:zeros("f32", 1), 1, 1)
  end)

  it("launches as the same table does", function()
    local x = dev:zeros("f32", 1000)
    local y = dev:zeros("f32", 1000)
    local c = gpu.config{grid = 4, block = 64}
    main:launch(gpu.kernels.fill, c, x, 3, 1000)
    main:launch(gpu.kernels.fill, {grid = 4, block = 64}, y, 3, 1000)
    assert.are.same(y:read():totable(), x:read():totable())
    H.check_all(x:read(), 3)
  end)

  it("is checked against each kernel's and device's limits at each launch", function()
    local x = dev:zeros("f32", 64)
    local big = gpu.config{grid = 1, block = 4096}
    H.fails("s:launch: kernel 'fill_f32': block.x = 4096 exceeds device 0's limit of 1024", main.launch, main,
            gpu.kernels.fill, big, x, 1, 64)
    local odd = gpu.config{grid = 1, block = 33}
    H.fails("built%-in kernel 'sum_f32' needs a one%-dimensional block of a multiple of 32 threads", main.launch, main,
            gpu.kernels.sum, odd, x, dev:zeros("f32", 1), 64)
  end)

  it("is given to a host kernel as itself (immutable, so no copy) #simhost", function()
    if not H.host_kernels() then
      pending(H.HOST_MODE_ONLY)
      return
    end
    local m = gpu.load("tests/data/twice.ptx")
    local k = m:kernel("twice", "const f32*, f32*, u64")
    local seen
    k:host(function(cfg, xv, yv, n)
      seen = cfg
      for i = 1, n do yv[i] = 2 * xv[i] end
    end)
    local c = gpu.config{grid = 1, block = 32}
    local x, y = dev:zeros("f32", 8), dev:zeros("f32", 8)
    main:fill(x, 2)
    main:launch(k, c, x, y, 8)
    H.check_all(y:read(), 4)
    assert.is_true(rawequal(c, seen))
  end)

  it("a launch with a config reads no table: the launch loop does not grow the Lua heap", function()
    local x = dev:zeros("f32", 64)
    local c = gpu.config{grid = 1, block = 64}
    for _ = 1, 100 do main:launch(gpu.kernels.fill, c, x, 1, 64) end
    collectgarbage()
    collectgarbage("stop")
    local before = collectgarbage("count")
    for _ = 1, 5000 do main:launch(gpu.kernels.fill, c, x, 1, 64) end
    local grown = collectgarbage("count") - before
    collectgarbage("restart")
    main:sync()
    assert.is_true(grown < 1, ("the heap grew by %.1f KiB"):format(grown))
  end)
end)
