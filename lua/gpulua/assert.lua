-- gpulua.assert: luassert (Busted's assertions) for GPU data.
--
--   require "gpulua.assert"                     -- registers these with luassert
--   assert.slice_equal(x, expected[, message])
--   assert.slice_near(x, expected, tol[, message])
--   assert.is_not.slice_equal(x, expected)      -- negated, as any luassert assertion
--
-- x is a device slice (a view too) or a host buffer; expected is a Lua table
-- of numbers, a host buffer or a slice. A slice is read on its home stream
-- (the stream it was allocated on, as tostring(x) shows; its device's main
-- stream once that stream is closed), like x:read{stream = home}: the read
-- waits for the work queued there, and the checker still checks it, so a
-- slice that another stream may still be writing is the checker's error (at
-- the assertion's line), not a race and not a silent wait. To read on another
-- stream, pass x:read{stream = s} (a host buffer) instead. Nothing else is
-- waited for: the assertion adds no ordering to the script's streams.
--
-- slice_equal: the same length, the same dtype (when expected has one) and
-- every element equal as numbers (0 equals -0). A table's values are taken
-- as x's dtype stores them (as gpu.host(x.dtype, t) would: {0.1} matches an
-- f32 slice holding 0.1f; a value that dtype cannot hold is an error). NaN
-- equals NaN, so a NaN the code should produce can be asserted.
--
-- slice_near: the same length (dtypes may differ: an f16 result against an
-- f64 reference) and every element within tol of expected, where tol is a
-- number (absolute: |actual - expected| <= tol) or {abs = a, rel = r}
-- (|actual - expected| <= a + r * |expected|, as numpy.isclose; a and r
-- default to 0). Table values are taken as given. NaN is near only NaN, an
-- infinity only the same infinity.
--
-- A failure names both operands, the lengths or dtypes where they differ,
-- the number of differing elements and the first few, each as "[i] (offset
-- o)": i 1-based as a host buffer's index, o 0-based as a slice's offset.
-- Returns luassert's assert, so `local assert = require "gpulua.assert"`
-- also works outside Busted.
local gpu = require "gpulua"
local internal = require "gpulua.internal"

local ok, luassert = pcall(require, "luassert")
if not ok then
  error("gpulua.assert needs luassert, Busted's assertions (apt-get install lua-luassert, or luarocks "
    .. "install luassert): " .. tostring(luassert), 2)
end
local say = require "say"

local SHOWN = 5 -- differing elements listed in a failure

-- What v is, for "got X" (as gpulua's own messages say it).
local given = internal.given

local function is_gpu_data(v)
  local name = given(v)
  return name == "gpulua.Slice" or name == "gpulua.HostBuffer"
end

-- A number as a message shows it: floats with a point or an exponent, and
-- with enough digits to tell two different values apart.
local function num(v)
  if math.type(v) == "integer" then return tostring(v) end
  if v ~= v then return "nan" end
  if v == math.huge then return "inf" end
  if v == -math.huge then return "-inf" end
  local s = ("%.14g"):format(v)
  if tonumber(s) ~= v then s = ("%.17g"):format(v) end
  if not s:find("[%.eni]") then s = s .. ".0" end
  return s
end

-- An operand's elements: {desc =, n =, dtype =, at = function(i) -> value}.
-- level: the caller's script line, as error() counts from here.
local function operand(v, level, fname, name)
  if is_gpu_data(v) then
    local h, desc, stream = internal.contents(v, level, fname, name)
    if stream then desc = ("%s (read on stream '%s')"):format(desc, stream) end
    return {desc = desc, n = #h, dtype = h.dtype, at = function(i) return h[i] end}
  end
  if type(v) ~= "table" or name == "x" then
    local what = name == "x" and "#1 (x): expected a gpulua.Slice or gpulua.HostBuffer"
      or "#2 (expected): expected a table of numbers, a host buffer or a slice"
    error(("%s: bad argument %s, got %s"):format(fname, what, given(v)), level)
  end
  local n = #v
  for k, e in pairs(v) do
    if math.type(k) ~= "integer" or k < 1 or k > n then
      error(("%s: %s: a table of expected values is a list (1 to #t), but it has the key %s"):format(
        fname, name, type(k) == "string" and ("'" .. k .. "'") or tostring(k)), level)
    end
    if type(e) ~= "number" then
      error(("%s: %s[%d]: expected a number, got %s"):format(fname, name, k, given(e)), level)
    end
  end
  return {desc = ("table of %d value%s"):format(n, n == 1 and "" or "s"), n = n, table = v,
          at = function(i) return v[i] end}
end

-- The table operand e's values as dtype stores them (slice_equal).
local function as_dtype(e, dtype, level, fname)
  if e.n == 0 then return end
  local ok2, h = pcall(gpu.host, dtype, e.table, {pinned = false})
  if not ok2 then
    local i, why = tostring(h):match("element (%d+) of the table: (.*)")
    error(("%s: expected[%s] is not a value of x's dtype %s: %s"):format(
      fname, i or "?", dtype, why or tostring(h)), level)
  end
  e.at = function(i) return h[i] end
end

-- Compare x and e element by element with same(a, b) (show(a, b): what to
-- add to a difference's line); the failure's details (nil when they match)
-- and, for a negated assertion's message, what matched ("all 8 elements are
-- equal": word "equal").
local function compare(x, e, same, show, want_dtype, word)
  local lines = {}
  if want_dtype and e.dtype and x.dtype ~= e.dtype then
    lines[#lines + 1] = ("dtypes differ: %s, expected %s"):format(x.dtype, e.dtype)
  end
  if x.n ~= e.n then
    lines[#lines + 1] = ("lengths differ: %d element%s, expected %d"):format(x.n, x.n == 1 and "" or "s", e.n)
  end
  local n = math.min(x.n, e.n)
  local bad, first = 0, {}
  for i = 1, n do
    local a, b = x.at(i), e.at(i)
    if not same(a, b) then
      bad = bad + 1
      if bad <= SHOWN then
        first[bad] = ("  [%d] (offset %d): %s, expected %s%s"):format(i, i - 1, num(a), num(b), show(a, b))
      end
    end
  end
  local s = n == 1 and "" or "s"
  local of = x.n == e.n and ("%d"):format(n) or ("the first %d"):format(n)
  if bad > 0 then
    lines[#lines + 1] = ("%d of %s element%s differ%s%s (index 1-based, offset 0-based):"):format(
      bad, of, s, bad == 1 and "s" or "", bad > SHOWN and ("; the first " .. SHOWN) or "")
    for _, l in ipairs(first) do lines[#lines + 1] = l end
  end
  local summary = ("%s %d element%s %s %s"):format(x.n == e.n and "all" or "the first", n, s,
    n == 1 and "is" or "are", word)
  if bad == 0 and #lines > 0 and n > 0 then lines[#lines + 1] = summary end
  return #lines > 0 and table.concat(lines, "\n") or nil, summary
end

local function is_nan(v) return v ~= v end

-- The assertion's arguments become its message's: strings, not formatted.
local function set_message_args(arguments, ...)
  local n = select("#", ...)
  arguments.n = n
  arguments.nofmt = {}
  for i = 1, n do
    arguments[i] = select(i, ...)
    arguments.nofmt[i] = true
  end
end

local function set_failure_message(state, message)
  if message ~= nil then state.failure_message = message end
end

local function slice_equal(state, arguments, level)
  level = (level or 1) + 1
  local fname = "assert.slice_equal"
  if arguments.n < 2 then
    error(("%s: expected 2 arguments (x, expected[, message]), got %d"):format(fname, arguments.n), level)
  end
  local x = operand(arguments[1], level + 1, fname, "x")
  local e = operand(arguments[2], level + 1, fname, "expected")
  if e.table then as_dtype(e, x.dtype, level + 1, fname) end
  local failure, summary = compare(x, e, function(a, b) return a == b or (is_nan(a) and is_nan(b)) end,
    function() return "" end, true, "equal")
  set_failure_message(state, arguments[3])
  local match = failure == nil
  set_message_args(arguments, x.desc, e.desc, match and summary or failure)
  return match
end

local TOL_KEYS = {abs = true, rel = true}

-- tol as {abs =, rel =} and its text for messages.
local function tolerance(tol, level, fname)
  local function check(v, what)
    if type(v) ~= "number" or v ~= v or v < 0 then
      error(("%s: %s expected a number >= 0, got %s"):format(fname, what, given(v)), level + 1)
    end
    return v
  end
  if type(tol) == "number" then
    local a = check(tol, "tol")
    return {abs = a, rel = 0}, ("|actual - expected| <= %s"):format(num(a))
  end
  if type(tol) ~= "table" then
    error(("%s: tol expected a number (absolute) or a table {abs =, rel =}, got %s"):format(fname, given(tol)), level)
  end
  for k in pairs(tol) do
    if not TOL_KEYS[k] then
      error(("%s: tol: unknown key '%s' (the keys are: abs, rel)"):format(fname, tostring(k)), level)
    end
  end
  if tol.abs == nil and tol.rel == nil then error(("%s: tol: give abs, rel or both"):format(fname), level) end
  local a = tol.abs == nil and 0 or check(tol.abs, "tol.abs")
  local r = tol.rel == nil and 0 or check(tol.rel, "tol.rel")
  local text = "|actual - expected| <= "
  if tol.abs ~= nil then text = text .. num(a) .. (tol.rel ~= nil and " + " or "") end
  if tol.rel ~= nil then text = text .. num(r) .. " * |expected|" end
  return {abs = a, rel = r}, text
end

local function slice_near(state, arguments, level)
  level = (level or 1) + 1
  local fname = "assert.slice_near"
  if arguments.n < 3 then
    error(("%s: expected 3 arguments (x, expected, tol[, message]), got %d"):format(fname, arguments.n), level)
  end
  local tol, tol_text = tolerance(arguments[3], level + 1, fname)
  local x = operand(arguments[1], level + 1, fname, "x")
  local e = operand(arguments[2], level + 1, fname, "expected")
  local function allowed(b) return tol.rel == 0 and tol.abs or tol.abs + tol.rel * math.abs(b + 0.0) end
  local function finite(v) return v == v and v ~= math.huge and v ~= -math.huge end
  local failure, summary = compare(x, e, function(a, b)
    if a == b then return true end -- equal infinities too
    if not (finite(a) and finite(b)) then return is_nan(a) and is_nan(b) end
    return math.abs((a + 0.0) - b) <= allowed(b) -- in floats: an integer difference can wrap
  end, function(a, b)
    if not (finite(a) and finite(b)) then return "" end
    return (", off by %.3g (allowed %.3g)"):format(math.abs((a + 0.0) - b), allowed(b))
  end, false, "near")
  set_failure_message(state, arguments[4])
  local match = failure == nil
  set_message_args(arguments, x.desc, e.desc, tol_text, match and summary or failure)
  return match
end

say:set("assertion.slice_equal.positive", "Expected %s\nto equal %s:\n%s")
say:set("assertion.slice_equal.negative", "Expected %s\nnot to equal %s,\nbut %s")
say:set("assertion.slice_near.positive", "Expected %s\nto be near %s (%s):\n%s")
say:set("assertion.slice_near.negative", "Expected %s\nnot to be near %s (%s),\nbut %s")
luassert:register("assertion", "slice_equal", slice_equal,
  "assertion.slice_equal.positive", "assertion.slice_equal.negative")
luassert:register("assertion", "slice_near", slice_near,
  "assertion.slice_near.positive", "assertion.slice_near.negative")

return luassert
