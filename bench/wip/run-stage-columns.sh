#!/bin/bash
# GPU calls (carry .whl .device scratchpad) for stage-columns.patch: a call that reads its input stages, and
# reads in the staging kernel, only its staged columns; `_tiny_size_kernel` reads the others of the
# matrices whose staged columns are all below 2^TINY_EXPONENT. Before the first call, on a clean tree:
#   git show HEAD:submission.py > scratchpad/main_submission.py && git apply bench/wip/stage-columns.patch
#   ab     640x512 and 60x1024 side by side with main, 3 rounds (~4 minutes cold: two files' kernels)
#   tests  the blocked path's GPU tests in 8 shards (run-shards-compare.sh's selection, ~4.5 minutes)
# Logs under $OUT.
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
case "${1:-}" in
  ab)
    timeout 560 python bench/ab.py --shapes 640x512,60x1024 --rounds 3 \
      --variant main=scratchpad/main_submission.py --variant staged=submission.py 2>&1 \
      | tee "$OUT/ab-stage-columns.log" ;;
  tests)
    bash bench/wip/run-shards-compare.sh ;;
  *)
    echo "usage: $0 ab|tests" >&2; exit 2 ;;
esac
