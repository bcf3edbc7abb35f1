-- bench/ops_loop.lua: n of one of bench/launch_pairs.lua's operations on sim,
-- for counting their instructions (bench/launch_ir.sh runs it under callgrind
-- with n and with 0 and divides the difference; the sim's host kernels and
-- queue are counted too).
--   gpulua bench/ops_loop.lua N POLICY CASE   (CASE: launch8, event, replay)
local gpu = require "gpulua"
local n, policy, case = tonumber(arg[1]), arg[2] or "strict", arg[3] or "launch8"
local dev = gpu.device(0)
local s = dev:stream{name = "pairs"}
local s2 = dev:stream{name = "pairs2"}
local m = gpu.compile([[
extern "C" __global__ void empty1(float *a) {}
extern "C" __global__ void empty8(float *a, float *b, float *c, float *d, float *e, float *f,
                                  float *g, float *h) {}
]], {name = "empty.cu"})
local k1 = m:kernel("empty1", "f32*")
local k8 = m:kernel("empty8", "f32*, f32*, f32*, f32*, f32*, f32*, f32*, f32*")
k1:host(function() end)
k8:host(function() end)
local base = dev:alloc("f32", 1 << 18, {stream = s})
local v = {}
for i = 1, 8 do v[i] = base:view((i - 1) * 64, 64) end
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
