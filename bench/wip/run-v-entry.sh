#!/bin/bash
# GPU call on wip/v-entry-select (carry .whl .device scratchpad/main_submission.py = main's submission.py):
# the clock probe's Gram and cross-Gram phases with V's entries selected (this branch) and branched (main),
# 640x512 c 32 single and merging, merging with V1 cold and warm in L2, 60x1024 c 32 merging warm. Logs under $OUT.
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
mkdir -p /tmp/main-root && cp -r bench /tmp/main-root/ && cp scratchpad/main_submission.py /tmp/main-root/submission.py
for root in . /tmp/main-root; do
    echo "=== $root"
    timeout 60 python $root/bench/probe_panel_clock.py --shapes 640x512 --columns 32
    timeout 60 python $root/bench/probe_panel_clock.py --shapes 640x512 --columns 32 --merges
    timeout 110 python $root/bench/probe_panel_clock.py --shapes 640x512,60x1024 --columns 32 --merges --warm-v1
done 2>&1 | grep -v "no column stamps" | tee "$OUT/clock-v-entry.log"
