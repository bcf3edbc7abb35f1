-- comm:send, comm:recv, comm:all_to_all and comm:barrier on a communicator of this process's
-- devices: a ring exchange, all_to_all with distinct blocks, a barrier, and the refusals. The
-- 2-rank cases are pending with one device.
local gpu = require "gpulua"
local H = require "helpers"

local function same(want, x)
  local h = x:read()
  for i, v in ipairs(want) do assert.are.equal(v, h[i], "element " .. i) end
end

describe("comm point to point", function()
  before_each(function() gpu.policy("strict") end)

  H.it_devices(2, "a ring exchange: send and recv of one process are queued together", function()
    local comm = gpu.comm{devices = {0, 1}}
    local d = {gpu.device(0), gpu.device(1)}
    local x = {H.upload(d[1], "f32", {1, 2, 3}), H.upload(d[2], "f32", {10, 20, 30})}
    local y = {d[1]:zeros("f32", 3), d[2]:zeros("f32", 3)}
    comm:send(x, {1, 0})
    comm:recv(y, {1, 0})
    same({10, 20, 30}, y[1])
    same({1, 2, 3}, y[2])
    -- one rank only sends, the other only receives; recv given first
    local z = d[2]:zeros("i32", 2)
    comm:recv({false, z}, {0, 0})
    comm:send({H.upload(d[1], "i32", {7, 8}), false}, {1, 0})
    same({7, 8}, z)
    comm:barrier()
    comm:close()
  end)

  H.it_devices(2, "all_to_all: block k of send goes to rank k", function()
    local comm = gpu.comm{devices = {0, 1}}
    local d = {gpu.device(0), gpu.device(1)}
    local send = {H.upload(d[1], "f64", {1, 2, 3, 4}), H.upload(d[2], "f64", {5, 6, 7, 8})}
    local recv = {d[1]:zeros("f64", 4), d[2]:zeros("f64", 4)}
    comm:all_to_all(send, recv)
    same({1, 2, 5, 6}, recv[1])
    same({3, 4, 7, 8}, recv[2])
    comm:close()
  end)

  it("one rank: send to itself and all_to_all of one block", function()
    local comm = gpu.comm{devices = {0}}
    local dev = gpu.device(0)
    local x, y = H.upload(dev, "i32", {4, 5}), dev:zeros("i32", 2)
    comm:send(x, 0)
    comm:recv(y, 0)
    same({4, 5}, y)
    local r = dev:zeros("i32", 2)
    comm:all_to_all(x, r)
    same({4, 5}, r)
    comm:barrier()
    comm:close()
  end)

  it("refusals name the call and what was given", function()
    local comm = gpu.comm{devices = {0}}
    local dev = gpu.device(0)
    local a, b = dev:zeros("f32", 4), dev:zeros("f32", 3)
    H.fails(H.lit("comm:send: peer 1 of rank 0 is not a rank of this communicator (0 to 0)"),
            function() comm:send(a, 1) end)
    H.fails(H.lit("comm:recv: peer expected an integer rank, got string"), function() comm:recv(a, "x") end)
    H.fails(H.lit("comm:send: unknown option 'root'"), function() comm:send(a, 0, {root = 0}) end)
    H.fails(H.lit("comm:send: NCCL has no i16 type"), function() comm:send(dev:zeros("i16", 2), 0) end)
    local line = H.here() + 1
    comm:send(a, 0)
    H.fails(H.lit("comm:all_reduce: comm:send at ") .. ".-:" .. line
            .. H.lit(" on rank 0 (to rank 0) waits for its matching comm:recv"), function() comm:all_reduce(a) end)
    H.fails(H.lit("comm:recv: comm:send at ") .. ".-:" .. line
            .. H.lit(" on rank 0 (to rank 0) sends 4 f32, but its matching comm:recv at "),
            function() comm:recv(b, 0) end)
    comm:send(a, 0)
    dev.main:fill(a, 1)
    H.fails(H.lit("comm:recv: work was queued on stream 'main' (device 0) after comm:send at "),
            function() comm:recv(dev:zeros("f32", 4), 0) end)
    local c3 = dev:zeros("f32", 3)
    H.fails(H.lit("comm:all_to_all: every rank's send and recv must have the same number of elements: " ..
                  "rank 0's send has 4, its recv 3"), function() comm:all_to_all(a, c3) end)
    H.fails(H.lit("comm:all_to_all: recv of rank 0 overlaps its send: all_to_all is not in place"),
            function() comm:all_to_all(a, a) end)
    H.fails(H.lit("comm:barrier: takes no arguments, got number 1"), function() comm:barrier(1) end)
    comm:close()
    H.fails(H.lit("comm:send: the communicator was closed"), function() comm:send(a, 0) end)
    H.fails(H.lit("comm:barrier: the communicator was closed"), function() comm:barrier() end)
  end)
end)
