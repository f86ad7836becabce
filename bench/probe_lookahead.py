"""Look-ahead on and off side by side for the blocked benchmark shapes (GPU).

    python bench/probe_lookahead.py

Builds one Factorization with look-ahead off and one with it on per shape,
checks one output of each, then times the harness's way (inputs batched by
bytes, L2 flushed, CUDA events) in 8 interleaved rounds and prints medians.
"""
import os
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ["QR_SKIP_PRECOMPILE"] = "1"

import reference  # noqa: E402
import submission  # noqa: E402
import utils  # noqa: E402

SHAPES = ((40, 352, 123456, 1), (640, 512, 1029, 2), (60, 1024, 75342, 2), (8, 2048, 224466, 1), (2, 4096, 32412, 1))
ROUNDS = 8


def main() -> int:
    device = torch.device("cuda")
    watch = utils.Stopwatch(device)
    for batch, n, seed, cond in SHAPES:
        count = max(1, min(50, (256 << 20) // (batch * n * n * 4)))
        inputs = [reference.generate_input(batch, n, cond, seed + 42 * (i + 1), "dense") for i in range(count)]
        factorizations = {mode: submission.Factorization(batch, n, device, lookahead=mode) for mode in (False, True)}
        checks = {mode: reference.check_implementation(inputs[0], f(inputs[0]))[0] for mode, f in factorizations.items()}
        times = {mode: [] for mode in factorizations}
        for _ in range(ROUNDS):
            for mode, f in factorizations.items():
                utils.flush_l2(device)
                torch.cuda.synchronize()
                watch.start()
                for x in inputs:
                    f(x)
                watch.stop()
                times[mode].append(watch.elapsed_ns() / count / 1e6)
        print(f"{batch}x{n}: off {statistics.median(times[False]):7.3f} ms  on {statistics.median(times[True]):7.3f} ms  "
              f"checks pass: off {checks[False]}, on {checks[True]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
