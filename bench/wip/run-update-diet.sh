#!/bin/bash
# GPU call 1 of the next session (after `bash ../shared/device/prepare.sh`; run with carry .whl .device):
# the two update-diet patches (bench/NOTES.md, seventeenth session, item 9) applied to the tree,
# the block-reflector kernel tests, then ab.py (which checks every variant's output first) of the tree as
# committed, with the bf16 split in PTX, and with both patches.
# Logs under $OUT. About 7 minutes of device time; the pair tests and the GPU shards go with call 2.
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
mkdir -p scratchpad/diet
cp submission.py scratchpad/diet/main.py
git apply bench/wip/bf16-pair-asm.patch && cp submission.py scratchpad/diet/asm.py
git apply bench/wip/update-unmasked.patch && cp submission.py scratchpad/diet/both.py
timeout 150 python -m pytest -q -p no:cacheprovider tests/test_kernels.py -k "block_reflector or merged_reflector or bf16_pair" \
    > "$OUT/diet-kernel-tests.log" 2>&1
tail -1 "$OUT/diet-kernel-tests.log"
timeout 400 python bench/ab.py --rounds 3 --shapes 640x512,60x1024 --variant main=scratchpad/diet/main.py \
    --variant asm=scratchpad/diet/asm.py --variant both=scratchpad/diet/both.py 2>&1 | tee "$OUT/ab-diet.log" | tail -6
