"""Which CUDA calls of a busy second thread break a CUDA-graph capture, per capture_error_mode (GPU).

    python bench/probe_capture.py

For each mode and kind of background work, 20 captures of a small graph
while the other thread loops; prints how many captures succeeded and the
first error seen in either thread.
"""
import sys
import threading
import time

import torch

MODES = ("global", "thread_local", "relaxed")
CAPTURES = 20


def busy_step(kind: str, x: torch.Tensor) -> None:
    if kind == "sync":
        torch.cuda.synchronize()
    elif kind == "alloc":
        torch.empty((1 << 24) + 4 * int(torch.randint(1, 1 << 22, ())), device="cuda")
    elif kind == "kernel":
        x.mul_(1.0001)
    elif kind == "side-kernel":
        with torch.cuda.stream(torch.cuda.Stream()):
            x.mul_(1.0001)
    elif kind == "event-sync":
        event = torch.cuda.Event()
        event.record()
        event.synchronize()


def first_line(error: Exception) -> str:
    return f"{type(error).__name__}: {str(error).splitlines()[0][:90]}"


def main() -> int:
    for mode in MODES:
        for kind in ("sync", "alloc", "kernel", "side-kernel", "event-sync"):
            stop, busy_errors, capture_errors = threading.Event(), [], []
            x = torch.randn(1 << 20, device="cuda")

            def busy():
                try:
                    while not stop.is_set():
                        busy_step(kind, x)
                except Exception as error:     # reported below
                    busy_errors.append(first_line(error))

            thread = threading.Thread(target=busy)
            thread.start()
            time.sleep(0.05)
            y = torch.randn(1 << 16, device="cuda")
            for _ in range(CAPTURES):
                try:
                    with torch.cuda.graph(torch.cuda.CUDAGraph(), capture_error_mode=mode):
                        for _ in range(200):
                            y.add_(1.0)
                except Exception as error:         # reported below
                    capture_errors.append(first_line(error))
            stop.set()
            thread.join()
            torch.cuda.synchronize()
            print(f"{mode:13s} {kind:12s} captures ok {CAPTURES - len(capture_errors)}/{CAPTURES}  "
                  f"first capture error: {capture_errors[:1]}  busy thread errors: {busy_errors[:1]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
