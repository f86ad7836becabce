"""A graph plan's call several ways, side by side: its graph replayed on its own buffers and h and tau copied
out (`replay`), launched on fresh outputs as one graph (`whole`), as the two parts it is cut into (`cut`,
`RetargetedGraph`), and cut with the first step's fused updates reading the input (`source`, where the
plan `reads_input`), and the last of these with every word written again
on each call (`rewritten`: a call whose outputs or input lie elsewhere
than the last call's; the others, timed as SPEC §5 does with each output
freed before the next call, get the last call's memory back and write
none); then each way's host time a call with the GPU idle.

    python bench/probe_retarget.py [--shapes 60x1024,40x352] [--rounds 7] [--calls 20]

Each way has a Factorization of its own, the first three built with
`staged_columns` None (every column staged); the panel kernels
compile once a shape. Timing and checks are bench/ab.py's: per benchmark
case, every way's output is checked once and compared bit for bit with the
replay's, then interleaved rounds time `[f(x) for x in inputs]` between
CUDA events after an L2 flush. The host time is the mean over --calls of
one call's wall time from a synchronized, idle GPU to its return: the part
of a call that the GPU waits for when the harness times a single input
(60x1024).
"""
import argparse
import sys
import time
from unittest import mock

import torch

import ab
import submission
import utils


def factorization_ways(batch: int, n: int, device: torch.device) -> dict:
    """{name: custom_kernel-like callable} for each way that the shape's graph can take."""
    def refuse(graph, buffers):
        raise NotImplementedError("replays")

    reading = submission.Factorization(batch, n, device)
    with mock.patch.object(submission, "staged_columns", lambda steps, width: None):
        cut = submission.Factorization(batch, n, device)
        with mock.patch.object(submission, "RETARGET_PREFIX_NODES", 1 << 30):
            whole = submission.Factorization(batch, n, device)
        with mock.patch.object(submission, "RetargetedGraph", refuse):
            replaying = submission.Factorization(batch, n, device)     # captured again without staging
    if cut.eager or cut.retargeted is None:
        return {}
    print(f"{batch}x{n}: the cut parts' kernels and words "
          f"{[(len(p.kernels), sum(len(k[4]) for k in p.kernels)) for p in cut.retargeted.parts]}", flush=True)
    ways = {"replay": replaying, "whole": whole, "cut": cut}
    if reading.reads_input:
        ways["source"] = reading
    last = reading if reading.reads_input else cut

    def rewritten(data):
        # every word written again, as for a call on memory no copy of the graph ran on
        last.retargeted.written = [None] * submission.RETARGET_EXECUTABLES
        return last(data)
    ways["rewritten"] = rewritten
    return ways


def host_times(ways: dict, data: torch.Tensor, calls: int) -> dict:
    """Mean wall time (us) of one call from an idle GPU, per way."""
    device = data.device
    times = {}
    for name, call in ways.items():
        total = 0.0
        for _ in range(calls):
            utils.synchronize(device)
            start = time.perf_counter()
            call(data)
            total += time.perf_counter() - start
        utils.synchronize(device)
        times[name] = total / calls * 1e6
    return times


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="60x1024,40x352")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args(argv)
    passed = True
    for shape in args.shapes.split(","):
        batch, n = map(int, shape.split("x"))
        [case] = ab.benchmark_cases({(batch, n)})
        data = ab.compare._inputs(case.args)[0]
        ways = factorization_ways(batch, n, data.device)
        if not ways:
            print(f"{shape}: no retargeted graph", flush=True)
            continue
        passed &= ab.time_side_by_side([case], ways, args.rounds)
        hosts = host_times(ways, data, args.calls)
        print(f"{shape}: host us a call from an idle GPU: "
              + ", ".join(f"{name} {t:.1f}" for name, t in hosts.items()), flush=True)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
