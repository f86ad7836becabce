"""Tests of the harness (`eval.py`, `utils.py`), on the CPU.

Most tests run `python eval.py` as the service does: a subprocess in a
directory holding the task's files, results read back from a real POPCORN_FD
pipe. The cases are tiny (batch 2..7, n 8..32) and timed runs pass a small
`--budget`, so the stop rule ends them after about 0.1 s; one run keeps the
protocol's own budget to show it ends on its own.

A scripted submission, keyed on the batch size, exercises the failure paths:

    batch 3   raises, naming how many calls the module has served
    batch 5   returns tau scaled by 1.5 (a wrong factorization)
    batch 6   torch.geqrf after sleeping SCRIPTED_CALL_S (a known time a call)
    batch 7   kills the worker process (os._exit(7))
    batch 9   torch.geqrf for a tensor it has not seen, tau scaled by 1.5 for
              one it has (wrong only in timed repeats after the first)
    other     torch.geqrf, the correct answer

and logs every input it gets (batch, n, sum, the POPCORN_SEED it sees,
torch's initial seed, whether the tensor object is new to it) to
`inputs.log`, so a test can tell which matrices arrived.
"""
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest
import torch

import eval as harness
from reference import FACTOR_RTOL_FACTOR, generate_input
from utils import combine_seed

REPO_ROOT = Path(__file__).resolve().parent.parent
TASK_FILES = ("task.py", "reference.py", "utils.py", "eval.py", "task.yml")
RUN_TIMEOUT_S = 240
STATS_KEYS = ("runs", "mean", "std", "err", "best", "worst")
# Small enough that the stop rule ends a tiny case after MIN_TIMING_S.
TINY_BUDGET = "1e-9"

SMALL_SPECS = [
    "batch: 2; n: 8; cond: 1; seed: 11",
    "batch: 4; n: 32; cond: 2; seed: 12; case: rankdef",
    "batch: 3; n: 16; cond: 1; seed: 13; case: mixed",
]

SCRIPTED_CALL_S = 0.002
SCRIPTED_SUBMISSION = f'''
import os
import time
from pathlib import Path

import torch

LOG = Path(__file__).resolve().parent / "inputs.log"
calls = 0


def custom_kernel(data):
    global calls
    calls += 1
    fresh = not getattr(data, "scripted_seen", False)
    data.scripted_seen = True
    with LOG.open("a") as log:
        log.write(f"{{data.shape[0]}} {{data.shape[-1]}} {{float(data.double().sum())!r}} "
                  f"{{os.environ.get('POPCORN_SEED')}} {{torch.initial_seed()}} {{int(fresh)}}\\n")
    batch = data.shape[0]
    if batch == 3:
        raise RuntimeError(f"scripted failure on call {{calls}}")
    if batch == 6:
        time.sleep({SCRIPTED_CALL_S})
    if batch == 7:
        os._exit(7)
    h, tau = torch.geqrf(data)
    if batch == 5 or (batch == 9 and not fresh):
        return h, tau * 1.5
    return h, tau
'''


# ---------------------------------------------------------------------------
# Running eval.py
# ---------------------------------------------------------------------------
def _env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("POPCORN_FD", "POPCORN_SEED")}
    env.update(extra)
    return env


def run_protocol(cwd: Path, *args: str, **env: str) -> tuple[int, list[tuple[str, str]], str]:
    """`python eval.py *args` with POPCORN_FD a pipe: (exit code, `key: value` pairs, stderr)."""
    read_fd, write_fd = os.pipe()
    try:
        done = subprocess.run(
            [sys.executable, "eval.py", *args], cwd=cwd, env=_env(POPCORN_FD=str(write_fd), **env),
            pass_fds=(write_fd,), capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
        )
        os.close(write_fd)
        write_fd = -1
        with os.fdopen(read_fd, "r") as pipe:
            read_fd = -1
            text = pipe.read()
    finally:
        for fd in (read_fd, write_fd):
            if fd >= 0:
                os.close(fd)
    pairs = [tuple(line.split(": ", 1)) for line in text.splitlines()]
    return done.returncode, pairs, done.stderr


def run_eval(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """`python eval.py *args` with POPCORN_FD only if given in `env` (human mode otherwise)."""
    return subprocess.run([sys.executable, "eval.py", *args], cwd=cwd, env=_env(**env),
                          capture_output=True, text=True, timeout=RUN_TIMEOUT_S)


def write_specs(directory: Path, specs: list[str], name: str = "specs.txt") -> str:
    path = directory / name
    path.write_text("\n".join(specs) + "\n")
    return str(path)


def args_of(spec: str) -> dict:
    return harness.parse_spec_line(spec)


def input_sum(args: dict) -> float:
    return float(generate_input(**args).double().sum())


class Call(NamedTuple):
    """One call of the scripted submission, as it logged it."""

    batch: int
    n: int
    total: float            # sum of the input's entries
    seen_seed: str          # POPCORN_SEED in the worker's environment ("None": unset)
    initial_seed: int       # torch.initial_seed()
    fresh: bool             # the tensor object had not been passed before


def read_log(directory: Path) -> list[Call]:
    """The scripted submission's log, a Call per call."""
    rows = []
    for line in (directory / "inputs.log").read_text().splitlines():
        batch, n, total, seen_seed, initial_seed, fresh = line.split()
        rows.append(Call(int(batch), int(n), float(total), seen_seed, int(initial_seed), fresh == "1"))
    return rows


@pytest.fixture()
def scripted_dir(tmp_path: Path) -> Path:
    """The task's files with the scripted submission, as the service lays them out."""
    for name in TASK_FILES:
        shutil.copy(REPO_ROOT / name, tmp_path / name)
    (tmp_path / "submission.py").write_text(SCRIPTED_SUBMISSION)
    return tmp_path


def assert_stats(values: dict[str, str], max_runs: int) -> None:
    runs = int(values["runs"])
    mean, std, err, best, worst = (float(values[k]) for k in STATS_KEYS[1:])
    assert harness.MIN_REPEATS <= runs <= max_runs
    assert 0.0 < best <= mean <= worst
    assert std >= 0.0
    assert err == pytest.approx(std / math.sqrt(runs), rel=1e-9)


def benchmark_values(pairs: list[tuple[str, str]], index: int) -> dict[str, str]:
    prefix = f"benchmark.{index}."
    return {k.removeprefix(prefix): v for k, v in pairs if k.startswith(prefix)}


# ---------------------------------------------------------------------------
# Protocol mode
# ---------------------------------------------------------------------------
def test_protocol_test_mode_reports_every_case(tmp_path: Path):
    rc, pairs, stderr = run_protocol(REPO_ROOT, "test", write_specs(tmp_path, SMALL_SPECS))
    assert rc == 0, stderr
    expected_keys = ["test-count"]
    for i in range(len(SMALL_SPECS)):
        expected_keys += [f"test.{i}.spec", f"test.{i}.status", f"test.{i}.message"]
    assert [k for k, _ in pairs] == expected_keys + ["check"]
    values = dict(pairs)
    assert values["test-count"] == str(len(SMALL_SPECS))
    assert values["check"] == "pass"
    for i, spec in enumerate(SMALL_SPECS):
        args = args_of(spec)
        assert values[f"test.{i}.spec"] == spec
        assert values[f"test.{i}.status"] == "pass"
        message = values[f"test.{i}.message"]
        assert message.endswith(f"batch={args['batch']}; n={args['n']}")
        scaled_factor = float(message.split("scaled_factor_residual=")[1].split(";")[0])
        assert 0.0 <= scaled_factor < FACTOR_RTOL_FACTOR


def test_protocol_benchmark_mode_reports_stats(tmp_path: Path):
    specs = SMALL_SPECS[:2]
    rc, pairs, stderr = run_protocol(REPO_ROOT, "benchmark", write_specs(tmp_path, specs), "--budget", TINY_BUDGET)
    assert rc == 0, stderr
    expected_keys = ["benchmark-count"]
    for i in range(len(specs)):
        expected_keys += [f"benchmark.{i}.spec"] + [f"benchmark.{i}.{k}" for k in STATS_KEYS]
    assert [k for k, _ in pairs] == expected_keys + ["check"]
    values = dict(pairs)
    assert values["benchmark-count"] == "2"
    assert values["check"] == "pass"
    for i, spec in enumerate(specs):
        assert values[f"benchmark.{i}.spec"] == spec
        # The tiny budget stops the repeats well before the cap of 200.
        assert_stats(benchmark_values(pairs, i), max_runs=harness.BENCHMARK_TIMING.max_repeats - 1)


def test_protocol_benchmark_mode_stops_within_its_own_budget(tmp_path: Path):
    spec = "batch: 2; n: 8; cond: 0; seed: 5"
    rc, pairs, stderr = run_protocol(REPO_ROOT, "benchmark", write_specs(tmp_path, [spec]))
    assert rc == 0, stderr
    assert [k for k, _ in pairs] == (
        ["benchmark-count", "benchmark.0.spec"] + [f"benchmark.0.{k}" for k in STATS_KEYS] + ["check"]
    )
    assert_stats(benchmark_values(pairs, 0), max_runs=harness.BENCHMARK_TIMING.max_repeats)


def test_protocol_test_mode_survives_submission_failures(scripted_dir: Path):
    specs = [
        "batch: 2; n: 8; cond: 1; seed: 1",   # passes (call 1)
        "batch: 3; n: 8; cond: 1; seed: 2",   # raises on call 2: module state survived case 0
        "batch: 5; n: 8; cond: 1; seed: 3",   # wrong tau
        "batch: 7; n: 8; cond: 1; seed: 4",   # kills the worker
        "batch: 2; n: 16; cond: 1; seed: 5",  # passes in the replacement worker
    ]
    rc, pairs, stderr = run_protocol(scripted_dir, "test", write_specs(scripted_dir, specs))
    assert rc == harness.EXIT_FAILED, stderr
    values = dict(pairs)
    assert [values[f"test.{i}.status"] for i in range(len(specs))] == ["pass", "fail", "fail", "fail", "pass"]
    assert values["test.1.error"] == "RuntimeError: scripted failure on call 2"
    assert values["test.2.error"].startswith("R - Q.T @ A is too large")
    assert "worker process died (exit code 7)" in values["test.3.error"]
    assert "test.0.error" not in values and "test.4.error" not in values
    assert values["check"] == "fail"


def test_protocol_leaderboard_stops_at_first_failure(scripted_dir: Path):
    specs = [
        "batch: 2; n: 8; cond: 1; seed: 1",
        "batch: 5; n: 8; cond: 1; seed: 2",  # wrong tau
        "batch: 2; n: 16; cond: 1; seed: 3",
    ]
    rc, pairs, stderr = run_protocol(scripted_dir, "leaderboard", write_specs(scripted_dir, specs),
                                     "--budget", TINY_BUDGET)
    assert rc == harness.EXIT_FAILED, stderr
    assert [k for k, _ in pairs] == (
        ["benchmark-count", "benchmark.0.spec"] + [f"benchmark.0.{k}" for k in STATS_KEYS]
        + ["benchmark.1.spec", "benchmark.1.status", "benchmark.1.error", "check"]
    )
    values = dict(pairs)
    assert values["benchmark.1.status"] == "fail"
    assert values["benchmark.1.error"].startswith("R - Q.T @ A is too large")
    assert values["check"] == "fail"
    assert_stats(benchmark_values(pairs, 0), max_runs=harness.LEADERBOARD_TIMING.max_repeats - 1)
    # The untimed pass ran cases 0 and 1 before any timing and stopped at the
    # failing case 1: the third case's inputs (n = 16) never reached the kernel.
    shapes = [(call.batch, call.n) for call in read_log(scripted_dir)]
    count = harness.MAX_INPUTS
    assert shapes[:2 * count] == [(2, 8)] * count + [(5, 8)] * count
    assert (2, 16) not in shapes


def test_protocol_benchmark_times_a_call_not_a_batch_of_them(scripted_dir: Path):
    # each call sleeps SCRIPTED_CALL_S: the mean is that, in ns (not the repeat's time for all the inputs)
    spec = "batch: 6; n: 8; cond: 1; seed: 21"
    rc, pairs, stderr = run_protocol(scripted_dir, "benchmark", write_specs(scripted_dir, [spec]),
                                     "--budget", TINY_BUDGET)
    assert rc == 0, stderr
    values = benchmark_values(pairs, 0)
    assert SCRIPTED_CALL_S * 1e9 <= float(values["best"]) <= float(values["mean"]) < 5 * SCRIPTED_CALL_S * 1e9


def test_protocol_benchmark_rechecks_every_timed_repeat(scripted_dir: Path):
    # right on every tensor's first call, wrong on its later ones: the untimed check and the first timed
    # repeat pass, and only the re-check after a later repeat can fail the case
    spec = "batch: 9; n: 8; cond: 1; seed: 22"
    rc, pairs, stderr = run_protocol(scripted_dir, "benchmark", write_specs(scripted_dir, [spec]),
                                     "--budget", TINY_BUDGET)
    assert rc == harness.EXIT_FAILED, stderr
    values = dict(pairs)
    assert values["benchmark.0.status"] == "fail"
    assert values["benchmark.0.error"].startswith("R - Q.T @ A is too large")
    assert values["check"] == "fail"


def test_protocol_benchmark_warms_up_on_the_first_case_before_timing_it(scripted_dir: Path):
    # the warm-up's timed repeats pass the same tensors again; the case's own checked calls then bring
    # new ones: a call with a new tensor after one with a seen tensor shows that the warm-up came first
    spec = "batch: 2; n: 8; cond: 1; seed: 23"
    rc, _, stderr = run_protocol(scripted_dir, "benchmark", write_specs(scripted_dir, [spec]),
                                 "--budget", TINY_BUDGET)
    assert rc == 0, stderr
    fresh = [call.fresh for call in read_log(scripted_dir)]
    first_seen = fresh.index(False)
    assert any(fresh[first_seen:])


@pytest.mark.parametrize("first_wrong", [True, False])
def test_protocol_profile_mode_checks_the_first_case_only(scripted_dir: Path, first_wrong: bool):
    right, wrong = "batch: 2; n: 8; cond: 1; seed: 24", "batch: 5; n: 8; cond: 1; seed: 25"
    specs = [wrong, right] if first_wrong else [right, wrong]
    rc, pairs, stderr = run_protocol(scripted_dir, "profile", write_specs(scripted_dir, specs))
    values = dict(pairs)
    assert values["benchmark.0.spec"] == specs[0]
    if first_wrong:
        assert rc == harness.EXIT_FAILED, stderr
        assert values["check"] == "fail"
    else:
        assert rc == 0, stderr
        assert pairs == [("benchmark-count", "2"), ("benchmark.0.spec", specs[0]), ("check", "pass")]
    assert {call.batch for call in read_log(scripted_dir)} == {args_of(specs[0])["batch"]}


def test_protocol_benchmark_inputs_step_the_seed(scripted_dir: Path):
    spec = "batch: 2; n: 8; cond: 1; seed: 100"
    rc, pairs, stderr = run_protocol(scripted_dir, "benchmark", write_specs(scripted_dir, [spec]),
                                     "--budget", TINY_BUDGET)
    assert rc == 0, stderr
    count = harness.input_count(2, 8)
    assert count == harness.MAX_INPUTS
    # The warm-up's untimed calls come first, one per input, in order.
    logged = [call.total for call in read_log(scripted_dir)[:count]]
    expected = [input_sum(dict(args_of(spec), seed=100 + harness.SEED_STEP * (k + 1))) for k in range(count)]
    assert logged == expected
    assert len(set(logged)) == count


def test_protocol_seed_combination_changes_the_inputs(scripted_dir: Path):
    spec = "batch: 2; n: 8; cond: 1; seed: 53124"
    specfile = write_specs(scripted_dir, [spec])
    rc, _, stderr = run_protocol(scripted_dir, "test", specfile)
    assert rc == 0, stderr
    rc, pairs, stderr = run_protocol(scripted_dir, "test", specfile, POPCORN_SEED="7")
    assert rc == 0, stderr
    # The spec line is reported as written, not with the combined seed.
    assert dict(pairs)["test.0.spec"] == spec

    (_, _, plain, plain_seen, plain_rng, _), (_, _, seeded, seeded_seen, seeded_rng, _) = read_log(scripted_dir)
    assert plain == input_sum(args_of(spec))
    assert seeded == input_sum(dict(args_of(spec), seed=combine_seed(53124, 7)))
    assert seeded != plain
    # The worker's global RNGs are seeded; the submission never sees POPCORN_SEED.
    assert (plain_rng, seeded_rng) == (42, 7)
    assert plain_seen == seeded_seen == "None"


def test_malformed_spec_line_exits_113(tmp_path: Path):
    specfile = write_specs(tmp_path, [SMALL_SPECS[0], "batch 2; n: 8; cond: 1; seed: 1"])
    rc, pairs, stderr = run_protocol(REPO_ROOT, "test", specfile)
    assert rc == harness.EXIT_BAD_SPEC
    assert pairs == []
    assert f"{specfile}:2: invalid case" in stderr


def test_closed_popcorn_fd_exits_111(tmp_path: Path):
    closed_fd = 987
    with pytest.raises(OSError):
        os.fstat(closed_fd)
    done = run_eval(REPO_ROOT, "test", write_specs(tmp_path, SMALL_SPECS), POPCORN_FD=str(closed_fd))
    assert done.returncode == harness.EXIT_BAD_FD
    assert "POPCORN_FD" in done.stderr


def test_read_only_popcorn_fd_exits_111(tmp_path: Path):
    read_fd, write_fd = os.pipe()
    try:
        done = subprocess.run(
            [sys.executable, "eval.py", "test", write_specs(tmp_path, SMALL_SPECS)], cwd=REPO_ROOT,
            env=_env(POPCORN_FD=str(read_fd)), pass_fds=(read_fd,), capture_output=True, text=True,
            timeout=RUN_TIMEOUT_S,
        )
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert done.returncode == harness.EXIT_BAD_FD
    assert "not an open, writable file descriptor" in done.stderr


# ---------------------------------------------------------------------------
# Human mode
# ---------------------------------------------------------------------------
def test_human_mode_passes_with_the_repository_submission(tmp_path: Path):
    specs = SMALL_SPECS[:2]
    done = run_eval(REPO_ROOT, "test", write_specs(tmp_path, specs))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for i, spec in enumerate(specs):
        line = next(line for line in lines if line.startswith(f"[{i + 1}/2] "))
        assert line.startswith(f"[{i + 1}/2] pass  {spec}  factor=")
        assert "orth=" in line
    assert "2 passed, 0 failed" in done.stdout
    assert lines[-1] == "check: pass"


def test_human_benchmark_mode_reports_times(tmp_path: Path):
    specs = SMALL_SPECS[:2]
    done = run_eval(REPO_ROOT, "benchmark", write_specs(tmp_path, specs), "--budget", TINY_BUDGET)
    assert done.returncode == 0, done.stderr
    for i, spec in enumerate(specs):
        line = next(line for line in done.stdout.splitlines() if line.startswith(f"[{i + 1}/2] "))
        assert line.startswith(f"[{i + 1}/2] pass  {spec}  mean ")
        assert " runs, best " in line and "factor=" in line
    assert "2 passed, 0 failed; geometric mean time " in done.stdout
    assert done.stdout.splitlines()[-1] == "check: pass"


def test_human_mode_fails_a_wrong_submission(scripted_dir: Path):
    specs = ["batch: 5; n: 8; cond: 1; seed: 1", "batch: 5; n: 16; cond: 2; seed: 2; case: band"]
    done = run_eval(scripted_dir, "test", write_specs(scripted_dir, specs))
    assert done.returncode == harness.EXIT_FAILED
    for i, spec in enumerate(specs):
        assert f"[{i + 1}/2] fail  {spec}" in done.stdout
    assert done.stdout.count("error: R - Q.T @ A is too large") == 2
    assert "0 passed, 2 failed" in done.stdout
    assert done.stdout.splitlines()[-1] == "check: fail"


# ---------------------------------------------------------------------------
# Pieces, in-process
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("spec_seed, service_seed, combined", [
    (0, 0, 0),
    (1, 2, 7),              # 1 + 3*4/2
    (5, 1, 26),             # 5 + 6*7/2
    (0, 3, 6),              # 0 + 3*4/2
    (100, 7, 5878),         # 100 + 107*108/2
    (53124, 0, 1411159374),  # 53124 + 53124*53125/2
])
def test_combine_seed(spec_seed: int, service_seed: int, combined: int):
    assert combine_seed(spec_seed, service_seed) == combined


def test_combined_seeds_change_the_generated_inputs():
    spec = args_of("batch: 2; n: 8; cond: 1; seed: 53124")
    seeded = dict(spec, seed=combine_seed(spec["seed"], 7))
    assert not torch.equal(generate_input(**spec), generate_input(**seeded))


def test_parse_specs_applies_the_service_seed():
    text = "batch: 2; n: 8; cond: 1; seed: 10\n\n  batch: 3; n: 4; cond: 0; seed: -2; case: upper  \n"
    plain = harness.parse_specs(text, "specs", None)
    assert [c.spec for c in plain] == [
        "batch: 2; n: 8; cond: 1; seed: 10",
        "batch: 3; n: 4; cond: 0; seed: -2; case: upper",
    ]
    assert plain[1].args == {"batch": 3, "n": 4, "cond": 0, "seed": -2, "case": "upper"}
    seeded = harness.parse_specs(text, "specs", 4)
    assert [c.args["seed"] for c in seeded] == [10 + 14 * 15 // 2, -2 + 2 * 3 // 2]


@pytest.mark.parametrize("line, reason", [
    ("batch: 2; n: 8; cond: 1; seed: 1;", "is not a `key: value` pair"),
    ("batch: 2; n: 8; cond: 1; seed: 1.5", "is not a `key: value` pair"),
    ("batch: 2; n: eight; cond: 1; seed: 1", "n must be an integer"),
    ("batch: 2; n: 8; cond: 1; seed: 1; case: 3", "case must be a word"),
    ("batch: 2; n: 8; n: 9; cond: 1; seed: 1", "given twice"),
    ("batch: 2; n: 8; seed: 1", "missing cond"),
    ("batch 2; n: 8; cond: 1; seed: 1", "is not a `key: value` pair"),
    ("batch: 2; n: 8; cond: 1; seed: 1; colour: 3", "unknown key 'colour'"),
])
def test_parse_spec_line_rejects(line: str, reason: str):
    with pytest.raises(harness.SpecError, match=reason):
        harness.parse_spec_line(line)


def test_task_yml_sections_become_spec_lines():
    tests = harness.parse_specs(harness.task_yml_specs("tests"), "task.yml", None)
    benchmarks = harness.parse_specs(harness.task_yml_specs("benchmarks"), "task.yml", None)
    assert len(tests) == 22 and len(benchmarks) == 14
    assert tests[0].spec == "batch: 20; n: 32; cond: 1; seed: 53124"
    assert tests[-1].spec == "batch: 2; n: 2048; cond: 2; seed: 224468; case: mixed"
    assert benchmarks[3].args == {"batch": 640, "n": 512, "cond": 2, "seed": 1029}


@pytest.mark.parametrize("batch, n, count", [
    (2, 8, 50),       # capped at MAX_INPUTS
    (40, 352, 13),    # 256 MiB // 19,824,640 B
    (8, 2048, 2),     # 256 MiB // 128 MiB
    (60, 1024, 1),    # 240 MiB: one input
    (640, 512, 1),    # 640 MiB: never fewer than one
])
def test_input_count(batch: int, n: int, count: int):
    assert harness.input_count(batch, n) == count


def test_stop_rule():
    steady = [1000.0] * 3
    assert not harness.should_stop(steady, elapsed_s=0.05, budget_s=10.0)   # under MIN_TIMING_S
    assert not harness.should_stop(steady[:2], elapsed_s=1.0, budget_s=10.0)  # under MIN_REPEATS
    assert harness.should_stop(steady, elapsed_s=0.2, budget_s=10.0)          # err = 0
    noisy = [1000.0, 2000.0, 3000.0]
    assert not harness.should_stop(noisy, elapsed_s=0.2, budget_s=10.0)
    assert harness.should_stop(noisy, elapsed_s=0.2, budget_s=5.0e-6)         # 3 runs * 2 us > 5 us
    assert harness.should_stop(noisy, elapsed_s=121.0, budget_s=10.0)


def test_stats_of():
    stats = harness.stats_of([1.0, 2.0, 3.0, 6.0])
    assert (stats.runs, stats.mean, stats.best, stats.worst) == (4, 3.0, 1.0, 6.0)
    assert stats.std == pytest.approx(math.sqrt(14.0 / 3.0))
    assert stats.err == pytest.approx(stats.std / 2.0)
