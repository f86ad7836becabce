#!/bin/bash
# GPU calls that check a branch of host-side changes against main (carry .whl .device), each a call of its
# own, ~6 minutes cold; logs under $OUT.
#   bash bench/wip/run-branch.sh tests NAME   # 8 parallel shards: every spec case at seed 11, the blocked
#       path's selection of run-shards-compare.sh, and the state, stream, thread, cache, graph and
#       small-path tests
#   bash bench/wip/run-branch.sh ab NAME SHAPES [VARIANT=FILE ...]   # main's submission.py, each other
#       variant's file, and the tree's (named NAME) side by side (bench/ab.py: SPEC §5's flush protocol,
#       outputs kept through the next call), 9 rounds on SHAPES (e.g. 640x512,60x1024). The machine gets
#       no git history: first, here, `git show main:submission.py > scratchpad/main_submission.py` (and
#       the other variants' files likewise), and carry them.
set -u
source .device/gpu-env.sh
source bench/wip/shards.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
if [ "$1" = tests ]; then
  collect_tests
  { grep "test_spec_passes" scratchpad/shards/all.txt | grep -- "-11\]"
    grep -E "test_paired_and_single|test_lookahead_and_plain|test_eager_launches|test_first_update_reads|test_extreme_magnitudes|test_agrees_with_geqrf|test_nan_and_inf|test_subnormal|test_nearly_repeated|test_square_tail_leaves|test_magnitudes_mixed|test_tiny_and_normal|test_non_contiguous|test_blocked_relaunches|test_a_broken_capture|test_panels_bound_once|test_state_input|test_small_and_square_sweeps|test_a_dropped_shape|retargeted_graph|graph_calls|graph_captures|thread|stream|chunk" \
        scratchpad/shards/all.txt; } | sort -u > scratchpad/shards/selected.txt
  wc -l < scratchpad/shards/selected.txt
  run_shards 330 "tests-$2"
else
  variants=(--variant main=scratchpad/main_submission.py)
  for variant in "${@:4}"; do variants+=(--variant "$variant"); done
  timeout 540 python bench/ab.py --shapes "$3" --rounds 9 "${variants[@]}" --variant "$2=submission.py" \
      2>&1 | tee "$OUT/ab-$2.log"
fi
