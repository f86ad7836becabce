"""Where a graph call's time goes beyond its kernels: the call timed from an idle GPU and behind the L2
flush (as SPEC §5 times one input) against the same call queued behind a GPU sleep (its host work off the clock) and against one torch
graph that stages and factors the same input into fixed outputs; then the call's host timeline (GPU).

    python bench/probe_call_host.py [--shapes 640x512] [--rounds 9] [--calls 20] [--prefix-nodes 16,4]
    python bench/probe_call_host.py --operations [--shapes 640x512]

At 640x512 SPEC §5 times one call a repeat, its start event queued behind
the L2 flush's fill (its time printed first) without waiting for it: host work
before the GPU has a queue of kernels to run is in the time where it
outlasts the flush, all of it from an idle GPU (the flush waited for). Each
way is timed with outputs freed before the next call (the allocator hands
back the last call's memory: no words rewritten) and kept alive over it
(eval.py's re-check holds the last repeat's outputs, so calls alternate
between two output addresses and rewrite every word). `--prefix-nodes`
times the submission's call with its graph cut after other numbers of
nodes (RETARGET_PREFIX_NODES: the first part's words are rewritten before
the GPU starts, the second's while it runs the first). Then the call's
host timeline (TIMELINE: when custom_kernel and the functions it calls are
first entered and last left, from the call's start, and the time inside
each), with the GPU busy behind a sleep, so that nothing waits on it, and
idle. `--operations` times instead each operation a call makes, repeated
in a warm loop.
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


def flush_ms(device: torch.device, rounds: int) -> float:
    """Median ms of utils.flush_l2 between CUDA events, from an idle GPU."""
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(rounds):
        utils.synchronize(device)
        start.record()
        utils.flush_l2(device)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def gpu_times(call, data, rounds: int, keep: bool) -> tuple[float, float, float]:
    """Median ms of one call between CUDA events after an L2 flush: from an idle GPU (the flush waited for),
    behind the flush (SPEC §5: its start event queued after the flush), and queued behind a GPU sleep (the
    start event after the sleep, so host work done during the sleep is off the clock)."""
    device = data.device
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    idle, spec, queued, kept = [], [], [], None
    for _ in range(rounds):
        for times, wait, sleep in ((idle, True, False), (spec, False, False), (queued, True, True)):
            utils.synchronize(device)
            utils.flush_l2(device)
            if wait:
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
    return statistics.median(idle), statistics.median(spec), statistics.median(queued)


TIMELINE = (("custom_kernel", submission, "custom_kernel"), ("_factorization", submission, "_factorization"),
            ("Factorization.__call__", submission.Factorization, "__call__"),
            ("Factorization._queue", submission.Factorization, "_queue"),
            ("Factorization.stage", submission.Factorization, "stage"), ("_launch", submission, "_launch"),
            ("RetargetedGraph.launch", submission.RetargetedGraph, "launch"),
            ("cuGraphExecKernelNodeSetParams", submission.cuda, "cuGraphExecKernelNodeSetParams"),
            ("cuGraphLaunch", submission.cuda, "cuGraphLaunch"))


def host_timeline(data, calls: int, keep: bool, busy: bool) -> dict:
    """name -> (median us from the call's start to the function's first entry, to its last exit, and inside
    it a call) for the functions of TIMELINE, over `calls` calls from a synchronized GPU, busy behind
    a sleep (nothing the call does waits on it) or idle (as SPEC §5 times a call)."""
    stamps = defaultdict(list)          # name -> [(entry ns, exit ns)] of this call

    def stamped(name, function):
        def wrapper(*args, **kwargs):
            entry = time.perf_counter_ns()
            try:
                return function(*args, **kwargs)
            finally:
                stamps[name].append((entry, time.perf_counter_ns()))
        return wrapper

    patches = [mock.patch.object(owner, attribute, stamped(name, getattr(owner, attribute)))
               for name, owner, attribute in TIMELINE]
    for patch in patches:
        patch.start()
    first, last, inside = defaultdict(list), defaultdict(list), defaultdict(list)
    try:
        kept = None
        for _ in range(calls):
            utils.synchronize(data.device)
            if busy:
                torch.cuda._sleep(SLEEP_CYCLES)
            stamps.clear()
            out = submission.custom_kernel(data)
            start = stamps["custom_kernel"][0][0]
            for name, spans in stamps.items():
                first[name].append((spans[0][0] - start) / 1e3)
                last[name].append((spans[-1][1] - start) / 1e3)
                inside[name].append(sum(exit - entry for entry, exit in spans) / 1e3)
            kept = out if keep else None
            del out
        del kept
        utils.synchronize(data.device)
    finally:
        for patch in patches:
            patch.stop()
    return {name: (statistics.median(first[name]), statistics.median(last[name]), statistics.median(inside[name]))
            for name, _, _ in TIMELINE if name in first}


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
        "cuGraphLaunch part 1": (lambda: submission.cuda.cuGraphLaunch(part.executables[0], handle)) if part else None,
        "_factorization lookup": lambda: submission._factorization(batch, n, device),
    }
    costs = {}
    for name, operation in operations.items():
        if operation is None:
            continue
        operation()
        utils.synchronize(device)
        torch.cuda._sleep(20 * SLEEP_CYCLES)
        count = 3 if "cuGraphLaunch" in name else repeats       # the graph's GPU work must stay behind the sleep
        begin = time.perf_counter()
        for _ in range(count):
            operation()
        costs[name] = (time.perf_counter() - begin) / count * 1e6
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
    print(f"L2 flush: {flush_ms(torch.device('cuda'), args.rounds):.3f} ms", flush=True)
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
                    idle, spec, queued = gpu_times(call, data, args.rounds, keep)
                    print(f"{shape} {name:16s} {'outputs kept' if keep else 'outputs freed'}: from an idle GPU "
                          f"{idle:.3f} ms, behind the flush {spec:.3f} ms, queued {queued:.3f} ms", flush=True)
            calls = {}
            print(f"{shape} parts' kernels {[len(p.kernels) for p in submission._FACTORIZATIONS[key].retargeted.parts]}",
                  flush=True)
            for keep, busy in ((False, True), (True, True), (False, False)):
                print(f"{shape} host timeline of a call at {prefix}, {'outputs kept' if keep else 'outputs freed'}, "
                      f"GPU {'busy' if busy else 'idle'} (us from its start: first entry - last exit, time inside):",
                      flush=True)
                for name, (entry, exit, inside) in host_timeline(data, args.calls, keep, busy).items():
                    print(f"    {name:32s} {entry:7.1f} - {exit:7.1f}  {inside:7.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
