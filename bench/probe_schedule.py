"""Schedules of the blocked path side by side (GPU): Factorization options, and tuning constants that a
Factorization reads when it is built, all on one loaded submission, so that the variants share its
compiled kernels (a variant file of ab.py compiles its own: ~40 s a blocked shape).

    python bench/probe_schedule.py --variant base= --variant no-lookahead=lookahead=False \\
        --variant no-tail=tail=False --variant short-tail=SQUARE_TAIL_MAX_N=128 \\
        [--shapes 40x352,60x1024] [--rounds 8]

A variant is NAME=[KEY=VALUE[:KEY=VALUE...]] (VALUE a Python literal): a lowercase KEY is an argument of
`Factorization`, an uppercase one a module constant, set while the variant's Factorizations are built and
restored after. Constants that kernels read when they compile or at each call have no effect here: vary
those with ab.py. Cases, checks and timing are ab.py's (`time_side_by_side`).
"""
import argparse
import ast
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ["QR_SKIP_PRECOMPILE"] = "1"

import ab  # noqa: E402
import submission  # noqa: E402


def load_variant(text: str):
    """(name, factor) from 'name=[key=value:...]': factor builds one Factorization per shape, with the
    variant's arguments and constants, on its first call."""
    name, _, rest = text.partition("=")
    arguments, constants = {}, {}
    for item in filter(None, rest.split(":")):
        key, _, value = item.partition("=")
        if key.isupper() and not hasattr(submission, key):
            raise SystemExit(f"variant {name}: submission has no constant {key}")
        (constants if key.isupper() else arguments)[key] = ast.literal_eval(value)
    built = {}

    def factor(x):
        shape = tuple(x.shape)
        if shape not in built:
            saved = {key: getattr(submission, key) for key in constants}
            for key, value in constants.items():
                setattr(submission, key, value)
            try:
                built[shape] = submission.Factorization(shape[0], shape[1], x.device, **arguments)
            finally:
                for key, value in saved.items():
                    setattr(submission, key, value)
        return built[shape](x)
    return name, factor


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", action="append", required=True, help="name=[key=value:...]")
    parser.add_argument("--shapes", default="40x352,640x512,60x1024,8x2048,2x4096")
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args(argv)

    variants = dict(load_variant(v) for v in args.variant)
    shapes = {tuple(map(int, s.split("x"))) for s in args.shapes.split(",") if s}
    return 0 if ab.time_side_by_side(ab.benchmark_cases(shapes), variants, args.rounds) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
