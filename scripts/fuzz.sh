#!/usr/bin/env bash
# Build the libFuzzer harness of the C parsers (signatures, dtype names,
# kernel-cache entries, the sim's PTX reading and its PTX interpreter's
# parser, the job store's messages: the CMake target fuzz_parsers,
# tests/CMakeLists.txt) with clang, ASan and UBSan, and run it for a bounded
# time. A finding fails the run.
#   scripts/fuzz.sh [seconds]   (default 30; needs clang and libclang-rt-14-dev)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
secs=${1:-30}
out=${FUZZ_DIR:-$root/build-fuzz}
cmake -S "$root" -B "$out" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DGPULUA_FUZZ=ON >/dev/null
cmake --build "$out" --target fuzz_parsers -j"$(nproc)" >/dev/null
mkdir -p "$out/corpus"
# seeds: a few signatures, dtype names, a cache entry's magic, PTX modules
printf '\x00f32, const f32*, f32*, u64' >"$out/corpus/sig1"
printf '\x00const unsigned long long *, void*, __half' >"$out/corpus/sig2"
printf '\x01bf16' >"$out/corpus/dtype"
printf '\x02GLKC' >"$out/corpus/cache"
{ printf '\x03twice\n'; cat "$root/tests/data/twice.ptx"; } >"$out/corpus/ptx"
printf '\x05GLST\x01\x01\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00' >"$out/corpus/store"
for f in "$root"/tests/ptx/*.ptx; do # the interpreter's corpus, whole modules
  { printf '\x04'; cat "$f"; } >"$out/corpus/module-$(basename "$f" .ptx)"
done
"$out/tests/fuzz_parsers" -max_total_time="$secs" -max_len=4096 "$out/corpus" 2>&1 | tail -n 5
echo "1 passed, 0 failed"
