#!/bin/bash
# GPU calls (carry .whl .device) for bench/wip/gram-loads.patch (the Gram's 16 loads a chunk unconditional,
# with selects, so they are in flight together: bench/NOTES.md, twenty-first session, item 5.2), applied
# to the working tree on the device, against the committed tree.
#   $1 = ab:    the panel probe (60x1024 c 512 one CTA; 640x512 c 0 over 132 matrices; against 47.0 and
#               64.0 us at 0536692), then ab at 60x1024, 40x352, 8x2048 (~6 min).
#   $1 = tests: the blocked path's GPU tests in 8 shards and the panel kernel tests (~4 min).
# Then, if it wins: git apply, commit, `bash bench/wip/run-shards-compare.sh <commit>` for the README column.
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
mkdir -p scratchpad/gl
git show HEAD:submission.py > scratchpad/gl/main.py
git diff --quiet HEAD -- submission.py && git apply bench/wip/gram-loads.patch
cp submission.py scratchpad/gl/gl.py
case "$1" in
ab)
  { timeout 60 python bench/probe_panel.py --shape 60x1024 --threads 512 --columns 512 --cluster 1
    timeout 60 python bench/probe_panel.py --shape 640x512 --threads 256 --columns 0 --batch 132; } 2>&1 \
      | grep -v "^gpu-env" | tee "$OUT/gl-probe.log"
  timeout 480 python bench/ab.py --rounds 3 --shapes 60x1024,40x352,8x2048 --variant main=scratchpad/gl/main.py \
      --variant gl=scratchpad/gl/gl.py 2>&1 | grep -v "^gpu-env" | tee "$OUT/ab-gram-loads.log" | tail -5 ;;
tests)
  bash bench/wip/run-shards-compare.sh
  timeout 200 python -m pytest -q -p no:cacheprovider tests/test_kernels.py::test_panel_matches_geqrf_and_forms_t \
      tests/test_kernels.py::test_cluster_panel_with_extreme_and_nearly_repeated_columns 2>&1 \
      | tee "$OUT/gl-kernel-tests.log" | tail -1 ;;
esac
