#!/usr/bin/env bash
# ctest: the interpreter's corpus (tests/ptx/corpus.lua) runs on sim, gives the
# bits an H200 gave (tests/ptx/h200.dump), and its race-free kernels give the
# same bits under the fixed schedule and under two random ones
# (GPULUA_SIM_SCHEDULE); the compare tool says which element
# differs. On a GPU machine scripts/device-run.sh corpus compares the GPU's
# results with the sim's the same way.
#   tests/ptx_corpus_check.sh PATH/TO/gpulua
set -uo pipefail
g=$1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
status=0
GPULUA_BACKEND=sim "$g" "$root/tests/ptx/corpus.lua" "$dir/fixed.dump" || exit 1
# the same bits as an H200 gave (tests/ptx/h200.dump: scripts/device-run.sh corpus's
# corpus-cuda.dump, recorded; a kernel added since is named, not compared)
"$g" "$root/tests/ptx/corpus_compare.lua" "$root/tests/ptx/h200.dump" "$dir/fixed.dump" || status=1
for seed in 7 123456789; do
  GPULUA_BACKEND=sim GPULUA_SIM_SCHEDULE=random:$seed "$g" "$root/tests/ptx/corpus.lua" "$dir/r$seed.dump" || exit 1
  "$g" "$root/tests/ptx/corpus_compare.lua" "$dir/fixed.dump" "$dir/r$seed.dump" || status=1
done
# the compare tool finds a planted difference
sed 's/values = {\([0-9-]*\),/values = {0\1,/; 0,/values = {/s//values = {1+/' "$dir/fixed.dump" >"$dir/planted.dump"
if "$g" "$root/tests/ptx/corpus_compare.lua" "$dir/fixed.dump" "$dir/planted.dump" >"$dir/planted.out"; then
  echo "FAILED: the compare tool found no difference in a planted one"
  status=1
fi
grep -q "saxpy *DIFFERS" "$dir/planted.out" || { cat "$dir/planted.out"; echo "FAILED: the planted difference is not named"; status=1; }
exit $status
