-- The ordering checker (API.md, "Ordering and ownership"): what orders an
-- access after another stream's, by what the host knows: join, wait, fork,
-- the syncs and the queries (and what does not order); a closed stream's
-- work; long pipelines (the records stay bounded); and verdicts that neither
-- the collector nor a reused stream id may change.
-- What strict refuses is in checker_conflict_spec.lua; the policies, devices
-- and frees in checker_policy_spec.lua.
--
-- Every expected outcome here is decided by what the host knows (the
-- checker never queries the device), so none of it depends on timing: a
-- strict error is raised whether or not the earlier stream has finished.
-- H.busy only makes a missing wait show in the data.
local gpu = require "gpulua"
local H = require "helpers"

local N = 4096 -- elements per slice in these specs

local FILE = "checker_order_spec.lua" -- this file, as messages name it
local here, desc = H.here, H.slice_desc
local function at(line) return H.at(FILE, line) end
local function assert_conflict(err, c) H.assert_conflict(err, FILE, c) end

-- Poll fn until it returns true (it must, eventually); at most 30 s.
local function poll(fn)
  local t0 = os.time()
  local done = fn()
  while not done and os.time() - t0 < 30 do done = fn() end
  assert.is_true(done, "query never became true")
end

describe("the ordering checker", function()
  local dev
  before_each(function() dev = gpu.device(0) end)
  H.checker_hooks()

  describe("ordering the streams makes it legal", function()
    local a, b, x, h, lw
    before_each(function()
      a, b = dev:stream{name = "ck_oa"}, dev:stream{name = "ck_ob"}
      x = dev:alloc("i32", N, {stream = a})
      H.busy(dev, a)
      lw = here(); a:fill(x, 21)
      h = gpu.host("i32", N)
    end)

    local function read_on(s)
      s:copy(h, x)
      s:sync()
      H.check_all(h, 21)
    end

    local function refused_on(s, name)
      local lr = here(); local err = H.refused(function() s:copy(h, x) end)
      assert_conflict(err, {op = "s:copy src", what = desc("i32", N), rw = "read", s = name, s_at = lr,
                            t = "ck_oa", t_at = lw, prev = "writing"})
    end

    it("join", function()
      assert.is_true(rawequal(b, b:join(a)))
      read_on(b)
    end)

    it("join before the write does not", function()
      local c = dev:stream{name = "ck_early"}
      c:join(a)
      a:fill(x, 22)
      local lr = here(); local err = H.refused(function() c:copy(h, x) end)
      assert.matches("stream 'ck_early'.-" .. at(lr) .. ".-stream 'ck_oa'", err)
    end)

    it("join is transitive: c after b after a", function()
      local c = dev:stream{name = "ck_oc"}
      b:join(a)
      c:join(b)
      read_on(c)
    end)

    it("wait on an event recorded after the write", function()
      local e = a:record()
      assert.is_true(rawequal(b, b:wait(e)))
      read_on(b)
    end)

    it("wait on an event recorded before the write does not", function()
      local early = a:record()
      local lw2 = here(); a:fill(x, 23)
      b:wait(early)
      local lr = here(); local err = H.refused(function() b:copy(h, x) end)
      assert_conflict(err, {op = "s:copy src", what = desc("i32", N), rw = "read", s = "ck_ob", s_at = lr,
                            t = "ck_oa", t_at = lw2, prev = "writing"})
    end)

    it("fork after the write", function()
      local c = a:fork{name = "ck_forked"}
      assert.are.equal("ck_forked", c.name)
      read_on(c)
    end)

    it("fork before the write does not", function()
      local c = a:fork{name = "ck_forked_early"}
      local lw2 = here(); a:fill(x, 24)
      local lr = here(); local err = H.refused(function() c:copy(h, x) end)
      assert_conflict(err, {op = "s:copy src", what = desc("i32", N), rw = "read", s = "ck_forked_early",
                            s_at = lr, t = "ck_oa", t_at = lw2, prev = "writing"})
    end)

    it("s:sync of the writer", function()
      assert.is_true(rawequal(a, a:sync()))
      read_on(b)
    end)

    it("a sync of another stream does not", function()
      local c = dev:stream{name = "ck_other"}
      c:sync()
      b:sync()
      refused_on(b, "ck_ob")
    end)

    it("e:sync of an event recorded after the write", function()
      local e = a:record()
      assert.is_true(rawequal(e, e:sync()))
      read_on(b)
    end)

    it("e:sync of an event recorded before the write does not", function()
      local early = a:record()
      local lw2 = here(); a:fill(x, 25)
      early:sync()
      local lr = here(); local err = H.refused(function() b:copy(h, x) end)
      assert_conflict(err, {op = "s:copy src", what = desc("i32", N), rw = "read", s = "ck_ob", s_at = lr,
                            t = "ck_oa", t_at = lw2, prev = "writing"})
    end)

    it("dev:sync", function()
      assert.is_true(rawequal(dev, dev:sync()))
      read_on(b)
    end)

    H.it_devices(2, "dev:sync of another device does not", function()
      gpu.device(1):sync()
      refused_on(b, "ck_ob")
    end)

    it("gpu.sync", function()
      gpu.sync()
      read_on(b)
    end)

    it("s:query() once it returns true", function()
      poll(function() return a:query() end)
      read_on(b)
    end)

    it("e:query() once it returns true", function()
      local e = a:record()
      poll(function() return e:query() end)
      read_on(b)
    end)

    it("a query of another stream does not", function()
      local c = dev:stream{name = "ck_idle"}
      assert.is_true(c:query())
      assert.is_true(b:query())
      refused_on(b, "ck_ob")
    end)
  end)

  describe("closing a stream", function()
    it("keeps its queued work: it lands, and a sync of main covers it", function()
      local a = dev:stream{name = "ck_close_keep"}
      local x = dev:alloc("i32", N, {stream = a})
      H.busy(dev, a, 8)
      a:fill(x, 3)
      local h = gpu.host("i32", N)
      local lc = here(); a:copy(h, x)
      a:close()
      -- not synced yet: the host does not know the copy is done
      local err = H.refused(function() return h[1] end)
      assert.matches("stream 'ck_close_keep' of device 0 may still write it %(copy queued at [^)]*" .. at(lc), err)
      assert.is_true(rawequal(dev.main, dev.main:sync()))
      H.check_all(h, 3)
    end)

    it("orders its work before main's later work", function()
      local a, b = dev:stream{name = "ck_closed"}, dev:stream{name = "ck_closed_other"}
      local x = dev:alloc("i32", N, {stream = a})
      H.busy(dev, a, 8)
      local lw = here(); a:fill(x, 6)
      a:close()
      -- a stream that was not ordered after main is still refused, naming the closed stream
      local hb = gpu.host("i32", N)
      local lr = here(); local err = H.refused(function() b:copy(hb, x) end)
      assert_conflict(err, {op = "s:copy src", what = desc("i32", N), rw = "read", s = "ck_closed_other",
                            s_at = lr, t = "ck_closed", t_at = lw, prev = "writing"})
      local c = dev:stream{name = "ck_closed_after_main"}
      c:join(dev.main)
      local hc = gpu.host("i32", N)
      assert.has_no.errors(function() c:copy(hc, x) end)
      local hm = gpu.host("i32", N)
      assert.has_no.errors(function() dev.main:copy(hm, x) end)
      dev.main:sync()
      H.check_all(hm, 6)
      c:sync()
      H.check_all(hc, 6)
    end)
  end)

  describe("long pipelines", function()
    it("2000 rounds of fill / join / copy / join keep working (the records stay bounded)", function()
      local a, b = dev:stream{name = "ck_pipe_a"}, dev:stream{name = "ck_pipe_b"}
      local x = dev:alloc("i32", 256, {stream = a})
      local y = dev:alloc("i32", 256, {stream = b})
      for i = 1, 2000 do
        a:fill(x, i)
        b:join(a)
        b:copy(y, x)
        a:join(b)
      end
      H.check_all(y:read{stream = b}, 2000)
      H.check_all(x:read{stream = a}, 2000)
    end)
  end)

  describe("garbage collection", function()
    -- regression (once broken): a host buffer's finalizer (hostmem_unref -> gl_access_wait_all)
    -- synchronises every stream that has a pending copy of it and then marks
    -- that whole stream as reached (gl_clock_host_reached(s, s->seq)), not just
    -- the copy it waited for. So whether strict refuses a later access depends
    -- on when the collector happens to run.
    it("collecting an unrelated host buffer does not change a strict verdict", function()
      local a, b = dev:stream{name = "ck_gc_a"}, dev:stream{name = "ck_gc_b"}
      local x0 = dev:alloc("i32", 64, {stream = a})
      local x = dev:alloc("i32", 64, {stream = a})
      local tmp = gpu.host("i32", 64)
      a:copy(tmp, x0)
      tmp = nil -- luacheck: ignore 311
      local lw = here(); a:fill(x, 1) -- queued after the copy into tmp
      collectgarbage()
      collectgarbage() -- tmp's finalizer waits for its copy (and, today, marks all of a done)
      local h = gpu.host("i32", 64)
      local lr = here(); local err = H.refused(function() b:copy(h, x) end)
      assert_conflict(err, {op = "s:copy src", what = desc("i32", 64), rw = "read", s = "ck_gc_b", s_at = lr,
                            t = "ck_gc_a", t_at = lw, prev = "writing"})
    end)

    it("collecting an unreachable stream (main waits for it) does not order main after it", function()
      local t = dev:stream{name = "ck_gc_dropped"}
      local x = dev:zeros("f32", N, {stream = t})
      local lw = here(); t:fill(x, 1)
      t = nil -- luacheck: ignore 311
      collectgarbage()
      collectgarbage() -- t's finalizer closes it: main really waits for its work
      local h = gpu.host("f32", N)
      local lr = here(); local err = H.refused(function() dev.main:copy(h, x) end)
      assert_conflict(err, {op = "s:copy src", what = desc("f32", N), rw = "read", s = "main", s_at = lr,
                            t = "ck_gc_dropped", t_at = lw, prev = "writing"})
    end)

    it("collecting an unrelated slice (its free waits for its users) does not order its stream", function()
      local a, home = dev:stream{name = "ck_gc_user"}, dev:stream{name = "ck_gc_home"}
      local y = dev:zeros("f32", N)
      a:join(dev.main)
      home:join(dev.main)
      local lw = here(); a:fill(y, 2)
      local z = dev:zeros("f32", 16, {stream = home})
      a:join(home)
      a:fill(z, 1)
      z = nil -- luacheck: ignore 311
      collectgarbage()
      collectgarbage() -- z's free on its home stream waits for a's fill of z
      local lr = here(); local err = H.refused(function() home:fill(y, 3) end)
      assert_conflict(err, {op = "s:fill", what = desc("f32", N), rw = "written", s = "ck_gc_home", s_at = lr,
                            t = "ck_gc_user", t_at = lw, prev = "writing"})
    end)

    it("the collection an allocation's retry runs does not change a verdict", function()
      local t = dev:stream{name = "ck_gc_oom"}
      local x = dev:zeros("f32", N, {stream = t})
      local lw = here(); t:fill(x, 1)
      t = nil -- luacheck: ignore 311
      -- more than the device has: the retry collects garbage (closing t) and syncs the device, and
      -- the allocation still fails (more than the device has left could succeed after the
      -- collection, and the pool would keep the whole device from the processes after it)
      assert.is_false(pcall(dev.alloc, dev, "u8", dev.memory + 1))
      local h = gpu.host("f32", N)
      local lr = here(); local err = H.refused(function() dev.main:copy(h, x) end)
      assert_conflict(err, {op = "s:copy src", what = desc("f32", N), rw = "read", s = "main", s_at = lr,
                            t = "ck_gc_oom", t_at = lw, prev = "writing"})
    end)
  end)

  describe("stream ids reused after a stream is gone", function()
    -- regression (once broken): an event keeps a snapshot of its stream's vector clock, indexed by
    -- stream id; when a stream in that snapshot is freed and a new stream gets
    -- its id, waiting on or syncing the old event orders the new stream's work
    -- (wrongly) before the waiter, and strict misses the conflict.
    it("an old event does not order a new stream that took a dead stream's id", function()
      collectgarbage()
      collectgarbage()
      local t = dev:stream{name = "ck_dead"}
      local scratch = dev:alloc("u8", 64, {stream = t})
      for i = 1, 20 do t:fill(scratch, i) end -- t's position is past 20
      scratch:free()
      scratch = nil -- luacheck: ignore 311
      local c = dev:stream{name = "ck_old_event"}
      c:join(t)
      local e = c:record() -- its snapshot holds t's position
      t:close()
      t = nil -- luacheck: ignore 311
      collectgarbage()
      collectgarbage() -- t's struct is gone; its id is free again
      local u = dev:stream{name = "ck_new"}
      local x = dev:alloc("i32", N, {stream = u})
      local lw = here(); u:fill(x, 1) -- u's position 2 <= t's old position
      local b = dev:stream{name = "ck_waiter"}
      b:wait(e)
      local h = gpu.host("i32", N)
      local lr = here(); local err = H.refused(function() b:copy(h, x) end)
      assert_conflict(err, {op = "s:copy src", what = desc("i32", N), rw = "read", s = "ck_waiter", s_at = lr,
                            t = "ck_new", t_at = lw, prev = "writing"})
      e:sync()
      lr = here(); err = H.refused(function() b:copy(h, x) end)
      assert_conflict(err, {op = "s:copy src", what = desc("i32", N), rw = "read", s = "ck_waiter", s_at = lr,
                            t = "ck_new", t_at = lw, prev = "writing"})
    end)
  end)
end)
