#!/bin/bash
# GPU call (carry .whl .device): the GPU tests of the host-side fixes (5966533, e8b6edd), none run on a GPU
# yet: batches past the grid limit in chunks, a first call in inference mode, inputs that require grad,
# precompile's own generator, a new shape's first run recorded in `done`, a dropped shape still served;
# with them the tests of streams, threads, captures and the cache that those changes touch, and the
# compile-cache test as 1defddb rewrote it. 8 shards of 240 s; logs under $OUT; ~4-5 minutes (480x300
# and 10x300 compile plans of their own).
set -u
source .device/gpu-env.sh
source bench/wip/shards.sh
export QR_SKIP_PRECOMPILE=1 PYTHONUNBUFFERED=1
collect_tests
grep -E "test_batches_past_the_grid_limit|test_a_first_call_in_inference_mode|test_an_input_that_requires_grad|test_precompile_leaves|test_a_new_shapes_first_run|test_a_dropped_shape|test_side_streams|test_first_call_while_another_thread|test_a_broken_capture|test_cached_shapes_are_bounded|test_square_kernel_reads_any|test_no_memory_growth|test_peak_memory|test_compile_cache_keyed" \
    scratchpad/shards/all.txt > scratchpad/shards/selected.txt
wc -l < scratchpad/shards/selected.txt
run_shards 240 host-fixes
