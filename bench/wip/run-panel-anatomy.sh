#!/bin/bash
# GPU call of the next session (carry .whl .device): where a panel's time goes (bench/NOTES.md,
# nineteenth session, item 5). Single panel launches of the shapes' own plans: 640x512 over its 640
# matrices (CTAs share SMs: two waves at 512 rows, one from 288) against 132 (one CTA an SM) and with
# T's formation left out; 60x1024 and 2x4096 over their batch and half of it. If 132 matrices take
# about a wave's share of 640's time, SM sharing (issue slots, shared-memory bandwidth) sets the pace;
# if they take about as long as a whole wave, each CTA's own chain of dependent steps does.
# Then the late panels of the cluster plans at one CTA a matrix (512 threads) against their plan's
# cluster: where one CTA wins, a cluster size chosen per panel pays (item 5 of the notes).
# Logs under $OUT; ~6 minutes.
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
{
  for batch in 640 132; do
    timeout 90 python bench/probe_panel.py --shape 640x512 --threads 128,256 --columns 0,224,448 --batch $batch
  done
  timeout 90 python bench/probe_panel.py --shape 640x512 --threads 128,256 --columns 0,224,448 --no-t
  for batch in 60 30; do
    timeout 60 python bench/probe_panel.py --shape 60x1024 --threads 512 --columns 0,512 --batch $batch
  done
  timeout 90 python bench/probe_panel.py --shape 60x1024 --threads 512 --columns 512,640,768
  timeout 90 python bench/probe_panel.py --shape 60x1024 --threads 512 --columns 512,640,768 --cluster 1
  timeout 90 python bench/probe_panel.py --shape 8x2048 --threads 512 --columns 1536,1792
  timeout 90 python bench/probe_panel.py --shape 8x2048 --threads 512 --columns 1536,1792 --cluster 1
  for batch in 2 1; do
    timeout 60 python bench/probe_panel.py --shape 2x4096 --threads 512 --columns 0,2048 --batch $batch
  done
} 2>&1 | grep -v "^gpu-env" | tee "$OUT/probe-panel-anatomy.log"
