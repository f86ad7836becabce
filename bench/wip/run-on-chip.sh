#!/bin/bash
# A GPU call (carry .whl .device) for Hopper's pair update (`pair_update_kernel`), logs under $OUT, ~4-6 minutes:
#   bash bench/wip/run-on-chip.sh [PATCH]
# its kernel, graph and wgmma-operand tests and 640x512's spec cases under five service seeds, then whole
# 640x512 calls side by side (bench/ab.py, 7 rounds): the Triton update, the tree's, and with PATCH (a
# bench/wip patch of submission.py) the tree with it applied (a file of its own: its CuTe kernels compile
# again, ~2 minutes), whose tests run instead of the tree's.
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
variants=(--variant "triton=submission.py:ON_CHIP_CAPABILITY=(0,0)" --variant on_chip=submission.py)
tree=.
if [ -n "${1:-}" ]; then
  tree=scratchpad/patched
  mkdir -p "$tree" && cp -r submission.py task.py task.yml reference.py utils.py eval.py tests bench "$tree"/
  (cd "$tree" && patch -p1 < "../../$1") || exit 1
  variants+=(--variant "patched=$tree/submission.py")
fi
(cd "$tree" && timeout 150 python -m pytest -q -x tests/test_kernels.py tests/test_submission.py \
    tests/test_wgmma_operands.py -k "on_chip or wgmma" 2>&1 | tail -3) | tee "$OUT/tests-on-chip.log"
(cd "$tree" && timeout 120 python -m pytest -q tests/test_submission.py \
    -k "spec_passes and 640x512 and (-11] or -222] or -3333] or -44444] or -5])" 2>&1 | tail -3) \
    | tee "$OUT/tests-spec-640x512.log"
timeout 300 python bench/ab.py --shapes 640x512 --rounds 7 --share-kernels "${variants[@]}" 2>&1 | tee "$OUT/ab-on-chip.log"
