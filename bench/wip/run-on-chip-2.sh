#!/bin/bash
# GPU call: the on-chip update's rings at the Gluon reserve against SMEM_RESERVE's (bench/ab.py), then
# compare.py on 640x512's cases.
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
timeout 200 python -m pytest -q -x tests/test_kernels.py -k "on_chip" 2>&1 | tail -3 | tee "$OUT/tests-on-chip.log"
timeout 200 python bench/ab.py --shapes 640x512 --rounds 9 --share-kernels \
    --variant "reserve4096=submission.py:ON_CHIP_SMEM_RESERVE=4096" --variant on_chip=submission.py \
    2>&1 | tee "$OUT/ab-on-chip-reserve.log"
timeout 220 python bench/compare.py --libs submission --budget 0.3 --cases "batch: 640;" --out "$OUT" 2>&1 | tail -20 | tee "$OUT/compare-640x512.log"
