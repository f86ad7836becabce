#!/bin/bash
# Column lifts (bench/wip/column-lift.patch) on the GPU (carry .whl .device scratchpad); logs under $OUT.
#   Before the calls, here: mkdir -p scratchpad && git show HEAD:submission.py > scratchpad/main_submission.py
#                           git apply bench/wip/column-lift.patch
#   call 1 (~5 min): bash bench/wip/run-column-lift.sh tests   the lift-sensitive GPU tests in 8 shards
#                    (first-update reads, extreme, subnormal, tiny-and-normal, NaN/Inf, mixed magnitudes,
#                    pairs, eager, relaunches, agreement with geqrf, the spec cases of the blocked shapes)
#   call 2 (~5 min): bash bench/wip/run-column-lift.sh ab      ab on 640x512 and 60x1024
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
case "${1:-}" in
tests)
    mkdir -p scratchpad/shards
    python -m pytest --collect-only -q -p no:cacheprovider tests/test_submission.py tests/test_robustness.py \
        2>/dev/null | grep "::" > scratchpad/shards/all.txt
    { grep "test_first_update_reads\|test_subnormal\|test_tiny_and_normal" scratchpad/shards/all.txt
      grep "test_spec_passes" scratchpad/shards/all.txt | grep -- "-11\]" | grep "640x512\|60x1024\|2x4096\|8x2048"
      grep -E "test_extreme_magnitudes|test_magnitudes_mixed|test_nan_and_inf|test_agrees_with_geqrf|test_paired_and_single|test_eager_launches|test_blocked_relaunches" \
          scratchpad/shards/all.txt; } > scratchpad/shards/selected.txt
    rm -f scratchpad/shards/shard-*.txt
    awk '{print > ("scratchpad/shards/shard-" (NR % 8) ".txt")}' scratchpad/shards/selected.txt
    for i in 0 1 2 3 4 5 6 7; do
      timeout 280 python -m pytest -q -p no:cacheprovider $(cat scratchpad/shards/shard-$i.txt) \
          > scratchpad/shards/out-$i.log 2>&1 &
    done
    wait
    for i in 0 1 2 3 4 5 6 7; do echo "shard $i: $(tail -1 scratchpad/shards/out-$i.log)"; done \
        | tee "$OUT/tests-column-lift.log"
    grep -h "FAILED\|Error" scratchpad/shards/out-*.log | head -20 | tee -a "$OUT/tests-column-lift.log" ;;
ab)
    timeout 280 python bench/ab.py --rounds 3 --shapes 640x512,60x1024 \
        --variant main=scratchpad/main_submission.py --variant lift=submission.py 2>&1 \
        | tee "$OUT/ab-column-lift.log" | tail -5 ;;
*)
    echo "usage: bash bench/wip/run-column-lift.sh tests|ab" >&2; exit 2 ;;
esac
