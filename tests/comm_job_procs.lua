-- One rank of a job of several processes (tests/comm_job_procs_check.sh starts
-- them under each launcher's variables): every collective, send/recv,
-- all_to_all and barrier, each result checked against values computed here.
-- Prints "rank R of N: all collectives agree" when every check passed.
local gpu = require "gpulua"

local c = gpu.comm{timeout = 60}
local r, n = c.rank, c.size
local dev = c.device
local s = dev.main

local function put(dtype, values)
  local x = dev:alloc(dtype, #values)
  s:copy(x, gpu.host(dtype, values))
  return x
end

local function check(what, got, want)
  assert(#got == #want, ("%s: %d elements, expected %d"):format(what, #got, #want))
  for i = 1, #want do
    if got[i] ~= want[i] then
      error(("rank %d of %d: %s: element %d is %s, expected %s"):format(r, n, what, i, tostring(got[i]),
        tostring(want[i])), 2)
    end
  end
end

-- all_reduce, sum of f32
local x = put("f32", {r + 1, 2 * (r + 1), 0.5})
c:all_reduce(x)
local tri = n * (n + 1) / 2
check("all_reduce f32 sum", x:read(), {tri, 2 * tri, 0.5 * n})

-- all_reduce, i8 sum wraps in 8 bits; i32 max; f32 avg
local w = put("i8", {100, -100})
c:all_reduce(w)
local function wrap8(v) return (v + 128) % 256 - 128 end
check("all_reduce i8 sum", w:read(), {wrap8(100 * n), wrap8(-100 * n)})
local m = put("i32", {r, -r})
c:all_reduce(m, {op = "max"})
check("all_reduce i32 max", m:read(), {n - 1, 0})
local a = put("f32", {r})
c:all_reduce(a, {op = "avg"})
check("all_reduce f32 avg", a:read(), {(n - 1) / 2})

-- broadcast from the last rank
local b = put("i64", {r, r * 3, 7})
c:broadcast(b, {root = n - 1})
check("broadcast", b:read(), {n - 1, (n - 1) * 3, 7})

-- reduce (prod of f64) to rank 0, into a recv of its own
local p = put("f64", {r + 1, 2})
local pr = put("f64", {-1, -1})
c:reduce(p, {root = 0, op = "prod", recv = pr})
local fact, pow = 1, 1
for k = 1, n do fact, pow = fact * k, pow * 2 end
check("reduce", pr:read(), r == 0 and {fact, pow} or {-1, -1})

-- all_gather of u32
local g = put("u32", {r * 7 + 1, r * 7 + 2})
local gr = dev:alloc("u32", 2 * n)
c:all_gather(g, gr)
local want = {}
for k = 0, n - 1 do want[#want + 1], want[#want + 2] = k * 7 + 1, k * 7 + 2 end
check("all_gather", gr:read(), want)

-- reduce_scatter, sum of f32
local vals = {}
for j = 0, 2 * n - 1 do vals[j + 1] = r * 10 + j end
local rs = put("f32", vals)
local rr = dev:alloc("f32", 2)
c:reduce_scatter(rs, rr)
local sum10 = 10 * n * (n - 1) / 2
check("reduce_scatter", rr:read(), {sum10 + n * (2 * r), sum10 + n * (2 * r + 1)})

-- a ring of send and recv
local out = put("i32", {r, r * r})
local into = put("i32", {-1, -1})
local from = (r - 1 + n) % n
c:send(out, (r + 1) % n)
c:recv(into, from)
check("send/recv ring", into:read(), {from, from * from})

-- all_to_all of i32: block k of send goes to rank k
local sv = {}
for k = 0, n - 1 do sv[#sv + 1], sv[#sv + 2] = r * 100 + k, r * 100 + k + 50 end
local ts, tr = put("i32", sv), dev:alloc("i32", 2 * n)
c:all_to_all(ts, tr)
want = {}
for k = 0, n - 1 do want[#want + 1], want[#want + 2] = k * 100 + r, k * 100 + r + 50 end
check("all_to_all", tr:read(), want)

c:barrier()
c:close()
print(("rank %d of %d: all collectives agree"):format(r, n))
