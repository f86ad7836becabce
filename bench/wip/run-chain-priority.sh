#!/bin/bash
# Look-ahead graphs that keep their kernels' stream priorities (bench/wip/chain-priority.patch) on the GPU
# (carry .whl .device scratchpad). Before the call, here:
#   mkdir -p scratchpad && git show HEAD:submission.py > scratchpad/main_submission.py
#   git apply bench/wip/chain-priority.patch
# ~7 min: ab against main on the look-ahead shapes first (the lever's question), then the GPU tests that
# capture look-ahead graphs (the new priority test, look-ahead, pairs, relaunches, broken capture, bound
# panels, the seed-11 spec cases of 60x1024, 8x2048, 2x4096) in 8 shards. Logs under $OUT.
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
timeout 260 python bench/ab.py --rounds 2 --shapes 60x1024,8x2048,2x4096 \
    --variant main=scratchpad/main_submission.py --variant priority=submission.py 2>&1 \
    | tee "$OUT/ab-chain-priority.log" | tail -8
mkdir -p scratchpad/shards
python -m pytest --collect-only -q -p no:cacheprovider tests/test_submission.py tests/test_robustness.py \
    2>/dev/null | grep "::" > scratchpad/shards/all.txt
{ grep "test_spec_passes" scratchpad/shards/all.txt | grep -- "-11\]" | grep "60x1024\|8x2048\|2x4096"
  grep -E "test_lookahead_graph_runs|test_lookahead_and_plain|test_paired_and_single|test_blocked_relaunches|test_a_broken_capture|test_panels_bound_once|test_side_streams" \
      scratchpad/shards/all.txt; } > scratchpad/shards/selected.txt
rm -f scratchpad/shards/shard-*.txt
awk '{print > ("scratchpad/shards/shard-" (NR % 8) ".txt")}' scratchpad/shards/selected.txt
for i in 0 1 2 3 4 5 6 7; do
  timeout 200 python -m pytest -q -p no:cacheprovider $(cat scratchpad/shards/shard-$i.txt) \
      > scratchpad/shards/out-$i.log 2>&1 &
done
wait
for i in 0 1 2 3 4 5 6 7; do echo "shard $i: $(tail -1 scratchpad/shards/out-$i.log)"; done | tee "$OUT/tests-chain-priority.log"
grep -h "FAILED\|Error\|assert" scratchpad/shards/out-*.log | head -40 | tee -a "$OUT/tests-chain-priority.log"
