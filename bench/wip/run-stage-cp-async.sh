#!/bin/bash
# The panels' staging by cp.async on the GPU (carry .whl .device scratchpad), logs under $OUT.
#   Before the calls, here: mkdir -p scratchpad && git show HEAD:submission.py > scratchpad/main_submission.py
#                           git apply bench/wip/stage-cp-async.patch
#   call 1 (~8 min): bash bench/wip/run-stage-cp-async.sh check   the panel and square kernel tests, the
#                   clock-stamped panels (staging's cycles: 640x512 22.5 K, 60x1024 18.5 K, 2x4096 16.7 K a CTA
#                   on 8d44937), then ab.py against main on every blocked shape and 40x176 (same bits expected)
#   call 2 (~6 min, if it wins): commit, then bash bench/wip/run-shards-compare.sh <commit>
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
case "${1:-}" in
check)
    timeout 170 python -m pytest -q -p no:cacheprovider tests/test_kernels.py tests/test_submission.py \
        -k "panel or square_plans_copy or square_kernel_serves or 40x176-dense-3321-11" \
        > "$OUT/kernel-tests-stage-cp-async.log" 2>&1
    tail -2 "$OUT/kernel-tests-stage-cp-async.log"
    timeout 60 python bench/probe_panel_clock.py --shapes 640x512,60x1024,2x4096 --columns 0 \
        > "$OUT/probe-panel-clock-stage-cp-async.log" 2>&1
    grep "stamps" "$OUT/probe-panel-clock-stage-cp-async.log"
    timeout 330 python bench/ab.py --rounds 3 --shapes 40x176,40x352,640x512,60x1024,8x2048,2x4096 \
        --variant main=scratchpad/main_submission.py --variant cp-async=submission.py 2>&1 \
        | tee "$OUT/ab-stage-cp-async.log" | tail -9 ;;
*)
    echo "usage: bash bench/wip/run-stage-cp-async.sh check" >&2; exit 2 ;;
esac
