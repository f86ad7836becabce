#!/bin/bash
# GPU calls on wip/graph-rebind (carry .whl .device): graph plans launch their graph on fresh outputs
# (`RetargetedGraph`), cut in two parts at a join so that the second part's parameters are rewritten while
# the first runs, instead of replaying it on their own buffers and copying h and tau out. Logs under $OUT.
#   bash bench/wip/run-graph-rebind.sh tests   the retargeting tests (one part and cut), the graph tests around
#                                              them; ~3 minutes
#   bash bench/wip/run-graph-rebind.sh probe   60x1024 and 40x352: replay and copies out, one graph on fresh
#                                              outputs, the cut graph, side by side (bench/probe_retarget.py),
#                                              and each way's host time a call; ~4 minutes cold
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
case "$1" in
tests)
    # two processes at once (each compiles its own plans): 14 tests of test_submission.py, 8 of test_robustness.py
    timeout 300 python -m pytest -q -p no:cacheprovider tests/test_submission.py \
        -k "retargeted or fresh_outputs or lookahead_graph or bound_once or graph_is_cut" \
        > "$OUT/tests-graph-rebind-1.log" 2>&1 &
    timeout 300 python -m pytest -q -p no:cacheprovider tests/test_robustness.py \
        -k "broken_capture or peak_memory" > "$OUT/tests-graph-rebind-2.log" 2>&1 &
    wait
    tail -n 12 "$OUT"/tests-graph-rebind-[12].log | tee "$OUT/tests-graph-rebind.log" ;;
probe)
    timeout 400 python bench/probe_retarget.py --shapes 60x1024,40x352 --rounds 7 2>&1 \
        | tee "$OUT/probe-retarget.log" ;;
*)
    echo "usage: $0 tests|probe" >&2; exit 2 ;;
esac
