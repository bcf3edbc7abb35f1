-- bench/workloads/launch_loop.lua: n launches of a built-in on one stream, for counting
-- the instructions of one launch (bench/probes/launch_ir.sh runs it under callgrind
-- twice, with n and with 0, and divides the difference).
--   gpulua bench/workloads/launch_loop.lua N POLICY FORM   (FORM: table or config)
local gpu = require "gpulua"
local n, policy, form = tonumber(arg[1]), arg[2] or "strict", arg[3] or "table"
local dev = gpu.device(0)
local s = dev:stream{name = "loop"}
local x = dev:zeros("f32", 64, {stream = s})
local cfg = form == "config" and gpu.config{grid = 1, block = 64} or {grid = 1, block = 64}
gpu.policy(policy)
local fill = gpu.kernels.fill
s:launch(fill, cfg, x, 1, 64)
s:sync()
for _ = 1, n do s:launch(fill, cfg, x, 1, 64) end
s:sync()
