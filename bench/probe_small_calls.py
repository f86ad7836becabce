"""Why a small case's time per call depends on how the repeats are timed (GPU).

    python bench/probe_small_calls.py [--shapes 20x32,40x176] [--rounds 41]

A small case is timed over its SPEC §5 inputs (50 at 20x32): elapsed / count
of `[custom_kernel(x) for x in inputs]`. Five ways, interleaved per round:

- spec: synchronize, flush L2, start event queued behind the flush, calls,
  stop event; the last repeat's outputs alive through the calls (eval.py).
- spec, freed: the same with the last repeat's outputs freed first.
- waited: the flush waited for before the start event, outputs kept.
- waited, freed: as compare.py timed before 2cdefdf.
- queued: the calls behind a GPU sleep that outlasts their host work (the
  GPU's time per call alone; the sleep is before the start event).

Beside each, the host's time per call (perf_counter around the calls).
Medians in us per call.
"""
import argparse
import statistics
import sys
import time

import torch

import ab
import submission
import utils
from probe_update import SLEEP_CYCLES

WAYS = ("spec", "spec, freed", "waited", "waited, freed", "queued")


def time_way(way: str, inputs: list, watch: utils.Stopwatch) -> tuple[float, float, list]:
    """(GPU us a call, host us a call, the outputs) of one repeat timed `way`."""
    device = inputs[0].device
    utils.synchronize(device)
    utils.flush_l2(device)
    if not way.startswith("spec"):         # waited, queued: the flush done before the start event
        utils.synchronize(device)
    if way == "queued":
        torch.cuda._sleep(SLEEP_CYCLES)
    watch.start()
    begin = time.perf_counter_ns()
    outputs = [submission.custom_kernel(x) for x in inputs]
    host = time.perf_counter_ns() - begin
    watch.stop()
    count = len(inputs)
    return watch.elapsed_ns() / count / 1e3, host / count / 1e3, outputs


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="20x32,40x176")
    parser.add_argument("--rounds", type=int, default=41)
    args = parser.parse_args(argv)
    print(f"{torch.cuda.get_device_name()}; rounds {args.rounds}", flush=True)
    for shape in args.shapes.split(","):
        batch, n = map(int, shape.split("x"))
        [case] = ab.benchmark_cases({(batch, n)})
        inputs = ab.compare._inputs(case.args)
        watch = utils.Stopwatch(inputs[0].device)
        gpu, host = {way: [] for way in WAYS}, {way: [] for way in WAYS}
        kept = {}           # each way's last outputs, alive through its next calls unless the way frees them
        for way in WAYS:                                   # warm: compile, fill the allocator's cache
            kept[way] = time_way(way, inputs, watch)[2]
        for _ in range(args.rounds):
            for way in WAYS:
                if "freed" in way:
                    kept[way] = None
                g, h, kept[way] = time_way(way, inputs, watch)
                gpu[way].append(g)
                host[way].append(h)
        print(f"{shape}, {len(inputs)} inputs", flush=True)
        for way in WAYS:
            print(f"    {way:14s} {statistics.median(gpu[way]):8.2f} us a call on the GPU clock, "
                  f"host {statistics.median(host[way]):8.2f} us a call", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
