-- bench/workloads/file_bench.lua: examples/file_pipeline.lua's processing
-- pass on a given file, timed: read in chunks with h:read_from (pipeline.run's
-- load stage), copied in, y = 2 x + 1 (a compiled kernel), y = 0.5 y (the
-- built-in scale), copied out, written in order (its store stage). The same
-- work as bench/baselines/raw_file.c and cupy_file.py, with the same chunk and
-- the same number of chunks in flight (host_buffers; one stream each).
-- Prints "RESULT file_gpulua <GB/s of the input> GB/s".
--
--   gpulua bench/workloads/file_bench.lua IN OUT [chunk_MiB] [slots]   (default 32, 2)
local gpu = require "gpulua"
local pipeline = require "gpulua.pipeline"

local in_path, out_path = assert(arg[1], "usage: file_bench.lua IN OUT [chunk_MiB] [slots]"), assert(arg[2])
local chunk_mib = tonumber(arg[3]) or 32
local slots = tonumber(arg[4]) or 2
local dev = gpu.device(0)
local chunk = chunk_mib * (1 << 20) // 4

local m = gpu.compile([[
extern "C" __global__ void affine(float *x, unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    x[i] = 2.0f * x[i] + 1.0f;
}
]], {name = "affine.cu", device = dev})
local affine = m:kernel("affine", "f32*, u64")
affine:host(function(_, x, n) for i = 1, n do x[i] = 2 * x[i] + 1 end end)
local cfg = gpu.config{grid = math.min((chunk + 255) // 256, dev.sms * 8), block = 256}
local scale_cfg = gpu.config{grid = cfg.grid, block = 256}

local fin = assert(io.open(in_path, "rb"))
local size = fin:seek("end")
fin:seek("set", 0)
local total = size // 4
local batches = (total + chunk - 1) // chunk
local function count(b) return math.min(chunk, total - (b - 1) * chunk) end
local fout = assert(io.open(out_path, "wb"))

local t0 = gpu.clock()
pipeline.run{device = dev, streams = slots, batches = batches, chunk = {"f32", chunk}, host_buffers = slots,
  setup = pipeline.buffers{x = {"f32", chunk}},
  load = function(_, h) h:read_from(fin) end,
  stage = function(b, s, h_in, h_out, buf)
    local n = count(b)
    local x, hi, ho = buf.x, h_in, h_out
    if n < chunk then x, hi, ho = x:view(0, n), h_in:view(0, n), h_out:view(0, n) end
    s:copy(x, hi)
    s:launch(affine, cfg, x, n)
    s:launch(gpu.kernels.scale, scale_cfg, 0.5, x, x, n)
    s:copy(ho, x)
  end,
  store = function(b, h)
    if count(b) < chunk then h = h:view(0, count(b)) end
    h:write_to(fout)
  end}
fin:close()
assert(fout:close())
local secs = gpu.clock() - t0
print(("file_gpulua: %.0f MiB in %.3f s, chunk %d MiB, %d slots"):format(size / 2^20, secs, chunk_mib, slots))
print(("RESULT file_gpulua %.4f GB/s"):format(size / 1e9 / secs))
