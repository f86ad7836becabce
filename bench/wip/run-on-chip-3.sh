#!/bin/bash
# GPU call: the on-chip update's tests, 640x512's spec cases under five service seeds, then whole calls
# against the Triton update (bench/ab.py).
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
timeout 100 python -m pytest -q -x tests/test_kernels.py tests/test_submission.py -k "on_chip" 2>&1 | tail -3 \
    | tee "$OUT/tests-on-chip.log"
timeout 150 python -m pytest -q tests/test_submission.py \
    -k "spec_passes and 640x512 and (-11] or -222] or -3333] or -44444] or -5])" 2>&1 | tail -3 \
    | tee "$OUT/tests-spec-640x512.log"
timeout 170 python bench/ab.py --shapes 640x512 --rounds 7 --share-kernels \
    --variant "triton=submission.py:ON_CHIP_CAPABILITY=(0,0)" --variant on_chip=submission.py \
    2>&1 | tee "$OUT/ab-on-chip.log"
