#!/bin/bash
# GPU calls of the next session (carry .whl .device): bench/wip/one-warp-t.patch (T by one warp, a row of
# larft's recurrence a lane, no CTA barrier; the Gram's partial sums staged in sP and added in 3 CTA
# barriers instead of one a warp; bench/NOTES.md, twentieth session, item 5) against the committed tree.
#   $1 = tests:  T's share of a panel with the patch (probe_panel.py, against this session's
#                probe-panel-t-share.log), then the panel kernel tests and the blocked path's GPU tests in
#                8 shards (spec cases of every blocked shape, NaN/Inf, extreme, subnormal, ...). ~6 min.
#   $1 = ab-medium: ab at 640x512 (also with PANEL_NARROW = (320, 128)), 40x352, 60x1024 (~9 min).   $1 = ab-large: ab at 8x2048, 2x4096 (~5 min).
# Logs under $OUT.
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
mkdir -p scratchpad/owt
git show HEAD:submission.py > scratchpad/owt/main.py
git apply bench/wip/one-warp-t.patch && cp submission.py scratchpad/owt/owt.py
case "$1" in
tests)
  { for t in "" --no-t; do
      timeout 60 python bench/probe_panel.py --shape 60x1024 --threads 512 --columns 512,768 --cluster 1 $t
      timeout 60 python bench/probe_panel.py --shape 640x512 --threads 256 --columns 0,224 --batch 132 $t
    done; } 2>&1 | grep -v "^gpu-env" | tee "$OUT/owt-probe-t-share.log"
  bash bench/wip/run-shards-compare.sh          # the blocked path's GPU tests, 8 shards, on the patched tree
  timeout 200 python -m pytest -q -p no:cacheprovider tests/test_kernels.py::test_panel_matches_geqrf_and_forms_t \
      tests/test_kernels.py::test_cluster_panel_with_extreme_and_nearly_repeated_columns 2>&1 \
      | tee "$OUT/owt-kernel-tests.log" | tail -1 ;;
ab-medium)
  # owt320: without sT a 320-row panel takes 45,336 bytes, so five 128-thread CTAs fit an SM from 320 rows
  timeout 280 python bench/ab.py --rounds 3 --shapes 640x512 --variant main=scratchpad/owt/main.py \
      --variant owt=scratchpad/owt/owt.py --variant "owt320=scratchpad/owt/owt.py:PANEL_NARROW=(320,128)" 2>&1 \
      | tee "$OUT/ab-owt-640x512.log" | tail -3
  timeout 280 python bench/ab.py --rounds 3 --shapes 40x352,60x1024 \
      --variant main=scratchpad/owt/main.py --variant owt=scratchpad/owt/owt.py 2>&1 | tee "$OUT/ab-owt-medium.log" | tail -4 ;;
ab-large)
  timeout 560 python bench/ab.py --rounds 3 --shapes 8x2048,2x4096 \
      --variant main=scratchpad/owt/main.py --variant owt=scratchpad/owt/owt.py 2>&1 | tee "$OUT/ab-owt-large.log" | tail -4 ;;
esac
