#!/bin/bash
# GPU calls on wip/v-entry-select (carry .whl .device, and for `ab` scratchpad/main_submission.py = main's
# submission.py): V's entries loaded unconditionally and selected in `_v_entry` and `_raw_entry` (every
# panel's Gram and a pair's cross Gram), against main's branches around the loads. Logs under $OUT.
#   bash bench/wip/run-v-entry.sh spec      the spec cases of every blocked shape under seed 11, the
#                                           blocked agreement tests and the panel kernel tests, in 8
#                                           shards; ~5-7 minutes
#   bash bench/wip/run-v-entry.sh ab SHAPE  SHAPE side by side with main, 3 rounds (640x512 or 60x1024:
#                                           each compiles for minutes cold, so one shape a call)
set -u
source .device/gpu-env.sh
source bench/wip/shards.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
case "$1" in
spec)
    collect_tests
    { grep "test_spec_passes" scratchpad/shards/all.txt | grep -E -- "-11\]" | grep -v -E "20x32|40x176"
      grep -E "test_agrees_with_geqrf|test_extreme_magnitudes|test_paired_and_single|test_lookahead_and_plain" \
          scratchpad/shards/all.txt
    } > scratchpad/shards/blocked.txt
    # the panel kernel tests (resident whole panels and streamed panels of the rows left, the extreme
    # columns, CholeskyQR2's second factor, the pair merges but the six at 1024 rows already run)
    python -m pytest --collect-only -q -p no:cacheprovider tests/test_kernels.py 2>/dev/null | grep "::" \
        | grep -E "whole-resident|left-streamed|extreme|condition_300|merges_their_t" \
        | grep -v -E "merges_their_t.*1024" > scratchpad/shards/kernels.txt
    # blocked tests first, grouped by shape (a shard compiles fewer plans), then the kernel tests: the eighths
    # of the list come out ~4 shards of each
    cat scratchpad/shards/blocked.txt scratchpad/shards/kernels.txt > scratchpad/shards/selected.txt
    wc -l < scratchpad/shards/selected.txt
    run_shards 420 spec-v-entry ;;
ab)
    timeout 560 python bench/ab.py --shapes "$2" --rounds 3 --variant main=scratchpad/main_submission.py \
        --variant select=submission.py 2>&1 | tee "$OUT/ab-v-entry-$2.log" ;;
*)
    echo "usage: $0 spec | ab SHAPE" >&2; exit 2 ;;
esac
