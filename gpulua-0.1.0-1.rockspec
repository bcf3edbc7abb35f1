-- LuaRocks (README.md, "LuaRocks"): `luarocks make` builds gpulua with CMake
-- and installs the gpulua host (bin/), gpulua.so (the C module) and the Lua
-- modules (gpulua.pipeline, gpulua.assert) into a tree; `luarocks test` runs
-- the Busted specs with that gpulua.so (on the GPU, or on sim without one).
-- Both need LuaRocks set to Lua 5.4 (Debian's defaults to 5.1) and what
-- README.md's first command installs (a C compiler, CMake, liblua5.4-dev,
-- libxxhash-dev, libjansson-dev, libedit-dev optional; lua-busted for the
-- tests); no CUDA toolkit, and nothing is downloaded.
rockspec_format = "3.0"
package = "gpulua"
version = "0.1.0-1"
source = {
  url = "git+file://.", -- a checkout: `luarocks make` in its root
}
description = {
  summary = "Drive CUDA GPUs from Lua: streams, events, device slices, NVRTC kernels, checked",
  detailed = [[
gpulua gives Lua 5.4 scripts CUDA devices, streams, events, device memory
slices, NVRTC-compiled kernels, cuBLAS and NCCL, with every cross-stream
hazard checked before it reaches the GPU. It loads CUDA at run time and runs
on a software device (sim) where there is no GPU.
]],
  license = "MIT",
  labels = {"cuda", "gpu"},
}
dependencies = {
  "lua >= 5.4, < 5.5",
}
build = {
  type = "cmake",
  variables = {
    CMAKE_BUILD_TYPE = "Release",
    GPULUA_BUILD_TESTS = "OFF",
    CMAKE_INSTALL_PREFIX = "$(PREFIX)",
    GPULUA_INSTALL_BIN = "$(BINDIR)",
    GPULUA_INSTALL_CMOD = "$(LIBDIR)",
    GPULUA_INSTALL_LMOD = "$(LUADIR)",
  },
}
-- Busted runs through a script, not the "busted" test type: that type wants
-- busted as a rock in a tree and downloads it when it is missing, while the
-- script runs the system's busted (Debian's lua-busted) with the gpulua
-- installed by `luarocks make`, offline. No test_dependencies, for the same reason.
test = {
  type = "command",
  script = "tests/luarocks/run.lua", -- the specs in tests/spec (.busted); arguments go to busted
}
