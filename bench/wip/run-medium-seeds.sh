#!/bin/bash
# A GPU call on a landed commit (carry .whl .device): one warm call of 640x512 and of 60x1024 under the
# profiler (bench/trace.py), then, in 8 parallel shards, the spec cases of 40x352, 640x512 and 60x1024
# under five service seeds (issue 4's accuracy line: every variant within the project's margins).
# Logs under $OUT; ~6 minutes cold.
set -u
source .device/gpu-env.sh
source bench/wip/shards.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
timeout 150 python bench/trace.py --shapes 640x512,60x1024 2>&1 | grep -v Warn | tee "$OUT/trace.log"
collect_tests
grep "test_spec_passes" scratchpad/shards/all.txt | grep -E "40x352|640x512|60x1024" \
    | grep -E -- "-(11|222|3333|44444|5)\]$" > scratchpad/shards/selected.txt
wc -l < scratchpad/shards/selected.txt
run_shards 360 medium-seeds
