"""A batch factored as equal parts, each by its own Factorization, on one stream or on a stream each, side
by side with the whole batch (GPU).

    python bench/probe_batch_split.py [--shapes 640x512] [--parts 2,4] [--rounds 7]
    python bench/probe_batch_split.py --bits [--shapes 640x512] [--parts 2,4]

The question: 640x512's panels run in two waves (640 panels of 512 x 32
floats do not fit the SMs' shared memory at once), the second ~60% full,
and its panels leave DRAM idle while its updates leave shared memory idle.
Parts on a stream each run as independent factorizations, so one part's
updates can fill the SMs another part's panels leave, with no dependency
between them. The same parts on one stream tell what the smaller batch's
plan alone changes. Each part is staged and launched into its slice of one
pair of outputs (no copies) by `Factorization.launch`, so a part whose
plan would launch a graph (under EAGER_MIN_BYTES: every part here)
launches eagerly here and may be host-bound; its `done` ordering is not
used (one caller). Cases, checks and timing are ab.py's
(`time_side_by_side`); bits may differ from the whole batch's where a
part's plan differs.

`--bits` times nothing: per matrix of the benchmark case's input, where
the parts' H differs from the whole batch's by more than BITS_TOLERANCE,
it prints the first column j that differs so, R[j, j] both ways and the
largest difference left of j. A sign flipped at j (R[j, j] negated, the
columns before it alike) is what a diagonal entry within rounding of 0
before the reflection gives.
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

BITS_TOLERANCE = 1e-3


def split_factor(parts: int, concurrent: bool):
    """custom_kernel-like callable that factors data as `parts` equal slices of the batch, each by its own
    Factorization, on a stream each (`concurrent`) or all on the current stream."""
    built = {}
    streams = [torch.cuda.Stream() for _ in range(parts)] if concurrent else None

    def factor(data: torch.Tensor):
        batch, n, _ = data.shape
        size = batch // parts
        assert size * parts == batch, (batch, parts)
        if (batch, n) not in built:
            built[batch, n] = [submission.Factorization(size, n, data.device) for _ in range(parts)]
        h, tau = data.new_empty(data.shape), data.new_empty((batch, n))
        main = torch.cuda.current_stream()
        for k, f in enumerate(built[batch, n]):
            part = slice(k * size, (k + 1) * size)
            stream = streams[k] if concurrent else main
            stream.wait_stream(main)
            with torch.cuda.stream(stream):
                source = data[part] if f.reads_input and data.is_contiguous() else None
                f.stage(data[part], h[part], None if source is None else f.staged)         # as `_queue` stages
                f.launch(h[part], tau[part], source)
        for stream in streams or ():
            main.wait_stream(stream)
        return h, tau
    return factor


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="640x512")
    parser.add_argument("--parts", default="2,4")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--bits", action="store_true", help="where the parts' bits differ, instead of timing")
    args = parser.parse_args(argv)

    variants = {"whole": submission.custom_kernel}
    for parts in map(int, args.parts.split(",")):
        variants[f"{parts} one stream"] = split_factor(parts, False)
        variants[f"{parts} streams"] = split_factor(parts, True)
    shapes = {tuple(map(int, s.split("x"))) for s in args.shapes.split(",") if s}
    if args.bits:
        for case in ab.benchmark_cases(shapes):
            data = ab.compare._inputs(case.args)[0]
            whole = submission.custom_kernel(data)[0].clone()
            for parts in map(int, args.parts.split(",")):
                h, _ = split_factor(parts, False)(data)
                torch.cuda.synchronize()
                differs = (h - whole).abs().amax(dim=1) > BITS_TOLERANCE      # (batch, columns)
                flagged = differs.any(dim=1).nonzero().flatten().tolist()
                print(f"{case.args}: {parts} parts, {len(flagged)} of {data.shape[0]} matrices differ by more "
                      f"than {BITS_TOLERANCE}", flush=True)
                for b in flagged[:12]:
                    j = int(differs[b].nonzero()[0])
                    left = (h[b, :, :j] - whole[b, :, :j]).abs().max().item() if j else 0.0
                    print(f"  matrix {b}: column {j}, R[j, j] whole {whole[b, j, j].item():+.6e} parts "
                          f"{h[b, j, j].item():+.6e}, left of j {left:.1e}, largest "
                          f"{(h[b] - whole[b]).abs().max().item():.3e}", flush=True)
        return 0
    return 0 if ab.time_side_by_side(ab.benchmark_cases(shapes), variants, args.rounds) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
