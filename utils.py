"""Helpers of the harness (`eval.py`): seeds, the L2 flush, timing, NVTX.

Everything here works on a CPU-only machine as well as on CUDA: the device of
the tensors at hand decides. On the CPU there is nothing to synchronize, no L2
to flush and no NVTX, and times come from `time.perf_counter_ns`, which is
exact for host work because CPU kernels run synchronously.
"""
import contextlib
import random
import time

import torch

# Seed of the global RNGs when the service sets no POPCORN_SEED.
DEFAULT_SEED = 42
# Bytes written to evict the L2 before a timed repeat; larger than the L2 of
# every GPU this task runs on (B200 and H200 have 126 MiB and 60 MiB).
L2_FLUSH_BYTES = 256 * 1024 * 1024


def combine_seed(spec_seed: int, service_seed: int) -> int:
    """The seed a case uses when the service sets POPCORN_SEED.

    a + (a+b)(a+b+1)/2 for a spec seed `a` and service seed `b`: Cantor's
    pairing with the spec seed, so distinct (a, b) pairs give distinct seeds.
    """
    total = spec_seed + service_seed
    return spec_seed + total * (total + 1) // 2


def set_seed(seed: int) -> None:
    """Seed Python's and torch's (every device's) global RNGs."""
    random.seed(seed)
    torch.manual_seed(seed)


def synchronize(device: torch.device) -> None:
    """Wait for the work queued on `device` (a no-op on the CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def flush_l2(device: torch.device) -> None:
    """Overwrite the L2 cache of `device` with L2_FLUSH_BYTES of fresh writes (a no-op on the CPU)."""
    if device.type == "cuda":
        torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device=device).fill_(0)


def nvtx_range(name: str, device: torch.device) -> contextlib.AbstractContextManager:
    """An NVTX range named `name` on CUDA, for Nsight; an empty context on the CPU."""
    if device.type == "cuda":
        return torch.cuda.nvtx.range(name)
    return contextlib.nullcontext()


class Stopwatch:
    """Times one region of work queued on a device, in nanoseconds.

    On CUDA two timing events bracket the region and `elapsed_ns` waits for
    the end event, so the time is the device's. On the CPU the region is timed
    with the host clock and nothing is synchronized.

        watch = Stopwatch(device)
        watch.start(); work(); watch.stop()
        ns = watch.elapsed_ns()
    """

    def __init__(self, device: torch.device):
        self.on_cuda = device.type == "cuda"
        if self.on_cuda:
            self.start_event = torch.cuda.Event(enable_timing=True)
            self.stop_event = torch.cuda.Event(enable_timing=True)
        self.start_ns = 0
        self.stop_ns = 0

    def start(self) -> None:
        if self.on_cuda:
            self.start_event.record()
        else:
            self.start_ns = time.perf_counter_ns()

    def stop(self) -> None:
        if self.on_cuda:
            self.stop_event.record()
        else:
            self.stop_ns = time.perf_counter_ns()

    def elapsed_ns(self) -> float:
        if self.on_cuda:
            self.stop_event.synchronize()
            return self.start_event.elapsed_time(self.stop_event) * 1.0e6  # ms -> ns
        return float(self.stop_ns - self.start_ns)
