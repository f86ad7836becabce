#!/bin/bash
# GPU call of the next session, only if run-panel-anatomy.sh shows one CTA a matrix beating the
# cluster on the late panels of 60x1024 (carry .whl .device): bench/wip/panel-alone.patch (a
# one-wave cluster plan's panels with at most PANEL_ALONE[0] rows left go to one CTA a matrix of
# PANEL_ALONE[1] threads; bench/NOTES.md, nineteenth session, item 7.3) applied: the panel kernel
# tests and the spec cases of the cluster shapes, then ab of the committed tree against it at
# 40x352, 60x1024 and 8x2048 (2x4096 has 9 such panels of 128: a later run). Logs under $OUT; ~9 minutes.
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
mkdir -p scratchpad/alone
cp submission.py scratchpad/alone/main.py
git apply bench/wip/panel-alone.patch && cp submission.py scratchpad/alone/alone.py
spec=tests/test_submission.py::test_spec_passes_with_margin
timeout 200 python -m pytest -q -p no:cacheprovider tests/test_kernels.py -k "panel_matches_geqrf" \
    "$spec[60x1024-dense-75342-11]" "$spec[8x2048-dense-224466-11]" "$spec[40x352-dense-123456-11]" \
    > "$OUT/alone-tests.log" 2>&1
tail -1 "$OUT/alone-tests.log"
timeout 380 python bench/ab.py --rounds 2 --shapes 40x352,60x1024,8x2048 \
    --variant main=scratchpad/alone/main.py --variant alone=scratchpad/alone/alone.py 2>&1 \
    | tee "$OUT/ab-panel-alone.log" | tail -6
