#!/bin/bash
# The one-compare slot tests of `_load_column` and `_publish_next` (bench/wip/one-compare.patch), and a
# 640x512 call's host time against its GPU time, on the GPU (carry .whl .device scratchpad); logs under $OUT.
#   Before the calls, here: mkdir -p scratchpad && git show HEAD:submission.py > scratchpad/main_submission.py
#                           git apply bench/wip/one-compare.patch
#   call 1 (~8 min): bash bench/wip/run-one-compare.sh check    host vs GPU time of 640x512 and 60x1024
#                    calls (main's code), the panel and square kernel tests, ab on 40x352, 640x512, 60x1024
#   call 2 (~5 min): bash bench/wip/run-one-compare.sh clusters  ab on 8x2048 and 2x4096
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
ab() {
    timeout "$1" python bench/ab.py --rounds 3 --shapes "$2" \
        --variant main=scratchpad/main_submission.py --variant one-compare=submission.py 2>&1 \
        | tee "$OUT/ab-one-compare-$3.log" | tail -7
}
case "${1:-}" in
check)
    cp submission.py scratchpad/one_compare.py && cp scratchpad/main_submission.py submission.py
    timeout 90 python bench/calls.py --shapes 640x512,60x1024 --calls 10 > "$OUT/calls-blocked.log" 2>&1
    cat "$OUT/calls-blocked.log"
    cp scratchpad/one_compare.py submission.py
    timeout 200 python -m pytest -q -p no:cacheprovider tests/test_kernels.py tests/test_submission.py \
        -k "panel or square_plans_copy or square_kernel_serves" > "$OUT/kernel-tests-one-compare.log" 2>&1
    tail -2 "$OUT/kernel-tests-one-compare.log"
    ab 200 40x352,640x512,60x1024 medium ;;
clusters)
    ab 280 8x2048,2x4096 large ;;
*)
    echo "usage: bash bench/wip/run-one-compare.sh check|clusters" >&2; exit 2 ;;
esac
