local gpu = require "gpulua"
local H = require "helpers"

-- h:read_from(file) and h:write_to(file): a host buffer's bytes to and from
-- a Lua file handle, one fread or fwrite, under the checker's rules for host
-- memory.
describe("host buffers and files", function()
  local path = H.temp_paths(after_each)

  it("write_to then read_from gives the bytes back, a dtype at a time", function()
    for _, dt in ipairs(H.dtypes) do
      local values = {}
      for i = 1, 37 do values[i] = i % 7 end
      local h = gpu.host(dt, values)
      local p = path()
      local f = assert(io.open(p, "wb"))
      assert.are.equal(37, h:write_to(f))
      f:close()
      local f2 = assert(io.open(p, "rb"))
      assert.are.equal(37 * H.sizes[dt], #f2:read("a"))
      f2:seek("set", 0)
      local back = gpu.host(dt, 37)
      assert.are.equal(37, back:read_from(f2))
      f2:close()
      assert.are.same(values, back:totable())
    end
  end)

  it("reads in chunks: whole elements, fewer at the end, then 0", function()
    local p = path()
    local f = assert(io.open(p, "wb"))
    f:write(string.pack("<i4i4i4i4i4", 1, 2, 3, 4, 5), "xy") -- five i32 and two bytes more
    f:close()
    f = assert(io.open(p, "rb"))
    local h = gpu.host("i32", 2)
    assert.are.equal(2, h:read_from(f))
    assert.are.same({1, 2}, h:totable())
    assert.are.equal(2, h:read_from(f))
    assert.are.same({3, 4}, h:totable())
    assert.are.equal(1, h:read_from(f)) -- element 5, and the two bytes that make no element
    assert.are.equal(5, h[1])
    assert.are.equal(0, h:read_from(f))
    f:close()
  end)

  it("reads into and writes out of a view", function()
    local p = path()
    local f = assert(io.open(p, "wb"))
    gpu.host("f64", {7, 8, 9}):write_to(f)
    f:close()
    local h = gpu.host("f64", 6)
    f = assert(io.open(p, "rb"))
    assert.are.equal(3, h:view(2, 3):read_from(f))
    f:close()
    assert.are.same({0, 0, 7, 8, 9, 0}, h:totable())
    local q = path()
    f = assert(io.open(q, "wb"))
    assert.are.equal(2, h:view(3, 2):write_to(f))
    f:close()
    f = assert(io.open(q, "rb"))
    assert.are.equal(string.pack("<dd", 8, 9), f:read("a"))
    f:close()
  end)

  it("refuses what is not an open file of the right direction, naming the call", function()
    local h = gpu.host("f32", 4)
    H.fails("h:read_from: expected a file handle %(from io.open%), got string", function() h:read_from("data.bin") end)
    H.fails("h:write_to: expected a file handle %(from io.open%), got no value", function() h:write_to() end)
    H.fails("h:write_to: expected a file handle %(from io.open%), got gpulua.HostBuffer",
            function() h:write_to(gpu.host("f32", 1)) end)
    local p = path()
    local w = assert(io.open(p, "wb"))
    H.fails('h:read_from: the file is not open for reading %(io.open%(path, "rb"%)%)', function() h:read_from(w) end)
    w:close()
    H.fails("h:read_from: the file is closed", function() h:read_from(w) end)
    H.fails("h:write_to: the file is closed", function() h:write_to(w) end)
    local r = assert(io.open(p, "rb"))
    H.fails('h:write_to: the file is not open for writing %(io.open%(path, "wb"%)%)', function() h:write_to(r) end)
    r:close()
    local freed = gpu.host("f32", 4)
    freed:free()
    r = assert(io.open(p, "rb"))
    H.fails("freed", function() freed:read_from(r) end)
    r:close()
  end)

  describe("while copies are queued", function()
    local dev, saved
    local big = 64 << 20 -- bytes: the copies take milliseconds, even on a GPU
    before_each(function()
      dev = gpu.device(0)
      saved = gpu.policy()
    end)
    after_each(function() gpu.policy(saved) end)

    it("strict: reading a file into the source of a queued copy is an error", function()
      gpu.policy("strict")
      local s = dev:stream{name = "h2d-file"}
      local src = gpu.host("u8", big)
      local x = dev:alloc("u8", big, {stream = s})
      for _ = 1, 4 do s:copy(x, src) end
      local p = path()
      local f = assert(io.open(p, "rb"))
      H.fails("written from Lua at [^ ]*hostfile_spec%.lua:%d+ while stream 'h2d%-file' of device 0 may still read it",
              function() src:read_from(f) end)
      f:close()
      s:sync()
    end)

    it("strict: writing out the destination of a queued copy is an error; auto waits for it", function()
      gpu.policy("strict")
      local s = dev:stream{name = "d2h-file"}
      local x = dev:zeros("u8", big, {stream = s})
      s:fill(x, 5)
      local h = gpu.host("u8", big)
      for _ = 1, 4 do s:copy(h, x) end
      local p = path()
      local f = assert(io.open(p, "wb"))
      H.fails("read from Lua at [^ ]*hostfile_spec%.lua:%d+ while stream 'd2h%-file' of device 0 may still write it",
              function() h:write_to(f) end)
      gpu.policy("auto")
      assert.are.equal(big, h:write_to(f)) -- waits for the copies, then writes what they brought
      f:close()
      f = assert(io.open(p, "rb"))
      local data = f:read("a")
      f:close()
      assert.are.equal(big, #data)
      assert.are.equal(5, data:byte(1))
      assert.are.equal(5, data:byte(big))
    end)
  end)
end)
