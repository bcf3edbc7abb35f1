-- examples/file_pipeline.lua: a batch pipeline whose data lives in files.
--
-- Writes an input file of f32 (2 GiB on a GPU, 8 MiB on sim), made on the
-- device chunk by chunk (x[i] = i % 65536, 0-based over the whole file);
-- then reads it in chunks with h:read_from into pinned buffers, transforms
-- each chunk on the GPU (a compiled kernel, y = 2 x + 1, then the built-in
-- scale, y = 0.5 y: so y = x + 0.5) and writes the output file in order
-- from the pipeline's store stage; then reads the output back and counts
-- the elements that differ from x + 0.5 on the device. Each pass is one
-- pipeline.run with host stages (load and/or store): the host reads or
-- writes one chunk while the GPU works on others.
--
--   gpulua examples/file_pipeline.lua [MiB] [chunk_MiB] [streams] [dir]
local gpu = require "gpulua"
local pipeline = require "gpulua.pipeline"

local on_gpu = gpu.backend() == "cuda"
local mib = tonumber(arg and arg[1]) or (on_gpu and 2048 or 8)
local chunk_mib = tonumber(arg and arg[2]) or (on_gpu and 32 or 1)
local nstreams = tonumber(arg and arg[3]) or 2
local dir = arg and arg[4] or os.getenv("TMPDIR") or "/tmp"
local dev = gpu.device(0)

local chunk = chunk_mib * (1 << 20) // 4          -- elements of a chunk
local total = mib * (1 << 20) // 4                -- elements of the file
local batches = (total + chunk - 1) // chunk
local function count(b) return math.min(chunk, total - (b - 1) * chunk) end

local m = gpu.compile([[
extern "C" __global__ void iota_mod(float *x, unsigned long long first, unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    x[i] = (float)((first + i) % 65536);
}
extern "C" __global__ void affine(float *x, unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    x[i] = 2.0f * x[i] + 1.0f;
}
extern "C" __global__ void mismatches(const float *y, unsigned long long first, unsigned long long n,
                                      unsigned int *bad) {
  unsigned int mine = 0;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    mine += y[i] != (float)((first + i) % 65536) + 0.5f;
  if (mine) atomicAdd(bad, mine);
}
]], {name = "file_pipeline.cu", device = dev})
local iota_mod = m:kernel("iota_mod", "f32*, u64, u64")
local affine = m:kernel("affine", "f32*, u64")
local mismatches = m:kernel("mismatches", "const f32*, u64, u64, u32*")
-- their host versions, for the sim's host mode (GPULUA_SIM_KERNELS=host)
iota_mod:host(function(_, x, first, n) for i = 1, n do x[i] = (first + i - 1) % 65536 end end)
affine:host(function(_, x, n) for i = 1, n do x[i] = 2 * x[i] + 1 end end)
mismatches:host(function(_, y, first, n, bad)
  for i = 1, n do
    if y[i] ~= (first + i - 1) % 65536 + 0.5 then bad[1] = bad[1] + 1 end
  end
end)
local cfg = {grid = math.min((chunk + 255) // 256, dev.sms * 8), block = 256}

local in_path = ("%s/gpulua-file-pipeline-%d.in"):format(dir, os.time())
local out_path = in_path:gsub("%.in$", ".out")
local function remove_files()
  os.remove(in_path)
  os.remove(out_path)
end

local function pass(name, opts)
  opts.device, opts.streams, opts.batches, opts.chunk = dev, nstreams, batches, {"f32", chunk}
  opts.setup = pipeline.buffers{x = {"f32", chunk}}
  local t0 = gpu.clock()
  local ok, err = pcall(pipeline.run, opts)
  if not ok then
    remove_files()
    error(err, 0)
  end
  local secs = gpu.clock() - t0
  print(("%-7s %6.0f MiB in %7.3f s: %7.2f GB/s"):format(name, total * 4 / 2^20, secs, total * 4 / 1e9 / secs))
end

-- 1. the input file, made on the device, written in order by the store stage
local f = assert(io.open(in_path, "wb"))
pass("write", {
  stage = function(b, s, _, h_out, buf)
    local n = count(b)
    s:launch(iota_mod, cfg, buf.x, (b - 1) * chunk, n)
    s:copy(h_out:view(0, n), buf.x:view(0, n))
  end,
  store = function(b, h) h:view(0, count(b)):write_to(f) end,
})
f:close()

-- 2. the pipeline: read a chunk, copy in, y = 2 x + 1, y = 0.5 y, copy out, write it
local fin, fout = assert(io.open(in_path, "rb")), assert(io.open(out_path, "wb"))
pass("process", {
  load = function(b, h)
    local got = h:read_from(fin)
    assert(got == chunk or got == count(b), "short read")
  end,
  stage = function(b, s, h_in, h_out, buf)
    local n = count(b)
    local x = buf.x:view(0, n)
    s:copy(x, h_in:view(0, n))
    s:launch(affine, cfg, x, n)
    s:launch(gpu.kernels.scale, {grid = "auto", block = 256}, 0.5, x, x, n)
    s:copy(h_out:view(0, n), x)
  end,
  store = function(b, h) h:view(0, count(b)):write_to(fout) end,
})
fin:close()
fout:close()

-- 3. verify: read the output back, count the elements that differ on the device
local bad = dev:zeros("u32", 1)
dev.main:sync()
local fcheck = assert(io.open(out_path, "rb"))
pass("verify", {
  load = function(_, h) h:read_from(fcheck) end,
  stage = function(b, s, h_in, _, buf)
    local n = count(b)
    s:copy(buf.x:view(0, n), h_in:view(0, n))
    s:join(dev.main) -- bad is the main stream's (allocated there); each stream adds to it in turn
    s:launch(mismatches, cfg, buf.x, (b - 1) * chunk, n, bad)
    dev.main:join(s)
  end,
})
fcheck:close()
local size = io.open(out_path, "rb"):seek("end")
remove_files()
local wrong = bad:read()[1]
print(("backend %s, device %s: %d chunks of %d MiB, %d streams"):format(gpu.backend(), dev.name, batches,
  chunk_mib, nstreams))
if not on_gpu then
  local model = gpu.sim_model()
  print(model and ("(sim backend: times predicted by the timing model of " .. model .. ", not measured on a GPU)")
    or "(sim backend: these are host timings of the software device, not GPU timings)")
end
if size ~= total * 4 then error(("the output file has %d bytes, not %d"):format(size, total * 4)) end
if wrong ~= 0 then error(("file pipeline result is wrong: %d of %d elements differ"):format(wrong, total)) end
print("result verified: " .. total .. " elements match")
