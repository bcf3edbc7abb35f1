#!/usr/bin/env bash
# Build the libFuzzer harness of the C parsers (signatures, dtype names,
# kernel-cache entries, the sim's PTX reading) with ASan and UBSan, and run it
# for a bounded time.
#   scripts/fuzz.sh [seconds]   (default 30; needs clang and libclang-rt-14-dev)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
secs=${1:-30}
out=${FUZZ_DIR:-$root/build-fuzz}
mkdir -p "$out/corpus"
clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$root/src" -I"$root/src/driver" -I/usr/include/lua5.4 -I/usr/local/cuda/include $(pkg-config --cflags libxxhash 2>/dev/null) \
  "$root/tests/fuzz/fuzz_parsers.c" "$root/src/signature.c" "$root/src/dtype.c" "$root/src/kcache.c" \
  "$root/src/driver/sim_ptx.c" /usr/lib/x86_64-linux-gnu/liblua5.4.a -lm -ldl -lpthread -o "$out/fuzz_parsers"
# seeds: a few signatures and dtype names
printf '\x00f32, const f32*, f32*, u64' >"$out/corpus/sig1"
printf '\x00const unsigned long long *, void*, __half' >"$out/corpus/sig2"
printf '\x01bf16' >"$out/corpus/dtype"
printf '\x02GLKC' >"$out/corpus/cache"
{ printf '\x03twice\n'; cat "$root/tests/data/twice.ptx"; } >"$out/corpus/ptx"
"$out/fuzz_parsers" -max_total_time="$secs" -max_len=4096 "$out/corpus" 2>&1 | tail -n 5
echo "1 passed, 0 failed"
