#!/bin/bash
# GPU call 3 of the next session, after the two of run-pdl.sh (carry .whl .device):
# compare.py on the tree ($1: its commit), the traces of 640x512 and 60x1024, then single panel launches
# at several thread counts with the rows each panel is launched with (bench/NOTES.md, eighteenth
# session, item 4): where else do fewer or more threads a CTA pay? Logs under $OUT; ~8 minutes.
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
timeout 310 python bench/compare.py --libs submission --budget 0.3 --out "$OUT" --commit "$1" 2>&1 | tail -17
timeout 120 python bench/trace.py --shapes 640x512,60x1024 --out "$OUT" > "$OUT/trace.log" 2>&1
{
  timeout 60 python bench/probe_panel.py --shape 640x512 --threads 128,256 --columns 160,192
  timeout 90 python bench/probe_panel.py --shape 60x1024 --threads 256,512 --columns 0,512,768
  timeout 60 python bench/probe_panel.py --shape 60x1024 --threads 256,512 --columns 0,512 --cluster 1
  timeout 90 python bench/probe_panel.py --shape 2x4096 --threads 256,512 --columns 0,2048,3584
} 2>&1 | grep -v "^gpu-env" | tee "$OUT/probe-panel-threads.log"
