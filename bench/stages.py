"""Where the time of the blocked path goes: time variants that leave a stage out.

    python bench/stages.py [--shapes 640x512,60x1024,...] [--repeats 5]

For each shape, times (CUDA events, L2 flushed, median of --repeats) the
whole call, the panel kernels alone (trailing updates skipped), and the
trailing updates alone (panel kernels skipped), and the host time of one
call with the GPU kept busy. The variants that skip a stage compute garbage;
only their times mean anything.
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import submission  # noqa: E402
import utils  # noqa: E402

DEFAULT_SHAPES = "40x352,640x512,60x1024,8x2048,2x4096"


def _time_ms(fn, a: torch.Tensor, repeats: int) -> float:
    fn(a)
    watch = utils.Stopwatch(a.device)
    times = []
    for _ in range(repeats):
        utils.flush_l2(a.device)
        torch.cuda.synchronize()
        watch.start()
        fn(a)
        watch.stop()
        times.append(watch.elapsed_ns() / 1e6)
    return statistics.median(times)


def _host_ms(fn, a: torch.Tensor) -> float:
    """Host time of one call while the GPU is still busy with earlier work."""
    torch.cuda._sleep(200_000_000)
    t0 = time.perf_counter()
    fn(a)
    host = (time.perf_counter() - t0) * 1e3
    torch.cuda.synchronize()
    return host


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default=DEFAULT_SHAPES)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)

    full = submission.custom_kernel
    real_panel = submission._panel_kernel
    real_trailing = submission._apply_block_reflector

    def panel_only(a):
        submission._apply_block_reflector = lambda *args: None
        try:
            return full(a)
        finally:
            submission._apply_block_reflector = real_trailing

    def trailing_only(a):
        submission._panel_kernel = lambda plan, args: (lambda *call_args: None)
        try:
            return full(a)
        finally:
            submission._panel_kernel = real_panel

    print(f"{'shape':>10s} {'plan':>44s} {'full ms':>9s} {'panel ms':>9s} {'trail ms':>9s} {'host ms':>8s}")
    for shape in args.shapes.split(","):
        batch, n = map(int, shape.split("x"))
        a = torch.randn((batch, n, n), device="cuda")
        sms, smem = submission._device_limits(a.device.index)
        plan = submission.make_plan(batch, n, sms, smem)
        row = [_time_ms(f, a, args.repeats) for f in (full, panel_only, trailing_only)]
        host = _host_ms(full, a)
        label = f"W={plan.width} G={plan.cluster} threads={plan.threads}"
        print(f"{shape:>10s} {label:>44s} {row[0]:9.3f} {row[1]:9.3f} {row[2]:9.3f} {host:8.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
