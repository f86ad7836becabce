"""Where a graph call's time goes beyond its kernels: the call timed from an idle GPU (as SPEC §5 times one
input) against the same call queued behind a GPU sleep (its host work off the clock) and against one torch
graph that stages and factors the same input into fixed outputs; then the call's host time by part (GPU).

    python bench/probe_call_host.py [--shapes 640x512] [--rounds 9] [--calls 20] [--prefix-nodes 16,4]
    python bench/probe_call_host.py --operations [--shapes 640x512]

At 640x512 SPEC §5 times one call a repeat, from a synchronized GPU, so any
host work before the GPU has a queue of kernels to run is in the time. The
host part is timed with the GPU busy (behind a sleep), so that no call
waits on it: `custom_kernel` whole, and within it the Factorization's
`stage`, `RetargetedGraph.launch` and each `cuGraphLaunch`. Outputs are
freed before the next call (the allocator hands back the last call's
memory: no words rewritten) or kept alive over it (`--keep`: eval.py's
re-check holds the last repeat's outputs, so calls alternate between two
output addresses and rewrite every word). `--prefix-nodes` times the
submission's call with its graph cut after other numbers of nodes
(RETARGET_PREFIX_NODES: the first part's words are rewritten before the
GPU starts, the second's while it runs the first). `--operations` times
instead each operation a call makes, repeated in a warm loop.
"""
import argparse
import statistics
import sys
import time
from collections import defaultdict
from unittest import mock

import torch

import ab
import submission
import utils
from probe_batch_graph import GraphedParts
from probe_update import SLEEP_CYCLES


def gpu_times(call, data, rounds: int, keep: bool) -> tuple[float, float]:
    """Median ms of one call between CUDA events after an L2 flush: from an idle GPU, and queued behind a
    GPU sleep (the start event after the sleep, so host work done during the sleep is off the clock)."""
    device = data.device
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    idle, queued, kept = [], [], None
    for _ in range(rounds):
        for times, sleep in ((idle, False), (queued, True)):
            utils.flush_l2(device)
            utils.synchronize(device)
            if sleep:
                torch.cuda._sleep(SLEEP_CYCLES)
            start.record()
            out = call(data)
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
            kept = out if keep else None
            del out
    del kept
    return statistics.median(idle), statistics.median(queued)


def host_parts(data, calls: int, keep: bool) -> dict:
    """Mean host us per call of custom_kernel and of its parts, with the GPU busy behind a sleep."""
    spent = defaultdict(float)

    def timed(name, function):
        def wrapper(*args, **kwargs):
            begin = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[name] += time.perf_counter() - begin
        return wrapper

    patches = [mock.patch.object(submission.Factorization, "stage", timed("stage", submission.Factorization.stage)),
               mock.patch.object(submission.RetargetedGraph, "launch",
                                 timed("RetargetedGraph.launch", submission.RetargetedGraph.launch)),
               mock.patch.object(submission.cuda, "cuGraphLaunch", timed("cuGraphLaunch", submission.cuda.cuGraphLaunch)),
               mock.patch.object(submission.cuda, "cuGraphExecKernelNodeSetParams",
                                 timed("cuGraphExecKernelNodeSetParams",
                                       submission.cuda.cuGraphExecKernelNodeSetParams))]
    for patch in patches:
        patch.start()
    try:
        kept = None
        for _ in range(calls):
            utils.synchronize(data.device)
            torch.cuda._sleep(SLEEP_CYCLES)
            begin = time.perf_counter()
            out = submission.custom_kernel(data)
            spent["custom_kernel"] += time.perf_counter() - begin
            kept = out if keep else None
            del out
        del kept
        utils.synchronize(data.device)
    finally:
        for patch in patches:
            patch.stop()
    return {name: total / calls * 1e6 for name, total in spent.items()}


def operation_costs(data, f: submission.Factorization, repeats: int = 200) -> dict:
    """Mean host us of each operation a call makes, `repeats` times in a row with the GPU busy behind a
    long sleep (launches queue, nothing waits)."""
    batch, n, _ = data.shape
    device = data.device
    out = data.new_empty(data.shape)
    stream = torch.cuda.current_stream()
    part = f.retargeted.parts[0] if f.retargeted is not None else None
    handle = submission.cuda.CUstream(stream.cuda_stream)
    event = torch.cuda.Event()
    operations = {
        "torch.cuda.current_stream()": torch.cuda.current_stream,
        "torch.cuda.current_device()": torch.cuda.current_device,
        "triton get_current_stream": lambda: submission.triton.runtime.driver.active.get_current_stream(0),
        "new_empty h, freed": lambda: data.new_empty((batch, n, n)),
        "new_empty tau, freed": lambda: data.new_empty((batch, n)),
        "event record": lambda: event.record(stream),
        "stream wait_event": lambda: stream.wait_event(event),
        "_stage_input (2 launches)": lambda: submission._stage_input(data, out, f.size, f.staged),
        "_lift launch": lambda: submission._lift(out, f.size, inverse=True),
        "cuGraphLaunch part 1": (lambda: submission.cuda.cuGraphLaunch(part.executable, handle)) if part else None,
        "_factorization lookup": lambda: submission._factorization(batch, n, device),
    }
    costs = {}
    for name, operation in operations.items():
        if operation is None:
            continue
        operation()
        utils.synchronize(device)
        torch.cuda._sleep(20 * SLEEP_CYCLES)
        begin = time.perf_counter()
        for _ in range(repeats if "cuGraphLaunch" not in name else 3):
            operation()
        costs[name] = (time.perf_counter() - begin) / (repeats if "cuGraphLaunch" not in name else 3) * 1e6
        utils.synchronize(device)
    return costs


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="640x512")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--prefix-nodes", default=str(submission.RETARGET_PREFIX_NODES),
                        help="RETARGET_PREFIX_NODES values to time the submission's call at, comma-separated")
    parser.add_argument("--operations", action="store_true", help="time the call's operations in warm loops instead")
    args = parser.parse_args(argv)
    print(f"{torch.cuda.get_device_name()}", flush=True)
    for shape in args.shapes.split(","):
        batch, n = map(int, shape.split("x"))
        [case] = ab.benchmark_cases({(batch, n)})
        data = ab.compare._inputs(case.args)[0]
        key = (data.device.index, batch, n)
        if args.operations:
            submission.custom_kernel(data)
            for name, us in operation_costs(data, submission._FACTORIZATIONS[key]).items():
                print(f"{shape} host us: {name:28s} {us:8.1f}", flush=True)
            continue
        calls = {"one torch graph": GraphedParts(1, False)}
        for prefix in map(int, args.prefix_nodes.split(",")):
            submission.RETARGET_PREFIX_NODES = prefix
            with submission._FACTORIZATIONS_LOCK:          # built again at the next call, cut at `prefix`
                dropped = submission._FACTORIZATIONS.pop(key, None)
            if dropped is not None:
                dropped.retire()
            del dropped
            for name, call in [(f"submission {prefix}", submission.custom_kernel)] + list(calls.items()):
                for keep in (False, True):
                    idle, queued = gpu_times(call, data, args.rounds, keep)
                    print(f"{shape} {name:16s} {'outputs kept' if keep else 'outputs freed'}: from an idle GPU "
                          f"{idle:.3f} ms, queued {queued:.3f} ms", flush=True)
            calls = {}
            print(f"{shape} parts' kernels {[len(p.kernels) for p in submission._FACTORIZATIONS[key].retargeted.parts]}",
                  flush=True)
            for keep in (False, True):
                parts = host_parts(data, args.calls, keep)
                print(f"{shape} host us a call at {prefix}, {'outputs kept' if keep else 'outputs freed'}, GPU busy: "
                      + ", ".join(f"{name} {us:.1f}" for name, us in parts.items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
