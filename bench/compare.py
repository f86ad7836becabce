"""Time the submission against the QR factorizations people would otherwise use.

    python bench/compare.py [--libs submission,torch,jax] [--budget S] [--cases TEXT ...]

For each benchmark case of task.yml, every library factors the same inputs,
timed the way the harness does it (SPEC §5): `eval.input_count` inputs, each
generated with its seed advanced by 42; one untimed call per input, checked by
`reference.check_implementation`; then repeats of [synchronize, flush L2,
time `[f(x) for x in inputs]`], time per call = elapsed / count, until the
harness's stop rule holds with `--budget` seconds in place of its 10 s. As in
the harness, the start event is queued behind the flush without waiting for
it (a call's host work overlaps the flush), and a repeat's outputs are alive
through the next repeat's calls; libraries timed by the host clock wait for
the flush first.

Prints a table (median time per call, speedup of the submission over each
library, worst scaled residuals) and geometric means; writes
`bench/results/compare-<gpu>.json` and a PNG bar chart beside it, stamped with
the GPU, library versions, date and commit.
"""
import argparse
import datetime
import importlib.metadata
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import eval as harness  # noqa: E402
import reference  # noqa: E402
import utils  # noqa: E402

RESULTS = ROOT / "bench" / "results"


# ---------------------------------------------------------------------------
# Libraries: name -> (factor, finish), finish waits for a list of outputs
# ---------------------------------------------------------------------------
def _torch_lib():
    return torch.geqrf, lambda outputs: None


def _submission_lib():
    import submission
    return submission.custom_kernel, lambda outputs: None


def _jax_lib():
    import jax
    import jax.dlpack

    geqrf = jax.jit(jax.lax.linalg.geqrf)

    def factor(x):
        h, tau = geqrf(jax.dlpack.from_dlpack(x))
        return h, tau

    def finish(outputs):
        for h, tau in outputs:
            h.block_until_ready()
            tau.block_until_ready()

    return factor, finish


LIBS = {"submission": _submission_lib, "torch": _torch_lib, "jax": _jax_lib}
EVENT_TIMED = {"submission", "torch"}   # on torch's stream; jax is timed by the host clock


def _as_torch(output):
    h, tau = output
    if isinstance(h, torch.Tensor):
        return h, tau
    return torch.from_dlpack(h), torch.from_dlpack(tau)


# ---------------------------------------------------------------------------
# Timing one case
# ---------------------------------------------------------------------------
def _inputs(args: dict) -> list[torch.Tensor]:
    args = dict(args)
    inputs = []
    for _ in range(harness.input_count(args["batch"], args["n"])):
        args["seed"] += harness.SEED_STEP
        inputs.append(reference.generate_input(**args))
    return inputs


def _residuals(message: str) -> tuple[float, float]:
    fields = dict(part.split("=") for part in message.split("; "))
    return float(fields["scaled_factor_residual"]), float(fields["scaled_orthogonality_residual"])


def time_case(name: str, inputs: list[torch.Tensor], budget_s: float) -> dict:
    """Check one untimed call per input, then time repeats until the stop rule holds."""
    factor, finish = LIBS[name]()
    device = inputs[0].device
    outputs = [factor(x) for x in inputs]
    finish(outputs)
    factor_res, orth_res = 0.0, 0.0
    for x, out in zip(inputs, outputs):
        ok, message = reference.check_implementation(x, _as_torch(out))
        if not ok:
            return {"ok": False, "error": message}
        f, o = _residuals(message)
        factor_res, orth_res = max(factor_res, f), max(orth_res, o)
    del outputs

    watch = utils.Stopwatch(device)
    durations = []
    started = time.perf_counter()
    while not harness.should_stop(durations, time.perf_counter() - started, budget_s):
        utils.synchronize(device)
        utils.flush_l2(device)
        if name in EVENT_TIMED:     # as SPEC §5: the start event queued behind the flush, no wait between
            watch.start()
            outputs = [factor(x) for x in inputs]
            watch.stop()
            elapsed = watch.elapsed_ns()
        else:
            utils.synchronize(device)       # the host clock starts once the flush is done
            t0 = time.perf_counter_ns()
            outputs = [factor(x) for x in inputs]
            finish(outputs)
            elapsed = time.perf_counter_ns() - t0
        durations.append(elapsed / len(inputs))
        # the outputs stay alive through the next repeat's calls, as the harness's re-check keeps them: a
        # call then gets other memory than the last one's
    stats = harness.stats_of(durations)
    return {"ok": True, "median_ns": statistics.median(durations), "mean_ns": stats.mean,
            "runs": stats.runs, "factor_residual": factor_res, "orth_residual": orth_res}


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------
def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f}"


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _versions(libs: list[str]) -> dict:
    names = ["torch", "triton", "nvidia-cutlass-dsl"] + (["jax"] if "jax" in libs else [])
    versions = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def _commit() -> str:
    """HEAD of the checkout, or 'unknown' where the tree was copied without its .git."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _chart(path: Path, results: dict, libs: list[str], gpu: str) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no chart", file=sys.stderr)
        return
    specs = list(results)
    fig, ax = plt.subplots(figsize=(max(8, 0.9 * len(specs)), 5))
    width = 0.8 / len(libs)
    for i, lib in enumerate(libs):
        times = [results[s].get(lib, {}).get("median_ns", float("nan")) / 1e6 for s in specs]
        ax.bar([x + i * width for x in range(len(specs))], times, width, label=lib)
    ax.set_yscale("log")
    ax.set_ylabel("median time per call (ms, log)")
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(specs))])
    ax.set_xticklabels([s.replace("; ", "\n") for s in specs], fontsize=6)
    ax.set_title(f"batched QR on {gpu}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--libs", default=None,
                        help="comma-separated from submission,torch,jax (default: all importable)")
    parser.add_argument("--budget", type=float, default=2.0, help="seconds of timed calls per case and library")
    parser.add_argument("--cases", nargs="*", default=[], help="only specs containing one of these texts")
    parser.add_argument("--service-seed", type=int, default=None, help="combine every seed as POPCORN_SEED does")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--commit", default=None, help="commit to record when the tree has no .git")
    args = parser.parse_args(argv)

    if args.libs is None:
        libs = ["submission", "torch"]
        try:
            import jax  # noqa: F401
            libs.append("jax")
        except ImportError:
            pass
    else:
        libs = args.libs.split(",")
    unknown = set(libs) - LIBS.keys()
    if unknown:
        parser.error(f"unknown libraries {sorted(unknown)}; choose from {sorted(LIBS)}")

    cases = harness.parse_specs(harness.task_yml_specs("benchmarks"), "task.yml", args.service_seed)
    cases = [c for c in cases if not args.cases or any(t in c.spec for t in args.cases)]
    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    print(f"{gpu}; {len(cases)} cases; libraries {', '.join(libs)}; budget {args.budget} s", flush=True)

    results = {}
    header = f"{'case':58s}" + "".join(f"{lib + ' ms':>14s}" for lib in libs) + "   factor  orth"
    print(header, flush=True)
    for case in cases:
        inputs = _inputs(case.args)
        row = results[case.spec] = {}
        for lib in libs:
            try:
                row[lib] = time_case(lib, inputs, args.budget)
            except Exception as exc:  # a library that cannot factor this case is reported, not fatal
                row[lib] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        mine = row.get("submission", {})
        cells = "".join(f"{_ms(r['median_ns']) if r['ok'] else 'FAIL':>14s}" for r in row.values())
        tail = f"   {mine['factor_residual']:6.2f} {mine['orth_residual']:5.2f}" if mine.get("ok") else ""
        print(f"{case.spec:58s}{cells}{tail}", flush=True)
        for lib, r in row.items():
            if not r["ok"]:
                print(f"    {lib}: {r['error']}", flush=True)
        del inputs

    summary = {}
    for lib in libs:
        times = [row[lib]["median_ns"] for row in results.values() if row[lib]["ok"]]
        if len(times) == len(results) and times:
            summary[lib] = geomean(times)
    print(f"{'geometric mean':58s}" + "".join(f"{_ms(summary[lib]) if lib in summary else '-':>14s}"
                                               for lib in libs))
    if "submission" in summary:
        for lib in libs:
            if lib != "submission" and lib in summary:
                print(f"speedup over {lib}: {summary[lib] / summary['submission']:.1f}x")

    args.out.mkdir(parents=True, exist_ok=True)
    stem = "compare-" + gpu.replace(" ", "_")
    record = {"gpu": gpu, "versions": _versions(libs), "date": datetime.date.today().isoformat(),
              "commit": args.commit or _commit(), "budget_s": args.budget, "service_seed": args.service_seed,
              "cases": results, "geomean_ns": summary}
    (args.out / f"{stem}.json").write_text(json.dumps(record, indent=1))
    _chart(args.out / f"{stem}.png", results, libs, gpu)
    print(f"wrote {args.out / stem}.json/.png")
    failed = any(not r["ok"] for row in results.values() for lib, r in row.items() if lib == "submission")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
