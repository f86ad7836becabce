#!/bin/bash
# bench/wip/pdl.patch (programmatic dependent launches, bench/NOTES.md, eighteenth session, item 6) on the
# GPU, in two calls of the next session (after `bash ../shared/device/prepare.sh`; carry .whl .device):
#   bash bench/wip/run-pdl.sh tests   the patch applied: kernel tests, the spec cases of the blocked and
#                                     square shapes at one seed, look-ahead, pair, first-update and graph
#                                     capture tests (~5 min)
#   bash bench/wip/run-pdl.sh ab      ab.py (which checks every variant's output first) of the tree as
#                                     committed against the patched one at 640x512, 60x1024, 2x4096 (~6 min)
# Logs under $OUT.
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
mkdir -p scratchpad/pdl
cp submission.py scratchpad/pdl/main.py
git apply bench/wip/pdl.patch && cp submission.py scratchpad/pdl/pdl.py
if [ "$1" = tests ]; then
  spec=tests/test_submission.py::test_spec_passes_with_margin
  timeout 270 python -m pytest -q -p no:cacheprovider tests/test_kernels.py -k "not cluster_panel_with_extreme" \
      "$spec[640x512-dense-1029-11]" "$spec[60x1024-dense-75342-11]" "$spec[8x2048-dense-224466-11]" \
      "$spec[40x352-dense-123456-11]" "$spec[40x176-dense-423011-11]" > "$OUT/pdl-tests.log" 2>&1
  tail -1 "$OUT/pdl-tests.log"
  timeout 200 python -m pytest -q -p no:cacheprovider -m gpu tests/test_submission.py \
      -k "lookahead_and_plain or graph_plans_capture or first_update_reads or paired_and_single_panels_both_factor[2-1100" \
      >> "$OUT/pdl-tests.log" 2>&1
  tail -1 "$OUT/pdl-tests.log"
else
  timeout 560 python bench/ab.py --rounds 3 --shapes 640x512,60x1024,2x4096 --variant main=scratchpad/pdl/main.py \
      --variant pdl=scratchpad/pdl/pdl.py 2>&1 | tee "$OUT/ab-pdl.log" | tail -5
fi
