#!/bin/bash
# GPU call 4 of the next session, if device time is left (carry .whl .device): schedule variants on one
# loaded submission (bench/probe_schedule.py: the variants share compiled kernels; outputs checked):
# look-ahead at 640x512 now that its late panels are one wave of 128-thread CTAs (it lost 1-2% before
# pairs and narrow panels); 640x512's pair Grams (6 x 37 us, one 4-warp program a matrix over 8 serial
# row blocks) split by rows in 2 and 4 (TRAIL_MIN_PROGRAMS sets only those splits there: every update
# of 640x512 is one fused launch); and 60x1024's cluster panels at 256 threads instead of 512.
# Logs under $OUT; ~6 minutes.
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
timeout 280 python bench/probe_schedule.py --shapes 640x512 --rounds 5 --variant base= \
    --variant ahead=lookahead=True --variant gram2=TRAIL_MIN_PROGRAMS=8 --variant gram4=TRAIL_MIN_PROGRAMS=16 \
    2>&1 | tee "$OUT/schedule-640x512.log" | tail -3
timeout 280 python bench/probe_schedule.py --shapes 60x1024 --rounds 5 --variant base= \
    "--variant" "t256=PANEL_THREADS=((1,256),(8,256),(16,256))" 2>&1 | tee "$OUT/schedule-60x1024.log" | tail -3
