"""One launch of the square kernel by threads per CTA (GPU).

    python bench/probe_square.py

Times single launches (`probe_panel.launch_us`: CUDA events, median of 15) for a few (batch, n).
The numbers include the CuTe launch's host overhead (~40-50 us), so only
differences between thread counts at larger n mean anything.
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import submission  # noqa: E402
from probe_panel import launch_us  # noqa: E402
from submission import cutlass, cute  # noqa: E402

SHAPES = ((20, 32), (40, 64), (40, 128), (40, 176), (40, 232))
THREADS = (128, 256, 512, 1024)


def square_us(batch: int, n: int, threads: int) -> float:
    size = submission._round_up(n, submission.SQUARE_STEP)
    a = torch.randn(batch, n, n, device="cuda")
    h = a.clone()
    tau = torch.zeros(batch, n, device="cuda")
    unused = torch.zeros(batch, 1, 1, device="cuda")
    args = tuple(submission._cute_tensor(x) for x in (h, h, tau, unused, unused))
    stream = submission.cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    panel = submission.HouseholderPanel(size, size, 1, threads, False)
    args = (*args, cutlass.Int32(0), stream)
    return launch_us(cute.compile(panel, *args), args, lambda: h.copy_(a))


def main() -> int:
    for batch, n in SHAPES:
        print(f"{batch}x{n}: " + "  ".join(f"{threads} thr {square_us(batch, n, threads):7.1f} us"
                                          for threads in THREADS), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
