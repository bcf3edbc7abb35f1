#!/usr/bin/env bash
# Regenerates the PTX fixtures of the interpreter's tests (tests/ptx/*.ptx)
# from their CUDA sources (tests/ptx/*.cu), for the architecture gpu.compile
# asks NVRTC for on the sim (compute_90, src/core/compile.c: -arch only),
# with line information (.loc) so faults name the source line. The .file
# names are the sources' own names, as NVRTC gives a program's name.
# The tests read the committed fixtures: CI needs no CUDA toolkit.
#   scripts/ptx-fixtures.sh [nvcc]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
nvcc=${1:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}
cd "$root/tests/ptx"
for cu in *.cu; do
  ptx=${cu%.cu}.ptx
  "$nvcc" -ptx -arch=compute_90 -lineinfo "$cu" -o "$ptx.tmp"
  # the absolute path nvcc records becomes the file's own name
  sed -E 's|^(\s*\.file\s+[0-9]+\s+")[^"]*/([^"/]*")|\1\2|' "$ptx.tmp" >"$ptx"
  rm -f "$ptx.tmp"
  echo "$ptx"
done
