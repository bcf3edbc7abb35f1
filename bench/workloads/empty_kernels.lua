-- bench/workloads/empty_kernels.lua: what the launch benchmarks launch (bench/workloads/bench.lua,
-- bench/workloads/launch_pairs.lua, bench/workloads/ops_loop.lua): empty kernels with 1 and 8 f32*
-- arguments (each with an empty host implementation, for sim) and 8 views of
-- 64 elements of one buffer allocated on stream s. Loaded by path, beside the
-- script that uses it:
--   local here = debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or ""
--   local E = dofile(here .. "empty_kernels.lua")(dev, s)   -- E.k1, E.k8, E.base, E.v
local gpu = require "gpulua"

return function(dev, s)
  local m = gpu.compile([[
extern "C" __global__ void empty1(float *a) {}
extern "C" __global__ void empty8(float *a, float *b, float *c, float *d, float *e, float *f,
                                  float *g, float *h) {}
]], {name = "empty.cu", device = dev})
  local k1 = m:kernel("empty1", "f32*")
  local k8 = m:kernel("empty8", "f32*, f32*, f32*, f32*, f32*, f32*, f32*, f32*")
  k1:host(function() end)
  k8:host(function() end)
  local base = dev:alloc("f32", 1 << 18, {stream = s})
  local v = {}
  for i = 1, 8 do v[i] = base:view((i - 1) * 64, 64) end
  return {k1 = k1, k8 = k8, base = base, v = v}
end
