-- bench/workloads/launch_pairs.lua: gpulua's side of bench/baselines/launch_pairs.c, which loads
-- it into its own Lua state and times each case here right beside the same
-- calls made raw, round after round, in one process. Returns the cases:
-- name -> {raw = "launch1" | "launch8" | "event" | "graph" | "capture",
--          div = n's divisor for this case's count (default 1),
--          run = function(count) -> us per op}.
-- The graph cases: a chain of CHAIN empty kernels captured once and
-- replayed (host time of the g:launch calls, per replayed kernel: the sync
-- after them is not timed), the same chain launched one by one from Lua, and
-- the capture of the chain itself (us per capture and instantiation).
local gpu = require "gpulua"

local dev = gpu.device(0)
local s = dev:stream{name = "pairs"}
local s2 = dev:stream{name = "pairs2"}
local here = debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or ""
local E = dofile(here .. "empty_kernels.lua")(dev, s) -- the empty kernels and 8 views of one buffer
local k1, k8, v = E.k1, E.k8, E.v
local forms = {table = {grid = 1, block = 32}, config = gpu.config{grid = 1, block = 32}}
local e = s:record()
s:sync()

local CHAIN = 1000
local chain_cfg = gpu.config{grid = 1, block = 32}
local function chain(cs)
  local a = v[1]
  for _ = 1, CHAIN do cs:launch(k1, chain_cfg, a) end
end
local g = s:capture(chain, {name = "chain"})

local function timed(policy, n, body)
  gpu.policy(policy)
  s:sync()
  s2:sync()
  local t0 = gpu.clock()
  body(n)
  s:sync()
  s2:sync()
  local us = (gpu.clock() - t0) / n * 1e6
  gpu.policy("strict")
  return us
end

local cases = {}
for _, policy in ipairs{"off", "strict"} do
  for form, cfg in pairs(forms) do
    cases[("launch_1arg_%s_%s"):format(form, policy)] = {raw = "launch1", run = function(n)
      return timed(policy, n, function(count)
        local a = v[1]
        for _ = 1, count do s:launch(k1, cfg, a) end
      end)
    end}
    cases[("launch_8arg_%s_%s"):format(form, policy)] = {raw = "launch8", run = function(n)
      return timed(policy, n, function(count)
        local a, b, c, d, f, gg, h, i = v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]
        for _ = 1, count do s:launch(k8, cfg, a, b, c, d, f, gg, h, i) end
      end)
    end}
  end
end
-- the floor of any binding (launch_pairs.c's global launch_pairs_floor):
-- F:launch(...) with the same arguments calls a C function that reads its 11
-- arguments and makes the raw launch, with nothing of gpulua's in between
local F = rawget(_G, "launch_pairs_floor")
if F then
  cases.launch_8arg_floor = {raw = "launch8", run = function(n)
    F.sync()
    local cfg = forms.config
    local a, b, c, d, f, gg, h, i = v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]
    local t0 = gpu.clock()
    for _ = 1, n do F:launch(k8, cfg, a, b, c, d, f, gg, h, i) end
    F.sync()
    return (gpu.clock() - t0) / n * 1e6
  end}
end
cases.event_wait_rerecord = {raw = "event", run = function(n)
  return timed("strict", n, function(count)
    for _ = 1, count do s2:wait(s:record(e)) end
  end)
end}
cases.event_wait_new = {raw = "event", run = function(n)
  return timed("strict", n, function(count)
    for _ = 1, count do s2:wait(s:record()) end
  end)
end}
cases.graph_replay_per_kernel = {raw = "graph", div = 400, run = function(count)
  s:sync()
  local t0 = gpu.clock()
  for _ = 1, count do g:launch(s) end
  local us = (gpu.clock() - t0) / (count * CHAIN) * 1e6
  s:sync()
  return us
end}
cases.chain_eager_per_kernel = {raw = "graph", div = 400, run = function(count)
  s:sync()
  local t0 = gpu.clock()
  for _ = 1, count do chain(s) end
  local us = (gpu.clock() - t0) / (count * CHAIN) * 1e6
  s:sync()
  return us
end}
cases.capture_chain = {raw = "capture", div = 4000, run = function(count)
  s:sync()
  local t0 = gpu.clock()
  for _ = 1, count do s:capture(chain):close() end
  local us = (gpu.clock() - t0) / count * 1e6
  s:sync()
  return us
end}
return cases
