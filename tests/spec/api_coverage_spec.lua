-- Everything a script can reach is documented in docs/API.md, found at run
-- time (not from a list here), so that a new function, method or field fails
-- this spec until API.md names it:
--   * every field of the gpu table (`gpu.compile`) and of its tables
--     (`gpu.kernels.axpy`), and every function of gpulua.pipeline
--     (`pipeline.run`);
--   * every gpulua object type (each metatable in the registry named
--     "gpulua.X"): each method from its methods table, as `var:method`, and
--     each field its objects list, as `var.field`, where var is the name
--     API.md gives objects of that type (VARS below: dev, s, e, x, h, m, k,
--     cfg, g, comm).
-- A name counts as documented when it appears in API.md as a whole word
-- (`s:sync` is not found in `cs:sync` nor in `s:synchronize`).
local gpu = require "gpulua"
local H = require "helpers"

-- The variable API.md uses for each type, and how to make one object of it
-- (for its fields, which only an object lists).
local TYPES = {
  ["gpulua.Device"] = {var = "dev", make = function() return gpu.device(0) end},
  ["gpulua.Stream"] = {var = "s", make = function() return gpu.device(0):stream{name = "coverage"} end},
  ["gpulua.Event"] = {var = "e", make = function() return gpu.device(0).main:record{} end},
  ["gpulua.Slice"] = {var = "x", make = function() return gpu.device(0):zeros("f32", 4) end},
  ["gpulua.HostBuffer"] = {var = "h", make = function() return gpu.host("f32", 4) end},
  ["gpulua.Module"] = {var = "m", make = function()
    return gpu.compile('extern "C" __global__ void coverage() {}', {name = "coverage.cu"})
  end},
  ["gpulua.Kernel"] = {var = "k", make = function() return gpu.kernels.axpy end},
  ["gpulua.Config"] = {var = "cfg", make = function() return gpu.config{grid = 1, block = 32} end},
  ["gpulua.Graph"] = {var = "g", make = function()
    return gpu.device(0).main:capture(function() end, {name = "coverage"})
  end},
  ["gpulua.Comm"] = {var = "comm", make = function() return gpu.comm{devices = {0}} end},
}

local function api_text()
  local here = debug.getinfo(1, "S").source:match("^@(.*)$")
  local root = here:match("^(.*)/tests/spec/[^/]*$") or "."
  local f = assert(io.open(root .. "/docs/API.md"))
  local text = f:read("a")
  f:close()
  return text
end

local function mentions(text, name)
  return text:find("%f[%w_]" .. H.lit(name) .. "%f[^%w_]") ~= nil
end

-- The gpulua types registered in this state: name -> metatable.
local function types()
  local found = {}
  for k, v in pairs(debug.getregistry()) do
    if type(k) == "string" and k:match("^gpulua%.") and type(v) == "table" and v.__name == k then found[k] = v end
  end
  return found
end

-- A type's methods table: the upvalue of its __index (l_types.c), which
-- package.loaded also holds.
local function methods_of(name, mt)
  if type(mt.__index) == "function" then
    local _, t = debug.getupvalue(mt.__index, 1)
    if type(t) == "table" then return t end
  end
  return package.loaded[name]
end

-- The fields an object lists when indexed with a key it does not have.
local function fields_of(obj)
  local ok, err = pcall(function() return obj.no_such_field_for_coverage end)
  assert.is_false(ok, "indexing a missing field is an error")
  local list = tostring(err):match("fields: ([^;)]*)")
  assert.is_not_nil(list, "the error lists the fields: " .. tostring(err))
  local fields = {}
  if list ~= "none" then
    for f in list:gmatch("[%w_]+") do fields[#fields + 1] = f end
  end
  return fields
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do
    if type(k) == "string" then keys[#keys + 1] = k end
  end
  table.sort(keys)
  return keys
end

-- Assert that each of the names is in the text, listing those that are not.
local function all_documented(text, names)
  local missing = {}
  for _, n in ipairs(names) do
    if not mentions(text, n.name) then missing[#missing + 1] = n.name .. " (" .. n.what .. ")" end
  end
  assert(#missing == 0, ("docs/API.md does not document %d name%s: %s"):format(
    #missing, #missing == 1 and "" or "s", table.concat(missing, ", ")))
end

describe("docs/API.md covers the API", function()
  local text
  setup(function()
    text = api_text()
  end)

  it("finds what it looks for, and not in longer names", function()
    assert.is_true(mentions("`s:sync()` waits", "s:sync"))
    assert.is_false(mentions("`cs:sync()` waits", "s:sync"))
    assert.is_false(mentions("`s:synchronize()`", "s:sync"))
    assert.is_false(mentions("`x_dtype`", "x.dtype"))
    assert.is_true(mentions("Fields: `x.dtype`, `x.bytes`", "x.dtype"))
  end)

  it("every field of the gpu table and of its tables", function()
    local names = {}
    for _, k in ipairs(sorted_keys(gpu)) do
      names[#names + 1] = {name = "gpu." .. k, what = type(gpu[k])}
      if type(gpu[k]) == "table" then
        for _, kk in ipairs(sorted_keys(gpu[k])) do
          names[#names + 1] = {name = ("gpu.%s.%s"):format(k, kk), what = "in gpu." .. k}
        end
      end
    end
    assert.is_true(#names >= 15, "found the gpu table's fields")
    all_documented(text, names)
  end)

  it("every function of gpulua.pipeline", function()
    local pipeline = require "gpulua.pipeline"
    local names = {}
    for _, k in ipairs(sorted_keys(pipeline)) do names[#names + 1] = {name = "pipeline." .. k, what = "function"} end
    assert.is_true(#names >= 3)
    all_documented(text, names)
  end)

  it("every object type has a variable name and an object to ask for its fields", function()
    local found = types()
    local unknown = {}
    for _, name in ipairs(sorted_keys(found)) do
      if not TYPES[name] then unknown[#unknown + 1] = name end
    end
    assert(#unknown == 0, "types with no variable name in api_coverage_spec.lua's TYPES (add the name "
      .. "docs/API.md uses for them): " .. table.concat(unknown, ", "))
    for name, t in pairs(TYPES) do
      assert.is_not_nil(found[name], name .. " is registered")
      local obj = t.make()
      assert.are.equal(name, getmetatable(obj).__name)
    end
  end)

  it("every method and field of every object type", function()
    local names = {}
    for _, name in ipairs(sorted_keys(types())) do
      local t = TYPES[name]
      if t then
        local methods = methods_of(name, types()[name])
        assert.is_table(methods, name .. "'s methods")
        for _, m in ipairs(sorted_keys(methods)) do
          names[#names + 1] = {name = t.var .. ":" .. m, what = name .. " method"}
        end
        local obj = t.make()
        for _, f in ipairs(fields_of(obj)) do
          local ok, err = pcall(function() return obj[f] end)
          assert(ok, ("%s lists the field '%s', which cannot be read: %s"):format(name, f, tostring(err)))
          names[#names + 1] = {name = t.var .. "." .. f, what = name .. " field"}
        end
        if name == "gpulua.Stream" or name == "gpulua.Graph" or name == "gpulua.Comm" then obj:close() end
      end
    end
    assert.is_true(#names >= 60, "found the methods and fields")
    all_documented(text, names)
  end)
end)
