-- Out of memory: device and pinned-host allocation failures name the request
-- and the free bytes, the script can catch them, free memory and go on, and
-- before failing an allocation gpulua reclaims what it can (garbage slices
-- and buffers, memory freed on other streams, the pool's cache).
local gpu = require "gpulua"
local H = require "helpers"

describe("out of device memory", function()
  local dev = gpu.device(0)
  -- more than half the device: two of these can never fit at once
  local big = math.floor(dev.memory * 0.6)

  it("names the request and the free bytes; freeing memory lets the script go on", function()
    local x = dev:alloc("u8", big)
    local err = H.fails("dev:alloc: out of memory on device 0", dev.alloc, dev, "u8", big)
    assert.matches(("requested u8%%[%d%%] %%(%d bytes%%), %%d+ of %%d+ bytes free"):format(big, big), err)
    local free = tonumber(err:match("(%d+) of %d+ bytes free"))
    assert.is_true(free < big, err)
    -- the failed attempt left nothing behind in the pool: the rest of the
    -- device is still free, for this process and for others
    assert.is_true(free > dev.memory // 4, err)
    assert.is_true(dev:free_memory() > dev.memory // 4, "free after the failure: " .. dev:free_memory())
    x:free()
    local y = dev:alloc("u8", big)
    assert.are.equal(big, #y)
    y:free()
  end)

  it("reuses memory freed on another stream", function()
    local s1, s2 = dev:stream{name = "one"}, dev:stream{name = "two"}
    local x = dev:alloc("u8", big, {stream = s1})
    s1:fill(x, 1)
    x:free() -- queued on s1, unordered with s2
    local y = dev:alloc("u8", big, {stream = s2})
    s2:fill(y:view(0, 16), 2)
    assert.are.equal(2, y:view(0, 16):read({stream = s2})[16])
    y:free()
  end)

  it("collects garbage slices before giving up", function()
    do local _ = dev:alloc("u8", big) end -- unreachable, not yet collected
    local y = dev:alloc("u8", big)
    y:free()
  end)

  it("does not collect while the script has stopped the collector", function()
    collectgarbage("stop")
    local ok, err = pcall(function()
      do local _ = dev:alloc("u8", big) end
      return dev:alloc("u8", big)
    end)
    collectgarbage("restart")
    collectgarbage()
    assert.is_false(ok, "the second allocation should have failed")
    assert.matches("out of memory on device 0", err)
    dev:alloc("u8", big):free()
  end)
end)

describe("out of pinned host memory", function()
  local function mem_total()
    local f = io.open("/proc/meminfo")
    if not f then return nil end
    local kb = f:read("a"):match("MemTotal:%s*(%d+) kB")
    f:close()
    return kb and tonumber(kb) * 1024
  end

  it("fails at once for more than the host has, naming the request and the free bytes", function()
    local total = mem_total()
    if not total then
      pending("needs /proc/meminfo to know the host's memory")
      return
    end
    local n = 2 * total
    local err = H.fails("gpu.host: out of pinned host memory", gpu.host, "u8", n)
    assert.matches(("requested u8%%[%d%%] %%(%d bytes%%), %%d+ of %%d+ bytes of host memory available, "
                    .. "%%d+ bytes pinned by gpulua"):format(n, n), err)
    err = H.fails("gpu.host: out of host memory", gpu.host, "u8", n, {pinned = false})
    assert.matches(("requested u8%%[%d%%] %%(%d bytes%%), %%d+ of %%d+ bytes available"):format(n, n), err)
    local h = gpu.host("f32", 1024) -- and allocation goes on
    h:fill(3)
    assert.are.equal(3, h[1024])
  end)

  it("fails when the driver refuses, and the script can free memory and go on", function()
    if gpu.backend() ~= "sim" then
      pending("runs on sim only, where GPULUA_SIM_HOST_MEMORY limits pinned memory; "
              .. "on cuda the case above covers the out-of-memory path")
      return
    end
    local out, status = H.run_child([[
      local gpu = require "gpulua"
      local MiB = 1 << 20
      local a = gpu.host("u8", 6 * MiB)
      print("second:", pcall(gpu.host, "u8", 6 * MiB))
      local view = a:view(0, 16)
      a:free()
      print("view:", pcall(function() return view[1] end))
      local b = gpu.host("u8", 6 * MiB)
      print("after free:", #b)
      b = nil -- garbage, not freed: the retry collects it
      local c = gpu.host("u8", 6 * MiB)
      print("after drop:", #c)
      print("pageable:", #gpu.host("u8", 6 * MiB, {pinned = false}))
    ]], {GPULUA_SIM_HOST_MEMORY = "8M"})
    assert.are.equal(0, status, out)
    local msg = assert(out:match("second:\tfalse\t([^\n]*)"), out)
    assert.matches("gpu.host: out of pinned host memory: requested u8%[6291456%] %(6291456 bytes%), "
                   .. "2097152 of 8388608 bytes of host memory available, 6291456 bytes pinned by gpulua", msg)
    assert.matches("view:\tfalse\t[^\n]*host buffer u8%[16%] %(a view%) is freed: its buffer was freed at ", out)
    assert.matches("after free:\t6291456", out)
    assert.matches("after drop:\t6291456", out)
    assert.matches("pageable:\t6291456", out)
  end)

  it("rejects a bad GPULUA_SIM_HOST_MEMORY", function()
    if gpu.backend() ~= "sim" then
      pending("GPULUA_SIM_HOST_MEMORY is a sim setting")
      return
    end
    local out, status = H.run_child([[require "gpulua"]], {GPULUA_SIM_HOST_MEMORY = "lots"})
    assert.are_not.equal(0, status, out)
    assert.matches("GPULUA_SIM_HOST_MEMORY must be a byte count such as 1073741824 or 512M, got 'lots'", out)
  end)
end)
