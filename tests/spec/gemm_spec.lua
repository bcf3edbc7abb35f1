-- s:gemm (cuBLAS on streams): row-major results against a CPU reference for
-- every dtype, transposes, leading dimensions and strided batches; every
-- error path; the checker's records; capture into a graph; the per-stream
-- handles and workspaces.
local gpu = require "gpulua"
local H = require "helpers"

-- tolerance relative to the sum of |a||b| over the products (the accumulation's scale)
local TOL = {f64 = 1e-13, f32 = 2e-6, f16 = 2e-3, bf16 = 1.6e-2}

-- the row-major reference: C = alpha op(A) op(B) + beta C for each batch; with
-- scale[i] the sum of |products| of element i (for the tolerance)
local function reference(o)
  local m, n, k, count = o.m, o.n, o.k, o.count or 1
  local lda = o.lda or (o.trans_a and m or k)
  local ldb = o.ldb or (o.trans_b and k or n)
  local ldc = o.ldc or n
  local sa = o.stride_a or (o.trans_a and k or m) * lda
  local sb = o.stride_b or (o.trans_b and n or k) * ldb
  local sc = o.stride_c or m * ldc
  local C, scale = {}, {}
  for i = 1, #o.C do C[i], scale[i] = o.C[i], 0 end
  for bt = 0, count - 1 do
    for i = 0, m - 1 do
      for j = 0, n - 1 do
        local acc, mag = 0, 0
        for l = 0, k - 1 do
          local a = o.A[bt * sa + (o.trans_a and l * lda + i or i * lda + l) + 1]
          local b = o.B[bt * sb + (o.trans_b and j * ldb + l or l * ldb + j) + 1]
          acc, mag = acc + a * b, mag + math.abs(a * b)
        end
        local ci = bt * sc + i * ldc + j + 1
        local beta = o.beta or 0
        C[ci] = (o.alpha or 1) * acc + (beta ~= 0 and beta * C[ci] or 0)
        scale[ci] = math.abs(o.alpha or 1) * mag + math.abs(beta * o.C[ci]) + 1e-30
      end
    end
  end
  return C, scale
end

-- values exactly representable in every dtype (small integers and halves)
local function small(n, seed)
  local t = {}
  for i = 1, n do t[i] = ((i * 7 + seed * 13) % 9 - 4) / 2 end
  return t
end

describe("s:gemm", function()
  local dev, s
  before_each(function()
    dev = gpu.device(0)
    s = dev.main
    gpu.policy("strict")
  end)

  -- run one gemm from host tables and return C read back, the reference and its scale
  local function run(dt, o)
    local a, b = H.upload(dev, dt, o.A), H.upload(dev, dt, o.B)
    local c = H.upload(dev, dt, o.C)
    local args = {a = a, b = b, c = c}
    for _, key in ipairs{"m", "n", "k", "alpha", "beta", "trans_a", "trans_b", "lda", "ldb", "ldc", "count",
                         "stride_a", "stride_b", "stride_c"} do
      args[key] = o[key]
    end
    assert.are.equal(s, s:gemm(args))
    local got = c:read()
    return got, reference(o)
  end

  local function check(dt, got, want, scale)
    for i = 1, #want do
      local d = math.abs(got[i] - want[i])
      if d ~= 0 and (d ~= d or d > TOL[dt] * scale[i]) then -- a NaN fails too
        assert.are.equal(want[i], got[i], ("%s element %d (tolerance %g of %g)"):format(dt, i, TOL[dt], scale[i]))
      end
    end
  end

  for _, dt in ipairs{"f32", "f64", "f16", "bf16"} do
    it(dt .. ": C = alpha op(A) op(B) + beta C, row-major, with and without transposes", function()
      for _, tr in ipairs{{false, false}, {true, false}, {false, true}, {true, true}} do
        local m, n, k = 5, 3, 4
        local o = {m = m, n = n, k = k, trans_a = tr[1], trans_b = tr[2], alpha = 1.5, beta = 0.5,
                   A = small(m * k, 1), B = small(k * n, 2), C = small(m * n, 3)}
        local got, want, scale = run(dt, o)
        check(dt, got, want, scale)
      end
    end)
  end

  it("random f32 and f64 matrices against the reference", function()
    for _, dt in ipairs{"f32", "f64"} do
      local m, n, k = 17, 9, 33
      local o = {m = m, n = n, k = k, A = H.values(dt, m * k, 1), B = H.values(dt, k * n, 2),
                 C = H.values(dt, m * n, 3), alpha = -0.75, beta = 2}
      check(dt, run(dt, o))
    end
  end)

  it("leading dimensions wider than the matrices leave the padding alone", function()
    local m, n, k, lda, ldb, ldc = 3, 2, 4, 6, 5, 7
    local o = {m = m, n = n, k = k, lda = lda, ldb = ldb, ldc = ldc, A = small(m * lda, 4), B = small(k * ldb, 5),
               C = small(m * ldc, 6), beta = 1}
    local got, want, scale = run("f64", o)
    check("f64", got, want, scale)
    for i = 0, m - 1 do
      for j = n, ldc - 1 do assert.are.equal(o.C[i * ldc + j + 1], got[i * ldc + j + 1], "padding of c") end
    end
  end)

  it("beta = 0 does not read C: a NaN there does not come through", function()
    local o = {m = 2, n = 2, k = 2, A = {1, 2, 3, 4}, B = {1, 0, 0, 1}, C = {0 / 0, 0 / 0, 0 / 0, 0 / 0}}
    local got = run("f32", o)
    assert.are.same({1, 2, 3, 4}, {got[1], got[2], got[3], got[4]})
  end)

  it("k = 0 makes C = beta C, and an empty C queues nothing", function()
    local got = run("f64", {m = 2, n = 2, k = 0, A = {0}, B = {0}, C = {1, 2, 3, 4}, beta = 3})
    assert.are.same({3, 6, 9, 12}, {got[1], got[2], got[3], got[4]})
    local c = H.upload(dev, "f32", {7})
    s:gemm{a = c, b = c, c = c, m = 0, n = 1, k = 1}
    assert.are.equal(7, c:read()[1])
  end)

  it("strided batched: default strides, explicit strides, and a shared B (stride 0)", function()
    local m, n, k, count = 3, 4, 2, 5
    local o = {m = m, n = n, k = k, count = count, A = small(m * k * count, 7), B = small(k * n * count, 8),
               C = small(m * n * count, 9), beta = 1}
    check("f32", run("f32", o))
    local o2 = {m = m, n = n, k = k, count = count, stride_a = m * k + 3, stride_b = 0, stride_c = m * n + 1,
                A = small((m * k + 3) * count, 1), B = small(k * n, 2), C = small((m * n + 1) * count, 3), beta = 0}
    check("f64", run("f64", o2))
    local o3 = {m = m, n = n, k = k, count = 2, trans_a = true, trans_b = true, A = small(m * k * 2, 4),
                B = small(k * n * 2, 5), C = small(m * n * 2, 6)}
    check("bf16", run("bf16", o3))
  end)

  it("every extent is checked before anything is queued", function()
    local a, b, c = dev:zeros("f32", 12), dev:zeros("f32", 12), dev:zeros("f32", 12)
    H.fails(H.lit("s:gemm: a has 12 elements, but 4 x 4 with lda = 4 needs 16"),
            function() s:gemm{a = a, b = b, c = c, m = 4, n = 3, k = 4} end)
    H.fails(H.lit("s:gemm: b has 12 elements, but 3 x 5 with ldb = 5 needs 15"),
            function() s:gemm{a = a, b = b, c = c, m = 2, n = 5, k = 3} end)
    H.fails(H.lit("s:gemm: c has 12 elements, but 3 x 4 with ldc = 6 needs 16"),
            function() s:gemm{a = a, b = b, c = c, m = 3, n = 4, k = 1, ldc = 6} end)
    H.fails(H.lit("s:gemm: lda = 2, but a's rows are 3 elements wide (lda must be 3 to"),
            function() s:gemm{a = a, b = b, c = c, m = 2, n = 2, k = 3, lda = 2} end)
    H.fails(H.lit("s:gemm: ldb = 1, but b's rows are 2 elements wide (ldb must be 2 to"),
            function() s:gemm{a = a, b = b, c = c, m = 2, n = 2, k = 2, ldb = 1, trans_b = false} end)
    -- the last batch's last element
    H.fails(H.lit("s:gemm: c has 12 elements, but 2 x 2 with ldc = 2, count = 3 and stride_c = 5 reaches element 14"),
            function() s:gemm{a = a, b = b, c = c, m = 2, n = 2, k = 1, count = 3, stride_c = 5} end)
    H.fails(H.lit("s:gemm: stride_c = 2 makes the 3 matrices of c overlap (each takes 4 elements)"),
            function() s:gemm{a = a, b = b, c = c, m = 2, n = 2, k = 1, count = 3, stride_c = 2} end)
    assert.are.same({0, 0, 0}, {c:read()[1], c:read()[5], c:read()[12]})
  end)

  it("c sharing memory with a or b is refused, naming both and their elements; apart is fine", function()
    local x = dev:zeros("f32", 16)
    local a, b = x:view(0, 4), x:view(4, 4)
    H.fails(H.lit("s:gemm: c (elements 0 to 3 of f32[16] on device 0) overlaps a (elements 0 to 3 of it): c must "
                  .. "not share memory with a or b (cuBLAS leaves the result undefined); write c to memory apart "
                  .. "from them"),
            function() s:gemm{a = a, b = b, c = a, m = 2, n = 2, k = 2} end)
    H.fails(H.lit("s:gemm: c (elements 6 to 9 of f32[16] on device 0) overlaps b (elements 4 to 7 of it)"),
            function() s:gemm{a = a, b = b, c = x:view(6, 4), m = 2, n = 2, k = 2} end)
    -- a strided batch: the elements c's and b's batches reach
    H.fails(H.lit("s:gemm: c (elements 0 to 7 of f32[16] on device 0) overlaps b (elements 4 to 9 of it)"),
            function()
              s:gemm{a = x:view(12, 4), b = x:view(4, 8), c = x:view(0, 8), m = 2, n = 2, k = 1, count = 2,
                     stride_a = 0, stride_b = 4, stride_c = 4}
            end)
    -- apart: one allocation, a and b the same, c next to them
    s:fill(x, 1)
    s:gemm{a = a, b = a, c = x:view(4, 4), m = 2, n = 2, k = 2}
    assert.are.same({1, 1, 1, 1, 2, 2, 2, 2}, {table.unpack(x:read(), 1, 8)})
    -- what a matrix reaches counts, not its slice: b's slice covers c, but its 2 x 2 matrix ends before it
    s:gemm{a = a, b = x:view(4, 8), c = x:view(8, 4), m = 2, n = 2, k = 2}
    assert.are.same({4, 4, 4, 4}, {table.unpack(x:read(), 9, 12)})
  end)

  it("a missing cuBLAS is an error naming it at first use, not at start-up (cuda only)", function()
    if gpu.backend() ~= "cuda" then
      pending("the sim has its own cuBLAS (sim_cublas.c): a missing libcublas runs on cuda only")
      return
    end
    local out, status = H.run_child([[
      local gpu = require "gpulua"
      local d = gpu.device(0)
      local a, c = d:zeros("f32", 4), d:zeros("f32", 4)
      print("started")
      for _ = 1, 2 do print(pcall(d.main.gemm, d.main, {a = a, b = a, c = c, m = 2, n = 2, k = 2})) end
      d.main:fill(a, 1) -- the stream still works
      print("after", a:read()[4])
    ]], {GPULUA_CUBLAS = "/nonexistent/libcublas.so.13"})
    assert.are.equal(0, status, out)
    assert.matches("started\n", out)
    local missing = "false\ts:gemm: cuBLAS could not be loaded: GPULUA_CUBLAS=/nonexistent/libcublas.so.13: "
    local _, times = out:gsub(H.lit(missing), "")
    assert.are.equal(2, times, out)
    assert.matches("after\t1", out)
  end)

  it("bad options are errors naming the option", function()
    local a = dev:zeros("f32", 4)
    local ok = {a = a, b = a, c = dev:zeros("f32", 4), m = 2, n = 2, k = 2}
    local function with(k, v)
      local t = {}
      for key, val in pairs(ok) do t[key] = val end
      t[k] = v
      return t
    end
    H.fails(H.lit("s:gemm: unknown option 'alhpa' (the options are: a, b, c, m, n, k, alpha, beta, trans_a"),
            function() s:gemm(with("alhpa", 2)) end)
    H.fails(H.lit("s:gemm: expected a table of options"), function() s:gemm(a) end)
    H.fails(H.lit("s:gemm: option 'b' expected a slice, got nil"), function() s:gemm(with("b", nil)) end)
    H.fails(H.lit("s:gemm: option 'a' expected a slice, got"), function() s:gemm(with("a", gpu.host("f32", 4))) end)
    H.fails(H.lit("s:gemm: option 'm' expected an integer >= 0, got number -1"), function() s:gemm(with("m", -1)) end)
    H.fails(H.lit("s:gemm: option 'k' expected an integer >= 0, got number 1.5"), function() s:gemm(with("k", 1.5)) end)
    H.fails(H.lit("s:gemm: option 'n' expected an integer >= 0, got string"), function() s:gemm(with("n", "2")) end)
    H.fails(H.lit("s:gemm: option 'lda' expected an optional integer >= 1, got number 0"),
            function() s:gemm(with("lda", 0)) end)
    H.fails(H.lit("s:gemm: option 'count' expected an optional integer >= 1, got number 0"),
            function() s:gemm(with("count", 0)) end)
    H.fails(H.lit("s:gemm: option 'alpha' expected a number, got string"), function() s:gemm(with("alpha", "x")) end)
    H.fails(H.lit("s:gemm: option 'trans_a' expected a boolean, got number 1"),
            function() s:gemm(with("trans_a", 1)) end)
    H.fails(H.lit("s:gemm: option 'stride_b' needs 'count' (a strided batched gemm)"),
            function() s:gemm(with("stride_b", 4)) end)
    H.fails(H.lit("s:gemm: m = 4294967296 is out of range (0 to 2147483647)"),
            function() s:gemm(with("m", 1 << 32)) end)
  end)

  it("dtypes must be one of f32, f64, f16, bf16, the same for a, b and c", function()
    local f, d, i = dev:zeros("f32", 4), dev:zeros("f64", 4), dev:zeros("i32", 4)
    H.fails(H.lit("s:gemm: a, b and c must have one dtype, got f32, f64 and f32"),
            function() s:gemm{a = f, b = d, c = f, m = 2, n = 2, k = 2} end)
    H.fails(H.lit("s:gemm: works on f32, f64, f16 and bf16 slices, got an i32 slice"),
            function() s:gemm{a = i, b = i, c = i, m = 2, n = 2, k = 2} end)
  end)

  it("a freed slice, or one of another device, is refused", function()
    local a, c = dev:zeros("f32", 4), dev:zeros("f32", 4)
    local line = H.here() + 1
    a:free()
    H.fails(H.lit("s:gemm: a: use of a freed slice f32[4] on device 0 (freed at ") .. ".-:" .. line,
            function() s:gemm{a = a, b = c, c = c, m = 2, n = 2, k = 2} end)
    if gpu.count() < 2 then
      print("gemm_spec: the other-device case needs 2 devices, skipped (only 1 here)")
      return
    end
    local other = gpu.device(1):zeros("f32", 4)
    H.fails(H.lit("s:gemm: b is a slice of device 1, but stream 'main' is on device 0"),
            function() s:gemm{a = c, b = other, c = c, m = 2, n = 2, k = 2} end)
  end)

  describe("under the checker", function()
    H.checker_hooks()

    it("writes c and reads a and b on its stream: unordered use by another stream is a conflict", function()
      local s1, s2 = dev:stream{name = "gemm1"}, dev:stream{name = "gemm2"}
      local a, b = dev:zeros("f32", 4, {stream = s1}), dev:zeros("f32", 4, {stream = s1})
      local c = dev:zeros("f32", 4, {stream = s1})
      s1:sync()
      local at = H.here() + 1
      s1:gemm{a = a, b = b, c = c, m = 2, n = 2, k = 2}
      local line = H.here() + 1
      local ok, err = pcall(function() s2:fill(c, 1) end)
      assert.is_false(ok)
      H.assert_conflict(err, "gemm_spec.lua", {op = "s:fill", what = H.slice_desc("f32", 4), rw = "written",
                                               s = "gemm2", s_at = line, t = "gemm1", t_at = at, prev = "writing"})
      local line2 = H.here() + 1
      ok, err = pcall(function() s2:gemm{a = c, b = b, c = a, m = 2, n = 2, k = 2} end)
      assert.is_false(ok)
      H.assert_conflict(err, "gemm_spec.lua", {op = "s:gemm a", what = H.slice_desc("f32", 4), rw = "read",
                                               s = "gemm2", s_at = line2, t = "gemm1", t_at = at, prev = "writing"})
      s2:join(s1)
      s2:gemm{a = c, b = b, c = a, m = 2, n = 2, k = 2} -- ordered now
      s1:close()
      s2:close()
    end)

    it("c is read too when beta ~= 0, and only written when beta = 0", function()
      local s1, s2 = dev:stream{name = "w"}, dev:stream{name = "r"}
      local a = dev:zeros("f32", 4, {stream = s1})
      local c = dev:zeros("f32", 4, {stream = s1})
      s1:sync()
      s2:gemm{a = a, b = a, c = dev:zeros("f32", 4, {stream = s2}), m = 2, n = 2, k = 2} -- s2 reads a
      -- s1 writing a now would conflict with s2's read; a gemm of s1 reading a does not
      s1:gemm{a = a, b = a, c = c, m = 2, n = 2, k = 2, beta = 1}
      s1:sync()
      s2:sync()
    end)
  end)

  describe("in a graph", function()
    it("a gemm is captured and replayed, after the stream ran one", function()
      local st = dev:stream{name = "g"}
      local A, B = small(6, 1), small(6, 2)
      local a, b = H.upload(dev, "f64", A), H.upload(dev, "f64", B)
      local c = dev:zeros("f64", 4, {stream = st})
      st:join(dev.main)
      st:gemm{a = a, b = b, c = c, m = 2, n = 2, k = 3} -- the stream's first: its handle and workspace
      local g = st:capture(function(cs) cs:gemm{a = a, b = b, c = c, m = 2, n = 2, k = 3, beta = 1} end)
      assert.is_true(g.nodes >= 1)
      g:launch(st)
      g:launch(st)
      st:sync()
      local want = reference{m = 2, n = 2, k = 3, A = A, B = B, C = {0, 0, 0, 0}}
      local got = c:read{stream = st}
      for i = 1, 4 do assert.are.equal(3 * want[i], got[i]) end -- the eager one and two replays, each adding
      g:close()
      st:close()
    end)

    it("a capture takes no spare an earlier capture left on a stream it is not ordered after", function()
      local A, B = small(4, 1), small(4, 2)
      local a, b = H.upload(dev, "f32", A), H.upload(dev, "f32", B)
      dev.main:gemm{a = a, b = b, c = dev:zeros("f32", 4), m = 2, n = 2, k = 2} -- cuBLAS in use
      local c1, c2 = dev:zeros("f32", 4), dev:zeros("f32", 12)
      local first = dev:stream{name = "first"}
      first:join(dev.main)
      local g0 = first:capture(function(cs) -- takes every spare made before, wherever they were made
        local f = {}
        for i = 1, 4 do
          f[i] = cs:fork{name = "fa" .. i}
          f[i]:gemm{a = a, b = b, c = c1, m = 2, n = 2, k = 2, beta = 1}
          cs:join(f[i])
        end
      end)
      local g1 = first:capture(function(cs) -- makes four spares and leaves them
        cs:launch(gpu.kernels.fill, {block = 32}, c1, 0, 4)
      end)
      local second = dev:stream{name = "second"} -- never ordered after 'first'
      second:join(dev.main)
      local g2 = second:capture(function(cs) -- three forks: more spares than this capture made itself
        local f = {}
        for i = 1, 3 do
          f[i] = cs:fork{name = "f" .. i}
          f[i]:gemm{a = a, b = b, c = c2:view(4 * (i - 1), 4), m = 2, n = 2, k = 2}
        end
        for i = 1, 3 do cs:join(f[i]) end
      end)
      g2:launch(second) -- the checker refused this while spares were made on 'first'
      local want = reference{m = 2, n = 2, k = 2, A = A, B = B, C = {0, 0, 0, 0}}
      local got = c2:read{stream = second}
      for i = 1, 12 do assert.are.equal(H.f32(want[(i - 1) % 4 + 1]), got[i], "element " .. i) end
      for _, g in ipairs{g0, g1, g2} do g:close() end
      first:close()
      second:close()
    end)

    it("streams forked inside a capture take the spares made before it (pipeline.graph, a gemm stage)", function()
      local pipeline = require "gpulua.pipeline"
      local m, n, k, batches = 4, 3, 5, 6
      local A, B = small(m * k * batches, 1), small(k * n, 2)
      local a, b = H.upload(dev, "f32", A), H.upload(dev, "f32", B)
      local c = dev:zeros("f32", m * n * batches)
      dev.main:gemm{a = a, b = b, c = dev:zeros("f32", m * n), m = m, n = n, k = k} -- cuBLAS in use
      local g = pipeline.graph{device = dev, streams = 3, batches = batches, stage = function(bt, st)
        st:gemm{a = a:view((bt - 1) * m * k, m * k), b = b, c = c:view((bt - 1) * m * n, m * n), m = m, n = n, k = k}
      end}
      g:launch(dev.main)
      local got = c:read()
      local want = reference{m = m, n = n, k = k, count = batches, stride_b = 0, A = A, B = B,
                             C = H.values("f32", m * n * batches, 1)}
      for i = 1, #want do assert.are.equal(H.f32(want[i]), got[i], "element " .. i) end
      g:close()
    end)

    it("spares need no ordering: g:update changes nothing about which streams may replay the graph", function()
      local a, b = dev:zeros("f32", 4), dev:zeros("f32", 4)
      local c, out = dev:zeros("f32", 4), dev:zeros("f32", 2)
      dev.main:gemm{a = a, b = b, c = c, m = 2, n = 2, k = 2} -- cuBLAS in use
      dev.main:launch(gpu.kernels.sum, {block = 32}, a, out, 4) -- and reductions
      local cap, r = dev:stream{name = "cap"}, dev:stream{name = "r"}
      cap:join(dev.main)
      local function body(cs) -- a fork without a workspace or scratch takes spares
        local f = cs:fork{name = "f"}
        f:gemm{a = a, b = b, c = c, m = 2, n = 2, k = 2}
        f:launch(gpu.kernels.sum, {block = 32}, a, out, 4)
        cs:join(f)
      end
      local g = cap:capture(body)
      r:join(cap) -- r is ordered after everything the graph's work needs
      g:launch(r)
      r:sync()
      collectgarbage() -- the fork 'f' closes: its spares go, so the update makes new ones
      for _ = 1, 2 do
        g:update(body, {stream = cap})
        g:launch(r) -- was refused: the new spares were made on cap, after r's join
      end
      r:sync()
      local r2 = dev:stream{name = "r2"}
      r2:join(dev.main)
      g:launch(r2) -- any stream ordered after the memory the script gave the graph
      r2:sync()
      g:close()
      for _, st in ipairs{cap, r, r2} do st:close() end
    end)

    it("more streams of one capture than spares, or a process's first gemm in a capture, is an error", function()
      local a, c = dev:zeros("f32", 4), {}
      for i = 1, 5 do c[i] = dev:zeros("f32", 4) end
      dev.main:gemm{a = a, b = a, c = c[1], m = 2, n = 2, k = 2}
      H.fails(H.lit("s:gemm: stream 'f5' has no cuBLAS handle and workspace of its own, and inside a capture a gemm "
                    .. "allocates nothing: the 4 spares made before the capture are taken"),
              function()
                dev.main:capture(function(cs)
                  local forks = {}
                  for i = 1, 5 do
                    forks[i] = cs:fork{name = "f" .. i}
                    forks[i]:gemm{a = a, b = a, c = c[i], m = 2, n = 2, k = 2}
                  end
                end)
              end)
      local out, status = H.run_child([[
        local gpu = require "gpulua"
        local dev = gpu.device(0)
        local a, c = dev:zeros("f32", 4), dev:zeros("f32", 4)
        dev:sync()
        local ok, err = pcall(dev.main.capture, dev.main,
                              function(cs) cs:gemm{a = a, b = a, c = c, m = 2, n = 2, k = 2} end)
        print(ok, err)
      ]], {LUA_PATH_5_4 = package.path})
      assert.are.equal(0, status, out)
      assert.matches(H.lit("run one s:gemm before capturing (cuBLAS is then loaded, and each capture starts with "
                           .. "spares for the streams forked inside it)"), out)
    end)
  end)

  it("each stream's workspace goes with it: streams made and closed in a loop keep memory flat", function()
    local a = dev:zeros("f32", 4)
    dev:sync()
    local function cycle()
      local st = dev:stream{name = "cycle"}
      st:join(dev.main)
      st:gemm{a = a, b = a, c = dev:zeros("f32", 4, {stream = st}), m = 2, n = 2, k = 2}
      st:close()
      dev:sync()
    end
    H.memory_flat(dev, cycle)
  end)
end)
