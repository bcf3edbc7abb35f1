#!/usr/bin/env bash
# ctest: run an example (it verifies its own result and fails otherwise);
# on the sim backend, an example that prints timings (a number of ms, us or
# GB/s) must also say that they are not GPU timings, in the line the
# examples share.
#   tests/example_check.sh PATH/TO/gpulua EXAMPLE.lua
set -uo pipefail
out=$("$1" "$2" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne 0 ]; then
  echo "FAILED: $2 exited with status $rc"
  exit 1
fi
backend=$("$1" -e 'io.write(gpu.backend())' 2>/dev/null)
if [ "$backend" = sim ] && grep -Eq '[0-9] *(ms|us|GB/s)\b' <<<"$out" &&
   ! grep -Eqx '\(sim backend: (these are host timings of the software device, not GPU timings|times predicted by the timing model of .+, not measured on a GPU)\)' <<<"$out"; then
  echo "FAILED: $2 prints timings on the sim backend without saying they are not GPU timings"
  exit 1
fi
