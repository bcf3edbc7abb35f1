#!/usr/bin/env bash
# Rebuild the committed test images from twice.cu and globals.cu (needs nvcc; the results are
# committed so the specs need no compiler but NVRTC).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
"$nvcc" -ptx -arch=compute_90 -o twice.ptx twice.cu
"$nvcc" -cubin -arch=sm_90 -o twice.cubin twice.cu
"$nvcc" -fatbin -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 -o twice.fatbin twice.cu
"$nvcc" -cubin -arch=sm_90 -o globals_sm90.cubin globals.cu
