-- examples/ddp.lua: a data-parallel job, one rank per process. Every rank
-- makes the same dataset (from a seed), keeps its shard of the samples, and
-- computes on its GPU the gradient of a linear model's squared error over
-- that shard; comm:all_reduce sums the partial gradients, so every rank takes
-- the same step. A ring of comm:send/comm:recv passes each rank's partial to
-- the next rank. Both are checked against the CPU. One line per rank.
--
--   gpulua examples/ddp.lua [samples] [steps]     (a job of one rank)
--   mpirun -np 4 -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=29500 gpulua examples/ddp.lua
-- (srun and torchrun: docs/API.md, "Running on many machines")
local gpu = require "gpulua"

-- this process's rank of the launcher's job; without a launcher, a job of one
local ok, comm = pcall(gpu.comm, {})
if not ok then
  if not tostring(comm):find("no launcher's environment found", 1, true) then error(comm, 0) end
  comm = gpu.comm{devices = {gpu.device(0)}}
end
local rank, size, dev = comm.rank, comm.size, comm.device
local s = dev.main

local N, steps, D, lr = tonumber(arg and arg[1]) or 4096, tonumber(arg and arg[2]) or 4, 4, 1.0
local tol = 1e-5 -- f32 on the GPU against f64 on the CPU, on sums divided by N

-- the dataset, the same on every rank: x_ij in [-1, 1) and y_i = x_i . w_true + noise
local seed = 2024
local function rnd(i, j) -- a hash of (seed, i, j): 24 bits, exact in f32
  local h = (seed * 1000003 + i * 8191 + j) * 0x9E3779B97F4A7C15 -- Lua's integers wrap in 64 bits
  h = (h ~ (h >> 31)) * 0xBF58476D1CE4E5B9
  return ((h ~ (h >> 29)) >> 40) / 2^23 - 1
end
local w_true = {0.5, -2, 1.25, 3}
-- this rank's shard: samples first .. last - 1, stored by column (feature j at j * n)
local first, last = rank * N // size, (rank + 1) * N // size
local n = last - first
local hx, hy = gpu.host("f32", D * n), gpu.host("f32", n)
for i = 0, n - 1 do
  local yi = 0.01 * rnd(first + i, D)
  for j = 0, D - 1 do
    hx[j * n + i + 1] = rnd(first + i, j)
    yi = yi + w_true[j + 1] * hx[j * n + i + 1]
  end
  hy[i + 1] = yi
end
local x, y, r = dev:alloc("f32", D * n), dev:alloc("f32", n), dev:alloc("f32", n)
s:copy(x, hx)
s:copy(y, hy)
local part = dev:alloc("f32", D + 1) -- sum over the shard of r_i x_ij, then of r_i^2
local cfg = {block = 256}            -- the built-ins pick their grid

-- the same sums on the CPU, in f64, for samples first .. last - 1 of any rank
local function cpu_part(w, a, b)
  local p = {0, 0, 0, 0, 0}
  for i = a, b - 1 do
    local ri = -0.01 * rnd(i, D)
    for j = 0, D - 1 do ri = ri + (w[j + 1] - w_true[j + 1]) * rnd(i, j) end
    for j = 1, D do p[j] = p[j] + ri * rnd(i, j - 1) end
    p[D + 1] = p[D + 1] + ri * ri
  end
  return p
end
local function maxerr(got, want, err)
  for j = 1, D + 1 do err = math.max(err, math.abs(got[j] - want[j]) / N) end
  return err
end

local w, err, ring_err, loss = {0, 0, 0, 0}, 0, 0, {}
for step = 1, steps do
  -- r = X w - y on the GPU, then part = (X^T r, r . r): the shard's partial sums
  s:launch(gpu.kernels.scale, cfg, -1.0, y, r, n)
  for j = 0, D - 1 do s:launch(gpu.kernels.axpy, cfg, w[j + 1], x:view(j * n, n), r, n) end
  for j = 0, D - 1 do s:launch(gpu.kernels.dot, cfg, x:view(j * n, n), r, part:view(j, 1), n) end
  s:launch(gpu.kernels.dot, cfg, r, r, part:view(D, 1), n)
  if step == 1 then
    -- the ring: pass a copy of the partial to rank + 1, take rank - 1's. An NCCL send
    -- may wait for its receiver, so if every rank sent first each could wait on the
    -- next, in a circle: even ranks send first, odd ranks receive first. (A job of
    -- one rank sends to itself: gpulua queues the pair together.)
    local mine, theirs = dev:alloc("f32", D + 1), dev:alloc("f32", D + 1)
    s:copy(mine, part)
    local to, from = (rank + 1) % size, (rank - 1) % size
    if rank % 2 == 0 then comm:send(mine, to); comm:recv(theirs, from)
    else comm:recv(theirs, from); comm:send(mine, to) end
    ring_err = maxerr(theirs:read(), cpu_part(w, from * N // size, (from + 1) * N // size), 0)
  end
  comm:all_reduce(part, {op = "sum"})      -- every rank now holds the sums over all N samples
  local total = part:read()                -- waits for the all_reduce on s
  err = maxerr(total, cpu_part(w, 0, N), err)
  for j = 1, D do w[j] = w[j] - lr * 2 * total[j] / N end -- the same step on every rank
  loss[step] = total[D + 1] / N
end

-- integers are exact: the sample counts add up to N
local count = dev:alloc("i32", 1)
s:copy(count, gpu.host("i32", {n}))
comm:all_reduce(count)
local counted = count:read()[1]
comm:close()

local grad_ok, ring_ok, count_ok = err <= tol, ring_err <= tol, counted == N
print(("ddp: rank %d of %d: %d samples, loss %.3g -> %.3g; gradient %s the CPU (max error %.1e, tolerance %g), %s")
  :format(rank, size, n, loss[1], loss[steps], grad_ok and "matches" or "DIFFERS from", err, tol,
    ring_ok and "ring ok" or ("ring WRONG (error %.1e)"):format(ring_err)))
if not (grad_ok and ring_ok and count_ok) then
  error(("ddp: rank %d of %d: results differ from the CPU (%d samples counted, %d made)")
    :format(rank, size, counted, N))
end
