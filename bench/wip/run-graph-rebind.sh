#!/bin/bash
# GPU calls on wip/graph-rebind (carry .whl .device, and for `ab` scratchpad/main_submission.py = main's
# submission.py): graph plans launch their graph on fresh outputs (`RetargetedGraph`) instead of replaying
# it on their own buffers and copying h and tau out. Logs under $OUT.
#   bash bench/wip/run-graph-rebind.sh tests   the retargeting tests, the graph tests around them, and each
#                                              graph shape's retargeted kernels and words; ~4 minutes
#   bash bench/wip/run-graph-rebind.sh ab      40x352 and 60x1024 side by side with main, 3 rounds, then host
#                                              and GPU time a call (calls.py); ~8 minutes cold
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
case "$1" in
tests)
    # two processes at once (each compiles its own plans): 12 tests of test_submission.py, 8 of test_robustness.py
    timeout 300 python -m pytest -q -p no:cacheprovider tests/test_submission.py \
        -k "retargeted or fresh_outputs or lookahead_graph or bound_once" > "$OUT/tests-graph-rebind-1.log" 2>&1 &
    timeout 300 python -m pytest -q -p no:cacheprovider tests/test_robustness.py \
        -k "broken_capture or peak_memory" > "$OUT/tests-graph-rebind-2.log" 2>&1 &
    wait
    tail -n 12 "$OUT"/tests-graph-rebind-[12].log | tee "$OUT/tests-graph-rebind.log"
    timeout 200 python - <<'PY' 2>&1 | tee -a "$OUT/tests-graph-rebind.log"
import torch, submission
for batch, n in ((40, 100), (40, 352), (4, 1024)):
    f = submission.Factorization(batch, n, torch.device("cuda"))
    r = f.retargeted
    print(f"{batch}x{n}: eager {f.eager}; retargeted kernels {len(r.kernels) if r else None}, "
          f"words {sum(len(k[4]) for k in r.kernels) if r else None}, memsets {len(r.memsets) if r else None}")
PY
    ;;
ab)
    timeout 420 python bench/ab.py --shapes 40x352,60x1024 --rounds 3 --variant main=scratchpad/main_submission.py \
        --variant retarget=submission.py 2>&1 | tee "$OUT/ab-graph-rebind.log"
    timeout 120 python bench/calls.py --shapes 40x352 --calls 50 2>&1 | tee "$OUT/calls-graph-rebind.log" ;;
*)
    echo "usage: $0 tests|ab" >&2; exit 2 ;;
esac
