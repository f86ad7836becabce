#!/bin/bash
# GPU call 1 of the thirty-eighth session (carry .whl .device): the CholeskyQR2 panel's kernel tests (with
# the condition-300 panel that takes the full second factor), then the probe: column steps, the first-order
# second factor and the full one (CHOLESKY_FIRST_ORDER_LIMIT=0) on the same panels, including 2x4096's
# 512- and 256-row panels (c 3584, 3840: below CHOLESKY_MIN_ROWS today). Logs under $OUT; ~5-6 minutes
# cold (~9 s a compiled plan).
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
timeout 200 python -m pytest -q -p no:cacheprovider tests/test_kernels.py -k "1100 or 1300 or 700-1-32 or condition_300" \
    2>&1 | tail -15 | tee "$OUT/tests-first-order.log"
timeout 360 python bench/probe_cholqr_panel.py --shapes 2x4096,8x2048,60x1024 --columns 0,half,3584,3840 \
    --variant full=CHOLESKY_FIRST_ORDER_LIMIT=0 2>&1 | tee "$OUT/probe-first-order.log"
