#!/bin/bash
# GPU runbook of the cross Gram on f16 splits (carry .whl .device scratchpad). First, here, on a clean main:
#   git show HEAD:submission.py > scratchpad/main_submission.py
#   git apply bench/wip/cross-f16.patch      (submission.py and the two strip probes)
# Then the calls below; logs under $OUT.
#   probe      (~6 min): the merging panel's stamps (probe_panel_clock.py --merges; the cross Gram is "written
#              back" -> "cross gram") at 60x1024 c 32, 480 and 640x512 c 32, for main, the patch (f16 splits,
#              one pass where the plan is alone on its SMs), "two" (f16, two passes everywhere: the variant
#              traced in the forty-seventh session), "prefetch" (two passes, the next chunk's V1 loaded
#              during the chunk before where alone: bench/wip/cross-prefetch.patch on top, `patch -p0`) and
#              "prefetch1" (one pass with that prefetch, spilling 16-48 bytes: cross-prefetch1.patch)
#   tests      (~7 min): the merging panels' kernel tests beside the blocked path's GPU tests in 8 shards
#   compare C  (~5 min): compare.py on the tree, C its commit
set -u
source .device/gpu-env.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
case "$1" in
probe)
  for v in main patch two prefetch prefetch1; do
    mkdir -p "/tmp/$v" && cp -r . "/tmp/$v"
  done
  cp scratchpad/main_submission.py /tmp/main/submission.py
  sed -i 's/            passes = 1 if self.alone else 2/            passes = 2/' /tmp/two/submission.py
  (cd /tmp/prefetch && patch -p0 submission.py < bench/wip/cross-prefetch.patch)
  (cd /tmp/prefetch1 && patch -p0 submission.py < bench/wip/cross-prefetch1.patch)
  for v in main patch two prefetch prefetch1; do
    for shape in "60x1024 --columns 32,480" "640x512 --columns 32"; do
      echo "=== $v $shape"
      (cd "/tmp/$v" && timeout 100 python bench/probe_panel_clock.py --merges --shapes $shape 2>&1 \
          | grep -E "^---|launch|Error|error")
    done
  done 2>&1 | tee "$OUT/probe-cross-f16.log"
  ;;
tests)      # the kernel tests beside the shards (a ninth process on the machine's 16 cores)
  timeout 400 python -m pytest -q -p no:cacheprovider tests/test_kernels.py -k "merges_their_t" \
      > "$OUT/tests-merges.log" 2>&1 &
  bash bench/wip/run-shards-compare.sh
  wait
  tail -5 "$OUT/tests-merges.log"
  ;;
compare)
  timeout 500 python bench/compare.py --libs submission --budget 0.3 --out "$OUT" --commit "$2" 2>&1 | tail -20
  ;;
esac
