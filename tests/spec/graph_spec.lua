-- CUDA graphs (API.md "CUDA graphs"): capture, replay, update, close; every
-- call that cannot be captured is refused at its line and the capture then
-- abandoned cleanly; the checker checks the capture's branches against each
-- other and every replay as if its work were queued on the launching stream.
local gpu = require "gpulua"
local H = require "helpers"

local SIM = gpu.backend() == "sim"
local N = 1024
local CFG = {grid = 4, block = 256}

describe("graphs", function()
  local dev, main, s, k
  before_each(function()
    gpu.policy("strict")
    dev = gpu.device(0)
    main = dev.main
    s = dev:stream{name = "cap"}
    k = gpu.kernels
  end)
  after_each(function()
    gpu.policy("strict")
    gpu.sync()
  end)

  -- y += a * x, `times` times, as one graph on s
  local function axpy_graph(x, y, a, times, opts)
    return s:capture(function(cs)
      for _ = 1, times do cs:launch(k.axpy, CFG, a, x, y, N) end
    end, opts)
  end

  describe("capture and replay", function()
    it("replays the captured work, each launch as often as the graph is launched", function()
      local x = H.upload(s, "f32", H.values("f32", N, 3, -4, 4))
      local y = dev:zeros("f32", N, {stream = s})
      local g = axpy_graph(x, y, 0.5, 10, {name = "step"})
      assert.are.equal("step", g.name)
      assert.are.equal(10, g.nodes)
      assert.is_true(rawequal(dev, g.device))
      assert.are.equal(0, g.launches)
      assert.matches("gpulua.Graph%('step', 10 nodes, device 0%)", tostring(g))
      s:sync()
      H.check_all(y:read{stream = s}, 0) -- nothing ran during the capture
      assert.is_true(rawequal(g, g:launch(s)))
      g:launch(s)
      g:launch(s)
      s:sync()
      assert.are.equal(3, g.launches)
      -- eager: the same work queued one launch at a time
      local e = dev:zeros("f32", N, {stream = s})
      for _ = 1, 30 do s:launch(k.axpy, CFG, 0.5, x, e, N) end
      local want, got = e:read{stream = s}, y:read{stream = s}
      for i = 1, N do
        if got[i] ~= want[i] then assert.are.equal(want[i], got[i], "element " .. i) end
      end
      g:close()
    end)

    it("names a graph 'graph' by default and checks its options", function()
      local x, y = dev:zeros("f32", N, {stream = s}), dev:zeros("f32", N, {stream = s})
      local g = axpy_graph(x, y, 1, 1)
      assert.are.equal("graph", g.name)
      g:close()
      H.fails("s:capture: option 'name' expected a string, got number 5", axpy_graph, x, y, 1, 1, {name = 5})
      H.fails("s:capture: unknown option 'nmae'", axpy_graph, x, y, 1, 1, {nmae = "x"})
      H.fails(H.lit("s:capture: expected a function to capture, as in s:capture(function(cs) ... end[, {name =}]), "
        .. "got no value"), s.capture, s)
      local line = H.here() + 2
      local err = H.fails("s:capture: expected a function to capture",
        function() local bad = s:capture{name = "x"}; return bad end)
      assert.matches("^[^:]*graph_spec%.lua:" .. line .. ": s:capture: .*, got table$", err)
    end)

    it("g:update names itself for a bad function or stream option, at the script's line", function()
      local x, y = dev:zeros("f32", N, {stream = s}), dev:zeros("f32", N, {stream = s})
      local g = axpy_graph(x, y, 1, 1)
      local line = H.here() + 1
      local err = H.fails("g:update", function() g:update{stream = 5} end)
      assert.matches("^[^:]*graph_spec%.lua:" .. line .. ": " .. H.lit("g:update: expected a function to capture, as "
        .. "in g:update(function(cs) ... end[, {stream =}]), got table") .. "$", err)
      line = H.here() + 1
      err = H.fails("g:update", function() g:update(function() end, {stream = 5}) end)
      assert.matches("^[^:]*graph_spec%.lua:" .. line .. ": g:update: option 'stream' expected a gpulua%.Stream, got "
        .. "number 5$", err)
      g:close()
    end)

    it("replays on any stream of its device, copies and fills included", function()
      local h = H.iota("f32", N)
      local out = gpu.host("f32", N)
      local x = dev:alloc("f32", N, {stream = s})
      local g = s:capture(function(cs)
        cs:copy(x, h)
        cs:launch(k.scale, CFG, 3.0, x, x, N)
        cs:copy(out, x)
      end)
      assert.are.equal(3, g.nodes)
      local t = dev:stream{name = "other"}
      s:sync()
      g:launch(t)
      t:sync()
      for i = 1, N do assert.are.equal(3 * i, out[i]) end
      g:close()
    end)

    it("a graph of forked branches runs them all, joined back", function()
      local xs = {}
      for b = 1, 4 do xs[b] = dev:zeros("f32", N, {stream = s}) end
      local g = s:capture(function(cs)
        local branches = {}
        for b = 1, 4 do
          branches[b] = cs:fork{name = "branch" .. b}
          branches[b]:launch(k.fill, CFG, xs[b], b, N)
        end
        for b = 1, 4 do cs:join(branches[b]) end
      end, {name = "fan"})
      assert.is_true(g.nodes >= 4)
      s:sync()
      g:launch(s)
      s:sync()
      for b = 1, 4 do H.check_all(xs[b]:read{stream = s}, b) end
      g:close()
    end)

    it("runs a kernel again at every replay", function()
      local kk = gpu.compile([[extern "C" __global__ void inc(float *y, unsigned long long n) {
        if (threadIdx.x < n) y[threadIdx.x] += 1.0f;
      }]], {name = "inc.cu"}):kernel("inc", "f32*, u64")
      if H.host_kernels() then kk:host(function(_, y, n) for i = 1, n do y[i] = y[i] + 1 end end) end
      local y = dev:zeros("f32", 16, {stream = s})
      local g = s:capture(function(cs) cs:launch(kk, {grid = 1, block = 16}, y, 16) end)
      s:sync()
      H.check_all(y:read{stream = s}, 0)
      for _ = 1, 5 do g:launch(s) end
      s:sync()
      H.check_all(y:read{stream = s}, 5)
      g:close()
    end)

    if H.host_kernels() then
      it("runs a sim host kernel again at every replay #simhost", function()
        local calls = 0
        local kk = gpu.compile([[extern "C" __global__ void inc(float *y, unsigned long long n) {}]],
          {name = "inc.cu"}):kernel("inc", "f32*, u64")
        kk:host(function(_, y, n)
          calls = calls + 1
          for i = 1, n do y[i] = y[i] + 1 end
        end)
        local y = dev:zeros("f32", 16, {stream = s})
        local g = s:capture(function(cs) cs:launch(kk, {grid = 1, block = 16}, y, 16) end)
        assert.are.equal(0, calls)
        s:sync()
        for _ = 1, 5 do g:launch(s) end
        s:sync()
        assert.are.equal(5, calls)
        H.check_all(y:read{stream = s}, 5)
        g:close()
      end)
    else
      pending("runs a sim host kernel again at every replay: " .. H.HOST_MODE_ONLY)
    end
  end)

  describe("calls refused during a capture", function()
    -- fn(cs, x, y) must fail naming `call`, the graph and a line of this file;
    -- afterwards the stream works normally and another capture succeeds
    local function refused(call, fn)
      local x = dev:zeros("f32", N, {stream = s})
      local y = dev:zeros("f32", N, {stream = s})
      s:sync()
      local err = H.fails(H.lit(call), function()
        return s:capture(function(cs) fn(cs, x, y) end, {name = "refusing"})
      end)
      assert.matches("graph 'refusing'", err)
      assert.matches("graph_spec.lua:%d+", err)
      -- the stream is usable: eager work runs, and so does a new capture
      s:launch(k.fill, CFG, y, 7, N)
      H.check_all(y:read{stream = s}, 7)
      local g = axpy_graph(x, y, 1, 2)
      s:sync()
      g:launch(s)
      s:sync()
      H.check_all(y:read{stream = s}, 7)
      g:close()
      return err
    end

    it("refuses host waits and reads", function()
      local err = refused("s:sync at", function(cs) cs:sync() end)
      assert.matches("not allowed during the capture of graph 'refusing' %(s:capture at [^)]*graph_spec.lua:%d+%)",
        err)
      refused("s:query", function(cs) cs:query() end)
      refused("dev:sync", function() dev:sync() end)
      refused("gpu.sync", function() gpu.sync() end)
      refused("x:read", function(_, x) x:read() end)
      refused("e:sync", function(cs, x)
        local e = main:record()
        cs:launch(k.fill, CFG, x, 1, N)
        e:sync()
      end)
    end)

    it("refuses events that time or wait for outside work", function()
      refused("s:record{timing = true}", function(cs) cs:record{timing = true} end)
      local outside = main:record()
      refused("cannot wait for an event recorded outside the capture", function(cs) cs:wait(outside) end)
      refused("e:query", function() outside:query() end)
      refused("e:elapsed", function()
        local a, b = main:record{timing = true}, main:record{timing = true}
        a:elapsed(b)
      end)
    end)

    it("refuses allocations and frees", function()
      refused("dev:alloc", function() dev:alloc("f32", 4) end)
      refused("dev:zeros", function() dev:zeros("f32", 4) end)
      local z = dev:zeros("f32", 4)
      refused("x:free", function() z:free() end)
      z:free()
      refused("gpu.host", function() gpu.host("f32", 4) end)
      local h = gpu.host("f32", 4)
      refused("h:free", function() h:free() end)
      h:free()
      local t = dev:stream{name = "closable"}
      refused("s:close", function() t:close() end)
      t:close()
    end)

    it("refuses work on a stream outside the capture, and waits across its edge", function()
      local other = dev:stream{name = "outsider"}
      local err = refused("s:launch on stream 'outsider'", function(_, x) other:launch(k.fill, CFG, x, 1, N) end)
      assert.matches("not part of the capture of graph 'refusing'", err)
      refused("s:fill on stream 'outsider'", function(_, x) other:fill(x, 1) end)
      refused("cannot wait for work outside the capture (stream 'outsider')", function(cs) cs:join(other) end)
      refused("stream 'outsider' at", function(cs) other:join(cs) end)
      refused("captures do not nest", function(cs) cs:capture(function() end) end)
    end)

    it("names the graph in any other error raised inside a capture", function()
      local x = dev:zeros("f32", N, {stream = s})
      local err = H.fails("block", function()
        return s:capture(function(cs) cs:launch(k.fill, {grid = 1, block = 4096}, x, 1, N) end, {name = "typo"})
      end)
      assert.matches("%(during the capture of graph 'typo', s:capture at [^)]*graph_spec.lua:%d+%)", err)
      H.fails("use of a freed slice", function()
        local z = dev:zeros("f32", N, {stream = s})
        z:free()
        return s:capture(function(cs) cs:fill(z, 1) end, {name = "freed"})
      end)
      local g = s:capture(function(cs) cs:fill(x, 1) end)
      g:close()
    end)

    it("refuses host access to a buffer the capture copies, and pageable copies", function()
      local h = gpu.host("f32", N)
      refused("read from Lua at", function(cs, x)
        cs:copy(h, x)
        return h[1]
      end)
      refused("written from Lua at", function(cs, x)
        cs:copy(x, h)
        h[1] = 2
      end)
      local pageable = gpu.host("f32", N, {pinned = false})
      refused("pageable host memory cannot be captured", function(cs, x) cs:copy(x, pageable) end)
    end)

    it("refuses a fork not joined back, naming it", function()
      refused("stream 'loose', forked from 'cap' in the capture, was not joined back", function(cs, x)
        local t = cs:fork{name = "loose"}
        t:launch(k.fill, CFG, x, 1, N)
      end)
    end)

    it("a refused call caught inside fn leaves the capture going", function()
      local x = dev:zeros("f32", N, {stream = s})
      local g = s:capture(function(cs)
        assert.is_false(pcall(cs.sync, cs))
        assert.is_false(pcall(dev.alloc, dev, "f32", 4))
        cs:launch(k.fill, CFG, x, 9, N)
      end)
      s:sync()
      g:launch(s)
      s:sync()
      H.check_all(x:read{stream = s}, 9)
      g:close()
    end)

    it("an error of the script's own inside fn comes out unchanged, and the capture is discarded", function()
      local x = dev:zeros("f32", N, {stream = s})
      local ok, err = pcall(s.capture, s, function(cs)
        cs:launch(k.fill, CFG, x, 1, N)
        error({mine = true})
      end)
      assert.is_false(ok)
      assert.are.same({mine = true}, err)
      s:sync()
      H.check_all(x:read{stream = s}, 0) -- the captured fill never ran
    end)

    it("a <close> refused as an error ends the block names a line and the error that ended it", function()
      local t = dev:stream{name = "closed_in_capture"}
      local line = H.here() + 2 -- the frames of fn are gone: the line of s:capture
      local ok, err = pcall(function()
        s:capture(function()
          local _ <close> = t
          error("the script's own")
        end)
      end)
      assert.is_false(ok)
      assert.matches("^[^:]*graph_spec%.lua:" .. line .. ": closing a stream %(<close>%) at ", err)
      assert.matches(H.lit("(closing a to-be-closed gpulua.Stream while an error ended its block: ") .. "[^:]*"
        .. "graph_spec%.lua:%d+: the script's own%)$", err)
      t:close()
    end)
  end)

  describe("the checker", function()
    it("finds branches of a capture that race, at the lines that queued them (strict)", function()
      local x = dev:zeros("f32", N, {stream = s})
      local err = H.fails("s:launch of 'fill_f32' argument 1: .* is written on stream 'b' .* while stream 'a' .* may "
        .. "still be writing it %(queued at [^)]*graph_spec.lua:%d+%)", s.capture, s, function(cs)
          local a, b = cs:fork{name = "a"}, cs:fork{name = "b"}
          a:launch(k.fill, CFG, x, 1, N)
          b:launch(k.fill, CFG, x, 2, N)
          cs:join(a)
          cs:join(b)
        end)
      assert.matches("graph_spec.lua:%d+", err)
    end)

    it("orders racing branches inside the graph under auto", function()
      gpu.policy("auto")
      local x = dev:zeros("f32", N, {stream = s})
      local g = s:capture(function(cs)
        local a, b = cs:fork{name = "a"}, cs:fork{name = "b"}
        a:launch(k.fill, CFG, x, 1, N)
        b:launch(k.scale, CFG, 5.0, x, x, N) -- waits for a's fill: a dependency in the graph
        cs:join(a)
        cs:join(b)
      end)
      s:sync()
      g:launch(s)
      s:sync()
      H.check_all(x:read{stream = s}, 5)
      g:close()
    end)

    it("checks a replay against other streams' work, naming the graph and the capture line", function()
      local x = dev:zeros("f32", N, {stream = s})
      local y = dev:zeros("f32", N, {stream = s})
      local g = axpy_graph(x, y, 1, 1, {name = "reader"})
      s:sync()
      local t = dev:stream{name = "writer"}
      t:launch(k.fill, CFG, x, 4, N)
      H.fails("g:launch of graph 'reader' on stream 'cap' %(device 0%) at [^:]*graph_spec.lua:%d+: its node captured "
        .. "at [^ ]*graph_spec.lua:%d+ %(s:launch of 'axpy_f32' argument 2%) reads slice f32%[1024%] on device 0, "
        .. "while stream 'writer' %(device 0%) may still be writing it", function() g:launch(s) end)
      s:join(t)
      g:launch(s)
      -- the replay's writes are recorded on s: reading y on main without ordering is a conflict
      H.fails("is read on stream 'main' .* while stream 'cap' .* may still be writing it", main.copy, main,
        gpu.host("f32", N), y)
      s:sync()
      H.check_all(y:read{stream = s}, 4)
      g:close()
    end)

    it("names the memory of a replay's conflict as an eager conflict does: the view, a workspace, a scratch",
      function()
      local x = dev:zeros("f32", N, {stream = s})
      local parts = x:split(4)
      local g = s:capture(function(cs) -- four adjacent views: one range for the checker
        for i = 1, 4 do cs:fill(parts[i], i) end
      end)
      s:sync()
      local t = dev:stream{name = "writer"}
      t:fill(parts[3], 9)
      -- the node that conflicts, with its own line and view, not the range the four make
      H.fails("its node captured at [^ ]*graph_spec.lua:%d+ %(s:fill%) writes slice f32%[256%] %(view at offset 512 "
        .. "of f32%[1024%]%) on device 0, while stream 'writer' %(device 0%) may still be writing it",
        function() g:launch(s) end)
      t:sync()
      g:close()
      -- gpulua's own memory, named as at an eager conflict
      local a, b = dev:zeros("f32", 4, {stream = s}), dev:zeros("f32", 4, {stream = s})
      local c1, c2 = dev:zeros("f32", 4, {stream = s}), dev:zeros("f32", 4, {stream = s})
      s:gemm{a = a, b = b, c = c1, m = 2, n = 2, k = 2} -- s's workspace
      s:launch(k.sum, {block = 32}, a, c2, 4) -- s's scratch
      s:sync()
      local g2 = s:capture(function(cs) cs:gemm{a = a, b = b, c = c1, m = 2, n = 2, k = 2} end)
      s:gemm{a = a, b = b, c = c2, m = 2, n = 2, k = 2} -- writes the workspace again, not c1
      local r = dev:stream{name = "r"}
      H.fails("its node captured at [^ ]*graph_spec.lua:%d+ %(s:gemm%) writes the cuBLAS workspace of stream 'cap', "
        .. "while stream 'cap' %(device 0%) may still be writing it", function() g2:launch(r) end)
      s:sync()
      local g3 = s:capture(function(cs) cs:launch(k.sum, {block = 32}, a, c1, 4) end)
      s:launch(k.sum, {block = 32}, a, c2, 4)
      H.fails("its node captured at [^ ]*graph_spec.lua:%d+ %(s:launch of 'sum_f32'%) writes the reduction scratch of "
        .. "stream 'cap', while stream 'cap' %(device 0%) may still be writing it", function() g3:launch(r) end)
      s:sync()
      g2:close()
      g3:close()
      r:close()
    end)

    it("inserts the waits a replay needs under auto", function()
      gpu.policy("auto")
      local x = dev:zeros("f32", N, {stream = s})
      local y = dev:zeros("f32", N, {stream = s})
      local g = axpy_graph(x, y, 1, 1)
      s:sync()
      local t = dev:stream{name = "writer"}
      H.busy(dev, t)
      t:launch(k.fill, CFG, x, 6, N)
      g:launch(s)
      H.check_all(y:read(), 6) -- main waits for the replay too
      g:close()
    end)

    it("a host read of a buffer a replay writes waits for, or is refused before, the replay", function()
      local x = dev:zeros("f32", N, {stream = s})
      local out = gpu.host("f32", N)
      local g = s:capture(function(cs)
        cs:fill(x, 3)
        cs:copy(out, x)
      end)
      s:sync()
      g:launch(s)
      H.fails("read from Lua at .* while stream 'cap' of device 0 may still write it", function() return out[1] end)
      s:sync()
      H.check_all(out, 3)
      g:close()
    end)
  end)

  describe("lifetimes", function()
    it("refuses to free a slice a live graph uses, naming the graph; frees after close", function()
      local x = dev:zeros("f32", N, {stream = s})
      local y = dev:zeros("f32", N, {stream = s})
      local g = axpy_graph(x, y, 1, 1, {name = "holder"})
      H.fails("x:free: slice f32%[1024%] on device 0 is used by graph 'holder' %(captured at "
        .. "[^)]*graph_spec.lua:%d+%): close the graph first", x.free, x)
      local h = gpu.host("f32", N)
      local g2 = s:capture(function(cs) cs:copy(h, y) end, {name = "copier"})
      H.fails("h:free: host buffer f32%[1024%] is used by graph 'copier'", h.free, h)
      g:close()
      g2:close()
      x:free()
      h:free()
    end)

    it("keeps the memory of collected slices while the graph lives", function()
      local h = H.iota("f32", N)
      local out = gpu.host("f32", N)
      local g
      do
        local x = dev:alloc("f32", N, {stream = s})
        g = s:capture(function(cs)
          cs:copy(x, h)
          cs:launch(k.scale, CFG, 2.0, x, x, N)
          cs:copy(out, x)
        end)
      end
      collectgarbage()
      collectgarbage()
      s:sync()
      g:launch(s)
      s:sync()
      for i = 1, N do assert.are.equal(2 * i, out[i]) end
      g:close() -- the memory goes now (after the replays)
      collectgarbage()
    end)

    it("a collection inside the capture's function releases its garbage after the capture, not into it", function()
      local x = dev:zeros("f32", N, {stream = s})
      local seen = setmetatable({}, {__mode = "k"})
      local big = SIM and (64 << 20) or 4096
      do
        local gx = dev:zeros("u8", big, {stream = s}) -- freed on s, the capturing stream, if released inside
        local gs = dev:stream{name = "garbage"}
        gs:fill(dev:zeros("f32", 16, {stream = gs}), 1)
        seen[gx], seen[gs], seen[gpu.host("f32", 16)] = true, true, true
      end
      local before = dev:free_memory()
      local g = s:capture(function(cs)
        cs:fill(x, 1)
        collectgarbage() -- the collector is stopped during a capture; a full collection still runs
        collectgarbage()
        cs:launch(k.scale, CFG, 2.0, x, x, N)
      end, {name = "gc"})
      assert.are.equal(2, g.nodes) -- no free, wait or close went into the graph
      g:launch(s)
      H.check_all(x:read{stream = s}, 2)
      -- released once the capture ended: collected for good at the next collection
      dev:sync()
      collectgarbage()
      collectgarbage()
      assert.is_nil(next(seen))
      if SIM then -- the sim's pool keeps nothing: the big slice's memory is back
        assert.is_true(dev:free_memory() >= before + big, ("%d free, %d before"):format(dev:free_memory(), before))
      end
      g:close()
    end)

    it("a graph closed inside another capture is closed at once, its memory let go when that capture ends",
      function()
      local y = dev:zeros("f32", N)
      local t = dev:stream{name = "replayer"}
      for _, on in ipairs{main, t} do -- what a first capture on a stream keeps for good (spare scratch)
        on:capture(function(cs) cs:fill(y, 0) end):close()
      end
      collectgarbage() -- earlier garbage gone now, not in the measure
      collectgarbage()
      dev:sync()
      local before = dev:free_memory()
      local g
      do
        local x = dev:alloc("u8", 262144) -- its free goes on main, after the replay on t
        t:wait(main:record())
        g = t:capture(function(cs) cs:fill(x, 2) end, {name = "held"})
      end
      g:launch(t)
      collectgarbage() -- x collected: its free waits for the graph's close
      collectgarbage()
      local g2 = main:capture(function(cs)
        g:close() -- a free on main ordered after t: a wait the capture of main would refuse
        assert.matches("closed", tostring(g))
        H.fails("graph is closed", g.launch, g, cs)
        cs:fill(y, 1)
      end, {name = "outer"})
      assert.are.equal(1, g2.nodes) -- nothing of the close went into it
      local z = dev:zeros("f32", 4) -- the next call: no release failed
      z:free()
      g2:launch(main)
      H.check_all(y:read(), 1)
      g2:close()
      dev:sync()
      if SIM then -- the sim's pool keeps nothing: x's memory is back
        assert.are.equal(before, dev:free_memory())
      end
    end)

    it("closing twice is an error, <close> closes, and a closed graph says so", function()
      local x, y = dev:zeros("f32", N, {stream = s}), dev:zeros("f32", N, {stream = s})
      local g = axpy_graph(x, y, 1, 1)
      g:launch(s)
      g:close() -- without waiting for the replay
      local line = H.here() - 1
      H.fails("g:close: graph 'graph' is already closed %(at [^)]*" .. H.at("graph_spec.lua", line) .. "%)", g.close, g)
      do local _ <close> = g end -- a <close> after a close is not an error
      assert.matches("closed", tostring(g))
      assert.is_nil(g.name)
      H.fails("graph is closed", g.launch, g, s)
      H.fails("graph is closed", g.update, g, function() end)
      do
        local g2 <close> = axpy_graph(x, y, 1, 1)
        g2:launch(s)
      end
      s:sync()
      H.check_all(y:read{stream = s}, 0)
    end)
  end)

  describe("g:update", function()
    it("updates in place for the same topology, rebuilds for another, and keeps the old work on error", function()
      local x = H.upload(s, "f32", H.values("f32", N, 5, -2, 2))
      local y = dev:zeros("f32", N, {stream = s})
      local a = 1.0
      local function body(cs)
        cs:launch(k.fill, CFG, y, 0, N)
        cs:launch(k.axpy, CFG, a, x, y, N)
      end
      local g = s:capture(body, {name = "upd"})
      s:sync()
      g:launch(s)
      s:sync()
      local xv = x:read{stream = s}
      local yv = y:read{stream = s}
      for i = 1, N do assert.are.equal(xv[i], yv[i]) end
      a = 2.0
      local same, in_place = g:update(body, {stream = s})
      assert.is_true(rawequal(g, same))
      assert.is_true(in_place)
      g:launch(s)
      s:sync()
      yv = y:read{stream = s}
      for i = 1, N do assert.are.equal(H.f32(2 * xv[i]), yv[i]) end
      local _, again = g:update(function(cs)
        body(cs)
        cs:launch(k.scale, CFG, 0.5, y, y, N)
      end, {stream = s})
      assert.is_false(again)
      assert.are.equal(3, g.nodes)
      g:launch(s)
      s:sync()
      yv = y:read{stream = s}
      for i = 1, N do assert.are.equal(xv[i], yv[i]) end
      H.fails("s:sync at", g.update, g, function(cs) cs:sync() end, {stream = s})
      assert.are.equal(3, g.nodes)
      g:launch(s)
      s:sync()
      yv = y:read{stream = s}
      for i = 1, N do assert.are.equal(xv[i], yv[i]) end
      g:close()
    end)

    it("refuses to close the graph inside its own update's function, naming both lines", function()
      local x = dev:zeros("f32", N, {stream = s})
      local g = s:capture(function(cs) cs:fill(x, 1) end, {name = "self"})
      local errs = {}
      local at = H.here() + 1
      local _, in_place = g:update(function(cs)
        errs[1] = select(2, pcall(function() g:close() end))
        errs[2] = select(2, pcall(function() local _ <close> = g end))
        cs:fill(x, 3)
      end, {stream = s})
      for i, call in ipairs{"g:close", "closing a graph %(<close>%)"} do
        assert.matches(call .. " at [^ ]*" .. H.at("graph_spec.lua", at + i) .. ": graph 'self' is being updated "
          .. "%(g:update at [^ ]*" .. H.at("graph_spec.lua", at) .. "%): a graph cannot be closed inside its own "
          .. "update's function; close it after g:update returns", errs[i])
      end
      assert.is_true(in_place) -- the update went on
      g:launch(s)
      H.check_all(x:read{stream = s}, 3)
      g:close()
    end)
  end)

  H.it_devices(2, "refuses a replay on another device", function()
    local x, y = dev:zeros("f32", N, {stream = s}), dev:zeros("f32", N, {stream = s})
    local g = axpy_graph(x, y, 1, 1)
    H.fails("g:launch: graph 'graph' was captured on device 0, but stream 'main' is on device 1", g.launch, g,
      gpu.device(1).main)
    g:close()
  end)
end)
