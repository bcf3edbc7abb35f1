-- scripts/smoke.lua: a quick tour of the foundation calls, for a first look on a new machine.
local d = gpu.device(0); print(d, d.name, d.memory, d.cc, d.sms, d.main, d:free_memory())
local s = d:stream{name="h2d"}
local h = gpu.host("f32", {1,2,3,4})
local x = d:alloc("f32", 4, {stream=s})
s:copy(x, h)
local y = d:zeros("f32", 4, {stream = s})
s:copy(y, x)
local r = y:read{stream=s}
print(r, r[1], r[4], #r, table.concat(r:totable(), ","))
s:fill(x, 7.5); print(table.concat(x:read{stream=s}:totable(), ","))
local z = d:alloc("f64", 3); d.main:fill(z, 1.25); print(table.concat(z:read():totable(), ","))
local w = d:alloc("i64", 3); d.main:fill(w, -2); print(table.concat(w:read():totable(), ","))
local w2 = d:alloc("i64", 3); d.main:fill(w2, 1<<40 | 3); print(table.concat(w2:read():totable(), ","), 1<<40|3)
local e1 = s:record{timing=true}; local e2 = s:record{timing=true}; print(e1:elapsed(e2))
s:close(); print(s); print(pcall(s.sync, s))
x:free(); print(pcall(function() return d.main:fill(x, 1) end))
local v = y:view(1, 2); print(v, #v)
local parts = y:split(3); for i, p in ipairs(parts) do io.write(#p, " ") end print()
gpu.sync()
local h2 = gpu.host("f32", 4); d.main:copy(h2, y); print(pcall(function() return h2[1] end))
d.main:sync(); print(h2[1])
if gpu.count() > 1 then
  local d1 = gpu.device(1); local q = d1:alloc("f32", 4); d1.main:copy(q, y); print(table.concat(q:read():totable(), ","))
end
print(pcall(gpu.device, gpu.count()))
