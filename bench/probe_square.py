"""GPU time of the square kernel by threads per CTA (GPU).

    python bench/probe_square.py

For each (batch, n) and thread count: LAUNCHES back-to-back launches of the
compiled kernel, captured in a CUDA graph so that no host time is measured,
replayed between CUDA events; prints the time per launch. Each launch
re-factors the previous launch's output, which is not the same work as an
input: at 40x176 such repeats took ~13% less time than a launch on an input
(`bench/calls.py`), so compare thread counts with it, not absolute times.
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import submission  # noqa: E402
from submission import cutlass, cute  # noqa: E402

SHAPES = ((20, 32), (40, 64), (40, 128), (40, 176), (40, 232))
THREADS = (128, 256, 512, 1024)
LAUNCHES = 20


def square_us(batch: int, n: int, threads: int) -> float:
    size = submission._round_up(n, submission.SQUARE_STEP)
    h = torch.randn(batch, n, n, device="cuda")
    tau = torch.zeros(batch, n, device="cuda")
    unused = torch.zeros(batch, 1, 1, device="cuda")
    args = tuple(submission._cute_tensor(x) for x in (h, h, tau, unused, unused))

    def stream():
        return submission.cuda.CUstream(torch.cuda.current_stream().cuda_stream)

    panel = submission.HouseholderPanel(size, size, 1, threads, False, True)
    fn = cute.compile(panel, *args, cutlass.Int32(0), stream())
    fn(*args, cutlass.Int32(0), stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(LAUNCHES):
            fn(*args, cutlass.Int32(0), stream())
    graph.replay()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()
    stop.record()
    torch.cuda.synchronize()
    return start.elapsed_time(stop) * 1e3 / LAUNCHES


def main() -> int:
    for batch, n in SHAPES:
        print(f"{batch}x{n}: " + "  ".join(f"{threads} thr {square_us(batch, n, threads):7.1f} us"
                                          for threads in THREADS), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
