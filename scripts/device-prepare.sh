#!/usr/bin/env bash
# Build here what the GPU machine lacks and gather it in .carry/ (git-ignored),
# so that a GPU machine with no Lua and no build tools can run everything:
#   .carry/bin/gpulua      the host, Lua linked statically, no libedit
#   .carry/bin/gpulua.so   the Lua C module
#   .carry/bin/busted      Busted's runner script
#   .carry/share/lua/5.4   Debian's pure-Lua modules (busted, luassert, penlight, ...)
#   .carry/lib/lua/5.4     their small C modules (lfs, system, term, ...)
# Then copy the checkout with .carry/ to the GPU machine and run `bash scripts/device-run.sh` there.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build-device
out=$root/.carry
rm -rf "$out"
mkdir -p "$out/bin" "$out/share/lua" "$out/lib/lua"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGPULUA_WITH_LIBEDIT=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
cp "$build/gpulua" "$build/gpulua.so" "$out/bin/"
for t in "$build"/tests/test_*; do [ -x "$t" ] && cp "$t" "$out/bin/"; done
[ -d "$build/bench" ] && find "$build/bench" -maxdepth 1 -type f -perm -u+x -exec cp {} "$out/bin/" \;
cp /usr/bin/busted "$out/bin/busted"
cp -rL /usr/share/lua/5.4 "$out/share/lua/5.4"
cp -rL /usr/lib/x86_64-linux-gnu/lua/5.4 "$out/lib/lua/5.4"
echo "prepared $(du -sh "$out" | cut -f1) in .carry/: copy the checkout with .carry/ to the GPU machine and run scripts/device-run.sh there"
