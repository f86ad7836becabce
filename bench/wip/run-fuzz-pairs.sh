#!/bin/bash
# GPU call (carry .whl .device): the fuzz draws whose schedule 6c3708b changed (pairs while their rest
# update has PAIR_MIN_TILES column tiles an SM, from 16 MB; before: while it was one fused launch, from
# 64 MB), half $1 (0 or 1) of them, in 8 shards of 240 s. Logs under $OUT; ~5 minutes a half.
set -u
source .device/gpu-env.sh
source bench/wip/shards.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
mkdir -p scratchpad/shards
python - "$1" > scratchpad/shards/selected.txt <<'PY'
import sys
sys.path[:0] = [".", "tests"]
import submission as s
import test_fuzz

SMS, SMEM = 132, 232448


def pairs(batch, n, tiles, min_bytes):
    s.PAIR_MIN_TILES, s.PAIR_MIN_BYTES = tiles, min_bytes
    end = s.square_tail(batch, n, SMS, SMEM) or n
    return [step.c for step in s.schedule(batch, n, end, s.looks_ahead(batch, n, SMS), SMS) if step.pair]


changed = []
for i in range(test_fuzz.DRAWS):
    d = test_fuzz.draw(i)
    plan = s.make_plan(d["batch"], d["n"], SMS, SMEM)
    if plan is not None and not plan.square and pairs(d["batch"], d["n"], 2, 16 << 20) != pairs(d["batch"], d["n"], 4, 64 << 20):
        changed.append(i)
for i in changed[int(sys.argv[1])::2]:
    print(f"tests/test_fuzz.py::test_fuzz_draw[{i}]")
PY
wc -l < scratchpad/shards/selected.txt
run_shards 240 "fuzz-pairs-$1"
