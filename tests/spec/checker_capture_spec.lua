-- The ordering checker and streams forked inside a capture (API.md, "CUDA
-- graphs": "Streams forked inside a capture"). A fork's wait inside
-- s:capture (or g:update) goes into the graph, so the fork's own queue is
-- ordered after nothing once the capture ends: its eager work is checked as
-- unordered with the capturing stream's earlier work, its sync teaches the
-- host nothing about that stream, policy auto inserts the wait, and closing
-- it hands the main stream nothing. Inside the capture its ordering stays
-- what the graph records.
--
-- Every expected outcome here is decided by what the host knows, so none of
-- it depends on timing; H.busy only makes a missing wait show in the data.
local gpu = require "gpulua"
local H = require "helpers"

local N = 4096
local FILE = "checker_capture_spec.lua" -- this file, as messages name it
local here, desc = H.here, H.slice_desc
local function at(line) return H.at(FILE, line) end
local function assert_conflict(err, c) H.assert_conflict(err, FILE, c) end

describe("the ordering checker after a capture", function()
  local dev, x, s
  before_each(function()
    dev = gpu.device(0)
    x = dev:alloc("f32", N) -- zeroed on main
    s = dev.main:fork{name = "ck_cap_s"} -- ordered after that
  end)
  H.checker_hooks()
  after_each(function()
    if s then s:close() end
  end)

  -- A graph on s with one fork joined back (a fork of it too, when deep).
  local function fork_graph(name, deep)
    local t, u
    local g = s:capture(function(cs)
      t = cs:fork{name = name}
      if deep then
        u = t:fork{name = name .. "_u"}
        t:join(u)
      end
      cs:join(t)
    end)
    return g, t, u
  end

  it("eager work on a fork after the capture is unordered with the capturing stream's earlier work", function()
    local lf = here(); s:fill(x, 5)
    local g, t, u = fork_graph("ck_cap_t", true)
    local lr = here(); local err = H.refused(function() return x:read{stream = t} end)
    assert_conflict(err, {op = "x:read", what = desc("f32", N), rw = "read", s = "ck_cap_t", s_at = lr,
                          t = "ck_cap_s", t_at = lf, prev = "writing"})
    lr = here(); err = H.refused(function() u:fill(x, 1) end)
    assert_conflict(err, {op = "s:fill", what = desc("f32", N), rw = "written", s = "ck_cap_t_u", s_at = lr,
                          t = "ck_cap_s", t_at = lf, prev = "writing"})
    t:join(s) -- a real wait
    H.check_all(x:read{stream = t}, 5)
    g:close()
    t:close()
    u:close()
  end)

  it("and so after g:update", function()
    local g = fork_graph("ck_upd_t0")
    local lf = here(); s:fill(x, 6)
    local t
    g:update(function(cs)
      t = cs:fork{name = "ck_upd_t"}
      cs:join(t)
    end, {stream = s})
    local lr = here(); local err = H.refused(function() return x:read{stream = t} end)
    assert_conflict(err, {op = "x:read", what = desc("f32", N), rw = "read", s = "ck_upd_t", s_at = lr,
                          t = "ck_cap_s", t_at = lf, prev = "writing"})
    g:close()
    t:close()
  end)

  it("inside the capture the fork stays ordered after what it was forked after", function()
    local y = dev:alloc("f32", N, {stream = s})
    local t
    local g = s:capture(function(cs)
      cs:fill(y, 3)
      t = cs:fork{name = "ck_in_t"}
      t:launch(gpu.kernels.scale, {grid = N // 256, block = 256}, 2.0, y, y, N) -- after the fill: no error
      cs:join(t)
    end)
    g:launch(s)
    H.check_all(y:read{stream = s}, 6)
    g:close()
    t:close()
  end)

  it("a fork's sync does not teach the host that the capturing stream's work finished", function()
    s:fill(x, 7)
    local h = gpu.host("f32", N)
    local lc = here(); s:copy(h, x)
    local g, t = fork_graph("ck_sync_t")
    t:sync()
    H.fails("may still write it %(copy queued at [^)]*" .. at(lc) .. "%)", function() return h[1] end)
    s:sync()
    H.check_all(h, 7)
    g:close()
    t:close()
  end)

  it("policy auto makes the fork wait for the capturing stream's earlier work", function()
    H.busy(dev, s, 8)
    s:fill(x, 25)
    local g, t = fork_graph("ck_auto_t")
    gpu.policy("auto")
    local got = x:read{stream = t}
    gpu.policy("strict")
    H.check_all(got, 25)
    g:close()
    t:close()
  end)

  it("closing the fork hands the main stream no ordering it did not have", function()
    local lf = here(); s:fill(x, 9)
    local g, t = fork_graph("ck_close_t")
    t:close() -- main waits for t's own work: none
    local lr = here(); local err = H.refused(function() return x:read() end)
    assert_conflict(err, {op = "x:read", what = desc("f32", N), rw = "read", s = "main", s_at = lr,
                          t = "ck_cap_s", t_at = lf, prev = "writing"})
    dev.main:join(s)
    H.check_all(x:read(), 9)
    g:close()
  end)

  it("a fork's spare reduction scratch and cuBLAS workspace are used in order with the graph's replays", function()
    local a, out, c = dev:zeros("f32", 4), dev:zeros("f32", 2), dev:zeros("f32", 4)
    dev.main:launch(gpu.kernels.sum, {block = 32}, a, out, 4) -- captures then prepare spare scratch
    dev.main:gemm{a = a, b = a, c = dev:zeros("f32", 4), m = 2, n = 2, k = 2} -- and spare workspaces
    s:join(dev.main)
    local t
    local g = s:capture(function(cs)
      t = cs:fork{name = "ck_spare_t"} -- no scratch or workspace of its own: takes spares
      t:launch(gpu.kernels.sum, {block = 32}, a, out:view(0, 1), 4)
      t:gemm{a = a, b = a, c = c, m = 2, n = 2, k = 2, alpha = 0}
      cs:join(t)
    end)
    g:launch(s)
    local own, own_c = dev:zeros("f32", 1, {stream = t}), dev:zeros("f32", 1, {stream = t})
    H.fails("the reduction scratch of stream 'ck_spare_t' is written on stream 'ck_spare_t'.-while stream "
            .. "'ck_cap_s' %(device 0%) may still be writing it", function()
      t:launch(gpu.kernels.sum, {block = 32}, own, own, 1)
    end)
    H.fails("the cuBLAS workspace of stream 'ck_spare_t' is written on stream 'ck_spare_t'.-while stream "
            .. "'ck_cap_s' %(device 0%) may still be writing it", function()
      t:gemm{a = own, b = own, c = own_c, m = 1, n = 1, k = 1}
    end)
    t:join(s)
    t:launch(gpu.kernels.sum, {block = 32}, own, own, 1)
    t:sync()
    g:close()
    t:close()
  end)
end)
