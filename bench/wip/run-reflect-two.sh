#!/bin/bash
# Two columns a trip in a non-resident panel's reflection loop (640x512's panels), on the GPU (carry .whl
# .device scratchpad), logs under $OUT.
#   Before the call, here: mkdir -p scratchpad && git show HEAD:submission.py > scratchpad/main_submission.py
#                          git apply bench/wip/reflect-two.patch
#   call (~8 min): bash bench/wip/run-reflect-two.sh check   the panel and square kernel tests, the
#                  clock-stamped 640x512 panels at c = 0 and 256 (2e4c5f5: reflect 66.3 K of a CTA's
#                  138.8 K cycles at c = 0), then ab.py against main (same bits expected)
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
case "${1:-}" in
check)
    timeout 240 python -m pytest -q -p no:cacheprovider tests/test_kernels.py tests/test_submission.py \
        -k "panel or square_plans_copy or square_kernel_serves" \
        > "$OUT/kernel-tests-reflect-two.log" 2>&1
    tail -2 "$OUT/kernel-tests-reflect-two.log"
    timeout 60 python bench/probe_panel_clock.py --shapes 640x512 --columns 0,256 \
        > "$OUT/probe-panel-clock-reflect-two.log" 2>&1
    grep "stamps\|---\|panel " "$OUT/probe-panel-clock-reflect-two.log"
    timeout 200 python bench/ab.py --rounds 3 --shapes 640x512,40x352,60x1024 \
        --variant main=scratchpad/main_submission.py --variant reflect-two=submission.py 2>&1 \
        | tee "$OUT/ab-reflect-two.log" | tail -5 ;;
*)
    echo "usage: bash bench/wip/run-reflect-two.sh check" >&2; exit 2 ;;
esac
