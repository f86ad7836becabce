#!/bin/bash
# GPU calls on wip/graph-source (carry .whl .device): graph plans launch their graph on fresh outputs
# (`RetargetedGraph`), cut in two parts so that the second part's parameters are rewritten while the first
# runs, and where the first step's rest update is fused (60x1024) the call stages only `staged_columns` and
# that update reads the input, a third retargeted buffer. Logs under $OUT.
#   bash bench/wip/run-graph-source.sh tests   in 8 shards: the retargeting and graph tests, the input-reading
#                                              and capture-fallback tests, the paired/look-ahead factor
#                                              tests, peak memory, and 60x1024's spec cases under seeds 11
#                                              and 222, 40x352's under 11; ~6 minutes
#   bash bench/wip/run-graph-source.sh probe   60x1024 and 40x352: replay and copies out (main), one graph on
#                                              fresh outputs, the cut graph and the cut graph reading the
#                                              input, side by side (bench/probe_retarget.py), and each way's
#                                              host time a call; ~5 minutes cold
set -u
source .device/gpu-env.sh
source bench/wip/shards.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
case "$1" in
tests)
    collect_tests
    { grep "test_spec_passes" scratchpad/shards/all.txt | grep "\[60x1024" | grep -E -- "-(11|222)\]"
      grep "test_spec_passes" scratchpad/shards/all.txt | grep "\[40x352" | grep -E -- "-11\]"
      grep -E "retargeted|fresh_outputs|lookahead_graph|bound_once|graph_is_cut|first_update_reads" \
          scratchpad/shards/all.txt
      # first steps of every kind (pairs, look-ahead, fused or split updates), which now read their input
      grep -E "paired_and_single|lookahead_and_plain" scratchpad/shards/all.txt
      grep -E "broken_capture|peak_memory|relaunches_follow" scratchpad/shards/all.txt
    } > scratchpad/shards/selected.txt
    wc -l < scratchpad/shards/selected.txt
    run_shards 440 tests-graph-source ;;
probe)
    timeout 480 python bench/probe_retarget.py --shapes 60x1024,40x352 --rounds 7 2>&1 \
        | tee "$OUT/probe-retarget.log" ;;
*)
    echo "usage: $0 tests|probe" >&2; exit 2 ;;
esac
