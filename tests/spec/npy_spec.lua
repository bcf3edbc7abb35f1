local gpu = require "gpulua"
local H = require "helpers"
local npy = require "gpulua.npy"

-- NumPy's .npy format (version 1.0: magic, version, a 2-byte header length,
-- the header dictionary padded with spaces to a multiple of 64 bytes with
-- its newline, then the data in C order)
describe("gpulua.npy", function()
  local path = H.temp_paths(after_each)
  local slurp, spit = H.read_file, H.write_file
  -- a file as NumPy would write it: version `v`, the dictionary, the data
  local function npy_bytes(dict, data, v)
    v = v or 1
    local lensize = v == 1 and 2 or 4
    local total = 6 + 2 + lensize + #dict + 1
    dict = dict .. (" "):rep((64 - total % 64) % 64) .. "\n"
    return "\147NUMPY" .. string.char(v, 0) .. string.pack(v == 1 and "<I2" or "<I4", #dict) .. dict .. data
  end

  it("save writes NumPy's version 1.0 header, then the data", function()
    local p = path()
    npy.save(p, gpu.host("f32", {1, 2, 3, 4, 5, 6}), {2, 3})
    local s = slurp(p)
    local dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
    assert.are.equal(npy_bytes(dict, string.pack("<ffffff", 1, 2, 3, 4, 5, 6)), s)
    assert.are.equal(0, (#s - 24) % 64) -- the header a multiple of 64 bytes
    npy.save(p, gpu.host("u8", {7, 8}))
    assert.are.equal(npy_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }", "\7\8"), slurp(p))
  end)

  it("load gives what save wrote, every dtype NumPy has", function()
    for _, dt in ipairs(H.dtypes) do
      if dt ~= "bf16" then
        local values = {}
        for i = 1, 12 do values[i] = i % 5 end
        local p = path()
        npy.save(p, gpu.host(dt, values), {3, 2, 2})
        local h, shape = npy.load(p)
        assert.are.equal(dt, h.dtype)
        assert.are.same({3, 2, 2}, shape)
        assert.are.same(values, h:totable())
      end
    end
  end)

  it("saves a slice, read on its stream", function()
    local dev = gpu.device(0)
    local x = dev:alloc("i32", 4)
    dev.main:copy(x, gpu.host("i32", {9, -8, 7, -6}))
    local p = path()
    npy.save(p, x)
    local h, shape = npy.load(p)
    assert.are.same({4}, shape)
    assert.are.same({9, -8, 7, -6}, h:totable())
  end)

  it("loads NumPy's own files: versions 1.0 and 2.0, bool, a scalar", function()
    local p = path()
    spit(p, npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", string.pack("<i8i8i8", -1, 2, 3)))
    local h, shape = npy.load(p)
    assert.are.equal("i64", h.dtype)
    assert.are.same({3}, shape)
    assert.are.same({-1, 2, 3}, h:totable())
    spit(p, npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 1), }", string.pack("<dd", 0.5, -2), 2))
    h, shape = npy.load(p)
    assert.are.same({2, 1}, shape)
    assert.are.same({0.5, -2}, h:totable())
    spit(p, npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", "\1\0"))
    assert.are.same({1, 0}, (npy.load(p)):totable())
    spit(p, npy_bytes("{'descr': '<u2', 'fortran_order': False, 'shape': (), }", "\5\0"))
    h, shape = npy.load(p)
    assert.are.same({}, shape)
    assert.are.same({5}, h:totable())
  end)

  it("refuses what it cannot read, naming the file and what it found", function()
    local p = path()
    local function with(dict, data)
      spit(p, npy_bytes(dict, data or "\0\0\0\0\0\0\0\0"))
      return function() npy.load(p) end
    end
    H.fails("npy.load: .*: a Fortran%-order array is not supported",
            with("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }"))
    H.fails("npy.load: .*: big%-endian data %('>f4'%) is not supported",
            with("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }"))
    H.fails("npy.load: .*: dtype '<c8' is not supported",
            with("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }"))
    H.fails("npy.load: .*: no 'descr' string in the header %(a structured dtype%?%)",
            with("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }"))
    H.fails("npy.load: .*: the data is cut short: 2 of 3 elements",
            with("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"))
    H.fails("npy.load: .*: an empty array cannot be a host buffer",
            with("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 2), }"))
    -- a shape larger than the file: refused before any buffer is made for it
    H.fails("npy.load: [^:]*: the data is cut short: 2 of 1099511627776 elements",
            with("{'descr': '<f4', 'fortran_order': False, 'shape': (1048576, 1048576), }"))
    H.fails("npy.load: .*: the shape %(4611686018427387905, 4%) holds more elements than can be counted",
            with("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387905, 4), }"))
    -- headers NumPy would not write, or would read otherwise
    H.fails("npy.load: .*: the key 'descr' is given twice",
            with("{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': (2,), }"))
    H.fails("npy.load: .*: an unknown key 'extra' in the header",
            with("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1, }"))
    H.fails("npy.load: .*: no 'shape' in the header", with("{'descr': '<f4', 'fortran_order': False, }"))
    for _, shape in ipairs{"(2 2)", "(0x4,)", "(4.0,)", "(-2,)", "[2]"} do
      H.fails("npy.load: .*: [^\n]*shape",
              with("{'descr': '<f4', 'fortran_order': False, 'shape': " .. shape .. ", }"))
    end
    H.fails("npy.load: .*: 'fortran_order' is neither True nor False",
            with("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }"))
    H.fails("npy.load: .*: text after the dictionary",
            with("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } x"))
    spit(p, "PK\3\4 not an array")
    H.fails("npy.load: .* is not a .npy file", function() npy.load(p) end)
    H.fails("npy.load: .*No such file", function() npy.load(p .. ".missing") end)
    H.fails("npy.load: expected a file name, got number 3", function() npy.load(3) end)
    local h = gpu.host("f32", 6)
    H.fails("npy.save: bf16 has no NumPy dtype", function() npy.save(p, gpu.host("bf16", 2)) end)
    H.fails("npy.save: shape {4} holds 4 elements, x has 6", function() npy.save(p, h, {4}) end)
    H.fails("npy.save: shape%[2%] expected a positive integer, got number 1.5", function() npy.save(p, h, {2, 1.5}) end)
    H.fails("npy.save: shape expected a table of counts, got number 6", function() npy.save(p, h, 6) end)
    H.fails("npy.save: shape {4611686018427387905, 4} holds more elements, x has 6",
            function() npy.save(p, h, {4611686018427387905, 4}) end)
    local f = io.open("/dev/full", "w")
    if f then -- a write the disk refuses (here at close, where the buffered bytes go) is an error
      f:close()
      H.fails("npy.save: /dev/full: the file could not be written: [^\n]*No space left",
              function() npy.save("/dev/full", h) end)
    end
    H.fails("npy.save: x expected a gpulua.Slice or gpulua.HostBuffer, got table", function() npy.save(p, {1, 2}) end)
  end)
end)
