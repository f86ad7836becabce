"""A batch factored as equal parts on a stream each, all captured in one CUDA graph, side by side with the
whole batch (GPU).

    python bench/probe_batch_graph.py [--shapes 640x512] [--parts 2,4] [--rounds 7]

The forty-third session's `probe_batch_split.py` ran 640x512 as parts on a
stream each and lost (two parts 1.19x the whole batch's time, one stream
1.28x), but its parts launched eagerly: a part's kernels take half the GPU
time of the whole batch's and the same host time, so the host set the pace
and the streams had nothing to overlap. In one graph the host launches
once. Parts then run as independent factorizations whose steps drift
apart, so one part's panels (latency-bound chains that leave DRAM idle) can
run beside another part's trailing updates (DRAM-bound, at ~4 TB/s), which
one batch's schedule can never do: its panels wait for the update before
them and its updates for the panel.

Every variant is a callable on the benchmark's input tensor (kept alive by
the timing loop), captured once per input: each part stages its slice of
that input and factors it into its slice of one pair of outputs, by its own
`Factorization`'s eager launch sequence (`stage`, `launch`). "graph 1" is
the whole batch captured the same way: the submission's kernels, but a call
whose host work is one replay (the submission's call launches its staging,
then its graph on fresh outputs); both are shown. Checks and timing are
ab.py's (`time_side_by_side`).
"""
import argparse
import os
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ["QR_SKIP_PRECOMPILE"] = "1"

import ab  # noqa: E402
import submission  # noqa: E402


def after_first_panel(f: submission.Factorization) -> torch.cuda.Event:
    """An event that f's launches record on their stream right after queuing its first panel."""
    event = torch.cuda.Event()
    launch_panel = f._launch_panel

    def launch_and_record(k, *args):
        launch_panel(k, *args)
        if k == 0:
            event.record()
    f._launch_panel = launch_and_record
    return event


class GraphedParts:
    """custom_kernel-like callable: the input as `parts` equal slices of its batch, each factored by its own
    Factorization, on a stream each (`concurrent`) or one after another, replayed from one CUDA graph
    captured per input tensor (its outputs are the graph's: valid until the next call on that input). With
    `stagger`, part k starts after part k - 1's first panel, so that the parts' panels and updates alternate
    instead of running in step."""

    def __init__(self, parts: int, concurrent: bool, stagger: bool = False):
        self.parts, self.concurrent, self.stagger = parts, concurrent, stagger
        self.graphs = {}

    def __call__(self, data: torch.Tensor):
        key = (data.data_ptr(), *data.shape)
        if key not in self.graphs:
            self.graphs[key] = self._capture(data)
        graph, outputs = self.graphs[key]
        graph.replay()
        return outputs

    def _capture(self, data: torch.Tensor):
        batch, n, _ = data.shape
        size = batch // self.parts
        assert size * self.parts == batch, (batch, self.parts)
        factorizations = [submission.Factorization(size, n, data.device) for _ in range(self.parts)]
        streams = [torch.cuda.Stream() for _ in factorizations] if self.concurrent else None
        h, tau = data.new_empty(data.shape), data.new_empty((batch, n))
        started = [after_first_panel(f) for f in factorizations] if self.stagger else None

        def queue():
            main = torch.cuda.current_stream()
            for k, f in enumerate(factorizations):
                part = slice(k * size, (k + 1) * size)
                stream = streams[k] if streams else main
                stream.wait_stream(main)
                if started and k > 0:
                    stream.wait_event(started[k - 1])
                with torch.cuda.stream(stream):
                    source = data[part] if f.reads_input else None
                    f.stage(data[part], h[part], None if source is None else f.staged)
                    f.launch(h[part], tau[part], source)
            for stream in streams or ():
                main.wait_stream(stream)

        queue()                 # compiles, loads modules
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, capture_error_mode=submission.CAPTURE_MODE):
            queue()
        return graph, (h, tau)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="640x512")
    parser.add_argument("--parts", default="2,4")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    variants = {"submission": submission.custom_kernel, "graph 1": GraphedParts(1, False)}
    for parts in map(int, args.parts.split(",")):
        if parts == 2:
            variants["2 one stream"] = GraphedParts(2, False)
        variants[f"{parts} streams"] = GraphedParts(parts, True)
        variants[f"{parts} staggered"] = GraphedParts(parts, True, stagger=True)
    shapes = {tuple(map(int, s.split("x"))) for s in args.shapes.split(",") if s}
    return 0 if ab.time_side_by_side(ab.benchmark_cases(shapes), variants, args.rounds) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
