#!/bin/bash
# The pair's T merged by its second panel's kernel (bench/wip/pair-merge.patch) on the GPU (carry .whl .device
# scratchpad); logs under $OUT.
#   Before the call, here: mkdir -p scratchpad && git show HEAD:submission.py > scratchpad/main_submission.py
#                          git apply bench/wip/pair-merge.patch
#   bash bench/wip/run-pair-merge.sh   (~8 min): the pair-sensitive GPU tests in 8 shards (the merge kernel
#       test, panels, the spec cases of 640x512 and 60x1024, pairs, eager, bound, first-update, geqrf
#       agreement, side streams, look-ahead, relaunches, a broken capture), then, if all pass, ab on
#       640x512 and 60x1024 against scratchpad/main_submission.py
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
mkdir -p scratchpad/shards
python -m pytest --collect-only -q -p no:cacheprovider tests/ 2>/dev/null | grep "::" > scratchpad/shards/all.txt
{ grep "test_second_panel_of_a_pair_merges" scratchpad/shards/all.txt
  grep "test_panel_matches_geqrf_and_forms_t" scratchpad/shards/all.txt | grep "left" | head -6
  grep "test_spec_passes" scratchpad/shards/all.txt | grep -- "-11\]" | grep "640x512\|60x1024"
  grep -E "test_paired_and_single|test_panels_bound_once|test_eager_launches|test_first_update_reads|test_agrees_with_geqrf|test_side_streams|test_lookahead_and_plain|test_blocked_relaunches|test_a_broken_capture" \
      scratchpad/shards/all.txt; } > scratchpad/shards/selected.txt
rm -f scratchpad/shards/shard-*.txt
awk '{print > ("scratchpad/shards/shard-" (NR % 8) ".txt")}' scratchpad/shards/selected.txt
for i in 0 1 2 3 4 5 6 7; do
  timeout 240 python -m pytest -q -p no:cacheprovider $(cat scratchpad/shards/shard-$i.txt) \
      > scratchpad/shards/out-$i.log 2>&1 &
done
wait
for i in 0 1 2 3 4 5 6 7; do echo "shard $i: $(tail -1 scratchpad/shards/out-$i.log)"; done | tee "$OUT/tests-pair-merge.log"
grep -h "FAILED\|Error\|assert" scratchpad/shards/out-*.log | head -30 | tee -a "$OUT/tests-pair-merge.log"
grep -q "FAILED\|rror" "$OUT/tests-pair-merge.log" && exit 1
timeout 300 python bench/ab.py --rounds 3 --shapes 640x512,60x1024 \
    --variant main=scratchpad/main_submission.py --variant merge=submission.py 2>&1 \
    | tee "$OUT/ab-pair-merge.log" | tail -4
