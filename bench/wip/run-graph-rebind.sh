#!/bin/bash
# GPU call on wip/graph-rebind (carry .whl .device): bench/probe_graph_rebind.py, a graph shape's graph
# replayed straight into fresh outputs (kernel nodes rebound per call) against custom_kernel's clone path:
# node counts, the side-by-side check (bits) and timing, host time a call. 60x1024 compiles cold for
# ~2.5 minutes; 8x2048 follows if the limit allows. Logs under $OUT.
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
timeout 330 python bench/probe_graph_rebind.py --shapes 60x1024 --rounds 5 2>&1 | tee "$OUT/probe-graph-rebind.log"
timeout 200 python bench/probe_graph_rebind.py --shapes 8x2048 --rounds 3 2>&1 | tee -a "$OUT/probe-graph-rebind.log"
