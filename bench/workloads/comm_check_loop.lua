-- The cost of policy strict's check of a job's collectives: each rank of a
-- job (gpu.comm{}) makes N all_reduce of one f32 (default 10000, or arg[1]),
-- reads the result once; rank 0 prints the microseconds of one call on the
-- host (the loop of calls) and of one collective end to end (to the read). Run it under the same
-- launcher twice, with GPULUA_POLICY=strict and =off (bench/probes/comm_check.sh).
local gpu = require "gpulua"
local n = tonumber(arg and arg[1]) or 10000
local c = gpu.comm{timeout = 120}
local x = c.device:alloc("f32", 1)
c:all_reduce(x) -- the communicator's first call out of the timing
x:read()
local t0 = gpu.clock()
for _ = 1, n do c:all_reduce(x) end
local calls = gpu.clock() - t0 -- the host's cost of the calls (queued, not waited for)
x:read()
local dt = gpu.clock() - t0
if c.rank == 0 then
  print(("comm_check_loop: %d ranks, %d all_reduce, policy %s: %.2f us a call, %.0f us a collective end to end")
    :format(c.size, n, gpu.policy(), calls / n * 1e6, dt / n * 1e6))
end
c:close()
