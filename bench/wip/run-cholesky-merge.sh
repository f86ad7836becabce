#!/bin/bash
# GPU calls on wip/cholesky-merge (carry .whl .device, and for `ab` scratchpad/main_submission.py = main's
# submission.py): a pair's second panel on CholeskyQR2 with the merge, on one CTA a matrix.
#   bash bench/wip/run-cholesky-merge.sh probe   the pair-merge kernel tests at 1024 rows (both panels
#                                                CholeskyQR2 where resident), then one second panel at
#                                                60x1024 c 32, 224, 480: column steps against CholeskyQR2,
#                                                both merging; ~5 minutes cold
#   bash bench/wip/run-cholesky-merge.sh ab      60x1024 side by side with main, 2 rounds, alone on the GPU
#                                                (two variants compile for more than 280 s cold); ~8 minutes
#   bash bench/wip/run-cholesky-merge.sh spec    60x1024's spec cases under seeds 11, 222, 3333 and the
#                                                blocked tests at 1024, 1100 and 70x640 (pairs), in 8 shards; ~6 min
# Logs under $OUT.
set -u
source .device/gpu-env.sh
source bench/wip/shards.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
case "$1" in
probe)
    timeout 170 python -m pytest -q -p no:cacheprovider tests/test_kernels.py -k "merges_their_t and 1024" \
        2>&1 | tail -15 | tee "$OUT/tests-cholesky-merge.log"
    timeout 200 python bench/probe_cholqr_panel.py --shapes 60x1024 --columns 32,224,480 --merges \
        2>&1 | tee "$OUT/probe-cholesky-merge.log" ;;
ab)
    timeout 560 python bench/ab.py --shapes 60x1024 --rounds 2 --variant main=scratchpad/main_submission.py \
        --variant merge=submission.py 2>&1 | tee "$OUT/ab-cholesky-merge.log" ;;
spec)
    collect_tests
    { grep "test_spec_passes" scratchpad/shards/all.txt | grep -E "60x1024" | grep -E -- "-(11|222|3333)\]"
      grep -E "test_paired_and_single|test_lookahead_and_plain|test_agrees_with_geqrf|test_extreme_magnitudes" \
          scratchpad/shards/all.txt | grep -E "1024|1100|70-640"
    } > scratchpad/shards/selected.txt
    wc -l < scratchpad/shards/selected.txt
    run_shards 400 spec-cholesky-merge ;;
*)
    echo "usage: $0 probe|ab|spec" >&2; exit 2 ;;
esac
