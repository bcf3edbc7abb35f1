-- tests/ptx/corpus_compare.lua: compare two dumps of tests/ptx/corpus.lua, element by element:
-- one line a kernel (equal, or how many elements differ, the largest distance in units in the
-- last place for float outputs, and the first difference with both values); exit status 1 when
-- anything differs.
--   lua5.4 tests/ptx/corpus_compare.lua a.dump b.dump      (or gpulua)
local a_path, b_path = arg[1], arg[2]
assert(a_path and b_path, "usage: corpus_compare.lua A.dump B.dump")
local function load_dump(path)
  local f = assert(io.open(path))
  local head = f:read("l")
  f:close()
  return assert(dofile(path)), head:gsub("^%-%- ", "")
end
local a, a_what = load_dump(a_path)
local b, b_what = load_dump(b_path)
print(("A: %s (%s)\nB: %s (%s)"):format(a_path, a_what, b_path, b_what))

local widths = {f16 = 16, f32 = 32, f64 = 64}
-- the distance between two floats' bit patterns in units in the last place (nil: signs differ)
local function ulps(kind, x, y)
  local w = widths[kind]
  local mask = w == 64 and -1 or (1 << w) - 1
  x, y = x & mask, y & mask
  local sign = w == 64 and math.mininteger or 1 << (w - 1)
  if (x & sign) ~= (y & sign) then return nil end
  local d = (x & ~sign) - (y & ~sign)
  return d < 0 and -d or d
end

local by_name = {}
for _, r in ipairs(b) do by_name[r.name] = r end
local differ = 0
for _, ra in ipairs(a) do
  local rb = by_name[ra.name]
  if not rb then
    print(("%-10s only in A"):format(ra.name))
    differ = differ + 1
  else
    local notes, bad = {}, 0
    for i, oa in ipairs(ra.outs) do
      local ob = rb.outs[i]
      local n, first, worst = 0, nil, 0
      for j = 1, math.max(#oa.values, #ob.values) do
        local x, y = oa.values[j], ob.values[j]
        if x ~= y then
          n = n + 1
          first = first or ("%s[%d]: %s vs %s"):format(oa.name, j - 1, tostring(x), tostring(y))
          local u = widths[oa.kind] and x and y and ulps(oa.kind, x, y)
          if u == nil or worst == nil then worst = nil else worst = math.max(worst, u) end
        end
      end
      if n > 0 then
        bad = bad + n
        local dist = widths[oa.kind] and (worst and (", at most %d ulp"):format(worst) or ", signs differ") or ""
        notes[#notes + 1] = ("%s: %d of %d differ%s; first %s"):format(oa.name, n, #oa.values, dist, first)
      end
    end
    if bad == 0 then
      print(("%-10s equal (%d outputs)"):format(ra.name, #ra.outs))
    else
      differ = differ + 1
      print(("%-10s DIFFERS: %s"):format(ra.name, table.concat(notes, "; ")))
    end
  end
end
local in_a = {}
for _, r in ipairs(a) do in_a[r.name] = true end
for _, r in ipairs(b) do
  if not in_a[r.name] then print(("%-10s only in B (not compared)"):format(r.name)) end
end
if differ == 0 then
  print(("corpus: all %d kernels equal"):format(#a))
else
  print(("corpus: %d of %d kernels differ"):format(differ, #a))
end
os.exit(differ == 0 and 0 or 1)
