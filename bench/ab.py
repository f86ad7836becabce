"""Time variants of the submission side by side, interleaved, on the benchmark shapes.

    python bench/ab.py --variant base=path/to/old_submission.py \\
                       --variant new=submission.py --variant new-w8=submission.py:TRAIL_WARPS=8 \\
                       [--shapes 20x32,640x512] [--rounds 15] [--share-kernels]

A variant is a submission file loaded as its own module, with module-level
constants overridden after import (`NAME=VALUE`, VALUE a Python literal,
several joined by `:`). Per shape (the first benchmark case of each
batch x n; a shape no benchmark has gets a dense cond-1 case), every
variant factors the same inputs once, checked by
`reference.check_implementation` and compared bit for bit with the first
variant's factors of the first input (printed where they differ); then
`--rounds` rounds time each variant in turn the way SPEC §5 does
(synchronize, flush L2, CUDA events around `[f(x) for x in inputs]`, the
start event queued behind the flush, the last outputs alive through the
next calls, time per call). Interleaving puts every variant under the same
machine noise. Prints the median per variant and its ratio to the first
variant.

With --share-kernels, variants loaded from the same file share its first
variant's compiled CuTe kernels (its `Plan` class and `_COMPILED` cache), so
that a sweep of host-side constants (schedules, Triton tiles) compiles the
panels once; only for overrides that no CuTe kernel reads.
"""
import argparse
import ast
import importlib.util
import os
import statistics
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ["QR_SKIP_PRECOMPILE"] = "1"

import compare  # noqa: E402
import eval as harness  # noqa: E402
import reference  # noqa: E402
import utils  # noqa: E402


OTHER_SHAPES_SEED = 4242


def load_variant(text: str, shared: dict | None = None):
    """(name, custom_kernel) from 'name=file[:CONST=VALUE...]'; with `shared` (file -> the first module
    loaded from it) the module takes that first module's compiled-kernel cache."""
    name, _, rest = text.partition("=")
    path, *overrides = rest.split(":")
    spec = importlib.util.spec_from_file_location(f"variant_{name.replace('-', '_')}", ROOT / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if shared is not None:
        first = shared.setdefault(path, module)
        module.Plan, module._COMPILED = first.Plan, first._COMPILED
    for override in overrides:
        key, _, value = override.partition("=")
        if not hasattr(module, key):
            raise SystemExit(f"variant {name}: {path} has no constant {key}")
        setattr(module, key, ast.literal_eval(value))
    return name, module.custom_kernel


def benchmark_cases(shapes: set) -> list:
    """The first benchmark case of each batch x n in `shapes` (all shapes when empty), plus a dense
    cond-1 case for a shape no benchmark has."""
    cases, seen = [], set()
    for case in harness.parse_specs(harness.task_yml_specs("benchmarks"), "task.yml", None):
        shape = (case.args["batch"], case.args["n"])
        if shape not in seen and (not shapes or shape in shapes):
            seen.add(shape)
            cases.append(case)
    others = "\n".join(f"batch: {b}; n: {n}; cond: 1; seed: {OTHER_SHAPES_SEED}" for b, n in sorted(shapes - seen))
    return cases + (harness.parse_specs(others, "--shapes", None) if others else [])


def time_side_by_side(cases: list, variants: dict, rounds: int) -> bool:
    """Per case, check every variant's output once, then time `rounds` interleaved rounds and print each
    variant's median time per call and its ratio to the first variant's; False if any check failed."""
    print(f"{torch.cuda.get_device_name()}; rounds {rounds}", flush=True)
    widths = {name: max(16, len(name) + 4) for name in variants}      # a cell is 16 characters
    print(f"{'shape':>10s}" + "".join(f"{name + ' ms':>{widths[name]}s}" for name in variants), flush=True)
    passed = True
    for case in cases:
        inputs = compare._inputs(case.args)
        device = inputs[0].device
        times, first_factors = {}, None
        for name, factor in variants.items():
            for i, x in enumerate(inputs):
                factors = factor(x)
                ok, message = reference.check_implementation(x, factors)
                if not ok:
                    print(f"  {name} fails {case.spec}: {message}", flush=True)
                    passed = False
                if i == 0 and first_factors is None:
                    first_factors = factors
                elif i == 0 and not all(map(torch.equal, factors, first_factors)):
                    h_diff = (factors[0] - first_factors[0]).abs().max().item()
                    print(f"  {name} differs from the first variant's bits (max |H - H_first| {h_diff:.3g})", flush=True)
            times[name] = []
        watch = utils.Stopwatch(device)
        kept = {}           # each variant's last outputs, alive through its next calls as the harness keeps them
        for _ in range(rounds):
            for name, factor in variants.items():
                utils.synchronize(device)
                utils.flush_l2(device)
                watch.start()       # queued behind the flush, as SPEC §5 does: host work overlaps it
                kept[name] = [factor(x) for x in inputs]
                watch.stop()
                times[name].append(watch.elapsed_ns() / len(inputs) / 1e6)
        del kept
        medians = {name: statistics.median(t) for name, t in times.items()}
        first = next(iter(medians.values()))
        cells = "".join(f"{f'{m:9.3f} ({m / first:4.2f})':>{widths[name]}s}" for name, m in medians.items())
        print(f"{case.args['batch']:>5d}x{case.args['n']:<4d}{cells}", flush=True)
        del inputs, first_factors
    return passed


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", action="append", required=True, help="name=file[:CONST=VALUE...]")
    parser.add_argument("--shapes", default="", help="batch x n list, e.g. 20x32,640x512 (default: all)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--share-kernels", action="store_true",
                        help="variants of one file share its compiled CuTe kernels (host-side overrides only)")
    args = parser.parse_args(argv)

    shared = {} if args.share_kernels else None
    variants = dict(load_variant(v, shared) for v in args.variant)
    shapes = {tuple(map(int, s.split("x"))) for s in args.shapes.split(",") if s}
    return 0 if time_side_by_side(benchmark_cases(shapes), variants, args.rounds) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
