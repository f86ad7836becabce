#!/bin/bash
# GPU call (carry .whl .device) for the pairs' V read as bf16 halves (the working tree) against the
# committed tree: the block-reflector and merge kernel tests, the fused and split W64 updates alone with
# and without halves, then ab at 640x512 and 60x1024 (~7 min).
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
mkdir -p scratchpad/hv
git show HEAD:submission.py > scratchpad/hv/main.py
cp submission.py scratchpad/hv/halves.py
timeout 150 python -m pytest -q -p no:cacheprovider tests/test_kernels.py -k "block_reflector or merged or bf16_pair" 2>&1 \
    | tail -3 | tee "$OUT/halves-kernel-tests.log"
timeout 120 python bench/probe_update.py --shapes 640x512,60x1024 --reps 9 --match "W64 \[64,n\) (main|halves)" 2>&1 \
    | grep -v "^gpu-env" | tee "$OUT/probe-update-halves.log"
timeout 330 python bench/ab.py --rounds 3 --shapes 640x512,60x1024 --variant main=scratchpad/hv/main.py \
    --variant halves=scratchpad/hv/halves.py 2>&1 | grep -v "^gpu-env" | tee "$OUT/ab-halves.log" | tail -6
