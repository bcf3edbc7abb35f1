-- gpu.comm (NCCL on streams): the five collectives' results on every rank of
-- this process against a CPU reference, in place and not, for several dtypes
-- and ops; every error path; the checker's records on each rank's stream;
-- close. With one device (the GPU machine lends one H200) the communicator has
-- one rank, and the multi-rank cases run on sim only (each says so).
local gpu = require "gpulua"
local H = require "helpers"

describe("gpu.comm", function()
  local n -- ranks: every device, at most 4
  local devs
  before_each(function()
    gpu.policy("strict")
    n = math.min(gpu.count(), 4)
    devs = {}
    for r = 1, n do devs[r] = gpu.device(r - 1) end
  end)

  -- per rank r (1-based) a slice of `count` elements of dtype dt: f(r, i)
  local function per_rank(dt, count, f)
    local list = {}
    for r = 1, n do
      local t = {}
      for i = 1, count do t[i] = f(r, i) end
      list[r] = H.upload(devs[r], dt, t)
    end
    return list
  end

  local function read_all(list)
    local out = {}
    for r = 1, n do out[r] = list[r]:read() end
    return out
  end

  local function reduce(op, values)
    local v = values[1]
    for j = 2, #values do
      local x = values[j]
      if op == "sum" or op == "avg" then v = v + x
      elseif op == "prod" then v = v * x
      elseif op == "max" then v = math.max(v, x)
      else v = math.min(v, x) end
    end
    if op == "avg" then v = v / #values end
    return v
  end

  it("all_reduce: every op, in place and into recv, several dtypes", function()
    local comm = gpu.comm{devices = devs}
    assert.are.equal(n, comm.size)
    assert.are.equal(n, #comm.devices)
    assert.are.equal(devs[1], comm.devices[1])
    for _, dt in ipairs{"f32", "f64", "i32", "u8", "i64", "bf16"} do
      for _, op in ipairs{"sum", "prod", "max", "min", "avg"} do
        local f = function(r, i) return (r * 3 + i) % 5 + 1 end
        local send = per_rank(dt, 6, f)
        local recv = per_rank(dt, 6, function() return 0 end)
        comm:all_reduce(send, {op = op, recv = recv})
        local got = read_all(recv)
        for i = 1, 6 do
          local vals = {}
          for r = 1, n do vals[r] = f(r, i) end
          local want = reduce(op, vals)
          if dt:match("^[iu]") then want = math.floor(want) end -- integer avg truncates
          for r = 1, n do
            assert.is_true(math.abs(got[r][i] - want) <= 1e-2 * math.abs(want),
                           ("%s %s rank %d element %d: %s, want %s"):format(dt, op, r, i, got[r][i], want))
          end
        end
        comm:all_reduce(send) -- in place, sum
        local inplace = read_all(send)
        for r = 1, n do
          local vals = {}
          for q = 1, n do vals[q] = f(q, 2) end
          assert.are.equal(reduce("sum", vals), inplace[r][2])
        end
      end
    end
    comm:close()
  end)

  -- NCCL's avg on integers (FuncSumPostDiv in its reduce_kernel.h): the sum wraps in the element's
  -- width, then that value, signed or unsigned as the dtype, is divided by the ranks, toward zero
  local avg_cases = {
    i8 = {{100, 100, -28}, {-100, -100, 28}, {127, 1, -64}, {-128, -128, 0}, {-3, -4, -3}, {5, 6, 5}},
    u8 = {{200, 200, 72}, {255, 1, 0}, {255, 255, 127}, {3, 4, 3}},
    i32 = {{0x7fffffff, 0x7fffffff, -1}, {-0x80000000, -1, 0x3fffffff}, {-5, 2, -1}, {7, 8, 7}},
    u32 = {{0xffffffff, 0xffffffff, 0x7fffffff}, {0x80000000, 0x80000000, 0}, {3, 4, 3}},
    i64 = {{1 << 62, 1 << 62, -(1 << 62)}, {math.maxinteger, 1, -(1 << 62)}, {-7, 0, -3}, {9, 10, 9}},
    -- u64 reads back past 2^63 as negative integers: -1 is 2^64 - 1
    u64 = {{-1, -1, math.maxinteger}, {math.mininteger, math.mininteger, 0}, {math.mininteger, 2, (1 << 62) + 1},
           {3, 4, 3}},
  }
  for _, dt in ipairs{"i8", "u8", "i32", "u32", "i64", "u64"} do
    H.it_devices(2, dt .. " avg: the sum wraps in the dtype, then divides toward zero, as NCCL's", function()
      local comm = gpu.comm{devices = {0, 1}}
      local cases = avg_cases[dt]
      local send = {}
      for r = 1, 2 do
        local t = {}
        for i, c in ipairs(cases) do t[i] = c[r] end
        send[r] = H.upload(gpu.device(r - 1), dt, t)
      end
      local recv = {gpu.device(0):zeros(dt, #cases), gpu.device(1):zeros(dt, #cases)}
      comm:all_reduce(send, {op = "avg", recv = recv})
      comm:reduce_scatter({send[1]:view(0, 2), send[2]:view(0, 2)}, {recv[1]:view(0, 1), recv[2]:view(1, 1)},
                          {op = "avg"}) -- the same reduction, on each rank's part
      for r = 1, 2 do
        local got = recv[r]:read()
        for i, c in ipairs(cases) do
          assert.are.equal(c[3], got[i], ("%s avg of %d and %d, rank %d"):format(dt, c[1], c[2], r - 1))
        end
      end
      comm:close()
    end)
  end

  it("broadcast, reduce, all_gather and reduce_scatter", function()
    local comm = gpu.comm{devices = devs}
    local root = n - 1
    local x = per_rank("f64", 5, function(r, i) return r * 10 + i end)
    comm:broadcast(x, {root = root})
    for r, h in ipairs(read_all(x)) do
      for i = 1, 5 do assert.are.equal(n * 10 + i, h[i], "broadcast rank " .. r) end
    end
    local send = per_rank("f32", 3, function(r, i) return r + i end)
    local recv = per_rank("f32", 3, function() return -1 end)
    comm:reduce(send, {root = 0, op = "max", recv = recv})
    local got = read_all(recv)
    for i = 1, 3 do assert.are.equal(n + i, got[1][i]) end
    for r = 2, n do assert.are.equal(-1, got[r][1], "reduce leaves the other ranks' recv alone") end
    local parts = per_rank("i32", 2, function(r, i) return r * 100 + i end)
    local all = per_rank("i32", 2 * n, function() return 0 end)
    comm:all_gather(parts, all)
    for r, h in ipairs(read_all(all)) do
      for q = 1, n do
        for i = 1, 2 do assert.are.equal(q * 100 + i, h[(q - 1) * 2 + i], "all_gather rank " .. r) end
      end
    end
    local big = per_rank("f64", 3 * n, function(r, i) return r * i end)
    local mine = per_rank("f64", 3, function() return 0 end)
    comm:reduce_scatter(big, mine, {op = "sum"})
    for r, h in ipairs(read_all(mine)) do
      for i = 1, 3 do
        local idx = (r - 1) * 3 + i
        local want = 0
        for q = 1, n do want = want + q * idx end
        assert.are.equal(want, h[i], "reduce_scatter rank " .. r)
      end
    end
    comm:close()
  end)

  it("recv partly overlapping send is refused, naming both; NCCL's in-place forms run", function()
    local comm = gpu.comm{devices = devs}
    local whole, x, W = {}, {}, 2 * n + 6
    for r = 1, n do
      whole[r] = devs[r]:zeros("f32", W)
      x[r] = whole[r]:view(0, 2 * n)
    end
    local function views(off, count)
      local list = {}
      for r = 1, n do list[r] = whole[r]:view(off, count) end
      return list
    end
    local tail = ("defines a collective only in place (%s) or with recv apart from send")
    H.fails(H.lit("comm:all_reduce: recv of rank 0 (elements 2 to 5 of f32[" .. W .. "] on device 0) "
                  .. "overlaps send of rank 0 (elements 0 to 3 of it): NCCL " .. tail:format("recv is send itself: "
                  .. "leave recv out")),
            function() comm:all_reduce(views(0, 4), {recv = views(2, 4)}) end)
    H.fails(H.lit("comm:broadcast: recv of rank 0 (elements 0 to 1 of f32[" .. W .. "] on device 0) "
                  .. "overlaps send of rank 0 (elements 1 to 2 of it)"),
            function() comm:broadcast(views(1, 2), {recv = views(0, 2)}) end)
    H.fails(H.lit("comm:reduce: recv of rank 0"), function() comm:reduce(views(1, 2), {recv = views(0, 2)}) end)
    H.fails(H.lit(("comm:all_gather: recv of rank 0 (elements 0 to %d of f32[%d] on device 0) overlaps send of rank 0 "
                   .. "(elements 1 to 2 of it): NCCL "):format(2 * n - 1, W)
                  .. tail:format("send is rank 0's part of recv, recv:view(0, 2)")),
            function() comm:all_gather(views(1, 2), x) end)
    H.fails(H.lit(("comm:reduce_scatter: recv of rank 0 (elements 1 to 2 of f32[%d] on device 0) overlaps send of "
                   .. "rank 0 (elements 0 to %d of it): NCCL "):format(W, 2 * n - 1)
                  .. tail:format("recv is rank 0's part of send, send:view(0, 2)")),
            function() comm:reduce_scatter(x, views(1, 2)) end)
    if n > 1 then -- each rank's own part: rank 0's part is not in place for rank 1
      H.fails(H.lit("comm:all_gather: recv of rank 1 (elements 0 to " .. (2 * n - 1) .. " of f32[" .. W
                    .. "] on device 1) overlaps send of rank 1 (elements 0 to 1 of it): NCCL "
                    .. tail:format("send is rank 1's part of recv, recv:view(2, 2)")),
              function() comm:all_gather(views(0, 2), x) end)
    end
    -- in place: the same elements through two views; each rank's part of recv (all_gather) and of send
    -- (reduce_scatter)
    local mine = {}
    for r = 1, n do
      devs[r].main:copy(x[r], H.iota("f32", 2 * n, r * 100))
      mine[r] = x[r]:view((r - 1) * 2, 2)
    end
    comm:all_gather(mine, x)
    for r, h in ipairs(read_all(x)) do
      for q = 1, n do
        for i = 1, 2 do assert.are.equal(q * 100 + (q - 1) * 2 + i - 1, h[(q - 1) * 2 + i], "all_gather " .. r) end
      end
    end
    local before = read_all(x)
    comm:reduce_scatter(x, mine)
    for r, h in ipairs(read_all(x)) do
      for i = 1, 2 do
        local idx = (r - 1) * 2 + i
        local want = 0
        for q = 1, n do want = want + before[q][idx] end
        assert.are.equal(want, h[idx], "reduce_scatter rank " .. r)
      end
    end
    comm:all_reduce(views(0, 2), {recv = views(0, 2), op = "max"})
    comm:close()
  end)

  it("runs on the given streams, ordered like any work there", function()
    local comm = gpu.comm{devices = devs}
    local streams, send = {}, {}
    for r = 1, n do
      streams[r] = devs[r]:stream{name = "coll" .. r}
      send[r] = devs[r]:alloc("f32", 1024, {stream = streams[r]})
      streams[r]:fill(send[r], r)
    end
    comm:all_reduce(send, {streams = streams})
    for r = 1, n do
      local h = send[r]:read{stream = streams[r]}
      assert.are.equal(n * (n + 1) / 2, h[1024])
      streams[r]:close()
    end
    comm:close()
  end)

  describe("under the checker", function()
    H.checker_hooks()

    it("send is read and recv written on each rank's stream: unordered use is a conflict", function()
      local comm = gpu.comm{devices = devs}
      local other = devs[1]:stream{name = "other"}
      local send = per_rank("f32", 4, function() return 1 end)
      local recv = per_rank("f32", 4, function() return 0 end)
      for r = 1, n do devs[r]:sync() end
      local at = H.here() + 1
      comm:all_reduce(send, {recv = recv})
      local line = H.here() + 1
      local ok, err = pcall(function() other:fill(recv[1], 2) end)
      assert.is_false(ok)
      H.assert_conflict(err, "comm_spec.lua", {op = "s:fill", what = H.slice_desc("f32", 4), rw = "written",
                                               s = "other", s_at = line, t = "main", t_at = at, prev = "writing"})
      other:join(devs[1].main)
      other:fill(recv[1], 2)
      other:close()
      comm:close()
    end)
  end)

  it("bad arguments are errors naming the collective, the rank and what is wrong", function()
    local comm = gpu.comm{devices = devs}
    local a = per_rank("f32", 4, function() return 1 end)
    local b8 = per_rank("f32", 8, function() return 1 end)
    H.fails(H.lit("gpu.comm: unknown option 'device_list'"), function() gpu.comm{device_list = {0}} end)
    H.fails(H.lit("gpu.comm: option 'devices' expected a non-empty list of devices or ordinals"),
            function() gpu.comm{devices = {}} end)
    H.fails(H.lit("gpu.comm: option 'devices' entry 1: device 99 does not exist"),
            function() gpu.comm{devices = {99}} end)
    H.fails(H.lit("gpu.comm: device 0 is given twice (one rank per device)"), function() gpu.comm{devices = {0, 0}} end)
    H.fails(H.lit("gpu.comm: give 'devices' (ranks in this process) or 'rank', 'size', 'id_file' and 'device' "
                  .. "(one rank per process), not both ('rank' given with 'devices')"),
            function() gpu.comm{devices = {0}, rank = 0} end)
    H.fails(H.lit("gpu.comm: give 'devices' (ranks in this process) or 'rank', 'size', 'id_file' and 'device' "
                  .. "(one rank per process): 'size' is missing"), function() gpu.comm{rank = 0} end)
    H.fails(H.lit("comm:all_reduce: option 'op' expected one of sum, prod, max, min, avg, got 'summ'"),
            function() comm:all_reduce(a, {op = "summ"}) end)
    H.fails(H.lit("comm:reduce: option 'op' expected one of sum, prod, max, min, avg, got number 1"),
            function() comm:reduce(a, {op = 1}) end)
    H.fails(H.lit("comm:all_reduce: unknown option 'root'"), function() comm:all_reduce(a, {root = 0}) end)
    H.fails(H.lit("comm:all_reduce: send and recv must have the same number of elements, got 4 and 8"),
            function() comm:all_reduce(a, {recv = b8}) end)
    local b3 = per_rank("f32", 3, function() return 1 end)
    H.fails(H.lit(("comm:all_gather: recv must have size x send's elements (%d x 4 = %d), got 3"):format(n, 4 * n)),
            function() comm:all_gather(a, b3) end)
    H.fails(H.lit("comm:reduce_scatter: send must have size x recv's elements"),
            function() comm:reduce_scatter(a, b8) end)
    H.fails(H.lit(("comm:broadcast: root = %d is not a rank of this communicator (0 to %d)"):format(n, n - 1)),
            function() comm:broadcast(a, {root = n}) end)
    local i16 = per_rank("i16", 4, function() return 1 end)
    H.fails(H.lit("comm:all_reduce: NCCL has no i16 type"), function() comm:all_reduce(i16) end)
    local f64 = per_rank("f64", 4, function() return 1 end)
    H.fails(H.lit("comm:all_reduce: every send and recv must have one dtype, got f32"),
            function() comm:all_reduce(a, {recv = f64}) end)
    H.fails(H.lit("comm:all_reduce: send expected a list of slices, one per rank"), function() comm:all_reduce(5) end)
    local line = H.here() + 1
    a[1]:free()
    H.fails(H.lit("comm:all_reduce: send of rank 0: use of a freed slice f32[4] on device 0 (freed at ")
            .. ".-:" .. line, function() comm:all_reduce(a) end)
    if n < 2 then
      print("comm_spec: the wrong-device and list-length cases need 2 devices: skipped (only 1 here)")
    else
      local swapped = {b8[2], b8[1]}
      for r = 3, n do swapped[r] = b8[r] end
      H.fails(H.lit("comm:all_reduce: send of rank 0 is a slice of device 1, but rank 0 is on device 0"),
              function() comm:all_reduce(swapped) end)
      H.fails(H.lit(("comm:all_reduce: send has 1 entry, but the communicator has %d ranks in this process"):format(n)),
              function() comm:all_reduce({b8[1]}) end)
      local s1 = devs[2]:stream{name = "wrong"}
      local streams = {s1, s1}
      for r = 3, n do streams[r] = devs[r].main end
      H.fails(H.lit("comm:all_reduce: the stream of rank 0, 'wrong', is on device 1, but rank 0 is on device 0"),
              function() comm:all_reduce(b8, {streams = streams}) end)
      s1:close()
    end
    local cline = H.here() + 1
    comm:close()
    H.fails(H.lit("comm:all_reduce: the communicator was closed (at ") .. ".-:" .. cline,
            function() comm:all_reduce(b8) end)
    H.fails(H.lit("comm:close: the communicator was closed already"), function() comm:close() end)
  end)

  it("a collective cannot be captured yet, and id_file communicators need the cuda backend", function()
    local comm = gpu.comm{devices = {devs[1]}}
    local x = devs[1]:zeros("f32", 4)
    H.fails(H.lit("comm:all_reduce: collectives cannot be captured into a graph yet"),
            function() devs[1].main:capture(function() comm:all_reduce(x) end) end)
    comm:close()
    if gpu.backend() == "sim" then
      H.fails(H.lit("gpu.comm: id_file communicators need the cuda backend"),
              function() gpu.comm{rank = 0, size = 1, id_file = os.tmpname(), device = 0} end)
    else
      local path = os.tmpname()
      local one = gpu.comm{rank = 0, size = 1, id_file = path, device = 0}
      assert.are.equal(1, one.size)
      local y = devs[1]:alloc("f32", 4)
      devs[1].main:fill(y, 3)
      one:all_reduce(y)
      assert.are.equal(3, y:read()[4])
      one:close()
      os.remove(path)
    end
  end)

  it("id_file options are checked before anything is loaded or waited for", function()
    local function opts(k, v)
      local t = {rank = 1, size = 2, id_file = "/tmp/gpulua-id", device = 0}
      t[k] = v
      return t
    end
    H.fails(H.lit("gpu.comm: option 'size' expected an integer >= 1, got number 0"),
            function() gpu.comm(opts("size", 0)) end)
    H.fails(H.lit("gpu.comm: option 'rank' expected an integer from 0 to size - 1 = 1, got number 2"),
            function() gpu.comm(opts("rank", 2)) end)
    H.fails(H.lit("gpu.comm: option 'id_file' expected a file path, got string"),
            function() gpu.comm(opts("id_file", "")) end)
    H.fails(H.lit("gpu.comm: option 'timeout' expected a number of seconds > 0, got number 0"),
            function() gpu.comm(opts("timeout", 0)) end)
    H.fails(H.lit("gpu.comm: give 'devices' (ranks in this process) or 'rank', 'size', 'id_file' and 'device' "),
            function() gpu.comm(opts("device", nil)) end)
  end)

  it("a rank other than 0 waits for rank 0's id only as long as 'timeout' (cuda only)", function()
    if gpu.backend() ~= "cuda" then
      pending("id_file communicators are cuda-only (the sim refuses them, tested above): runs on cuda only")
      return
    end
    local path = os.tmpname()
    os.remove(path) -- no rank 0 will write it
    local t0 = os.time()
    H.fails(H.lit(("gpu.comm: no NCCL id in id_file '%s' after 0.2 seconds (is rank 0 running?)"):format(path)),
            function() gpu.comm{rank = 1, size = 2, id_file = path, device = 0, timeout = 0.2} end)
    assert.is_true(os.time() - t0 <= 5)
  end)

  it("a missing NCCL is an error naming it at first use, not at start-up (cuda only)", function()
    if gpu.backend() ~= "cuda" then
      pending("the sim has its own NCCL (sim_nccl.c): a missing libnccl.so.2 runs on cuda only")
      return
    end
    local out, status = H.run_child([[
      local gpu = require "gpulua"
      print("started", gpu.count() >= 1)
      for _ = 1, 2 do print(pcall(gpu.comm, {devices = {0}})) end
    ]], {GPULUA_NCCL = "/nonexistent/libnccl.so.2"})
    assert.are.equal(0, status, out)
    assert.matches("started\ttrue\n", out)
    local missing = "false\tgpu.comm: NCCL could not be loaded: GPULUA_NCCL=/nonexistent/libnccl.so.2: "
    local _, times = out:gsub(H.lit(missing), "")
    assert.are.equal(2, times, out)
  end)

  describe("NCCL errors (the sim's fault hook GPULUA_SIM_NCCL_FAULT)", function()
    local PRELUDE = [[
      local gpu = require "gpulua"
      local devs = {gpu.device(0), gpu.device(1)}
      local comm = gpu.comm{devices = devs}
      local x = {devs[1]:zeros("f32", 4), devs[2]:zeros("f32", 4)}
      local function show(ok, err) print(ok, (tostring(err):gsub("^[^:]*:%d+: ", ""))) end
    ]]
    local function child(script, fault)
      if gpu.backend() ~= "sim" then
        pending("GPULUA_SIM_NCCL_FAULT is a hook of the sim's NCCL: runs on sim only")
        return nil
      end
      local env = {GPULUA_SIM_DEVICES = 2, GPULUA_SIM_NCCL_FAULT = fault}
      local out, status = H.run_child(PRELUDE .. script, env, 60)
      assert.are.equal(0, status, out)
      return out
    end

    it("a failed call names the collective and the rank, queues nothing on any rank, and poisons the communicator",
       function()
      local out = child([[
        comm:all_reduce(x)                     -- collective calls 1 and 2 (one per rank)
        devs[1].main:fill(x[1], 1)
        devs[2].main:fill(x[2], 2)
        show(pcall(comm.all_reduce, comm, x))  -- call 4, rank 1's, fails
        print("after", x[1]:read()[1], x[2]:read()[1])  -- no rank waits for a part that never came
        show(pcall(comm.broadcast, comm, x))
        comm:close()
        print("closed")
      ]], "4")
      if not out then return end
      assert.matches(H.lit("false\tcomm:all_reduce: rank 1 (device 1): ncclAllReduce failed: internal error\n"), out)
      assert.matches("after\t1%.0?\t2%.0?\n", out)
      assert.matches(H.lit("false\tcomm:broadcast: the communicator is unusable after an earlier error: " ..
                           "comm:all_reduce: rank 1 (device 1): ncclAllReduce failed: internal error"), out)
      assert.matches("closed\n", out)
    end)

    it("an asynchronous error is raised by the call after which NCCL reports it, and poisons too", function()
      local out = child([[
        devs[1].main:fill(x[1], 1)
        devs[2].main:fill(x[2], 2)
        show(pcall(comm.all_reduce, comm, x))  -- call 2 sets the communicator's asynchronous error
        show(pcall(comm.all_gather, comm, x, x))
        comm:close()
        print("closed")
      ]], "async:2")
      if not out then return end
      local first = "comm:all_reduce: rank 0 (device 0): NCCL reports an asynchronous error: " ..
                    "remote process exited or there was a network error"
      assert.matches(H.lit("false\t" .. first .. "\n"), out)
      local later = "false\tcomm:all_gather: the communicator is unusable after an earlier error: "
      assert.matches(H.lit(later .. first), out)
      assert.matches("closed\n", out)
    end)
  end)

  -- A fault on one rank's device before a collective: that rank never takes part, so the collective
  -- cannot complete on the others. Each ending of the script below must report it and end (a hang is
  -- the suite's timeout). On sim the kernel's host implementation raises, as fault_spec.lua's do.
  describe("a fault on one rank", function()
    local PRELUDE = [[
      local gpu = require "gpulua"
      local devs = {gpu.device(0), gpu.device(1)}
      local comm = gpu.comm{devices = devs}
      local x = {devs[1]:zeros("f32", 4), devs[2]:zeros("f32", 4)}
      local m = gpu.compile([=[
        extern "C" __global__ void bad_write(float *y) {
          float *p = (float *)(unsigned long long)0x10;  // not device memory
          p[threadIdx.x] = y[0];
        }
      ]=], {name = "rank_fault.cu", device = devs[1]})
      local bad = m:kernel("bad_write", "f32*")
      bad:host(function() error("bad_write on rank 0") end)
      local function show(what, ok, err) print(what, ok, (tostring(err):gsub("^[^:]*:%d+: ", ""))) end
      devs[1].main:launch(bad, {grid = 1, block = 32}, x[1])
      comm:all_reduce(x)
    ]]
    local function child(script, want_status)
      local out, status = H.run_child(PRELUDE .. script)
      assert.are.equal(want_status, status, out)
      return out
    end
    local poisoned = "device 1 is poisoned: a collective of its communicator %(rank 1 here%) cannot complete: " ..
                     "rank 0 %(device 0%) faulted, so its collectives cannot complete on the other ranks %(the " ..
                     "communicator was aborted%): device 0 is poisoned by a fault"

    H.it_devices(2, "poisons the communicator and every rank's device: each wait reports it", function()
      local out = child([[
        show("read1", pcall(x[2].read, x[2]))  -- rank 1 waits for the collective first
        show("sync1", pcall(devs[2].sync, devs[2]))
        show("read0", pcall(x[1].read, x[1]))
        show("again", pcall(comm.all_reduce, comm, x))
        comm:close()
        print("end")
      ]], 0)
      assert.matches("read1	false	" .. poisoned, out)
      assert.matches("sync1	false	" .. poisoned, out)
      assert.matches("read0	false	device 0 is poisoned by a fault", out)
      assert.matches("again	false	comm:all_reduce: the communicator is unusable after an earlier error: rank 0 " ..
                     "%(device 0%) faulted", out)
      assert.matches("\nend\n", out)
    end)

    H.it_devices(2, "a task's awaits and reads report it, as a sync does", function()
      local out = child([[
        local e = devs[2].main:record()
        for _, case in ipairs{{"await", function() devs[2].main:await() end}, {"eawait", function() e:await() end},
                              {"read", function() print("read gave", x[2]:read()[1]) end}} do
          gpu.spawn(case[2])
          show(case[1], pcall(gpu.loop))
        end
      ]], 0)
      for _, case in ipairs{"await", "eawait", "read"} do assert.matches(case .. "	false	" .. poisoned, out) end
      assert.not_matches("read gave", out)
    end)

    H.it_devices(2, "a query reports it too, so a loop of queries ends", function()
      local out = child([[
        local e = devs[2].main:record()
        local ok, err = pcall(function() while not e:query() do end end)
        show("query", ok, err)
      ]], 0)
      assert.matches("query	false	" .. poisoned, out)
    end)

    for _, ending in ipairs{{"the end of the script", "", 0}, {"an uncaught error", "error('stop')", 1},
                            {"os.exit", "os.exit(3)", 3}, {"os.exit closing the state", "os.exit(3, true)", 3},
                            {"a host read of rank 1's recv left uncaught", "print(x[2]:read()[1])", 1}} do
      H.it_devices(2, "ends the process at " .. ending[1] .. ", nothing waiting for the collective", function()
        child(ending[2] .. "\n", ending[3])
      end)
    end
  end)

  it("communicators made and dropped in a loop are destroyed at the end, none waited for", function()
    for _ = 1, 10 do
      local c = gpu.comm{devices = devs}
      c:all_reduce(per_rank("f32", 4, function() return 1 end))
    end
    collectgarbage()
    collectgarbage()
  end)
end)
