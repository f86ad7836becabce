#!/bin/bash
# GPU call on wip/cholesky-merge (carry .whl .device scratchpad/main_submission.py, main's submission.py):
# 60x1024 side by side with main (ab, 2 rounds: the pairs' second panels on CholeskyQR2 with the merge),
# then beside each other the pair-merge kernel tests (the two new resident 1024-row cases among them) and
# 60x1024's spec cases under seeds 11, 222, 3333 in 8 shards. Logs under $OUT; ~6.5 minutes cold.
set -u
source .device/gpu-env.sh
source bench/wip/shards.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
timeout 280 python bench/ab.py --shapes 60x1024 --rounds 2 --variant main=scratchpad/main_submission.py \
    --variant merge=submission.py 2>&1 | tee "$OUT/ab-cholesky-merge.log"
timeout 170 python -m pytest -q -p no:cacheprovider tests/test_kernels.py -k "merges_their_t" \
    > "$OUT/tests-cholesky-merge.log" 2>&1 &
collect_tests
grep "test_spec_passes" scratchpad/shards/all.txt | grep -E "60x1024" | grep -E -- "-(11|222|3333)\]" \
    > scratchpad/shards/selected.txt
wc -l < scratchpad/shards/selected.txt
run_shards 170 spec-cholesky-merge
wait
tail -5 "$OUT/tests-cholesky-merge.log"
