#!/bin/bash
# Panels that apply the previous panel's reflector themselves (`applies_previous`,
# bench/wip/apply-previous.patch) on the GPU (carry .whl .device scratchpad). Before the call, here:
#   mkdir -p scratchpad && git show HEAD:submission.py > scratchpad/main_submission.py
#   git apply bench/wip/apply-previous.patch
# ~8 min: the sensitive GPU tests in 8 shards (the new kernel test, the pair merge test, the spec cases of
# the four blocked benchmark shapes at seed 11, pairs, look-ahead, geqrf agreement, bound and eager
# launches, first-update reads), then ab against main on the cluster shapes (640x512 is known to lose:
# bench/NOTES.md, thirtieth session). Logs under $OUT.
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
mkdir -p scratchpad/shards
python -m pytest --collect-only -q -p no:cacheprovider tests/ 2>/dev/null | grep "::" > scratchpad/shards/all.txt
{ grep -E "test_panel_applies_the_previous|test_second_panel_of_a_pair_merges" scratchpad/shards/all.txt
  grep "test_spec_passes" scratchpad/shards/all.txt | grep -- "-11\]" | grep "640x512\|60x1024\|8x2048\|2x4096"
  grep -E "test_paired_and_single|test_lookahead_and_plain|test_agrees_with_geqrf|test_panels_bound_once|test_eager_launches|test_first_update_reads" \
      scratchpad/shards/all.txt; } > scratchpad/shards/selected.txt
rm -f scratchpad/shards/shard-*.txt
awk '{print > ("scratchpad/shards/shard-" (NR % 8) ".txt")}' scratchpad/shards/selected.txt
for i in 0 1 2 3 4 5 6 7; do
  timeout 240 python -m pytest -q -p no:cacheprovider $(cat scratchpad/shards/shard-$i.txt) \
      > scratchpad/shards/out-$i.log 2>&1 &
done
wait
for i in 0 1 2 3 4 5 6 7; do echo "shard $i: $(tail -1 scratchpad/shards/out-$i.log)"; done | tee "$OUT/tests-apply-previous.log"
grep -h "FAILED\|Error\|assert" scratchpad/shards/out-*.log | head -40 | tee -a "$OUT/tests-apply-previous.log"
timeout 240 python bench/ab.py --rounds 2 --shapes 60x1024,8x2048,2x4096 \
    --variant main=scratchpad/main_submission.py --variant applies=submission.py 2>&1 \
    | tee "$OUT/ab-apply-previous.log" | tail -5
