#!/bin/bash
# A pair's V1^T V2 on tensor cores (bench/wip/gram-tc.patch), on the GPU (carry .whl .device scratchpad);
# logs under $OUT.
#   Before the call, here: mkdir -p scratchpad && git show HEAD:submission.py > scratchpad/main_submission.py
#                          git apply bench/wip/gram-tc.patch
#   call (~7 min): bash bench/wip/run-gram-tc.sh check   the product, merge and trailing tests, one
#                  profiled 640x512 call (the Gram kernel's time), then ab against main (other bits)
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
case "${1:-}" in
check)
    timeout 150 python -m pytest -q -p no:cacheprovider tests/test_kernels.py tests/test_robustness.py \
        -k "six_bf16 or merged_reflector or block_reflector or trailing_update_kernels" \
        > "$OUT/kernel-tests-gram-tc.log" 2>&1
    tail -2 "$OUT/kernel-tests-gram-tc.log"
    timeout 90 python bench/trace.py --shapes 640x512 > "$OUT/trace-gram-tc.log" 2>&1
    grep "x .* us  _pair_gram\|x .* us  panel\|GPU events" "$OUT/trace-gram-tc.log"
    timeout 230 python bench/ab.py --rounds 3 --shapes 640x512,60x1024,40x352 \
        --variant main=scratchpad/main_submission.py --variant gram-tc=submission.py 2>&1 \
        | tee "$OUT/ab-gram-tc.log" | tail -8 ;;
*)
    echo "usage: bash bench/wip/run-gram-tc.sh check" >&2; exit 2 ;;
esac
