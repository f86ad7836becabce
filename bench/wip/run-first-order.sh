#!/bin/bash
# GPU call 1 of the thirty-eighth session, on wip/cholesky-cta-steps (carry .whl .device): the CholeskyQR2
# panel's kernel tests (with the condition-300 panel that takes the full second factor), then the probe:
# the column steps against the CholeskyQR2 path as the branch has it (elimination steps by the whole CTA,
# second factor to first order), with the steps by one warp (`warp`), and with the full second factor
# (`full`), on the same panels, including 2x4096's 512- and 256-row panels (c 3584, 3840: below
# CHOLESKY_MIN_ROWS today). Logs under $OUT; ~6-7 minutes cold (~9 s a compiled plan).
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
timeout 200 python -m pytest -q -p no:cacheprovider tests/test_kernels.py -k "1100 or 1300 or 700-1-32 or condition_300" \
    2>&1 | tail -15 | tee "$OUT/tests-cta-steps.log"
variants="--variant warp=CHOLESKY_CTA_STEPS=False --variant full=CHOLESKY_FIRST_ORDER_LIMIT=0"
timeout 200 python bench/probe_cholqr_panel.py --shapes 2x4096 --columns 0,half,3584,3840 $variants \
    2>&1 | tee "$OUT/probe-cta-steps.log"
timeout 170 python bench/probe_cholqr_panel.py --shapes 8x2048,60x1024 --columns 0,half $variants \
    2>&1 | tee -a "$OUT/probe-cta-steps.log"
