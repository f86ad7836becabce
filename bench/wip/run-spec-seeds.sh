#!/bin/bash
# A GPU call on a landed commit (carry .whl .device): the CholeskyQR2 panel's kernel tests (the
# condition-300 panel included) beside, in 8 parallel shards, the spec cases at n 2048 and 4096 under five
# service seeds (issue 5's accuracy line) and the blocked path's tests whose shapes have CholeskyQR2 panels.
# Logs under $OUT; ~7 minutes cold.
set -u
source .device/gpu-env.sh
source bench/wip/shards.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
timeout 400 python -m pytest -q -p no:cacheprovider tests/test_kernels.py -k "1100 or 1300 or 700-1-32 or condition_300" \
    > "$OUT/tests-cholesky.log" 2>&1 &
collect_tests
{ grep "test_spec_passes" scratchpad/shards/all.txt | grep -E "x2048|x4096" | grep -E -- "-(11|222|3333|44444|5)\]"
  grep "test_spec_passes" scratchpad/shards/all.txt | grep -E "60x1024" | grep -- "-11\]"
  grep -E "test_paired_and_single|test_lookahead_and_plain|test_eager_launches|test_extreme_magnitudes|test_agrees_with_geqrf|test_nan_and_inf|test_subnormal|test_nearly_repeated|test_magnitudes_mixed|test_tiny_and_normal|test_side_streams|test_panels_bound_once|test_blocked_relaunches|test_first_update_reads" \
      scratchpad/shards/all.txt | grep -E "1100|2048|1024|cluster-panels|one-cta-panels|relaunches|first_update"
} > scratchpad/shards/selected.txt
wc -l < scratchpad/shards/selected.txt
run_shards 420 spec-seeds
wait
tail -5 "$OUT/tests-cholesky.log"
