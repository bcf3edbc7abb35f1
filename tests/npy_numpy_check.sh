#!/usr/bin/env bash
# ctest npy.numpy: gpulua.npy and NumPy read each other's files. gpulua
# saves every dtype NumPy has in several shapes and numpy.load checks them
# (dtype, shape, values); NumPy saves arrays (format versions 1.0 and 2.0,
# bool, a scalar) and npy.load checks them. Needs python3 with numpy
# (Debian's python3-numpy, which CI installs); without it the test says so
# and is skipped (exit 77).
#   tests/npy_numpy_check.sh PATH/TO/gpulua
set -euo pipefail
g=$1
py=
for p in python3 /usr/bin/python3; do # the first python3 with numpy (a pyenv one may have none)
  if command -v "$p" >/dev/null && "$p" -c 'import numpy' 2>/dev/null; then py=$p; break; fi
done
if [ -z "$py" ]; then
  echo "npy.numpy: skipped: python3 with numpy is not installed here (apt-get install python3-numpy)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GPULUA_BACKEND=sim

# 1. gpulua writes, NumPy reads
"$g" - "$tmp" <<'LUA'
local gpu = require "gpulua"
local npy = require "gpulua.npy"
local dir = arg[1]
local dtypes = {"f16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"}
for _, dt in ipairs(dtypes) do
  local v = {}
  for i = 1, 24 do v[i] = (i * 7) % 11 - (dt:sub(1, 1) == "u" and 0 or 5) end
  npy.save(dir .. "/g_" .. dt .. ".npy", gpu.host(dt, v), {2, 3, 4})
end
npy.save(dir .. "/g_vec.npy", gpu.host("f32", {0.5, -1.25, 3}))
LUA
"$py" - "$tmp" <<'PY'
import sys, numpy as np
d = sys.argv[1]
names = {"f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "i16": "int16", "i32": "int32",
         "i64": "int64", "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64"}
bad = 0
for dt, name in names.items():
    a = np.load(f"{d}/g_{dt}.npy")
    want = np.array([(i * 7) % 11 - (0 if dt[0] == "u" else 5) for i in range(1, 25)]).astype(name).reshape(2, 3, 4)
    if a.dtype != np.dtype(name) or a.shape != (2, 3, 4) or not np.array_equal(a, want):
        print(f"FAILED numpy.load of gpulua's {dt}: {a.dtype} {a.shape} {a.ravel()[:6]}")
        bad += 1
v = np.load(f"{d}/g_vec.npy")
if v.shape != (3,) or v.tolist() != [0.5, -1.25, 3.0]:
    print(f"FAILED numpy.load of gpulua's vector: {v.shape} {v}")
    bad += 1
# 2. NumPy writes, gpulua reads
np.save(f"{d}/n_f32.npy", np.arange(12, dtype=np.float32).reshape(3, 4) / 4)
np.save(f"{d}/n_i64.npy", np.array([-3, 2**40, 7], dtype=np.int64))
np.save(f"{d}/n_bool.npy", np.array([True, False, True]))
np.save(f"{d}/n_scalar.npy", np.uint16(513))
with open(f"{d}/n_v2.npy", "wb") as f:
    np.lib.format.write_array(f, np.array([1.5, -2.5], dtype=np.float64), version=(2, 0))
np.save(f"{d}/n_fortran.npy", np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3)))
sys.exit(1 if bad else 0)
PY
"$g" - "$tmp" <<'LUA'
local npy = require "gpulua.npy"
local dir = arg[1]
local function same(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end
local bad = 0
local function check(name, dtype, shape, values)
  local h, s = npy.load(dir .. "/" .. name .. ".npy")
  if h.dtype ~= dtype or not same(s, shape) or not same(h:totable(), values) then
    print(("FAILED npy.load of numpy's %s: %s {%s} {%s}"):format(name, h.dtype, table.concat(s, ","),
      table.concat(h:totable(), ",")))
    bad = bad + 1
  end
end
check("n_f32", "f32", {3, 4}, {0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2, 2.25, 2.5, 2.75})
check("n_i64", "i64", {3}, {-3, 1 << 40, 7})
check("n_bool", "u8", {3}, {1, 0, 1})
check("n_scalar", "u16", {}, {513})
check("n_v2", "f64", {2}, {1.5, -2.5})
local ok, err = pcall(npy.load, dir .. "/n_fortran.npy")
if ok or not err:find("Fortran%-order array is not supported") then
  print("FAILED npy.load of a Fortran-order array: " .. tostring(err))
  bad = bad + 1
end
os.exit(bad == 0 and 0 or 1)
LUA
echo "npy.numpy: gpulua's files read by numpy.load, numpy.save's by npy.load: passed"
