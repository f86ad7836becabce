"""Harness of the qr_v2 task: correctness tests and timing of `submission.custom_kernel`.

    python eval.py MODE SPECFILE [--budget SECONDS]     (protocol mode, POPCORN_FD set)
    python eval.py MODE [SPECFILE] [--budget SECONDS]   (human mode, POPCORN_FD unset)

MODE is one of `test`, `benchmark`, `leaderboard`, `profile`.

Protocol mode speaks the leaderboard service's protocol: results go to the
file descriptor POPCORN_FD as `key: value` lines, flushed one by one. The
public harness exits 111 whenever POPCORN_FD is missing; this one only exits
111 when POPCORN_FD is set but is not an open, writable descriptor, and
without it runs in human mode: the cases default to task.yml (`tests` for
test mode, `benchmarks` for the others), a line per case is printed as it
finishes and a summary closes the run. `--budget` replaces the per-case
timing budget, for quick timings; the service never passes it.

SPECFILE holds one case per line, `key: value` pairs separated by `;`:

    batch: 20; n: 32; cond: 1; seed: 53124
    batch: 16; n: 512; cond: 2; seed: 32530; case: mixed

Keys are the fields of `task.TestSpec`, values integers or words; blank lines
are skipped. With POPCORN_SEED = b every seed a becomes a + (a+b)(a+b+1)/2,
and the global RNGs are seeded with b (DEFAULT_SEED when unset).

All cases run in one worker process (a `spawn` pool of size 1) that imports
`submission` once, so the module's state (compile caches) lives across
cases; its global RNGs are seeded like the parent's, and it does not see
POPCORN_SEED. An exception raised by the submission fails its case and the
run goes on; so does a worker that dies, which the pool replaces (the
public harness would wait for it forever). Spec lines are reported as
written, without the combined seed.

test         per case: one call on a clone of the input, then the checker.
benchmark    warm-up on the first case, then per case: `input_count` inputs,
             one checked untimed call each, then timed repeats of
             `[custom_kernel(x) for x in inputs]` (synchronize, flush L2,
             time), every repeat's outputs checked; time per call in ns.
leaderboard  one untimed checked pass over the cases (stopping at the first
             failure), then timed as `benchmark` with a larger budget,
             stopping at the first failing case.
profile      one call on the first case inside an NVTX range, then the checker.

Exit codes: 0 every case passed, 112 a case failed, 113 a malformed spec file
or task.yml, 111 a POPCORN_FD that cannot be written, 2 a bad command line.

On a CPU-only machine the inputs are made on the CPU, synchronization, the L2
flush and NVTX are skipped and times come from the host clock.
"""
import argparse
import contextlib
import dataclasses
import fcntl
import json
import math
import multiprocessing
import os
import re
import sys
import time
import traceback
import typing
from pathlib import Path
from typing import TextIO

import torch

from reference import check_implementation, generate_input
from task import TestSpec
from utils import DEFAULT_SEED, Stopwatch, combine_seed, flush_l2, nvtx_range, set_seed, synchronize

MODES = ("test", "benchmark", "leaderboard", "profile")

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_BAD_FD = 111
EXIT_FAILED = 112
EXIT_BAD_SPEC = 113

# Inputs of a benchmark case: as many as fill INPUT_BYTES_TARGET of A, within
# [1, MAX_INPUTS]; input k is generated with seed + SEED_STEP * (k + 1).
MAX_INPUTS = 50
INPUT_BYTES_TARGET = 256 * 1024 * 1024
SEED_STEP = 42

# Stop rule of the timed repeats: after MIN_REPEATS and MIN_TIMING_S, stop once
# the standard error is below TARGET_REL_ERR of the mean, the summed mean time
# exceeds the budget, or MAX_TIMING_S of wall time has passed.
MIN_REPEATS = 3
MIN_TIMING_S = 0.1
TARGET_REL_ERR = 1.0e-3
MAX_TIMING_S = 120.0

# How often the parent looks whether the worker is still alive while it waits.
WORKER_POLL_S = 0.5

SPEC_TYPES = typing.get_type_hints(TestSpec)
REQUIRED_KEYS = TestSpec.__required_keys__
SPEC_PAIR = re.compile(r"\s*([A-Za-z_]\w*)\s*:\s*([+-]?\d+|[A-Za-z_]\w*)\s*", re.ASCII)
TASK_YML = Path(__file__).resolve().parent / "task.yml"

# The checker's diagnostics a human-mode line shows, and their short names.
RESIDUAL_NAMES = {
    "scaled_factor_residual": "factor",
    "scaled_reconstruction_residual": "recon",
    "scaled_triangular_residual": "tri",
    "scaled_orthogonality_residual": "orth",
}


@dataclasses.dataclass(frozen=True)
class Timing:
    """How a benchmark case is timed: repeat cap, budget on the summed mean time, rechecks."""

    max_repeats: int
    budget_s: float
    recheck: bool


BENCHMARK_TIMING = Timing(max_repeats=200, budget_s=10.0, recheck=True)
LEADERBOARD_TIMING = Timing(max_repeats=1000, budget_s=30.0, recheck=True)
WARMUP_TIMING = Timing(max_repeats=200, budget_s=0.1, recheck=False)
# The inputs' checked untimed calls only: leaderboard mode's first pass.
UNTIMED = Timing(max_repeats=0, budget_s=0.0, recheck=False)


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------
class SpecError(ValueError):
    """A malformed spec file or task.yml (exit EXIT_BAD_SPEC)."""


@dataclasses.dataclass
class Case:
    """One case: its spec line as written, and the `generate_input` arguments (seed combined)."""

    spec: str
    args: dict


def parse_spec_line(line: str) -> dict:
    """`batch: 20; n: 32; cond: 1; seed: 53124` -> {"batch": 20, ...}, validated against `TestSpec`."""
    args = {}
    for part in line.split(";"):
        pair = SPEC_PAIR.fullmatch(part)
        if pair is None:
            raise SpecError(f"{part.strip()!r} is not a `key: value` pair")
        key, text = pair.groups()
        if key not in SPEC_TYPES:
            raise SpecError(f"unknown key {key!r}; keys are {', '.join(SPEC_TYPES)}")
        if key in args:
            raise SpecError(f"key {key!r} given twice")
        value = int(text) if text[0] in "+-0123456789" else text
        if not isinstance(value, SPEC_TYPES[key]):
            raise SpecError(f"{key} must be {'an integer' if SPEC_TYPES[key] is int else 'a word'}, got {text!r}")
        args[key] = value
    missing = REQUIRED_KEYS - args.keys()
    if missing:
        raise SpecError(f"missing {', '.join(sorted(missing))}")
    return args


def parse_specs(text: str, source: str, service_seed: int | None) -> list[Case]:
    """The cases of a spec file's text; with a service seed, every seed is combined with it."""
    cases = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            args = parse_spec_line(line)
        except SpecError as exc:
            raise SpecError(f"{source}:{number}: invalid case {line.strip()!r}: {exc}") from None
        if service_seed is not None:
            args["seed"] = combine_seed(args["seed"], service_seed)
        cases.append(Case(spec=line.strip(), args=args))
    if not cases:
        raise SpecError(f"{source}: no cases")
    return cases


def task_yml_specs(section: str, path: Path = TASK_YML) -> str:
    """task.yml's `section` (`tests` or `benchmarks`) as spec-file text.

    Each entry is one `  - {json object}` line; it becomes the line
    `key: value; key: value`, the form the service writes its spec files in.
    """
    lines = []
    inside = False
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line[0].isspace():
            inside = line.rstrip() == f"{section}:"
            continue
        if not inside:
            continue
        item = line.strip()
        try:
            if not item.startswith("- "):
                raise ValueError("not a `- {...}` list item")
            spec = json.loads(item[2:])
            if not isinstance(spec, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            raise SpecError(f"{path}:{number}: bad `{section}` entry {item!r}: {exc}") from None
        lines.append("; ".join(f"{key}: {value}" for key, value in spec.items()))
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Worker side: everything below runs in the spawned worker process
# ---------------------------------------------------------------------------
@dataclasses.dataclass
class Stats:
    """Time per call over the timed repeats, in nanoseconds (`std` is the sample deviation)."""

    runs: int
    mean: float
    std: float
    err: float
    best: float
    worst: float


@dataclasses.dataclass
class Outcome:
    """A case's result: `message` is the checker's message when ok, else the error."""

    ok: bool
    message: str
    stats: Stats | None = None


def stats_of(durations: list[float]) -> Stats:
    runs = len(durations)
    mean = sum(durations) / runs
    std = math.sqrt(sum((d - mean) ** 2 for d in durations) / (runs - 1)) if runs > 1 else 0.0
    return Stats(runs=runs, mean=mean, std=std, err=std / math.sqrt(runs),
                 best=min(durations), worst=max(durations))


def should_stop(durations: list[float], elapsed_s: float, budget_s: float) -> bool:
    """The stop rule of the timed repeats (see MIN_REPEATS)."""
    if len(durations) < MIN_REPEATS or elapsed_s <= MIN_TIMING_S:
        return False
    stats = stats_of(durations)
    return (
        stats.err < TARGET_REL_ERR * stats.mean
        or stats.mean * stats.runs > budget_s * 1.0e9
        or elapsed_s > MAX_TIMING_S
    )


def input_count(batch: int, n: int) -> int:
    """How many inputs a benchmark case times (see MAX_INPUTS)."""
    return max(1, min(MAX_INPUTS, INPUT_BYTES_TARGET // (batch * n * n * 4)))


def _one_line(text: str) -> str:
    return " | ".join(line.strip() for line in text.splitlines() if line.strip())


def _failure(exc: BaseException) -> Outcome:
    """The case's failure for an exception; its traceback goes to the worker's stderr."""
    traceback.print_exc()
    return Outcome(False, _one_line(f"{type(exc).__name__}: {exc}"))


def _kernel():
    # Imported on first use and then cached by Python, so one import serves
    # every case; a submission that fails to import fails each case instead
    # of taking the worker down.
    from submission import custom_kernel
    return custom_kernel


def _check_all(originals: list, outputs: list) -> tuple[bool, str]:
    message = ""
    for data, output in zip(originals, outputs):
        ok, message = check_implementation(data, output)
        if not ok:
            return False, message
    return True, message


def run_test_case(case: Case) -> Outcome:
    try:
        custom_kernel = _kernel()
        data = generate_input(**case.args)
        synchronize(data.device)
        output = custom_kernel(data.clone())
        synchronize(data.device)
        return Outcome(*check_implementation(data, output))
    except Exception as exc:
        return _failure(exc)


def run_benchmark_case(case: Case, timing: Timing) -> Outcome:
    """Check one untimed call per input, then time repeats as `timing` says."""
    try:
        custom_kernel = _kernel()
        args = dict(case.args)
        inputs = []
        for _ in range(input_count(args["batch"], args["n"])):
            args["seed"] += SEED_STEP
            inputs.append(generate_input(**args))
        originals = [data.clone() for data in inputs]
        device = inputs[0].device

        ok, message = _check_all(originals, [custom_kernel(data.clone()) for data in inputs])
        if not ok or timing.max_repeats == 0:
            return Outcome(ok, message)

        watch = Stopwatch(device)
        durations = []
        began = time.perf_counter()
        while len(durations) < timing.max_repeats:
            synchronize(device)
            flush_l2(device)
            watch.start()
            outputs = [custom_kernel(data) for data in inputs]
            watch.stop()
            durations.append(watch.elapsed_ns() / len(inputs))
            if timing.recheck:
                ok, message = _check_all(originals, outputs)
                if not ok:
                    return Outcome(False, message)
            if should_stop(durations, time.perf_counter() - began, timing.budget_s):
                break
        return Outcome(True, message, stats_of(durations))
    except Exception as exc:
        return _failure(exc)


def run_profile_case(case: Case) -> Outcome:
    try:
        custom_kernel = _kernel()
        data = generate_input(**case.args)
        data_copy = data.clone()
        synchronize(data.device)
        with nvtx_range("custom_kernel", data.device):
            output = custom_kernel(data_copy)
            synchronize(data.device)
        return Outcome(*check_implementation(data, output))
    except Exception as exc:
        return _failure(exc)


# ---------------------------------------------------------------------------
# Parent side
# ---------------------------------------------------------------------------
def in_worker(pool, fn, *args) -> Outcome:
    """`fn(*args)` in the pool's worker; a failed Outcome if the worker dies meanwhile.

    A pool loses the task of a worker that dies (and starts a new worker), so
    waiting on the result alone would wait forever.
    """
    workers = multiprocessing.active_children()
    pending = pool.apply_async(fn, args)
    while not pending.ready():
        pending.wait(WORKER_POLL_S)
        workers = workers or multiprocessing.active_children()
        if not pending.ready() and workers and not any(w.is_alive() for w in workers):
            codes = ", ".join(str(w.exitcode) for w in workers)
            return Outcome(False, f"the worker process died (exit code {codes}) while running the case")
    try:
        return pending.get()
    except Exception as exc:
        return Outcome(False, _one_line(f"{type(exc).__name__}: {exc}"))


class ProtocolReport:
    """Writes the service's `key: value` lines to POPCORN_FD."""

    def __init__(self, stream: TextIO):
        self.stream = stream

    def log(self, key: str, value) -> None:
        print(f"{key}: {value}", file=self.stream, flush=True)

    def note(self, text: str) -> None:
        pass

    def begin(self, kind: str, count: int) -> None:
        self.log(f"{kind}-count", count)

    def start_case(self, kind: str, index: int, case: Case) -> None:
        self.log(f"{kind}.{index}.spec", case.spec)

    def finish_case(self, kind: str, index: int, case: Case, outcome: Outcome) -> None:
        if not outcome.ok:
            self.log(f"{kind}.{index}.status", "fail")
            self.log(f"{kind}.{index}.error", outcome.message)
        elif outcome.stats is not None:
            for field in dataclasses.fields(Stats):
                self.log(f"{kind}.{index}.{field.name}", getattr(outcome.stats, field.name))
        elif kind == "test":
            self.log(f"{kind}.{index}.status", "pass")
            if outcome.message:
                self.log(f"{kind}.{index}.message", outcome.message)

    def end(self, passed: bool) -> None:
        self.log("check", "pass" if passed else "fail")


def readable_ns(ns: float) -> str:
    for unit, scale in (("s", 1.0e9), ("ms", 1.0e6), ("us", 1.0e3)):
        if ns >= scale:
            return f"{ns / scale:.4g} {unit}"
    return f"{ns:.4g} ns"


def scaled_residuals(message: str) -> str:
    """`factor=.. recon=.. tri=.. orth=..` from the scaled residuals of a checker's pass message."""
    fields = dict(part.strip().split("=", 1) for part in message.split(";") if "=" in part)
    return " ".join(f"{short}={fields[name]}" for name, short in RESIDUAL_NAMES.items() if name in fields)


class HumanReport:
    """Prints a line per case as it finishes, then a summary."""

    def __init__(self, stream: TextIO = sys.stdout):
        self.stream = stream
        self.count = 0
        self.outcomes: list[Outcome] = []

    def print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def note(self, text: str) -> None:
        self.print(text)

    def begin(self, kind: str, count: int) -> None:
        self.count = count

    def start_case(self, kind: str, index: int, case: Case) -> None:
        pass

    def finish_case(self, kind: str, index: int, case: Case, outcome: Outcome) -> None:
        self.outcomes.append(outcome)
        head = f"[{index + 1:>{len(str(self.count))}}/{self.count}] {'pass' if outcome.ok else 'fail'}  {case.spec}"
        if not outcome.ok:
            self.print(f"{head}\n    error: {outcome.message}")
            return
        timing = ""
        if outcome.stats is not None:
            s = outcome.stats
            timing = f"  mean {readable_ns(s.mean)} +- {readable_ns(s.err)} ({s.runs} runs, best {readable_ns(s.best)})"
        self.print(f"{head}{timing}  {scaled_residuals(outcome.message)}")

    def end(self, passed: bool) -> None:
        fails = sum(not o.ok for o in self.outcomes)
        line = f"{len(self.outcomes) - fails} passed, {fails} failed"
        if len(self.outcomes) < self.count:
            line += f", {self.count - len(self.outcomes)} not run"
        means = [o.stats.mean for o in self.outcomes if o.ok and o.stats is not None]
        if means:
            geomean = math.exp(sum(math.log(m) for m in means) / len(means))
            line += f"; geometric mean time {readable_ns(geomean)} over {len(means)} cases"
        self.print(f"{line}\n{'check: pass' if passed else 'check: fail'}")


def run_tests(pool, report, cases: list[Case]) -> bool:
    report.begin("test", len(cases))
    passed = True
    for index, case in enumerate(cases):
        report.start_case("test", index, case)
        outcome = in_worker(pool, run_test_case, case)
        report.finish_case("test", index, case, outcome)
        passed = passed and outcome.ok
    report.end(passed)
    return passed


def run_benchmarks(pool, report, cases: list[Case], timing: Timing, leaderboard: bool) -> bool:
    if leaderboard:
        report.note("leaderboard: one checked untimed pass over the cases")
        for case in cases:
            if not in_worker(pool, run_benchmark_case, case, UNTIMED).ok:
                break
    else:
        report.note("benchmark: warming up on the first case")
        in_worker(pool, run_benchmark_case, cases[0], WARMUP_TIMING)

    report.begin("benchmark", len(cases))
    passed = True
    for index, case in enumerate(cases):
        report.start_case("benchmark", index, case)
        outcome = in_worker(pool, run_benchmark_case, case, timing)
        report.finish_case("benchmark", index, case, outcome)
        passed = passed and outcome.ok
        if leaderboard and not outcome.ok:
            break
    report.end(passed)
    return passed


def run_profile(pool, report, cases: list[Case]) -> bool:
    report.begin("benchmark", len(cases))
    report.start_case("benchmark", 0, cases[0])
    outcome = in_worker(pool, run_profile_case, cases[0])
    report.finish_case("benchmark", 0, cases[0], outcome)
    report.end(outcome.ok)
    return outcome.ok


def writable_fd(fd_text: str) -> int | None:
    """POPCORN_FD as a descriptor number, or None when it is not an open, writable descriptor."""
    try:
        fd = int(fd_text)
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    except (ValueError, OSError):
        return None
    return fd if flags & os.O_ACCMODE in (os.O_WRONLY, os.O_RDWR) else None


def parse_args(argv: list[str], protocol: bool) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="eval.py", description="qr_v2 harness (see the module docstring)")
    parser.add_argument("mode", choices=MODES)
    parser.add_argument("specfile", nargs="?", type=Path,
                        help="one case per line; default (human mode): task.yml's tests or benchmarks")
    parser.add_argument("--budget", type=float, metavar="SECONDS",
                        help="per-case budget on the summed mean time of the timed repeats "
                             "(default: 10 for benchmark, 30 for leaderboard)")
    args = parser.parse_args(argv)
    if protocol and args.specfile is None:
        parser.error("SPECFILE is required when POPCORN_FD is set")
    if args.budget is not None and args.budget <= 0:
        parser.error("--budget must be positive")
    return args


def main(argv: list[str]) -> int:
    protocol = "POPCORN_FD" in os.environ
    args = parse_args(argv, protocol)

    fd = writable_fd(os.environ["POPCORN_FD"]) if protocol else None
    if protocol and fd is None:
        print(f"eval.py: POPCORN_FD={os.environ['POPCORN_FD']!r} is not an open, writable file descriptor",
              file=sys.stderr)
        return EXIT_BAD_FD

    seed_text = os.environ.pop("POPCORN_SEED", "")
    try:
        service_seed = int(seed_text) if seed_text else None
    except ValueError:
        print(f"eval.py: POPCORN_SEED={seed_text!r} is not an integer", file=sys.stderr)
        return EXIT_USAGE
    seed = DEFAULT_SEED if service_seed is None else service_seed
    set_seed(seed)

    try:
        if args.specfile is not None:
            text, source = args.specfile.read_text(), str(args.specfile)
        else:
            section = "tests" if args.mode == "test" else "benchmarks"
            text, source = task_yml_specs(section), f"task.yml ({section})"
        cases = parse_specs(text, source, service_seed)
    except (OSError, SpecError) as exc:
        print(f"eval.py: {exc}", file=sys.stderr)
        return EXIT_BAD_SPEC

    timing = LEADERBOARD_TIMING if args.mode == "leaderboard" else BENCHMARK_TIMING
    if args.budget is not None:
        timing = dataclasses.replace(timing, budget_s=args.budget)

    with contextlib.ExitStack() as stack:
        if protocol:
            os.set_inheritable(fd, False)
            report = ProtocolReport(stack.enter_context(os.fdopen(fd, "w")))
        else:
            report = HumanReport()
            seed_note = "POPCORN_SEED unset" if service_seed is None else f"POPCORN_SEED={service_seed}"
            report.note(f"{args.mode}: {len(cases)} cases from {source}, {seed_note}")
            if os.environ.get("QR_SKIP_PRECOMPILE") != "1" and torch.cuda.is_available():
                report.note("the worker imports the submission first, which compiles its kernels for the "
                            "benchmark shapes: minutes on a fresh GPU machine before the first case")
        spawn = multiprocessing.get_context("spawn")
        pool = stack.enter_context(spawn.Pool(1, initializer=set_seed, initargs=(seed,)))
        if args.mode == "test":
            passed = run_tests(pool, report, cases)
        elif args.mode == "profile":
            passed = run_profile(pool, report, cases)
        else:
            passed = run_benchmarks(pool, report, cases, timing, leaderboard=args.mode == "leaderboard")
    return EXIT_OK if passed else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
