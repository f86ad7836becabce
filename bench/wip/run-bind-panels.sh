#!/bin/bash
# A call's panels launched from arguments converted once a call (bench/wip/bind-panels.patch), on the GPU
# (carry .whl .device scratchpad); logs under $OUT.
#   Before the calls, here: mkdir -p scratchpad && git show HEAD:submission.py > scratchpad/main_submission.py
#                           git apply bench/wip/bind-panels.patch
#   call 1 (~6 min): bash bench/wip/run-bind-panels.sh check   the bound-panel, eager, graph, look-ahead
#                    and panel tests, then a 640x512 call's host time against its GPU time (calls.py)
#   call 2 (~5 min): bash bench/wip/run-bind-panels.sh ab      ab on 640x512 and 60x1024, one profiled
#                    640x512 call (its idle GPU time)
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
case "${1:-}" in
check)
    timeout 240 python -m pytest -q -p no:cacheprovider tests/test_submission.py tests/test_robustness.py \
        tests/test_kernels.py -k "bound_once or eager_launches or first_update_reads or blocked_relaunches \
        or lookahead_and_plain or paired_and_single or broken_capture or side_streams or panel_matches" \
        > "$OUT/tests-bind-panels.log" 2>&1
    tail -2 "$OUT/tests-bind-panels.log"
    timeout 100 python bench/calls.py --shapes 640x512 --calls 10 > "$OUT/calls-bind-panels.log" 2>&1
    cat "$OUT/calls-bind-panels.log" ;;
ab)
    timeout 230 python bench/ab.py --rounds 3 --shapes 640x512,60x1024 \
        --variant main=scratchpad/main_submission.py --variant bind=submission.py 2>&1 \
        | tee "$OUT/ab-bind-panels.log" | tail -6
    timeout 80 python bench/trace.py --shapes 640x512 > "$OUT/trace-bind-panels.log" 2>&1
    grep "GPU events\|idle\|x .* us  panel" "$OUT/trace-bind-panels.log" ;;
*)
    echo "usage: bash bench/wip/run-bind-panels.sh check|ab" >&2; exit 2 ;;
esac
