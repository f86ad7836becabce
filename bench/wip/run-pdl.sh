#!/bin/bash
# GPU call 1 of the next session (after `bash ../shared/device/prepare.sh`; carry .whl .device):
# bench/wip/pdl.patch (programmatic dependent launches, bench/NOTES.md, eighteenth session, item 6)
# applied to the tree; the kernel tests, the look-ahead, pair and first-update tests and the spec cases
# of the blocked shapes at one seed with it; then ab.py (which checks every variant's output first) of
# the tree as committed against the patched one. Logs under $OUT; ~8 minutes.
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
mkdir -p scratchpad/pdl
cp submission.py scratchpad/pdl/main.py
git apply bench/wip/pdl.patch && cp submission.py scratchpad/pdl/pdl.py
timeout 200 python -m pytest -q -p no:cacheprovider tests/test_kernels.py \
    "tests/test_submission.py::test_spec_passes_with_margin[640x512-dense-1029-11]" \
    "tests/test_submission.py::test_spec_passes_with_margin[60x1024-dense-75342-11]" \
    "tests/test_submission.py::test_spec_passes_with_margin[8x2048-dense-224466-11]" \
    "tests/test_submission.py::test_spec_passes_with_margin[40x352-dense-123456-11]" \
    "tests/test_submission.py::test_spec_passes_with_margin[40x176-dense-423011-11]" \
    -k "not cluster_panel_with_extreme" > "$OUT/pdl-tests.log" 2>&1
tail -1 "$OUT/pdl-tests.log"
timeout 120 python -m pytest -q -p no:cacheprovider tests/test_submission.py \
    -k "paired_and_single or lookahead_and_plain or eager_launches or first_update_reads or graph_plans_capture" -m gpu \
    >> "$OUT/pdl-tests.log" 2>&1
tail -1 "$OUT/pdl-tests.log"
timeout 330 python bench/ab.py --rounds 3 --shapes 640x512,60x1024,8x2048 --variant main=scratchpad/pdl/main.py \
    --variant pdl=scratchpad/pdl/pdl.py 2>&1 | tee "$OUT/ab-pdl.log" | tail -5
