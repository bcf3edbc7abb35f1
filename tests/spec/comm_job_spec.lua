-- gpu.comm{}: this process's rank of a job, from the environment each
-- launcher sets (gpulua, torchrun, Open MPI, MPICH, Slurm), meeting the other
-- ranks at rank 0's store over TCP on 127.0.0.1. Each case runs in child
-- processes. A job of one rank is a working communicator on both backends;
-- jobs of several ranks run on sim only (two ranks on this machine's one GPU
-- are not a valid NCCL job), where their collectives really exchange data
-- (tests/comm_job_procs_check.sh runs every collective so).
local gpu = require "gpulua"
local H = require "helpers"

local PRELUDE = 'local gpu = require "gpulua"\n'

-- a port for a store of this spec: random, above the usual services and
-- below Linux's ephemeral ports (32768 up), which every connection of the
-- suite's other jobs takes its local port from: a port drawn there can be
-- in use. The seed mixes in a name os.tmpname made unique to this process:
-- two runs of this spec started in the same second (ctest runs it under the
-- host and under lua5.4 side by side) must not draw the same ports.
local function seed()
  local name = os.tmpname()
  os.remove(name)
  local h = os.time() + math.floor(os.clock() * 1e6)
  for i = 1, #name do h = (h * 31 + name:byte(i)) % 2147483647 end
  return h
end
math.randomseed(seed())
local function free_port() return 20000 + math.random(0, 12767) end

-- Run `script` once per entry of envs, all at once (rank 0 first); `between`
-- a shell command run after rank 0 started. Returns each rank's output and
-- exit status.
local function run_ranks(script, envs, between)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(PRELUDE .. script)
  f:close()
  local lines, outs = {"pids="}, {}
  for i, env in ipairs(envs) do
    outs[i] = os.tmpname()
    local vars = {}
    for k, v in pairs(env) do vars[#vars + 1] = k .. "=" .. H.quote(tostring(v)) end
    lines[#lines + 1] = ("GPULUA_BACKEND=%s %s timeout 60 %s %s >%s 2>&1 & pids=\"$pids $!\""):format(
      gpu.backend(), table.concat(vars, " "), H.quote(H.interpreter()), H.quote(path), H.quote(outs[i]))
    if i == 1 and between then lines[#lines + 1] = between end
  end
  lines[#lines + 1] = 'for p in $pids; do wait "$p"; echo "exit $?"; done'
  local p = assert(io.popen("bash -c " .. H.quote(table.concat(lines, "\n"))))
  local st = {}
  for s in p:read("a"):gmatch("exit (%d+)") do st[#st + 1] = tonumber(s) end
  p:close()
  local res = {}
  for i, o in ipairs(outs) do
    local h = assert(io.open(o))
    res[i] = h:read("a")
    h:close()
    os.remove(o)
  end
  os.remove(path)
  return res, st
end

local SHOW = [[
local c = gpu.comm{}
print(("rank=%s size=%s local=%s device=%d"):format(c.rank, c.size, c.local_rank, c.device.ordinal))
local x = c.device:alloc("f32", 4)
c.device.main:copy(x, gpu.host("f32", {2, 2, 2, 2}))
c:all_reduce(x)
print("sum", x:read()[1])
c:close()
]]

describe("gpu.comm{} (a launcher's job)", function()
  local launchers = {
    {"gpulua", {GPULUA_RANK = 0, GPULUA_SIZE = 1, GPULUA_LOCAL_RANK = 0}},
    {"torchrun", {RANK = 0, WORLD_SIZE = 1, LOCAL_RANK = 0}},
    {"Open MPI", {OMPI_COMM_WORLD_RANK = 0, OMPI_COMM_WORLD_SIZE = 1, OMPI_COMM_WORLD_LOCAL_RANK = 0}},
    {"MPICH", {PMI_RANK = 0, PMI_SIZE = 1}},
    {"Slurm", {SLURM_PROCID = 0, SLURM_NTASKS = 1, SLURM_LOCALID = 0}},
  }
  for _, l in ipairs(launchers) do
    it("a job of one rank under " .. l[1] .. "'s variables is a working communicator", function()
      local out, status = H.run_child(PRELUDE .. SHOW, l[2], 60)
      assert.are.equal(0, status, out)
      assert.truthy(out:find("rank=0 size=1 local=0 device=0", 1, true), out)
      assert.truthy(out:find("sum\t2.0", 1, true), out)
    end)
  end

  it("without a launcher's variables names every variable it looked for", function()
    local out, status = H.run_child(PRELUDE .. "gpu.comm{}", {}, 60)
    assert.are_not.equal(0, status)
    for _, v in ipairs{"GPULUA_RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID",
                       "SLURM_LOCALID"} do
      assert.truthy(out:find(v, 1, true), out)
    end
    assert.truthy(out:find(":2: gpu.comm: no launcher's environment found", 1, true), out)
  end)

  it("names a bad variable and its value", function()
    local cases = {
      {{RANK = "x", WORLD_SIZE = 2}, "RANK = 'x' (torchrun's rank)"},
      {{SLURM_PROCID = 4, SLURM_NTASKS = 4},
       "SLURM_PROCID = '4' (Slurm's rank) is not a whole number from 0 to SLURM_NTASKS - 1 = 3"},
      {{GPULUA_RANK = 0, GPULUA_SIZE = "many"}, "GPULUA_SIZE = 'many'"},
      {{OMPI_COMM_WORLD_RANK = 0},
       "OMPI_COMM_WORLD_RANK is set (Open MPI's variables) but OMPI_COMM_WORLD_SIZE is not"},
      {{PMI_RANK = 1, PMI_SIZE = 2, MPI_LOCALRANKID = -1}, "MPI_LOCALRANKID = '-1'"},
      {{RANK = 1, WORLD_SIZE = 2, MASTER_ADDR = "127.0.0.1", MASTER_PORT = "port"}, "MASTER_PORT = 'port'"},
      {{RANK = 1, WORLD_SIZE = 2, GPULUA_STORE = "127.0.0.1"}, "GPULUA_STORE = '127.0.0.1' is not an address"},
      {{RANK = 1, WORLD_SIZE = 2}, "rank 1 of 2 (from torchrun's RANK/WORLD_SIZE) needs the job's store"},
    }
    for _, c in ipairs(cases) do
      local out, status = H.run_child(PRELUDE .. "gpu.comm{}", c[1], 60)
      assert.are_not.equal(0, status, out)
      assert.truthy(out:find(c[2], 1, true), out)
      assert.truthy(out:find(":2: gpu.comm:", 1, true), out)
    end
  end)

  it("refuses a bad option", function()
    local env = {GPULUA_RANK = 0, GPULUA_SIZE = 1}
    local cases = {
      {"gpu.comm{timeout = -1}", "option 'timeout' expected a number of seconds > 0, got number -1"},
      {"gpu.comm{store = 5}", "option 'store' expected an address 'host:port', got number 5"},
      {"gpu.comm{device = 99}", "option 'device': device 99 does not exist"},
      {"gpu.comm{devices = {0}, store = 'a:1'}",
       "option 'store' is for gpu.comm{} (the launcher's job), not with 'devices'"},
      {"gpu.comm{store = 'localhost'}", nil},
    }
    for _, c in ipairs(cases) do
      local out, status = H.run_child(PRELUDE .. c[1], env, 60)
      if c[2] then
        assert.are_not.equal(0, status, out)
        assert.truthy(out:find(c[2], 1, true), out)
      else
        assert.are.equal(0, status, out) -- a job of one needs no store
      end
    end
  end)

  it("a rank whose store never answers fails after its timeout, naming the address", function()
    local port = free_port()
    local out, status = H.run_child(PRELUDE .. "gpu.comm{timeout = 0.5}",
      {RANK = 1, WORLD_SIZE = 2, MASTER_ADDR = "127.0.0.1", MASTER_PORT = port}, 60)
    assert.are_not.equal(0, status, out)
    assert.truthy(out:find("cannot reach the store at 127.0.0.1:" .. port .. " within 0.5 seconds", 1, true), out)
  end)

  it("rank 0 names the ranks that never came", function()
    local port = free_port()
    local out, status = H.run_child(PRELUDE .. "gpu.comm{timeout = 0.5}",
      {SLURM_PROCID = 0, SLURM_NTASKS = 3, GPULUA_STORE = "127.0.0.1:" .. port}, 60)
    assert.are_not.equal(0, status, out)
    assert.truthy(out:find("the store at 127.0.0.1:" .. port .. ": ranks 1 and 2 of 3 did not connect", 1, true), out)
  end)

  H.it_devices(2, "the device is the local rank modulo the devices seen, unless device = says", function()
    local out, status = H.run_child(PRELUDE .. [[
      print("dev", gpu.comm{}.device.ordinal, gpu.comm{device = 0}.device.ordinal)]],
      {GPULUA_RANK = 0, GPULUA_SIZE = 1, GPULUA_LOCAL_RANK = 0}, 60)
    assert.are.equal(0, status, out)
    assert.truthy(out:find("dev\t0\t0", 1, true), out)
  end)

  local sim_only = gpu.backend() == "sim" and it or function(title)
    pending(title .. " (sim only: two ranks on one GPU are not an NCCL job)")
  end

  for _, style in ipairs{
    {"torchrun", function(r) return {RANK = r, WORLD_SIZE = 2, LOCAL_RANK = r, MASTER_ADDR = "127.0.0.1"} end,
     "MASTER_PORT"},
    {"Slurm", function(r) return {SLURM_PROCID = r, SLURM_NTASKS = 2, SLURM_LOCALID = r} end, "GPULUA_STORE"},
    {"Open MPI", function(r) return {OMPI_COMM_WORLD_RANK = r, OMPI_COMM_WORLD_SIZE = 2} end, "GPULUA_STORE"},
  } do
    sim_only("two ranks under " .. style[1] .. "'s variables meet and all_reduce across processes", function()
      local port = free_port()
      local envs = {}
      for r = 0, 1 do
        envs[r + 1] = style[2](r)
        if style[3] == "MASTER_PORT" then envs[r + 1].MASTER_PORT = port
        else envs[r + 1].GPULUA_STORE = "127.0.0.1:" .. port end
      end
      local out, st = run_ranks([[
        local c = gpu.comm{timeout = 30}
        local x = c.device:alloc("i32", 2)
        c.device.main:copy(x, gpu.host("i32", {c.rank + 1, 10 * (c.rank + 1)}))
        c:all_reduce(x)
        local v = x:read()
        print(("rank %d sum %d %d"):format(c.rank, v[1], v[2]))]], envs)
      for r = 0, 1 do
        assert.are.equal(0, st[r + 1], out[r + 1])
        assert.truthy(out[r + 1]:find(("rank %d sum 3 30"):format(r), 1, true), out[r + 1])
      end
    end)
  end

  sim_only("a connection that sends garbage is dropped with a line, and the job meets", function()
    local port = free_port()
    -- once rank 0 listens, a stranger sends garbage and waits until it is dropped; then rank 1 starts
    local stranger = ([[for i in $(seq 300); do
        if exec 3<>/dev/tcp/127.0.0.1/%d 2>/dev/null; then
          printf 'GET / HTTP/1.0\r\n\r\n' >&3; cat <&3; exec 3<&-; break
        fi
        sleep 0.1
      done 2>/dev/null]]):format(port)
    local envs = {{GPULUA_RANK = 0, GPULUA_SIZE = 2}, {GPULUA_RANK = 1, GPULUA_SIZE = 2}}
    for _, e in ipairs(envs) do e.GPULUA_STORE = "127.0.0.1:" .. port end
    local out, st = run_ranks("gpu.comm{timeout = 30}:barrier() print('met')", envs, stranger)
    assert.truthy(out[1]:find("gpulua: the store at 127.0.0.1:" .. port .. " dropped a connection from 127.0.0.1:", 1,
                              true), out[1])
    assert.truthy(out[1]:find("not a gpulua store message", 1, true), out[1])
    for r = 1, 2 do
      assert.are.equal(0, st[r], out[r])
      assert.truthy(out[r]:find("met", 1, true), out[r])
    end
  end)
end)
