#!/bin/bash
# A GPU call (carry .whl .device): the blocked path's GPU tests in 8 parallel shards
# (the spec cases of every blocked shape at seed 11, pairs, look-ahead, eager and first-update launches,
# extreme, subnormal, NaN/Inf, mixed-magnitude and strided inputs, agreement with geqrf), then
# compare.py on the tree ($1: its commit; without it, the tests only). Logs under $OUT; ~6 minutes.
# A shard cut by its limit ends without pytest's summary line: rerun its last tests in a call of their own.
set -u
source .device/gpu-env.sh
source bench/wip/shards.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
collect_tests
{ grep "test_spec_passes" scratchpad/shards/all.txt | grep -- "-11\]" | grep -v "20x32\|40x176"
  grep -E "test_paired_and_single|test_lookahead_and_plain|test_eager_launches|test_first_update_reads|test_extreme_magnitudes|test_agrees_with_geqrf|test_nan_and_inf|test_subnormal|test_nearly_repeated|test_square_tail_leaves|test_magnitudes_mixed|test_tiny_and_normal|test_non_contiguous|test_blocked_relaunches|test_side_streams|test_a_broken_capture|test_panels_bound_once" \
      scratchpad/shards/all.txt; } > scratchpad/shards/selected.txt
run_shards 240 gpu-tests
[ -n "${1:-}" ] || exit 0          # no commit given: the tests only
timeout 310 python bench/compare.py --libs submission --budget 0.3 --out "$OUT" --commit "$1" 2>&1 | tail -20
