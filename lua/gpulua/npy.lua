-- gpulua.npy: NumPy's .npy files as host buffers.
--
--   local npy = require "gpulua.npy"
--   local h, shape = npy.load(path)        -- a pinned host buffer of the file's dtype, its shape
--   npy.save(path, x[, shape])             -- x a host buffer or a slice; shape defaults to {#x}
--
-- load reads format versions 1.0, 2.0 and 3.0 of little-endian ('<') or
-- byte-sized ('|') arrays in C order, of the dtypes gpulua has (f16, f32,
-- f64, i8 to i64, u8 to u64; bool as u8): the header is parsed, then the data
-- is read with one h:read_from into the buffer. save writes version 1.0, C
-- order, little-endian, which numpy.load reads; a slice is read first on its
-- home stream (the stream it was allocated on), as x:read() would. bf16 has
-- no NumPy dtype. Anything else (a Fortran-order array, big-endian data, a
-- structured or complex dtype, a truncated file, an empty array) is an error
-- naming the file and what was found.
local gpu = require "gpulua"
local internal = require "gpulua.internal"

local npy = {}

local MAGIC = "\147NUMPY"

-- NumPy's type codes (without the byte-order mark) and gpulua's dtypes
local FROM_NUMPY = {
  f2 = "f16", f4 = "f32", f8 = "f64", i1 = "i8", i2 = "i16", i4 = "i32", i8 = "i64",
  u1 = "u8", u2 = "u16", u4 = "u32", u8 = "u64", b1 = "u8",
}
local TO_NUMPY = {
  f16 = "<f2", f32 = "<f4", f64 = "<f8", i8 = "|i1", i16 = "<i2", i32 = "<i4", i64 = "<i8",
  u8 = "|u1", u16 = "<u2", u32 = "<u4", u64 = "<u8",
}

-- The header dictionary's fields: descr, fortran_order, shape (a table),
-- read as NumPy writes them: a Python dict of exactly those three keys, each
-- once; descr a string, fortran_order True or False, shape a tuple of
-- decimal counts. Anything else is an error naming what was found.
local function parse_header(header, path)
  local pos = 1
  local function bad(what)
    error(("npy.load: %s: %s (header %q)"):format(path, what, header), 0)
  end
  local function skip() pos = header:find("[^ \t\n]", pos) or #header + 1 end
  local function at() skip() return header:sub(pos, pos) end
  local function expect(c, what)
    if at() ~= c then bad(("expected %s at byte %d of the header"):format(what, pos)) end
    pos = pos + 1
  end
  local function quoted() -- a Python string literal without escapes, or nil
    local q = at()
    if q ~= "'" and q ~= '"' then return nil end
    local e = header:find(q, pos + 1, true)
    if not e then bad("a string that does not end") end
    local v = header:sub(pos + 1, e - 1)
    pos = e + 1
    return v
  end
  local function separator(close, what) -- a ',' (taken), or the closing bracket next
    if at() == "," then
      pos = pos + 1
    elseif at() ~= close then
      bad(what .. " are not separated by ','")
    end
  end
  local function dims()
    expect("(", "the shape's '('")
    local shape = {}
    while at() ~= ")" do
      local d = header:match("^%d+", pos)
      local n = d and math.tointeger(tonumber(d))
      if not n then bad(("a dimension %q of the shape is not a count"):format(header:match("^[^,)]*", pos))) end
      shape[#shape + 1] = n
      pos = pos + #d
      separator(")", "the shape's dimensions")
    end
    pos = pos + 1
    return shape
  end
  local fields = {}
  expect("{", "the dictionary's '{'")
  while at() ~= "}" do
    local key = quoted() or bad(("expected a quoted key at byte %d of the header"):format(pos))
    expect(":", "':' after '" .. key .. "'")
    local value
    if key == "descr" then
      value = quoted() or bad("no 'descr' string in the header (a structured dtype?)")
    elseif key == "fortran_order" then
      skip()
      value = header:match("^%a+", pos)
      if value ~= "True" and value ~= "False" then bad("'fortran_order' is neither True nor False") end
      pos = pos + #value
    elseif key == "shape" then
      value = dims()
    else
      bad(("an unknown key '%s' in the header (NumPy writes descr, fortran_order, shape)"):format(key))
    end
    if fields[key] ~= nil then bad(("the key '%s' is given twice"):format(key)) end
    fields[key] = value
    separator("}", "the dictionary's entries")
  end
  pos = pos + 1
  if at() ~= "" then bad("text after the dictionary") end
  for _, k in ipairs{"descr", "fortran_order", "shape"} do
    if fields[k] == nil then bad(("no '%s' in the header"):format(k)) end
  end
  return fields.descr, fields.fortran_order == "True", fields.shape
end

-- The elements of a shape, or nil where the count overflows an integer.
local function elements(shape)
  local count = 1
  for _, d in ipairs(shape) do
    if d ~= 0 and count > math.maxinteger // d then return nil end
    count = count * d
  end
  return count
end

function npy.load(path)
  if type(path) ~= "string" then
    error(("npy.load: expected a file name, got %s"):format(internal.given(path)), 2)
  end
  local f, why = io.open(path, "rb")
  if not f then error(("npy.load: %s"):format(why), 2) end
  local head = f:read(8)
  if not head or #head < 8 or head:sub(1, 6) ~= MAGIC then
    f:close()
    error(("npy.load: %s is not a .npy file (no \\x93NUMPY at its start)"):format(path), 2)
  end
  local major = head:byte(7)
  local lensize = major == 1 and 2 or (major == 2 or major == 3) and 4 or nil
  if not lensize then
    f:close()
    error(("npy.load: %s: format version %d.%d is not supported (1.0, 2.0, 3.0)"):format(path, major, head:byte(8)), 2)
  end
  local lenbytes = f:read(lensize)
  local hlen = lenbytes and #lenbytes == lensize and string.unpack(lensize == 2 and "<I2" or "<I4", lenbytes)
  local header = hlen and f:read(hlen)
  if not header or #header < hlen then
    f:close()
    error(("npy.load: %s: the header is cut short"):format(path), 2)
  end
  local ok, descr, fortran, shape = pcall(parse_header, header, path)
  if not ok then
    f:close()
    error(descr, 2)
  end
  local order, code = descr:sub(1, 1), descr:sub(2)
  local dtype = FROM_NUMPY[code]
  local function refuse(what)
    f:close()
    error(("npy.load: %s: %s"):format(path, what), 3)
  end
  if not dtype or (order ~= "<" and order ~= "|" and order ~= "=") then
    refuse(order == ">" and ("big-endian data ('%s') is not supported: save it little-endian"):format(descr)
      or ("dtype '%s' is not supported (f16, f32, f64, i8 to i64, u8 to u64, bool)"):format(descr))
  elseif fortran then
    refuse("a Fortran-order array is not supported: save it in C order (numpy.ascontiguousarray)")
  end
  local count, size = elements(shape), tonumber(code:sub(2)) -- f4: 4 bytes
  local here = f:seek()
  local room = (f:seek("end") - here) // size -- whole elements after the header
  f:seek("set", here)
  if not count or count > math.maxinteger // size then
    refuse(("the shape (%s) holds more elements than can be counted"):format(table.concat(shape, ", ")))
  elseif count == 0 then
    refuse("an empty array cannot be a host buffer")
  elseif room < count then -- before any buffer is made for it
    refuse(("the data is cut short: %d of %d elements"):format(room, count))
  end
  local made, h = pcall(gpu.host, dtype, count) -- a count too large for memory: that error, with the file's name
  if not made then
    f:close()
    error(("npy.load: %s: %s"):format(path, tostring(h):gsub("^[^:]*:%d+: ", "")), 2)
  end
  local got = h:read_from(f)
  f:close()
  if got < count then -- the file shrank since its size was read
    error(("npy.load: %s: the data is cut short: %d of %d elements"):format(path, got, count), 2)
  end
  return h, shape
end

function npy.save(path, x, shape)
  if type(path) ~= "string" then
    error(("npy.save: expected a file name, got %s"):format(internal.given(path)), 2)
  end
  local h = internal.contents(x, 2, "npy.save", "x") -- a slice read on its home stream, or the buffer
  local dtype = x.dtype
  local descr = TO_NUMPY[dtype]
  if not descr then error(("npy.save: %s has no NumPy dtype (save it as f32 or u16)"):format(dtype), 2) end
  shape = shape or {#h}
  if type(shape) ~= "table" then
    error(("npy.save: shape expected a table of counts, got %s"):format(internal.given(shape)), 2)
  end
  local count, dims = 1, {}
  for i, d in ipairs(shape) do
    if math.type(d) ~= "integer" or d < 1 then
      error(("npy.save: shape[%d] expected a positive integer, got %s"):format(i, internal.given(d)), 2)
    end
    count = count <= math.maxinteger // d and count * d or -1 -- -1: more than x can hold
    dims[i] = tostring(d)
  end
  if count ~= #h then
    error(("npy.save: shape {%s} holds %s elements, x has %d"):format(table.concat(dims, ", "),
          count < 0 and "more" or tostring(count), #h), 2)
  end
  local tuple = #dims == 1 and ("(" .. dims[1] .. ",)") or ("(" .. table.concat(dims, ", ") .. ")")
  local dict = ("{'descr': '%s', 'fortran_order': False, 'shape': %s, }"):format(descr, tuple)
  local total = 10 + #dict + 1 -- magic, version, length, the dict and its newline: a multiple of 64
  dict = dict .. (" "):rep((64 - total % 64) % 64) .. "\n"
  local f, why = io.open(path, "wb")
  if not f then error(("npy.save: %s"):format(why), 2) end
  local ok, err = f:write(MAGIC, "\1\0", string.pack("<I2", #dict), dict)
  if ok then
    local wrote, werr = pcall(h.write_to, h, f)
    if not wrote then ok, err = nil, werr end
  end
  local closed, cerr = f:close() -- buffered bytes are written here: its error counts too
  if not ok or not closed then
    error(("npy.save: %s: the file could not be written: %s"):format(path, tostring(err or cerr)), 2)
  end
end

return npy
