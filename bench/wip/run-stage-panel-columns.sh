#!/bin/bash
# An eager call's staging reads only its staged columns of a matrix that is not tiny
# (bench/wip/stage-panel-columns.patch) on the GPU (carry .whl .device scratchpad). Before the call, here:
#   mkdir -p scratchpad && git show HEAD:submission.py > scratchpad/main_submission.py
#   git apply bench/wip/stage-panel-columns.patch
# ~7 min: the GPU tests of the staging, lift and eager paths (35: the first-update test with its two new
# matrices, eager launches, extreme, subnormal, tiny-and-normal, NaN/Inf, mixed-magnitude and strided
# inputs, the seed-11 spec cases of 640x512) in 8 shards, then ab against main on 640x512 (the
# benchmark's eager shape) and 60x1024 (a graph plan, whose staging copies every column: the control).
set -u
source .device/gpu-env.sh
source bench/wip/shards.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
collect_tests
{ grep "test_spec_passes" scratchpad/shards/all.txt | grep -- "-11\]" | grep "640x512"
  grep -E "test_first_update_reads|test_eager_launches|test_extreme_magnitudes|test_subnormal|test_tiny_and_normal|test_nan_and_inf|test_magnitudes_mixed|test_non_contiguous" \
      scratchpad/shards/all.txt; } > scratchpad/shards/selected.txt
run_shards 200 tests-stage-panel-columns
timeout 260 python bench/ab.py --rounds 3 --shapes 640x512,60x1024 \
    --variant main=scratchpad/main_submission.py --variant stage=submission.py 2>&1 \
    | tee "$OUT/ab-stage-panel-columns.log" | tail -6
