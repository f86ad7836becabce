#!/bin/bash
# GPU call: the on-chip pair update's tests, then it against the Triton update in whole calls (bench/ab.py).
#   bash bench/wip/run-on-chip.sh [SHAPES] [TESTS]
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 300 python -m pytest -q -x tests/test_kernels.py tests/test_submission.py tests/test_wgmma_operands.py \
    -k "${2:-on_chip or block_reflector or wgmma}" 2>&1 | tail -25 | tee "$OUT/tests-on-chip.log"
timeout 280 python bench/ab.py --shapes "${1:-640x512,40x352}" --rounds 9 --share-kernels \
    --variant "triton=submission.py:ON_CHIP_CAPABILITY=(0,0)" --variant whole_only=submission.py:ON_CHIP_MIN_RING=99 \
    --variant on_chip=submission.py \
    2>&1 | tee "$OUT/ab-on-chip.log"
