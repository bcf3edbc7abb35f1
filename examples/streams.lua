-- examples/streams.lua: fork and join, the basics of a stream layout.
--
-- One stream loads the data, forks two workers that each transform a half
-- (disjoint views of one slice, so they may run at the same time), and
-- joins them back before the result is copied out. Run it with --timeline to
-- see the layout, or with --policy=strict (the default) and remove a join to
-- see the checker name both streams and both lines.
--
--   gpulua --timeline examples/streams.lua
local gpu = require "gpulua"

local n = 1 << 16
local dev = gpu.device(0)
local load = dev:stream{name = "load"}
local h = gpu.host("f32", n)
for i = 1, n do h[i] = i end

local x <close> = dev:alloc("f32", n, {stream = load})
load:copy(x, h)

local halves = x:split(2)
local cfg = {grid = 8, block = 256}
local left = load:fork{name = "left"}    -- starts after the copy
local right = load:fork{name = "right"}
left:launch(gpu.kernels.scale, cfg, 2.0, halves[1], halves[1], #halves[1])   -- x[1..n/2] *= 2
right:launch(gpu.kernels.scale, cfg, -1.0, halves[2], halves[2], #halves[2]) -- x[n/2+1..n] *= -1

load:join(left):join(right)              -- load waits for both workers
load:copy(h, x)
load:sync()

for i = 1, n do
  local want = i <= n // 2 and 2 * i or -i
  assert(h[i] == want, ("element %d is %s, expected %s"):format(i, h[i], want))
end
left:close()
right:close()
print(("fork/join on %s: %d elements verified"):format(dev.name, n))
