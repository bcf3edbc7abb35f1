-- bench/workloads/ops_loop.lua: n of one of bench/workloads/launch_pairs.lua's operations on sim,
-- for counting their instructions (bench/probes/launch_ir.sh runs it under callgrind
-- with n and with 0 and divides the difference; the sim's host kernels and
-- queue are counted too).
--   gpulua bench/workloads/ops_loop.lua N POLICY CASE   (CASE: launch8, event, replay)
local gpu = require "gpulua"
local n, policy, case = tonumber(arg[1]), arg[2] or "strict", arg[3] or "launch8"
local dev = gpu.device(0)
local s = dev:stream{name = "pairs"}
local s2 = dev:stream{name = "pairs2"}
local here = debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or ""
local E = dofile(here .. "empty_kernels.lua")(dev, s) -- the empty kernels and 8 views of one buffer
local k1, k8, v = E.k1, E.k8, E.v
local cfg = gpu.config{grid = 1, block = 32}
local e = s:record()
local g = s:capture(function(cs) for _ = 1, 4 do cs:launch(k1, cfg, v[1]) end end, {name = "chain"})
s:sync()
gpu.policy(policy)
local loops = {
  launch8 = function(count)
    local a, b, c, d, f, gg, h, i = v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]
    for _ = 1, count do s:launch(k8, cfg, a, b, c, d, f, gg, h, i) end
  end,
  event = function(count)
    for _ = 1, count do s2:wait(s:record(e)) end
  end,
  replay = function(count)
    for _ = 1, count do g:launch(s) end
  end,
}
assert(loops[case], "unknown case " .. tostring(case))(n)
s:sync()
s2:sync()
