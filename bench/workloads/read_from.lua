-- bench/workloads/read_from.lua: h:read_from's cost per byte stays flat as
-- its chunk grows (one fread into the buffer: no work per element, no cost
-- per call to speak of): a file of 64 MiB (written first, so read from the
-- page cache) is read in chunks of 256 KiB and of 4 MiB (both past the
-- core's own cache, neither past the shared one), alternating, five times
-- each; the medians' cost per byte, large over small, is the ratio. Prints
-- "RESULT name value unit"; with --check=R exits 1 when the ratio is above R
-- or below 1/R in each of three tries (ctest bench.read_from, on sim).
--
--   gpulua bench/workloads/read_from.lua [--check=R]
local gpu = require "gpulua"

local check
for _, a in ipairs(arg or {}) do
  if a:match("^%-%-check=") then check = assert(tonumber(a:match("=(.*)")), "--check=R takes a number") end
end

local MiB = 1 << 20
local total = 64 * MiB
local path = os.tmpname()
do
  local f = assert(io.open(path, "wb"))
  local block = gpu.host("u8", 16 * MiB)
  block:fill(7)
  for _ = 1, total // (16 * MiB) do block:write_to(f) end
  f:close()
end

local function median(t)
  table.sort(t)
  return t[(#t + 1) // 2]
end

-- seconds a byte to read the whole file in chunks of `chunk` bytes
local function per_byte(h)
  local f = assert(io.open(path, "rb"))
  local t0, bytes = gpu.clock(), 0
  while true do
    local n = h:read_from(f)
    if n == 0 then break end
    bytes = bytes + n
  end
  local dt = gpu.clock() - t0
  f:close()
  assert(bytes == total, "read " .. bytes .. " bytes of " .. total)
  return dt / bytes
end

local SMALL, LARGE = 256 * 1024, 4 * MiB
local small, large = gpu.host("u8", SMALL), gpu.host("u8", LARGE)
per_byte(small) -- warm: the page cache, the buffers' pages
per_byte(large)
local tries = check and 3 or 1
local ratio
for try = 1, tries do
  local s, l = {}, {}
  for i = 1, 5 do
    s[i] = per_byte(small)
    l[i] = per_byte(large)
  end
  ratio = median(l) / median(s)
  print(("read_from: %.3f ns a byte in chunks of %d KiB, %.3f in chunks of %d KiB: %.2fx"):format(
    median(s) * 1e9, SMALL // 1024, median(l) * 1e9, LARGE // 1024, ratio))
  if check then
    print(("read_from: ratio %.2fx (limits %.2fx to %.2fx), try %d of %d"):format(ratio, 1 / check, check, try, tries))
    if ratio <= check and ratio >= 1 / check then break end
  end
end
os.remove(path)
print(("RESULT read_from_per_byte_ratio %.4f x"):format(ratio))
if check and (ratio > check or ratio < 1 / check) then os.exit(1) end
