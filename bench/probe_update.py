"""One trailing update alone, at W = 32, 64 and 128 and several launch configurations (GPU).

    python bench/probe_update.py [--shapes 640x512,60x1024,8x2048,2x4096] [--reps 7] [--match REGEX]

For each shape, the first panel's block reflector (c = 0) is applied to the
columns right of one panel (W = 32), a pair (W = 64) or a pair of pairs
(W = 128), by the fused kernel (one launch: V^T C, then C - V Y) or by the
split one (V^T C by row splits, then the apply), on random h and T. Each configuration is timed
alone: h restored, L2 flushed, one launch sequence between CUDA events;
the median of `reps`. Two W = 32 passes against one W = 64 pass is what a
pair of panels saves (two W = 64 passes against one W = 128 pass, what a
pair of pairs would); each row also gives the kernels' registers/spills.
"""
import argparse
import itertools
import os
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["QR_SKIP_PRECOMPILE"] = "1"

import torch  # noqa: E402
import triton  # noqa: E402

import submission  # noqa: E402
import utils  # noqa: E402

W = submission.PANEL_WIDTH
SLEEP_CYCLES = 20_000_000      # ~10 ms of GPU sleep ahead of a queued launch


def median_us(launch, restore, reps: int, device: torch.device, queued: bool = False) -> float:
    """Median over `reps` of one `launch()`'s GPU time between CUDA events, `restore()` before each and the
    L2 flushed; with `queued` the launch waits behind a GPU sleep, so that host-side launch work (a CuTe
    launch's argument conversion) is off the clock."""
    watch = utils.Stopwatch(device)
    times = []
    for _ in range(reps):
        restore()
        utils.flush_l2(device)
        utils.synchronize(device)
        if queued:
            torch.cuda._sleep(SLEEP_CYCLES)
        watch.start()
        launch()
        watch.stop()
        times.append(watch.elapsed_ns() / 1e3)
    return statistics.median(times)


def random_batches(shapes: str, device: torch.device):
    """(batch, n, pristine, h) for each "BxN" of the comma-separated `shapes`: B matrices of N(0, 1/n)
    entries (the generator seeded once, at the first) and a copy of them to update."""
    torch.manual_seed(0)
    for shape in shapes.split(","):
        batch, n = map(int, shape.split("x"))
        pristine = torch.randn(batch, n, n, device=device) / n ** 0.5
        yield batch, n, pristine, pristine.clone()


def main_update(h, t, n, c):
    """Main's fused update of the columns [c + w, n) by the block reflector of width w = T's (a pair's 2 W,
    or W) at c, as the plans launch it."""
    width = t.shape[-1]
    return submission._wy_update_kernel[(triton.cdiv(n - c - width, submission.TRAIL_BLOCK_N), h.shape[0])](
        h, t, h, h, n, c, c + width, n, W=width, BLOCK_M=submission._pick(submission.TRAIL_FUSED_BLOCK_M, width),
        BLOCK_N=submission.TRAIL_BLOCK_N, FROM_INPUT=False, num_warps=submission.TRAIL_WARPS,
        num_stages=submission.TRAIL_STAGES)


def compare_pair_updates(argv: list[str], description: str, configurations, prepare=None) -> int:
    """The main of a probe that times other kernels for a pair's update (W = 2 PANEL_WIDTH) against main's.

    `configurations()` gives (name, launch(h, t, n, c, extra)), main's first:
    per shape and pair column c, on random h and T, each configuration
    updates h once (compiling), is compared with the first one's result
    (the largest difference, relative to the update's largest entry) and is
    timed alone as `median_us` times. `prepare(h, n, c)`, if given, makes
    the `extra` every launch of that c gets (made from the pristine h).
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--shapes", default="640x512,60x1024")
    parser.add_argument("--columns", default="0,256", help="the pair's column c")
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args(argv)
    device = torch.device("cuda")
    print(f"{torch.cuda.get_device_name()}; median of {args.reps}", flush=True)
    for batch, n, pristine, h in random_batches(args.shapes, device):
        t = (0.1 * torch.randn(batch, 2 * W, 2 * W, device=device)).triu()
        for c in map(int, args.columns.split(",")):
            print(f"--- {batch}x{n}, c = {c}", flush=True)
            extra = None if prepare is None else prepare(pristine, n, c)
            expected = None
            for name, launch in configurations():
                h.copy_(pristine)
                try:
                    kernel = launch(h, t, n, c, extra)      # compiles
                except Exception as error:                  # a configuration that does not build
                    print(f"{name:48s} failed: {type(error).__name__}: {str(error).splitlines()[0][:160]}",
                          flush=True)
                    continue
                torch.cuda.synchronize()
                if expected is None:
                    expected = h.clone()
                error = ((h - expected).abs().max() / (expected - pristine).abs().max()).item()
                median = median_us(lambda: launch(h, t, n, c, extra), lambda: h.copy_(pristine), args.reps, device)
                print(f"{name:48s} {median:9.1f} us   {kernel.n_regs} regs, {kernel.n_spills} spills, "
                      f"diff {error:.1e} of the update", flush=True)
    return 0


def fused(h, t, n, lo, warps, block_m, block_n):
    """The fused update of columns [lo, n), W = t's width."""
    batch, width = h.shape[0], t.shape[-1]
    return {"fused": submission._wy_update_kernel[(triton.cdiv(n - lo, block_n), batch)](
        h, t, h, h, n, 0, lo, n, W=width, BLOCK_M=block_m, BLOCK_N=block_n, FROM_INPUT=False,
        num_warps=warps, num_stages=1)}


def split(h, t, y, n, lo, warps, block_n, sms):
    """The split update of columns [lo, n), with the row splits `_update` would choose."""
    batch, width = h.shape[0], t.shape[-1]
    m = submission.TRAIL_BLOCK_M
    splits = max(1, min(triton.cdiv(submission.TRAIL_MIN_PROGRAMS * sms, batch * triton.cdiv(n - lo, block_n)),
                        triton.cdiv(n, m)))
    rows_per_split = triton.cdiv(triton.cdiv(n, splits), m) * m
    splits = triton.cdiv(n, rows_per_split)
    strides, sizes = (y.stride(0), y.stride(1), y.stride(2)), (n, 0, lo, n)
    blocks = dict(W=width, BLOCK_M=m, BLOCK_N=block_n, num_warps=warps, num_stages=1)
    project = submission._wy_project_kernel[(triton.cdiv(n - lo, block_n), splits, batch)](
        h, y, *sizes, rows_per_split, *strides, **blocks)
    apply = submission._wy_apply_kernel[(triton.cdiv(n, m), triton.cdiv(n - lo, block_n), batch)](
        h, y, t, *sizes, splits, *strides, **blocks)
    return {"project": project, "apply": apply}


def configurations(sms):
    """(name, W, launch(h, t, y, n)) of every configuration timed."""
    rows = []
    for lo in (W, 2 * W):
        rows.append((f"fused W32 [{lo},n) main", W, lambda h, t, y, n, lo=lo: fused(
            h, t, n, lo, submission.TRAIL_WARPS, submission._pick(submission.TRAIL_FUSED_BLOCK_M, W),
            submission.TRAIL_BLOCK_N)))
        rows.append((f"split W32 [{lo},n) main", W, lambda h, t, y, n, lo=lo: split(
            h, t, y, n, lo, submission.TRAIL_WARPS, submission.TRAIL_BLOCK_N, sms)))
    for warps, block_m, block_n in itertools.product((4, 8), (32, 64), (32, 64, 128)):
        rows.append((f"fused W64 [64,n) warps {warps} BM {block_m} BN {block_n}", 2 * W,
                     lambda h, t, y, n, a=(warps, block_m, block_n): fused(h, t, n, 2 * W, *a)))
    for warps, block_n in itertools.product((4, 8), (32, 64)):
        rows.append((f"split W64 [64,n) warps {warps} BN {block_n}", 2 * W,
                     lambda h, t, y, n, a=(warps, block_n): split(h, t, y, n, 2 * W, *a, sms)))
    for warps, block_m in itertools.product((4, 8), (32, 64)):     # 128 columns: V tiles spill at BN 64
        rows.append((f"fused W128 [128,n) warps {warps} BM {block_m} BN 32", 4 * W,
                     lambda h, t, y, n, a=(warps, block_m): fused(h, t, n, 4 * W, *a, 32)))
    for warps in (4, 8):
        rows.append((f"split W128 [128,n) warps {warps} BN 32", 4 * W,
                     lambda h, t, y, n, warps=warps: split(h, t, y, n, 4 * W, warps, 32, sms)))
    return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="640x512,60x1024,8x2048,2x4096")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--match", default="", help="time only the configurations whose name this regex matches")
    args = parser.parse_args(argv)
    device = torch.device("cuda")
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    print(f"{torch.cuda.get_device_name()}; {sms} SMs; median of {args.reps}", flush=True)
    for batch, n, pristine, h in random_batches(args.shapes, device):
        t = {width: (0.1 * torch.randn(batch, width, width, device=device)).triu() for width in (W, 2 * W, 4 * W)}
        y = torch.empty(triton.cdiv(n, submission.TRAIL_BLOCK_M), batch, 4 * W, n, device=device)
        print(f"--- {batch}x{n}, c = 0", flush=True)
        for name, width, launch in configurations(sms):
            if not re.search(args.match, name):
                continue
            kernels = launch(h, t[width], y, n)     # compiles
            median = median_us(lambda: launch(h, t[width], y, n), lambda: h.copy_(pristine), args.reps, device)
            registers = " ".join(f"{k}: {v.n_regs} regs, {v.n_spills} spills" for k, v in kernels.items())
            print(f"{name:40s} {median:9.1f} us   {registers}", flush=True)
        del pristine, h, y
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
