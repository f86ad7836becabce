"""Where the time of the blocked path goes: time variants that leave a stage out.

    python bench/stages.py [--shapes 640x512,60x1024,...] [--repeats 5]

For each shape, times (CUDA events, L2 flushed, median of --repeats) a call
(`custom_kernel`: copy in, CUDA-graph replay, copies out), the same launch
sequence issued eagerly, the eager sequence with the trailing updates left
out (panels only, with the square kernel of the last columns where a plan
has one) and with the panel kernels and that square kernel left out
(trailing only), and the host time of one eager sequence and of one call
while the GPU is busy.
Variants that skip a stage compute garbage; only their times mean anything.
"""
import argparse
import statistics
import sys
import time
from unittest import mock
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

    print(f"{'shape':>10s} {'plan':>30s} {'call':>8s} {'eager':>8s} {'panels':>8s} {'trailing':>8s}"
          f" {'host eager':>10s} {'host call':>9s}   (ms)")
    for shape in args.shapes.split(","):
        batch, n = map(int, shape.split("x"))
        a = torch.randn((batch, n, n), device="cuda")
        f = submission._factorization(batch, n, a.device)
        skip = lambda *args: None  # noqa: E731
        # the graph's buffers, or for an eager plan (which keeps none) a copy of the input and a tau
        out = () if f.h is not None else (a.clone(), a.new_empty((batch, n)))

        def eager(_):
            f.launch(*out)

        def panels_only(_):             # the pairs' merges of T are in their second panels
            with mock.patch.object(submission, "_apply_block_reflector", skip):
                f.launch(*out)

        def trailing_only(_):
            with mock.patch.object(f, "panels", [skip] * len(f.panels)), \
                    mock.patch.object(f, "_bind_panels", skip), \
                    mock.patch.object(f, "tail_kernel", skip if f.tail_kernel else None):
                f.launch(*out)

        times = [_time_ms(fn, a, args.repeats) for fn in (f, eager, panels_only, trailing_only)]
        hosts = [_host_ms(fn, a) for fn in (eager, f)]
        plan = f.plan
        label = f"W={plan.width} G={plan.cluster} threads={plan.threads}"
        print(f"{shape:>10s} {label:>30s} " + " ".join(f"{t:8.3f}" for t in times)
              + f" {hosts[0]:10.3f} {hosts[1]:9.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
