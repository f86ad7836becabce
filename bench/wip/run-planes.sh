#!/bin/bash
# The planes update on the GPU (carry .whl .device), in two calls of up to ~9 minutes; logs under $OUT.
#   Before the calls, here: git apply bench/wip/planes-update.patch
#                           mkdir -p scratchpad && git show HEAD:submission.py > scratchpad/main_submission.py
#   call 1: bash bench/wip/run-planes.sh probe   the probe (main's kernel against the planes kernel alone,
#                                                 its stages and tiles; ~12 compiles)
#   call 2: bash bench/wip/run-planes.sh ab      the patched kernel tests, then ab.py, committed main against
#                                                 the patched tree (same bits expected: ab prints a variant
#                                                 whose factors differ)
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
case "${1:-}" in
probe)
    timeout 560 python bench/probe_planes_update.py --shapes 640x512,60x1024 --columns 0,256 \
        > "$OUT/probe-planes-update.log" 2>&1
    grep -v "^ " "$OUT/probe-planes-update.log" | tail -52 ;;
ab)
    timeout 200 python -m pytest -q -p no:cacheprovider tests/test_kernels.py -k "block_reflector or merged_reflector" \
        > "$OUT/kernel-tests-planes.log" 2>&1
    tail -3 "$OUT/kernel-tests-planes.log"
    timeout 370 python bench/ab.py --rounds 3 --shapes 640x512,60x1024,40x352 \
        --variant main=scratchpad/main_submission.py --variant planes=submission.py 2>&1 | tee "$OUT/ab-planes.log" | tail -12 ;;
*)
    echo "usage: bash bench/wip/run-planes.sh probe|ab" >&2; exit 2 ;;
esac
