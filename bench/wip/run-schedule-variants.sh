#!/bin/bash
# GPU call 3 of the next session, if device time is left (carry .whl .device): schedule variants on one
# loaded submission (bench/probe_schedule.py: the variants share compiled kernels; outputs checked):
# look-ahead at 640x512 now that its late panels are one wave of 128-thread CTAs (it lost 1-2% before
# pairs and narrow panels), and 60x1024's cluster panels at 256 threads instead of 512.
# Logs under $OUT; ~5 minutes.
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
timeout 280 python bench/probe_schedule.py --shapes 640x512 --rounds 5 --variant base= \
    --variant ahead=lookahead=True 2>&1 | tee "$OUT/schedule-640x512.log" | tail -3
timeout 280 python bench/probe_schedule.py --shapes 60x1024 --rounds 5 --variant base= \
    "--variant" "t256=PANEL_THREADS=((1,256),(8,256),(16,256))" 2>&1 | tee "$OUT/schedule-60x1024.log" | tail -3
