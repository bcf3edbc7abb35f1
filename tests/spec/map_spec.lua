local gpu = require "gpulua"
local H = require "helpers"

-- gpu.map(path, {dtype =, mode =}): a file mapped as a host buffer, shared
-- (mode "rw": writes land in the file) or read-only (mode "r", the default),
-- page-locked where the driver lets it; copied like any host buffer and
-- released like one, after its queued copies.
describe("gpu.map", function()
  local path = H.temp_paths(after_each)
  local dev
  before_each(function() dev = gpu.device(0) end)

  -- a new file holding the bytes of string s
  local function file_of(s)
    local p = path()
    H.write_file(p, s)
    return p
  end
  local contents = H.read_file
  -- whether this process maps file p now (its line in /proc/self/maps)
  local function mapped(p) return contents("/proc/self/maps"):find(p, 1, true) ~= nil end

  describe("a file's elements", function()
    it("reads as the dtype stores them, with the fields of any host buffer", function()
      local p = file_of(string.pack("<i4i4i4i4", 7, -2, 30, 400))
      local m = gpu.map(p, {dtype = "i32"})
      assert.are.equal(4, #m)
      assert.are.equal("i32", m.dtype)
      assert.are.equal(16, m.bytes)
      assert.are.same({7, -2, 30, 400}, m:totable())
      assert.are.equal(30, m[3])
      assert.are.same({-2, 30}, m:view(1, 2):totable())
      if gpu.backend() == "sim" then assert.is_true(m.pinned) else assert.is_boolean(m.pinned) end
      assert.are.equal("gpulua.HostBuffer", getmetatable(m).__name)
      local u = gpu.map(p, {dtype = "u8", mode = "r"}) -- one file, two mappings
      assert.are.equal(16, #u)
      assert.are.equal(7, u[1])
      assert.are.equal(0xfe, u[5])
    end)

    it("copies to the device and back, whole and as views", function()
      local values = H.values("f32", 1000, 3)
      local p = file_of(string.pack("<" .. ("f"):rep(1000), table.unpack(values)))
      local m = gpu.map(p, {dtype = "f32"})
      local s = dev:stream()
      local x = dev:alloc("f32", 1000, {stream = s})
      s:copy(x, m)
      local back = gpu.host("f32", 1000)
      s:copy(back, x)
      s:sync()
      assert.are.same(values, back:totable())
      assert.are.same(values, x:read{stream = s}:totable())
      s:copy(x:view(10, 5), m:view(500, 5))
      assert.are.same({table.unpack(values, 501, 505)}, x:view(10, 5):read{stream = s}:totable())
    end)
  end)

  describe("mode \"rw\"", function()
    it("writes from Lua and copies from the device land in the file", function()
      local p = file_of(string.pack("<i8i8i8i8", 1, 2, 3, 4))
      local m = gpu.map(p, {dtype = "i64", mode = "rw"})
      m[1] = 10
      m:view(3, 1):fill(-40)
      local x = H.upload(dev, "i64", {21, 22})
      dev.main:copy(m:view(1, 2), x)
      dev.main:sync()
      assert.are.same({10, 21, 22, -40}, m:totable())
      m:free()
      assert.are.equal(string.pack("<i8i8i8i8", 10, 21, 22, -40), contents(p))
    end)

    it("reads into the file with h:read_from", function()
      local p = file_of(("\0"):rep(8))
      local src = file_of(string.pack("<I2I2I2I2", 5, 6, 7, 8))
      local m = gpu.map(p, {dtype = "u16", mode = "rw"})
      local f = assert(io.open(src, "rb"))
      assert.are.equal(4, m:read_from(f))
      f:close()
      m:free()
      assert.are.equal(string.pack("<I2I2I2I2", 5, 6, 7, 8), contents(p))
    end)
  end)

  describe("mode \"r\"", function()
    local p, m, x
    before_each(function()
      p = file_of(string.pack("<ffff", 1, 2, 3, 4))
      m = gpu.map(p, {dtype = "f32"}) -- "r", the default
      x = H.upload(dev, "f32", {9, 9, 9, 9})
    end)

    local function refused(what, fn) H.fails(what .. ".* is a read%-only mapping of " .. H.lit(p), fn) end

    it("refuses writes from Lua, naming the call and the file, at the script's line", function()
      local line = H.here() + 1
      local err = H.fails("", function() m[2] = 5 end)
      assert.matches("map_spec%.lua:" .. line .. ": h%[i%] = v: host buffer f32%[4%] is a read%-only mapping of "
                     .. H.lit(p) .. ": map it writable to write it "
                     .. "%(gpu%.map%(path, {dtype = %.%.%., mode = \"rw\"}%)%)$", err)
      line = H.here() + 1
      err = H.fails("", function() m:fill(0) end)
      assert.matches("map_spec%.lua:" .. line .. ": h:fill: host buffer f32%[4%] is a read%-only mapping of "
                     .. H.lit(p), err)
      refused("h:fill", function() m:view(1, 2):fill(0) end)
      local f = assert(io.open(file_of("abcdabcd"), "rb"))
      refused("h:read_from", function() return m:read_from(f) end)
      f:close()
      assert.are.same({1, 2, 3, 4}, m:totable())
    end)

    it("refuses copies into it, whole or a view, on any path", function()
      local s = dev.main
      local line = H.here() + 1
      local err = H.fails("", function() s:copy(m, x) end)
      assert.matches("map_spec%.lua:" .. line .. ": s:copy: dst: host buffer f32%[4%] is a read%-only mapping of "
                     .. H.lit(p), err)
      refused("s:copy: dst: host buffer f32%[2%] %(a view%)", function() s:copy(m:view(2, 2), x:view(0, 2)) end)
      s:sync()
      assert.are.same({1, 2, 3, 4}, m:totable())
      assert.are.equal(string.pack("<ffff", 1, 2, 3, 4), contents(p))
    end)

    it("reads and copies to the device still work", function()
      dev.main:copy(x, m)
      assert.are.same({1, 2, 3, 4}, x:read():totable())
      local q = path()
      local f = assert(io.open(q, "wb"))
      assert.are.equal(2, m:view(2, 2):write_to(f))
      f:close()
      assert.are.equal(string.pack("<ff", 3, 4), contents(q))
      m:free()
      assert.are.equal(string.pack("<ffff", 1, 2, 3, 4), contents(p))
    end)
  end)

  describe("refuses, naming the call and what was given", function()
    -- fn, a function of one line, fails at that line with the message
    local function at_line(pattern, fn)
      local err = H.fails("", fn)
      assert.matches("map_spec%.lua:" .. debug.getinfo(fn, "S").linedefined .. ": gpu%.map: " .. pattern, err)
    end

    it("a size that is not a whole number of elements", function()
      local p = file_of("0123456789")
      at_line(H.lit(p) .. ": 10 bytes is not a whole number of f32 %(4 bytes each%)$",
              function() gpu.map(p, {dtype = "f32"}) end)
      at_line(H.lit(p) .. ": 10 bytes is not a whole number of f64 %(8 bytes each%)",
              function() gpu.map(p, {dtype = "f64", mode = "rw"}) end)
      assert.are.equal(5, #gpu.map(p, {dtype = "u16"}))
    end)

    it("an empty file, a missing one, a directory, a device", function()
      local empty = file_of("")
      at_line(H.lit(empty) .. ": the file is empty %(0 bytes%)", function() gpu.map(empty, {dtype = "u8"}) end)
      local missing = path()
      os.remove(missing)
      at_line(H.lit(missing) .. ": cannot open it: No such file or directory",
              function() gpu.map(missing, {dtype = "u8"}) end)
      at_line(H.lit(missing) .. ": cannot open it for reading and writing: No such file or directory",
              function() gpu.map(missing, {dtype = "u8", mode = "rw"}) end)
      at_line("/tmp: is a directory, not a file", function() gpu.map("/tmp", {dtype = "u8"}) end)
      at_line("/tmp: is a directory, not a file", function() gpu.map("/tmp", {dtype = "u8", mode = "rw"}) end)
      at_line("/dev/null: is not a regular file", function() gpu.map("/dev/null", {dtype = "u8"}) end)
    end)

    it("a FIFO, at once: not waiting for a writer to open it", function()
      local fifo = path()
      os.remove(fifo)
      assert.is_true(os.execute("mkfifo " .. H.quote(fifo)))
      for _, mode in ipairs{"r", "rw"} do -- in a child: a wait would be its timeout, not the suite's
        local out, status = H.run_child(("local gpu = require 'gpulua'\n"
          .. "print(select(2, pcall(gpu.map, %q, {dtype = 'u8', mode = %q})))"):format(fifo, mode), nil, 60)
        assert.are.equal(0, status, out)
        assert.matches("gpu%.map: " .. H.lit(fifo) .. ": is not a regular file", out)
      end
    end)

    it("a bad dtype, a bad mode, bad arguments and options", function()
      local p = file_of("abcd")
      at_line("option 'dtype': unknown dtype 'f33' %(expected i8 ", function() gpu.map(p, {dtype = "f33"}) end)
      at_line("option 'dtype' expected a dtype %(i8 .-%), got number 4", function() gpu.map(p, {dtype = 4}) end)
      at_line("option 'dtype' is missing", function() gpu.map(p, {mode = "r"}) end)
      at_line("expected an options table with the dtype", function() gpu.map(p) end)
      at_line("option 'mode' expected \"r\" or \"rw\", got \"w\"",
              function() gpu.map(p, {dtype = "u8", mode = "w"}) end)
      at_line("option 'mode' expected \"r\" or \"rw\", got boolean",
              function() gpu.map(p, {dtype = "u8", mode = true}) end)
      at_line("unknown option 'mod' %(the options are: dtype, mode%)",
              function() gpu.map(p, {dtype = "u8", mod = "r"}) end)
      at_line("options %(argument #2%) expected a table {dtype =, mode =}, got string",
              function() gpu.map(p, "f32") end)
      at_line("path %(argument #1%) expected a string, got number 1", function() gpu.map(1, {dtype = "u8"}) end)
      at_line("path %(argument #1%) expected a string, got nil", function() gpu.map(nil, {dtype = "u8"}) end)
      assert.are.equal("abcd", contents(p))
    end)
  end)

  describe("release", function()
    it("m:free() unmaps it; later use names where it was freed", function()
      local p = file_of(string.pack("<i4i4", 1, 2))
      local m = gpu.map(p, {dtype = "i32", mode = "rw"})
      local v = m:view(1, 1)
      assert.is_true(mapped(p))
      local line = H.here() + 1
      m:free()
      assert.is_false(mapped(p))
      H.fails("host buffer i32%[2%] is freed %(at [^)]*map_spec%.lua:" .. line .. "%)", function() return m[1] end)
      H.fails("host buffer i32%[1%] %(a view%) is freed: its buffer was freed at [^\n]*map_spec%.lua:" .. line,
              function() v[1] = 3 end)
      H.fails("host buffer i32%[2%] is freed", function() dev.main:copy(dev:zeros("i32", 2), m) end)
      H.fails("h:free: host buffer i32%[2%] is already freed", m.free, m)
      assert.are.equal(string.pack("<i4i4", 1, 2), contents(p))
    end)

    it("garbage collection unmaps it", function()
      local p = file_of(("x"):rep(64))
      local m = gpu.map(p, {dtype = "u8"}) -- luacheck: no unused
      assert.is_true(mapped(p))
      m = nil -- luacheck: no unused
      collectgarbage()
      collectgarbage()
      assert.is_false(mapped(p))
    end)

    -- each operation of the child's streams waits 200 ms (GPULUA_SIM_DELAY_US):
    -- the copies are surely queued still when the buffer is let go
    local function child(body)
      local out, status = H.run_child([[
        local gpu = require "gpulua"
        local p, n = os.getenv("MAP_FILE"), 1 << 20
        local function mapped() return io.open("/proc/self/maps"):read("a"):find(p, 1, true) ~= nil end
        local function file() local f = io.open(p, "rb"); local s = f:read("a"); f:close(); return s end
        local dev = gpu.device(0)
        local s = dev:stream()
        local x = dev:zeros("i32", n, {stream = s})
        s:fill(x, 7)
        s:sync()
      ]] .. body, {GPULUA_SIM_DELAY_US = 200000, MAP_FILE = path()})
      if not out then return pending("needs the interpreter's arg table to start a child process") end
      assert.are.equal(0, status, out)
      return out
    end

    it("m:free() with copies queued unmaps it only after they have finished", function()
      if gpu.backend() ~= "sim" then return pending("the sim's GPULUA_SIM_DELAY_US holds the copies back") end
      local out = child([[
        io.open(p, "wb"):write(("\0"):rep(4 * n)):close()
        local m = gpu.map(p, {dtype = "i32", mode = "rw"})
        local src = gpu.map(p, {dtype = "i32"})
        s:copy(x:view(0, 1), src:view(0, 1)) -- read from the file, on the device
        s:copy(m, x)
        src:free()
        m:free()
        print("after free:", mapped(), s:query())
        s:sync()
        gpu.host("u8", 1) -- a new host allocation releases what is ready
        print("after sync:", mapped())
        print("file:", file() == string.pack("<i4", 0) .. string.pack("<i4", 7):rep(n - 1))
      ]])
      assert.matches("after free:\ttrue\tfalse\n", out)
      assert.matches("after sync:\tfalse\n", out)
      assert.matches("file:\ttrue\n", out)
    end)

    it("garbage collection with copies queued unmaps it only after they have finished", function()
      if gpu.backend() ~= "sim" then return pending("the sim's GPULUA_SIM_DELAY_US holds the copies back") end
      local out = child([[
        io.open(p, "wb"):write(("\0"):rep(4 * n)):close()
        local m = gpu.map(p, {dtype = "i32", mode = "rw"})
        s:copy(m, x)
        m = nil -- luacheck: no unused
        collectgarbage()
        collectgarbage()
        print("after collect:", mapped(), s:query())
        s:sync()
        gpu.host("u8", 1)
        print("after sync:", mapped())
        print("file:", file() == string.pack("<i4", 7):rep(n))
      ]])
      assert.matches("after collect:\ttrue\tfalse\n", out)
      assert.matches("after sync:\tfalse\n", out)
      assert.matches("file:\ttrue\n", out)
    end)
  end)

  it("stays pageable where the driver will not lock it, and still copies", function()
    if gpu.backend() ~= "sim" then return pending("the sim's GPULUA_SIM_HOST_MEMORY limits locked memory") end
    local out, status = H.run_child([[
      local gpu = require "gpulua"
      local p = os.getenv("MAP_FILE")
      io.open(p, "wb"):write(string.pack("<i4", 3):rep(1 << 19)):close() -- 2 MiB
      local m = gpu.map(p, {dtype = "i32", mode = "rw"})
      print("pinned:", m.pinned, tostring(m):match("%(pageable%)") ~= nil)
      local x = gpu.device(0):zeros("i32", #m)
      local s = gpu.device(0).main
      s:copy(x, m)
      s:fill(x:view(0, 1), 9)
      s:copy(m, x)
      s:sync()
      print("values:", m[1], m[#m])
      m:free()
      print("file:", io.open(p, "rb"):read(4) == string.pack("<i4", 9))
    ]], {GPULUA_SIM_HOST_MEMORY = "1M", MAP_FILE = path()})
    if not out then return pending("needs the interpreter's arg table to start a child process") end
    assert.are.equal(0, status, out)
    assert.matches("pinned:\tfalse\ttrue\n", out)
    assert.matches("values:\t9\t3\n", out)
    assert.matches("file:\ttrue\n", out)
  end)
end)
