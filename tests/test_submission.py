"""custom_kernel end to end: the task's specs, odd shapes, dispatch, state and fallbacks."""
import threading
import types

import pytest
import torch

import reference
import submission
import utils
from checks import assert_factors
from eval import parse_specs, task_yml_specs

SERVICE_SEEDS = (11, 222, 3333, 44444, 5, 66, 777, 8888, 99999, 123456)   # POPCORN_SEED values
H200_SMS, H200_SMEM = 132, 232448
B200_SMS = 148


ALL_SPECS = [case.args for section in ("tests", "benchmarks")
             for case in parse_specs(task_yml_specs(section), "task.yml", None)]


# ---------------------------------------------------------------------------
# Dispatch (pure Python: runs everywhere)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("sms", [H200_SMS, B200_SMS])
@pytest.mark.parametrize("spec", ALL_SPECS, ids=lambda s: f"{s['batch']}x{s['n']}")
def test_plan_fits_the_device(spec, sms):
    n = spec["n"]
    plan = submission.make_plan(spec["batch"], n, sms, H200_SMEM)
    budget = H200_SMEM - submission.SMEM_RESERVE
    if plan.square:         # cluster: CTAs that each hold a copy of the matrix
        assert submission.panel_smem_bytes(plan.rows, plan.width, False) <= budget
        assert plan.width == plan.rows >= n and plan.rows % submission.SQUARE_STEP == 0
        assert plan.cluster == 1 or spec["batch"] * plan.cluster <= sms
    else:
        assert submission.panel_smem_bytes(plan.rows, plan.width, True, plan.cluster) <= budget
        assert plan.cluster & (plan.cluster - 1) == 0 and plan.cluster <= submission.MAX_CLUSTER
        assert plan.rows * plan.cluster >= n and plan.rows % 32 == 0
        assert plan.width == submission.PANEL_WIDTH and plan.rows <= submission.PANEL_MAX_ROWS


@pytest.mark.parametrize("batch,n,copies", [(40, 176, 2), (66, 176, 2), (7, 203, 2), (67, 176, 1), (40, 100, 1)])
def test_blocked_square_plans_copy_the_matrix_over_idle_sms(batch, n, copies):
    # BlockedSquareQR (columns beyond a lane's registers) spreads each matrix over up to SQUARE_MAX_COPIES CTAs
    plan = submission.make_plan(batch, n, H200_SMS, H200_SMEM)
    assert plan.square and plan.cluster == copies and plan.resident


def test_square_kernel_serves_every_n_that_fits_in_shared_memory():
    budget = H200_SMEM - submission.SMEM_RESERVE
    square = [n for n in range(1, 400) if submission.make_plan(8, n, H200_SMS, H200_SMEM).square]
    assert square == list(range(1, square[-1] + 1))
    assert submission.panel_smem_bytes(square[-1], square[-1], False) <= budget
    bigger = square[-1] + submission.SQUARE_STEP
    assert submission.panel_smem_bytes(bigger, bigger, False) > budget


def test_one_kernel_serves_a_range_of_n():
    plans = {n: submission.make_plan(640, n, H200_SMS, H200_SMEM) for n in range(1, 1025)}
    assert len(set(plans.values())) <= 64
    assert plans[169] == plans[176] and plans[481] == plans[512] and plans[480] != plans[481]


def test_no_plan_beyond_the_largest_cluster_panel():
    largest = submission.MAX_CLUSTER * submission.PANEL_MAX_ROWS
    assert submission.make_plan(1, largest, H200_SMS, H200_SMEM) is not None
    assert submission.make_plan(1, largest + 1, H200_SMS, H200_SMEM) is None


def test_clusters_only_for_few_matrices():
    assert submission.make_plan(640, 512, H200_SMS, H200_SMEM).cluster == 1
    assert submission.make_plan(60, 1024, H200_SMS, H200_SMEM).cluster == 1      # look-ahead: half the SMs
    assert submission.make_plan(30, 1024, H200_SMS, H200_SMEM).cluster == 2
    assert submission.make_plan(8, 2048, H200_SMS, H200_SMEM).cluster == submission.FILL_MAX_CLUSTER


@pytest.mark.parametrize("batch, n", [(60, 1024), (66, 1024), (30, 2048), (8, 2048), (2, 4096), (1, 4096)])
def test_lookahead_panels_leave_sms_to_the_trailing_updates(batch, n):
    plan = submission.make_plan(batch, n, H200_SMS, H200_SMEM)
    assert submission.looks_ahead(batch, n, H200_SMS) and plan.resident
    assert batch * plan.cluster <= submission.LOOKAHEAD_FILL * H200_SMS
    if plan.cluster == 1:           # alone on its SM: as many threads as a panel handed to one CTA
        assert plan.threads == submission.PANEL_ALONE[1]


@pytest.mark.parametrize("batch, n", [(67, 1024), (60, 1000), (640, 512), (40, 352)])
def test_no_lookahead_for_many_matrices_or_small_n(batch, n):
    assert not submission.looks_ahead(batch, n, H200_SMS)


@pytest.mark.parametrize("batch, n", [(8, 2048), (2, 4096), (1, 4096)])
def test_idle_sms_split_rows_until_columns_fit_registers(batch, n):
    plan = submission.make_plan(batch, n, H200_SMS, H200_SMEM)
    half = submission.blocked_plan(n, plan.cluster // 2, True)
    assert submission.columns_fit_registers(plan.rows, plan.width, plan.threads)
    assert not submission.columns_fit_registers(half.rows, half.width, half.threads)
    assert plan.cluster <= submission.MAX_CLUSTER and batch * plan.cluster <= H200_SMS


def test_columns_stay_in_registers_only_at_one_cta_per_sm():
    assert not submission.make_plan(640, 512, H200_SMS, H200_SMEM).resident
    assert submission.make_plan(60, 1024, H200_SMS, H200_SMEM).resident
    assert submission.make_plan(2, 4096, H200_SMS, H200_SMEM).resident


def test_only_large_square_plans_and_large_blocked_batches_launch_eagerly():
    eager = {(batch, n) for batch, n in submission.BENCHMARK_SHAPES
             if submission.launches_eagerly(batch, n, submission.make_plan(batch, n, H200_SMS, H200_SMEM))}
    assert eager == {(40, 176)}
    # a blocked batch from EAGER_MIN_BYTES of matrices on: 1024 x 512 x 512 floats are 1 GiB
    plan = submission.make_plan(1024, 512, H200_SMS, H200_SMEM)
    assert submission.launches_eagerly(1024, 512, plan) and not submission.launches_eagerly(1023, 512, plan)


def test_a_panel_holds_only_the_rows_left():
    plan = submission.make_plan(640, 512, H200_SMS, H200_SMEM)
    rows = [submission.panel_plan(plan, 512, c).rows for c in range(0, 512, submission.PANEL_WIDTH)]
    assert rows == sorted(rows, reverse=True) and rows[0] == plan.rows
    assert all(r >= 512 - c and r % submission.WARP == 0 for r, c in zip(rows, range(0, 512, submission.PANEL_WIDTH)))
    assert rows[-1] < plan.rows
    square = submission.make_plan(40, 176, H200_SMS, H200_SMEM)
    assert submission.panel_plan(square, 176, 0) == square
    # a pair's second panel: the same CTAs, compiled to merge, holding at least the 2 x 32 rows of its merge
    for n, c in ((512, 32), (512, 448), (300, 256)):
        merging = submission.panel_plan(plan, n, c, merges=True)
        assert merging == submission.replace(submission.panel_plan(plan, n, c), merges=True,
                                             rows=max(merging.rows, 2 * submission.PANEL_WIDTH))
        assert merging.rows >= 2 * submission.PANEL_WIDTH
    assert submission.panel_plan(plan, 300, 256, merges=True).rows == 2 * submission.PANEL_WIDTH


def test_cholesky_panels_are_the_resident_plans_with_many_rows_left():
    for shape, last_cholesky in (((2, 4096), 3552), ((8, 2048), 1504), ((60, 1024), 480)):
        batch, n = shape
        plan = submission.make_plan(batch, n, H200_SMS, H200_SMEM)
        taken = [c for c in range(0, n, submission.PANEL_WIDTH) if submission.panel_plan(plan, n, c).cholesky]
        assert taken == list(range(0, last_cholesky + 1, submission.PANEL_WIDTH))
        # a pair's second panel keeps CholeskyQR2 on one CTA a matrix (it merges T there), not in a cluster
        merging = [submission.panel_plan(plan, n, c, merges=True) for c in taken]
        assert all(p.cholesky == (p.cluster == 1) for p in merging)
        budget = H200_SMEM - submission.SMEM_RESERVE
        assert all(submission.panel_smem_bytes(p.rows, p.width, True, p.cluster, True, p.threads) <= budget
                   for p in (submission.panel_plan(plan, n, c) for c in taken))
    # 70 x 640 (one CTA a matrix, pairs to column 320): the second panels with more than CHOLESKY_MIN_ROWS rows
    plan = submission.make_plan(70, 640, H200_SMS, H200_SMEM)
    steps = submission.schedule(70, 640, 640, submission.looks_ahead(70, 640, H200_SMS), H200_SMS)
    seconds = [step.c + submission.PANEL_WIDTH for step in steps if step.pair]
    assert [c for c in seconds if submission.panel_plan(plan, 640, c, merges=True).cholesky] == [32, 96]
    shared = submission.make_plan(640, 512, H200_SMS, H200_SMEM)       # CTAs that share SMs: the column steps
    assert not any(submission.panel_plan(shared, 512, c).cholesky for c in range(0, 512, submission.PANEL_WIDTH))


def test_panels_of_few_rows_take_fewer_threads_only_where_ctas_share_sms():
    max_rows, narrow = submission.PANEL_NARROW
    shared = submission.make_plan(640, 512, H200_SMS, H200_SMEM)
    threads = {c: submission.panel_plan(shared, 512, c).threads for c in range(0, 512, submission.PANEL_WIDTH)}
    assert threads == {c: narrow if 512 - c <= max_rows else shared.threads for c in threads}
    assert narrow < shared.threads


def test_one_wave_cluster_plans_hand_their_last_panels_to_one_cta_a_matrix():
    alone_rows, alone_threads = submission.PANEL_ALONE
    for batch, n in ((30, 1024), (8, 2048), (40, 352)):        # clusters, one wave: as planned until then
        plan = submission.make_plan(batch, n, H200_SMS, H200_SMEM)
        assert plan.cluster > 1 and plan.resident
        handed = 0
        for c in range(0, n, submission.PANEL_WIDTH):
            panel = submission.panel_plan(plan, n, c)
            if n - c <= alone_rows:
                assert (panel.cluster, panel.threads, panel.resident) == (1, alone_threads, True)
                assert n - c <= panel.rows <= alone_rows
                handed += 1
            else:
                assert (panel.cluster, panel.threads) == (plan.cluster, plan.threads)
        assert handed >= 8          # 352 or 512 rows left: at least 8 panels of 32 columns
    shared = submission.make_plan(640, 512, H200_SMS, H200_SMEM)           # one CTA a matrix already
    assert all(submission.panel_plan(shared, 512, c).cluster == 1 for c in range(0, 512, submission.PANEL_WIDTH))


def test_blocked_plans_end_with_a_one_wave_square_kernel():
    tails = {(batch, n): submission.square_tail(batch, n, H200_SMS, H200_SMEM)
             for batch, n in submission.BENCHMARK_SHAPES if not submission.make_plan(batch, n, H200_SMS,
                                                                                      H200_SMEM).square}
    assert tails == {(40, 352): 128, (640, 512): None, (60, 1024): 800, (8, 2048): 1824, (2, 4096): 3872}
    width, most = submission.PANEL_WIDTH, submission.SQUARE_TAIL_MAX_N
    for n in range(233, 1300, 7):
        c = submission.square_tail(3, n, H200_SMS, H200_SMEM)
        assert c % width == 0 and most - width < n - c <= most     # the first panel column that fits
        tail = submission.make_plan(3, n - c, H200_SMS, H200_SMEM)
        assert tail.square and tail.resident
    assert submission.square_tail(200, 512, H200_SMS, H200_SMEM) is None      # 200 CTAs: two waves


def _blocked_benchmark_steps() -> dict:
    """(batch, n) -> the steps of its schedule on H200, for every benchmark shape on the blocked path."""
    steps = {}
    for batch, n in submission.BENCHMARK_SHAPES:
        if not submission.make_plan(batch, n, H200_SMS, H200_SMEM).square:
            end = submission.square_tail(batch, n, H200_SMS, H200_SMEM) or n
            steps[batch, n] = submission.schedule(batch, n, end, submission.looks_ahead(batch, n, H200_SMS), H200_SMS)
    return steps


def test_pairs_run_while_their_trailing_passes_give_every_sm_enough_column_tiles():
    # pairs on to where the pair's rest update has fewer than PAIR_MIN_TILES column tiles an SM or the
    # trailing matrices fall under PAIR_MIN_BYTES, fused or split by rows alike; few large matrices
    # (8 x 2048, 2 x 4096) never pair
    pairs = {shape: [(step.c, step.rest.fused) for step in steps if step.pair]
             for shape, steps in _blocked_benchmark_steps().items()}
    fused = [(c, True) for c in range(0, 384, 64)]
    assert pairs == {(40, 352): [], (640, 512): fused + [(384, True)],
                     (60, 1024): fused + [(c, False) for c in range(384, 640, 64)], (8, 2048): [], (2, 4096): []}


def test_pair_updates_on_chip_hold_their_strip_whole_where_it_fits_beside_v():
    # on Hopper `pair_update_kernel` serves the benchmark's pair updates at 640 x 512 (fused, whole row
    # blocks): a rest update's strip whole from 384 rows left, else a ring as large as shared memory holds
    # beside V; an inner update's whole, but the first one's, which reads the input, and so the last single
    # panel's (c 448: the 32 columns right of it); never more shared memory than the device has. Split
    # updates and the other shapes stay on Triton
    W = submission.PANEL_WIDTH
    strips = {}
    for (batch, n), steps in _blocked_benchmark_steps().items():
        for step in steps:
            width = 2 * W if step.pair else W
            for kind, update, w in (("rest", step.rest, width), ("inner", step.inner, W), ("next", step.next, width)):
                strip = update and submission.on_chip_strip(n, step.c, w, update, H200_SMEM, step.c == 0)
                if strip:
                    assert submission.on_chip_smem_bytes(n - step.c, w, strip) <= H200_SMEM
                    strips[batch, n, step.c, kind] = strip
    assert strips == {**{(640, 512, c, "rest"): strip for c, strip in ((0, 5), (64, 6), (128, 6), (192, 5), (256, 4),
                                                                      (320, 3), (384, 2), (448, 1))},
                      **{(640, 512, c, "inner"): (512 - c) // 64 for c in range(64, 448, 64)}}
    split = submission.Update(128, 512, 2, submission.TRAIL_BLOCK_N, False)
    assert submission.on_chip_strip(512, 64, 64, split, H200_SMEM) is None


class _Stream:
    """A stream as a vector clock: what a kernel queued on it comes after (stream -> kernels)."""

    cuda_stream = 0

    def __init__(self, name: str):
        self.name, self.clock = name, {}

    def record_event(self) -> dict:
        return dict(self.clock)

    def wait_event(self, event: dict) -> None:
        for name, count in event.items():
            self.clock[name] = max(self.clock.get(name, 0), count)

    def wait_stream(self, other: "_Stream") -> None:
        self.wait_event(other.clock)


def _queued_kernels(batch: int, n: int, end: int, lookahead: bool, monkeypatch) -> tuple[list, list[dict], int]:
    """Run `Factorization.launch` of a plan of (batch, n) that hands columns from `end` to the
    square kernel, on the CPU, reading its input where it can (`staged_columns`, returned): streams are
    vector clocks, and each kernel is recorded with its stream, its clock, the data it reads and writes
    (columns of h, T buffers, V^T C partials) and, for an update, the panels whose reflectors it applies
    and whether it reads the input."""
    W = submission.PANEL_WIDTH
    current = [_Stream("main")]
    kernels = []

    class _On:                                  # torch.cuda.stream(s)
        def __init__(self, stream):
            self.stream = stream

        def __enter__(self):
            self.outer, current[0] = current[0], self.stream

        def __exit__(self, *_):
            current[0] = self.outer

    def queue(kind, reads, writes, reflectors=(), from_input=False):
        stream = current[0]
        stream.clock[stream.name] = stream.clock.get(stream.name, 0) + 1
        kernels.append(dict(kind=kind, stream=stream.name, clock=dict(stream.clock), reads=set(reads) | set(writes),
                            writes=set(writes), reflectors=list(reflectors), from_input=from_input))

    def columns(lo, hi):
        return {("h", j) for j in range(lo, min(hi, n))}

    def apply(h, y, t, c, width, update, source=None):
        queue(("update", c), columns(c, c + width) | {("buffer", t.data_ptr())},
              columns(update.col_lo, update.col_hi) | ({("buffer", y.data_ptr())} if not update.fused else set()),
              range(c // W, (c + width) // W), source is not None and update.fused)

    def panel(t, c, stream):
        # a panel writes its T (or, the second of a pair, the pair's T) and leaves its T in the scratch,
        # which the second of a pair reads with the first one's reflectors
        merges = t.shape[-1] == 2 * W
        queue(("panel", c), columns(c - W if merges else c, c + W) | {("buffer", "scratch")},
              columns(c, c + W) | {("buffer", t.data_ptr())} | (set() if merges else {("buffer", "scratch")}))

    f = object.__new__(submission.Factorization)
    f.plan = submission.Plan(False, W, n, 2, 512, True)
    f.lookahead, f.tail = lookahead, (None if end == n else end)
    f.steps = submission.schedule(batch, n, end, lookahead, H200_SMS)
    f.staged = submission.staged_columns(f.steps, W)
    f.t, f.t_pair = torch.zeros((2, batch, W, W)), torch.zeros((2, batch, 2 * W, 2 * W))
    f.y_next, f.y_rest = torch.zeros(1), torch.zeros(1)
    f.size, f.side = torch.zeros(batch), (_Stream("side") if lookahead else None)     # as the constructor
    panels = -(-end // W)
    merging = submission.merging_panels(f.steps)
    f._cute_args = lambda h, tau: [(f.t_pair[merging[k]] if k in merging else f.t[k % 2],) for k in range(panels)]
    f._bind_panels = lambda cute_args, stream: None     # each panel launched with its own arguments
    f.panels = [panel] * panels
    f.tail_kernel = lambda *args: queue(("tail", end), columns(end, n), columns(end, n))
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *args: current[0])
    monkeypatch.setattr(torch.cuda, "stream", _On)
    monkeypatch.setattr(submission, "_apply_block_reflector", apply)
    monkeypatch.setattr(submission, "_lift", lambda h, size, inverse, col_end=None:
                        queue("lift", (), columns(0, n if col_end is None else col_end)))
    monkeypatch.setattr(submission, "_square_pointer_args", lambda *args: ())
    monkeypatch.setattr(submission, "cuda", types.SimpleNamespace(CUstream=lambda handle: None), raising=False)
    monkeypatch.setattr(submission, "cutlass", types.SimpleNamespace(Int32=int), raising=False)
    f.launch(torch.zeros((batch, n, n)), torch.zeros((batch, n)), None if f.staged is None else torch.zeros(1))
    return f.steps, kernels, f.staged


@pytest.mark.parametrize("lookahead", [True, False])
@pytest.mark.parametrize("batch,n,end,pair_bytes,paired", [
    (2, 300, 300, 0, True), (2, 300, 96, 0, True), (2, 1100, 896, 2 * 700 ** 2 * 4, True),
    (60, 1024, 800, None, True), (8, 2048, 1824, None, False), (2, 4096, 3872, None, False),
    (640, 512, 512, None, True), (3, 300, 300, 1 << 62, False),
])
def test_launch_updates_every_column_once_in_order_without_races(batch, n, end, pair_bytes, paired, lookahead,
                                                                 monkeypatch):
    if pair_bytes is not None:      # the synthetic cases pair however few their matrices: every update fused
        monkeypatch.setattr(submission, "PAIR_MIN_BYTES", pair_bytes)
        monkeypatch.setattr(submission, "PAIR_MIN_TILES", 0)
        monkeypatch.setattr(submission, "TRAIL_FUSE_PROGRAMS", 0)
    W = submission.PANEL_WIDTH
    steps, kernels, staged = _queued_kernels(batch, n, end, lookahead, monkeypatch)
    pairs = [step.pair for step in steps]
    assert pairs == sorted(pairs, reverse=True)                 # pairs first, then single panels
    assert [step.c for step in steps] == [sum(2 * W if pair else W for pair in pairs[:i]) for i in range(len(steps))]
    assert any(pairs) == paired
    tiles = submission.PAIR_MIN_TILES * H200_SMS
    assert all(batch * -(-(n - step.rest.col_lo) // submission.TRAIL_BLOCK_N) >= tiles for step in steps if step.pair)
    # kernels on different streams that share data are ordered by the waits
    for i, first in enumerate(kernels):
        for then in kernels[i + 1:]:
            shared = first["writes"] & then["reads"] or then["writes"] & first["reads"]
            if first["stream"] != then["stream"] and shared:
                assert first["clock"][first["stream"]] <= then["clock"].get(first["stream"], 0), (first, then)
    # so launch order is the data's order: a panel sees every earlier reflector once, in order, and no
    # reflector reaches it later; the columns the square kernel takes see them all
    applied = {j: [] for j in range(n)}
    for kernel in kernels:
        if kernel["kind"][0] == "panel":
            c = kernel["kind"][1]
            assert all(applied[j] == list(range(c // W)) for j in range(c, min(c + W, n))), c
        elif kernel["kind"][0] == "tail":
            assert all(applied[j] == list(range(end // W)) for j in range(end, n))
        for j in range(n):
            if ("h", j) in kernel["writes"] and kernel["reflectors"]:
                applied[j] += kernel["reflectors"]
    assert all(applied[j] == list(range(j // W)) for j in range(end))
    assert all(applied[j] == list(range(-(-end // W))) for j in range(end, n))
    # a call that reads its input stages the columns below `staged`: the first kernel on each other column
    # reads it from the input
    for j in range(n if staged is None else staged, n):
        assert next(kernel for kernel in kernels if ("h", j) in kernel["reads"])["from_input"], j
    assert all(kernel["kind"] == ("update", 0) for kernel in kernels if kernel["from_input"])


def test_bound_panels_swap_in_their_own_t_and_column(monkeypatch):
    # `_launch_panel` from a call's bound arguments: panel k gets its own T and c, in a copy (the bound
    # list serves every panel of the call); without bound arguments, a plain launch of its own arguments
    launched = []
    panel = types.SimpleNamespace(run_compiled_program=lambda pointers: launched.append(pointers))
    f = object.__new__(submission.Factorization)
    f.plan = submission.Plan(False, 32, 128, 1, 256, True)
    f.panels = [panel] * 4
    f.panel_pointers = [["T even", "T pair", "T even", "T odd"], [f"c {k * 32}" for k in range(4)]]
    bound_pointers = [f"pointer {slot}" for slot in range(submission.PANEL_POINTERS)]
    bound = (list(bound_pointers), "adapted")
    for k in range(4):
        f._launch_panel(k, bound, None, None)
    assert bound[0] == bound_pointers
    for k, pointers in enumerate(launched):
        want = list(bound_pointers)
        want[submission.PANEL_T_SLOT] = f.panel_pointers[0][k]
        want[submission.PANEL_C_SLOT] = f"c {k * 32}"
        assert pointers == want, k
    plain = []
    f.panels = [lambda *args: plain.append(args)] * 4
    monkeypatch.setattr(submission, "cutlass", types.SimpleNamespace(Int32=int), raising=False)
    f._launch_panel(3, None, [(f"panel {k}",) for k in range(4)], "stream")
    assert plain == [("panel 3", 96, "stream")]


def test_a_graph_is_cut_where_the_rest_follows_every_node_before_it_but_the_last():
    # two streams: 0 -> 1 -> 2 and 3 -> 4, joined by 5, then 6 -> 7 beside 8, both before 9
    edges = [(0, 1), (1, 2), (3, 4), (2, 5), (4, 5), (5, 6), (6, 7), (5, 8), (7, 9), (8, 9)]
    # cut after 1, 3 could run alongside 0 and 1; 5 is a join
    assert submission.graph_prefix(10, edges, 2) == {0, 1, 2, 3, 4, 5}
    assert submission.graph_prefix(10, edges, 6) == {0, 1, 2, 3, 4, 5}
    assert submission.graph_prefix(10, edges, 7) == {0, 1, 2, 3, 4, 5, 6}     # 8 could run alongside 6 alone
    assert submission.graph_prefix(10, edges, 8) is None    # after 7, 8 could run alongside 6 and 7
    assert submission.graph_prefix(4, [(3, 2), (2, 1), (1, 0)], 2) == {3, 2}
    # chains that never meet: the other chain could run alongside every node of a cut
    assert submission.graph_prefix(6, [(0, 1), (1, 2), (3, 4), (4, 5)], 2) is None


# ---------------------------------------------------------------------------
# Fallbacks and errors (CPU)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cpu_input_falls_back_to_geqrf(dtype):
    a = torch.randn((3, 9, 9), dtype=dtype)
    h, tau = submission.custom_kernel(a)
    ref_h, ref_tau = torch.geqrf(a)
    assert torch.equal(h, ref_h) and torch.equal(tau, ref_tau)


@pytest.mark.parametrize("bad,error", [
    ([[1.0, 2.0], [3.0, 4.0]], TypeError),
    (torch.ones(5), ValueError),
    (torch.ones((2, 4, 4), dtype=torch.int32), ValueError),
    (torch.ones((2, 4, 4), dtype=torch.float16), ValueError),
])
def test_unsupported_input_raises_a_clear_error(bad, error):
    with pytest.raises(error, match="custom_kernel"):
        submission.custom_kernel(bad)


@pytest.mark.parametrize("n,chunks", [(300, [3, 3, 2]), (176, [8])])
def test_batches_past_the_grid_limit_go_in_chunks_on_the_blocked_path(n, chunks, monkeypatch):
    # the blocked path's Triton grids hold the batch in an extent of at most GRID_MAX_BATCH programs: a
    # larger batch is factored in chunks whose outputs land in order; a square plan (one CuTe grid, the
    # batch in its x extent) takes the batch whole
    seen = []

    def factorization(batch, n, device):
        seen.append(batch)
        return torch.geqrf

    monkeypatch.setattr(submission, "GRID_MAX_BATCH", 3)
    monkeypatch.setattr(submission, "cutlass", types.SimpleNamespace(), raising=False)
    monkeypatch.setattr(submission, "_device_limits", lambda index: (H200_SMS, H200_SMEM))
    monkeypatch.setattr(submission, "_factorization", factorization)
    a = torch.randn((8, n, n))
    h, tau = submission._factor(a)
    assert seen == chunks
    ref_h, ref_tau = torch.geqrf(a)
    assert torch.equal(h, ref_h) and torch.equal(tau, ref_tau)


def test_the_fast_path_factors_a_detached_input(monkeypatch):
    # an input that requires grad: neither the outputs nor the cached buffers (which a square graph plan
    # copies the input into) may take its autograd history
    seen = []

    def factorization(batch, n, device):
        return lambda data: seen.append(data.requires_grad) or torch.geqrf(data)

    monkeypatch.setattr(submission, "cutlass", types.SimpleNamespace(), raising=False)
    monkeypatch.setattr(submission, "_factorization", factorization)
    a = torch.randn((2, 40, 40), requires_grad=True)
    h, tau = submission._factor(a)
    assert seen == [False] and not h.requires_grad and not tau.requires_grad
    assert torch.equal(h, torch.geqrf(a.detach())[0])


# ---------------------------------------------------------------------------
# GPU: the task's specs and the properties a caller relies on
# ---------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("service_seed", SERVICE_SEEDS)
@pytest.mark.parametrize("spec", ALL_SPECS,
                         ids=lambda s: f"{s['batch']}x{s['n']}-{s.get('case', 'dense')}-{s['seed']}")
def test_spec_passes_with_margin(spec, service_seed):
    args = dict(spec, seed=utils.combine_seed(spec["seed"], service_seed))
    a = reference.generate_input(**args)
    assert_factors(a, submission.custom_kernel(a))


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 2, 3, 31, 33, 255, 257, 511, 513, 1000, 1025])
@pytest.mark.parametrize("batch", [1, 3])
def test_odd_shapes(batch, n):
    a = reference.generate_input(batch, n, 1, 1000 + n, "dense")
    assert_factors(a, submission.custom_kernel(a))


@pytest.mark.gpu
@pytest.mark.parametrize("batch", [1, 7, 40])
@pytest.mark.parametrize("ns", [range(1, 65), range(150, 241)], ids=["n1-64", "n150-240"])
def test_small_and_square_sweeps(batch, ns):
    for n in ns:
        a = reference.generate_input(batch, n, 1, 1000 + n, "dense")
        assert_factors(a, submission.custom_kernel(a))


@pytest.mark.gpu
@pytest.mark.parametrize("magnitude", [1e30, 1e-30])
@pytest.mark.parametrize("batch,n", [(4, 32), (4, 200), (3, 512), (2, 1024), (1, 2048)])
def test_extreme_magnitudes(batch, n, magnitude):
    # squares of such entries overflow / underflow float32: the column norms must be rescaled
    a = reference.generate_input(batch, n, 0, 17, "dense") * magnitude
    assert_factors(a, submission.custom_kernel(a))


@pytest.mark.gpu
@pytest.mark.parametrize("n", [32, 202, 512])         # 202: the blocked square kernel
def test_magnitudes_mixed_in_one_batch(n):
    a = reference.generate_input(4, n, 1, 23, "dense")
    a *= torch.tensor([1.0, 1e30, 1e-30, 1e18], device=a.device)[:, None, None]
    h, tau = submission.custom_kernel(a)
    for b in range(4):
        assert_factors(a[b:b + 1], (h[b:b + 1], tau[b:b + 1]))


@pytest.mark.gpu
@pytest.mark.parametrize("n", [32, 202, 512])         # 202: zero columns from 101, inside a block of 4
def test_zero_matrix_and_zero_columns_give_tau_zero(n):
    a = reference.generate_input(3, n, 0, 29, "dense")
    a[0] = 0.0
    a[1, :, n // 2:] = 0.0
    h, tau = submission.custom_kernel(a)
    assert torch.equal(h[0], a[0]) and torch.equal(tau[0], torch.zeros_like(tau[0]))
    assert torch.equal(tau[1, n // 2:], torch.zeros_like(tau[1, n // 2:]))
    assert_factors(a[1:], (h[1:], tau[1:]))


@pytest.mark.gpu
@pytest.mark.parametrize("block,threads", [(2, 512), (8, 384)])     # blocks of 8 need 384 threads' registers
def test_blocked_square_kernel_at_other_block_sizes(block, threads, monkeypatch):
    # n = 203 ends in a partial block; matrix 1's zero columns start inside a block
    monkeypatch.setattr(submission, "SQUARE_BLOCK", block)
    monkeypatch.setattr(submission, "SQUARE_THREADS", threads)
    monkeypatch.setattr(submission, "_COMPILED", {})
    for n in (176, 203):
        a = reference.generate_input(7, n, 1, 79, "dense")
        a[1, :, 101:] = 0.0
        h, tau = submission.Factorization(7, n, a.device)(a)
        assert torch.equal(tau[1, 101:], torch.zeros_like(tau[1, 101:]))
        assert_factors(a, (h, tau))


@pytest.mark.gpu
@pytest.mark.parametrize("n,copies", [(176, (1, 3)), (203, (1, 2, 4))])
def test_blocked_square_copies_give_the_same_bits(n, copies, monkeypatch):
    # every copy factors every block alike and an owner's columns reach its peers as they are, so any
    # number of copies gives the one-CTA result bit for bit (zero columns from 101: tau 0 inside a block)
    a = reference.generate_input(7, n, 1, 81, "dense")
    a[1, :, 101:] = 0.0
    a[2] *= 1e-30
    results = []
    for count in copies:
        monkeypatch.setattr(submission, "SQUARE_MAX_COPIES", count)
        f = submission.Factorization(7, n, a.device)
        assert f.plan.cluster == count
        results.append(f(a))
    for h, tau in results[1:]:
        assert torch.equal(h, results[0][0]) and torch.equal(tau, results[0][1])
    assert_factors(a, results[0])


@pytest.mark.gpu
@pytest.mark.parametrize("n", [176, 203])
def test_blocked_square_kernel_last_columns_of_extreme_size(n):
    # columns in the blocked square kernel's last blocks far below or above the others take the rescaled
    # norm, and zero columns there give tau = 0
    a = reference.generate_input(3, n, 1, 83, "dense")
    a[0, :, n - 20:] *= 1e-25
    a[1, :, n - 7] *= 1e22
    a[2, :, n - 3:] = 0.0
    h, tau = submission.custom_kernel(a)
    assert torch.equal(tau[2, n - 3:], torch.zeros_like(tau[2, n - 3:]))
    for b in range(3):
        assert_factors(a[b:b + 1], (h[b:b + 1], tau[b:b + 1]))
    ref_h, ref_tau = torch.geqrf(a.double())
    r_diag, ref_diag = h.diagonal(dim1=-2, dim2=-1).double(), ref_h.diagonal(dim1=-2, dim2=-1)
    assert torch.allclose(r_diag, ref_diag, rtol=1e-3, atol=0.0)
    assert torch.allclose(tau.double(), ref_tau, rtol=1e-3, atol=1e-3)


@pytest.mark.gpu
@pytest.mark.parametrize("batch,n", [(20, 32), (40, 176), (40, 352), (16, 512), (4, 1024), (2, 2048)])
def test_agrees_with_geqrf(batch, n):
    # the same reflectors as LAPACK's (larfg's signs), not merely some valid QR: R, V (|v| <= 1) and tau
    a = reference.generate_input(batch, n, 0, 7, "dense")
    h, tau = submission.custom_kernel(a)
    ref_h, ref_tau = torch.geqrf(a.double())
    r_diag, ref_diag = h.diagonal(dim1=-2, dim2=-1).double(), ref_h.diagonal(dim1=-2, dim2=-1)
    assert torch.allclose(r_diag, ref_diag, rtol=1e-3, atol=1e-3 * ref_diag.abs().max())
    assert (h.double().triu() - ref_h.triu()).abs().max() <= 1e-3 * ref_h.triu().abs().max()
    assert (h.double().tril(-1) - ref_h.tril(-1)).abs().max() <= 1e-2
    assert torch.allclose(tau.double(), ref_tau, rtol=1e-3, atol=1e-3)
    assert_factors(a, (h, tau))


@pytest.mark.gpu
@pytest.mark.parametrize("batch,n", [(20, 32), (40, 176), (40, 352), (2, 1024)])
def test_state_input_untouched_outputs_fresh_and_deterministic(batch, n):
    a = reference.generate_input(batch, n, 2, 5, "mixed")
    original = a.clone()
    h1, tau1 = submission.custom_kernel(a)
    kept = h1.clone(), tau1.clone()
    h2, tau2 = submission.custom_kernel(a)
    torch.cuda.synchronize()
    assert torch.equal(a, original)
    assert h1.data_ptr() != h2.data_ptr() and tau1.data_ptr() != tau2.data_ptr()
    assert torch.equal(h1, kept[0]) and torch.equal(tau1, kept[1])
    assert torch.equal(h1, h2) and torch.equal(tau1, tau2)
    h2.fill_(float("nan"))                  # h and tau share an allocation but no element
    assert torch.equal(tau2, kept[1])


@pytest.mark.gpu
@pytest.mark.parametrize("batch,n,eager_bytes", [(20, 32, None), (40, 176, None), (40, 352, None), (2, 1024, None),
                                                 (256, 512, 0)])       # 40x176, 256x512: eager
def test_side_streams(batch, n, eager_bytes, monkeypatch):
    if eager_bytes is not None:
        monkeypatch.setattr(submission, "EAGER_MIN_BYTES", eager_bytes)
    inputs = [reference.generate_input(batch, n, 1, seed, "dense") for seed in (1, 2)]
    expected = [submission.custom_kernel(a) for a in inputs]
    torch.cuda.synchronize()
    results = [None, None]

    def work(i):
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            torch.cuda._sleep(10_000_000)     # the side stream lags: unordered work would race
            results[i] = submission.custom_kernel(inputs[i])
        stream.synchronize()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for (h, tau), (ref_h, ref_tau) in zip(results, expected):
        assert torch.equal(h, ref_h) and torch.equal(tau, ref_tau)


@pytest.mark.gpu
@pytest.mark.parametrize("batch,n", [(3, 300), (40, 176)])         # a graph call; an eager square call
def test_a_call_waits_for_the_last_one_only_from_another_stream(batch, n, monkeypatch):
    # calls on streams A A B A, B's behind a sleep: the second call on A follows the first by A's own order
    # (no wait); B's call waits for A's last, and A's next for B's. Each call's bits are those of the
    # same input on the default stream
    a = reference.generate_input(batch, n, 1, 91, "dense")
    expected = submission.custom_kernel(a)
    f = submission._FACTORIZATIONS[(a.device.index, batch, n)]
    waits = []
    wait_event = torch.cuda.Stream.wait_event
    monkeypatch.setattr(torch.cuda.Stream, "wait_event",
                        lambda stream, event: (waits.append(stream) if event is f.done else None)
                        or wait_event(stream, event))
    first, second = torch.cuda.Stream(), torch.cuda.Stream()
    outputs = []
    for stream in (first, first, second, first):
        with torch.cuda.stream(stream):
            if stream is second:
                torch.cuda._sleep(100_000_000)
            outputs.append(submission.custom_kernel(a))
    torch.cuda.synchronize()
    assert waits == [first, second, first]
    for h, tau in outputs:
        assert torch.equal(h, expected[0]) and torch.equal(tau, expected[1])


@pytest.mark.gpu
def test_compile_cache_keyed_by_plan_not_batch_or_n():
    # batch and n are run-time sizes: shapes with the same plans (here, on H200, panels on one CTA a matrix
    # of 384 and 256 rows, then a square tail of 208 columns) reuse every compiled kernel, and a shape with
    # other plans adds the kernels it launches, none else
    submission.custom_kernel(torch.randn((3, 300, 300), device="cuda"))
    compiled = dict(submission._COMPILED)
    for batch, n in [(5, 300), (3, 298)]:
        a = torch.randn((batch, n, n), device="cuda")
        assert_factors(a, submission.custom_kernel(a))
    assert submission._COMPILED == compiled
    a = torch.randn((3, 600, 600), device="cuda")
    submission.custom_kernel(a)
    f = submission._FACTORIZATIONS[(a.device.index, 3, 600)]
    added = {id(kernel) for key, kernel in submission._COMPILED.items() if key not in compiled}
    assert added <= {id(kernel) for kernel in [*f.panels, f.tail_kernel]}


@pytest.mark.gpu
@pytest.mark.parametrize("batch,n", [(3, 300), (640, 300), (2, 1100)])
def test_lookahead_and_plain_launch_orders_both_factor(batch, n):
    a = reference.generate_input(batch, n, 1, 67, "dense")
    for lookahead in (False, True):
        f = submission.Factorization(batch, n, a.device, lookahead=lookahead)
        assert_factors(a, f(a))


@pytest.mark.gpu
def test_lookahead_graph_captures_its_chain_above_its_trailing_updates(monkeypatch):
    # 2 x 1100: look-ahead; the panels and next-panel updates are captured on the chain stream, the rest
    # updates on the side stream, and the graph's kernel nodes keep those streams' priorities
    cuda = submission.cuda
    a = reference.generate_input(2, 1100, 1, 89, "dense")
    f = submission.Factorization(2, 1100, a.device)
    assert f.lookahead and f.graph is not None and f.chain.priority < f.side.priority
    captured = []
    graph = torch.cuda.graph

    def recording_graph(cuda_graph, **kwargs):
        captured.append(kwargs["stream"])
        return graph(cuda_graph, **kwargs)

    monkeypatch.setattr(torch.cuda, "graph", recording_graph)
    f.graph = f._capture()
    assert captured == [f.chain]

    def kernel_priorities(graph) -> list[int]:
        error, _, count = cuda.cuGraphGetNodes(graph, 0)
        error, nodes, count = cuda.cuGraphGetNodes(graph, count)
        assert error == cuda.CUresult.CUDA_SUCCESS
        priorities = []
        for node in nodes:
            if cuda.cuGraphNodeGetType(node)[1] == cuda.CUgraphNodeType.CU_GRAPH_NODE_TYPE_KERNEL:
                priority = cuda.CUkernelNodeAttrID.CU_LAUNCH_ATTRIBUTE_PRIORITY
                error, value = cuda.cuGraphKernelNodeGetAttribute(node, priority)
                assert error == cuda.CUresult.CUDA_SUCCESS
                priorities.append(value.priority)
        return priorities

    priorities = kernel_priorities(cuda.CUgraph(f.graph.raw_cuda_graph()))
    assert set(priorities) == {f.chain.priority, f.side.priority}
    rests = sum(step.rest is not None for step in f.steps)
    assert priorities.count(f.chain.priority) >= len(f.panels) and priorities.count(f.side.priority) >= rests
    # the two parts the graph is cut into keep them (`RetargetedGraph`)
    assert sorted(sum(map(kernel_priorities, f.retargeted.clones), [])) == sorted(priorities)
    assert_factors(a, f(a))     # the graph, launched on fresh outputs


@pytest.mark.gpu
@pytest.mark.parametrize("lookahead", [True, False])
@pytest.mark.parametrize("batch,n,pair_bytes,fuse_all", [
    (3, 300, 0, True), (2, 1100, 2 * 700 ** 2 * 4, True), (40, 1100, 0, False), (528, 256, 0, False),
    (70, 640, 0, False),
])
def test_paired_and_single_panels_both_factor(batch, n, pair_bytes, fuse_all, lookahead, monkeypatch):
    # with every update fused, pairs all the way to the square tail, or pairs then single panels (2 x 1100:
    # from column 416); 40 x 1100 pairs to column 576 (its rest updates split by rows from column 192, 256
    # without look-ahead); 528 x 256 launches eagerly (EAGER_MIN_BYTES lowered), its first pair's updates
    # reading the input; 70 x 640's first two pairs are CholeskyQR2 panels on one CTA a matrix, the second
    # merging T
    if fuse_all:
        monkeypatch.setattr(submission, "TRAIL_FUSE_PROGRAMS", 0)
        monkeypatch.setattr(submission, "PAIR_MIN_TILES", 0)
    if (batch, n) == (528, 256):
        monkeypatch.setattr(submission, "EAGER_MIN_BYTES", 0)
    a = reference.generate_input(batch, n, 1, 83, "dense")
    a[0] *= 1e-30                   # lifted before the tensor-core updates
    for threshold in (pair_bytes, 1 << 62):
        monkeypatch.setattr(submission, "PAIR_MIN_BYTES", threshold)
        f = submission.Factorization(batch, n, a.device, lookahead=lookahead)
        assert any(step.pair for step in f.steps) == (threshold == pair_bytes)
        assert_factors(a, f(a))
        assert_factors(a, f(a))     # the graph's replay


@pytest.mark.gpu
@pytest.mark.parametrize("batch,n", [(3, 300), (2, 1100), (40, 352)])
def test_square_tail_leaves_the_panels_columns_as_they_were(batch, n):
    # the panels before the tail run the same kernels either way: their columns come out bit for bit
    a = reference.generate_input(batch, n, 1, 79, "dense")
    a[0] *= 1e-30                   # lifted before the panels, its R scaled back after the tail
    tailed = submission.Factorization(batch, n, a.device)
    assert tailed.tail is not None
    h, tau = tailed(a)
    ref_h, ref_tau = submission.Factorization(batch, n, a.device, tail=False)(a)
    c = tailed.tail
    assert torch.equal(h[..., :c], ref_h[..., :c]) and torch.equal(tau[:, :c], ref_tau[:, :c])
    assert torch.equal(h[:, :c, c:], ref_h[:, :c, c:])        # R's rows above the tail
    assert_factors(a, (h, tau))
    assert_factors(a, (ref_h, ref_tau))


@pytest.mark.gpu
@pytest.mark.parametrize("batch,n", [(3, 300), (2, 1100)])
def test_eager_launches_factor_into_fresh_outputs(batch, n, monkeypatch):
    monkeypatch.setattr(submission, "EAGER_MIN_BYTES", 0)
    a = reference.generate_input(batch, n, 1, 71, "dense")
    f = submission.Factorization(batch, n, a.device)
    assert f.eager and f.graph is None and f.h is None and f.nbytes < a.nbytes
    first, second = f(a), f(a)
    assert first[0].data_ptr() != second[0].data_ptr() and first[1].data_ptr() != second[1].data_ptr()
    assert torch.equal(first[0], second[0]) and torch.equal(first[1], second[1])
    assert_factors(a, first)


@pytest.mark.gpu
def test_retargeted_graph_runs_its_kernels_on_other_buffers():
    # the captured kernels write y from element 1024 on; launched on z they write z from element 1024 on
    y = torch.zeros(4096, device="cuda")
    graph = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.graph(graph):
        y[1024:].mul_(2).add_(1)
    retargeted = submission.RetargetedGraph(graph, [y])
    [part] = retargeted.parts
    assert len(part.kernels) == 2 and not part.memsets
    z = torch.full_like(y, 3.0)
    retargeted.launch((z,), torch.cuda.current_stream())
    assert torch.equal(z[:1024], torch.full_like(z[:1024], 3.0))
    assert torch.equal(z[1024:], torch.full_like(z[1024:], 7.0))
    assert torch.equal(y, torch.zeros_like(y))


@pytest.mark.gpu
def test_retargeted_graph_cut_in_two_parts_runs_every_kernel_in_order(monkeypatch):
    # a chain of 2 * 10 kernels (y := 2 y, then y += 1, ten times) is cut after its 4th node; launched on a
    # buffer z, both parts run on z in order: 3 -> 2 (2 (3 ... ) + 1) + 1 = 4 * 2^10 - 1
    monkeypatch.setattr(submission, "RETARGET_PREFIX_NODES", 4)
    monkeypatch.setattr(submission, "RETARGET_EXECUTABLES", 2)
    y = torch.zeros(4096, device="cuda")
    graph = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.graph(graph):
        for _ in range(10):
            y[1024:].mul_(2).add_(1)
    retargeted = submission.RetargetedGraph(graph, [y])
    assert [len(part.kernels) for part in retargeted.parts] == [4, 16]
    rewrites = []
    set_params = submission.cuda.cuGraphExecKernelNodeSetParams
    monkeypatch.setattr(submission.cuda, "cuGraphExecKernelNodeSetParams",
                        lambda *args: rewrites.append(args[1]) or set_params(*args))
    # each of the two executable copies keeps the buffer it last ran on: a launch on a buffer that one holds
    # rewrites no node, one on another buffer rewrites all 20 nodes of the copy launched least recently
    first, second, third = (torch.empty_like(y) for _ in range(3))
    for z, expected_rewrites in ((first, 20), (second, 20), (second, 0), (first, 0), (third, 20), (first, 0),
                                 (second, 20)):
        z.fill_(3.0)
        rewrites.clear()
        retargeted.launch((z,), torch.cuda.current_stream())
        assert len(rewrites) == expected_rewrites
        assert torch.equal(z[:1024], torch.full_like(z[:1024], 3.0))
        assert torch.equal(z[1024:], torch.full_like(z[1024:], 4.0 * 2 ** 10 - 1))
    assert torch.equal(y, torch.zeros_like(y))


@pytest.mark.gpu
@pytest.mark.parametrize("batch,n,refusal", [(3, 100, None), (3, 300, None), (2, 1100, None), (40, 1024, None),
                                              (40, 1024, "driver"), (3, 300, "length")])
def test_graph_calls_factor_into_fresh_outputs_with_the_bits_of_eager_launches(batch, n, refusal, monkeypatch):
    # a graph plan's call launches its graph on fresh outputs (`RetargetedGraph`), at 40x1024 reading the
    # input past the staged columns (lifting the tiny matrix as it reads it): the bits of the same launches
    # run eagerly, and an earlier call's outputs stay as they were through later calls. Where the graph
    # cannot be retargeted (a driver without it, a graph longer than RETARGET_MAX_NODES), it is captured
    # again without its staging and replayed, the input staged into its buffers first: the same bits
    def unsupported(graph, buffers):
        raise NotImplementedError("a driver that cannot retarget")

    retargets = refusal is None
    if refusal == "driver":
        monkeypatch.setattr(submission, "RetargetedGraph", unsupported)
    if refusal == "length":
        monkeypatch.setattr(submission, "RETARGET_MAX_NODES", 2)
    a = reference.generate_input(batch, n, 1, 73, "dense")
    a[0] *= 1e-30
    b = reference.generate_input(batch, n, 1, 74, "dense")
    f = submission.Factorization(batch, n, a.device)
    assert not f.eager and f.graph is not None and (f.retargeted is not None) == retargets
    assert f.reads_input == (n == 1024 and retargets)
    assert f.captures_left == submission.CAPTURE_ATTEMPTS - 1
    if n >= 1024 and retargets:     # look-ahead: a graph of ~70-100 kernels, cut in two
        assert len(f.retargeted.parts) == 2
    first = f(a)
    if retargets:       # h, tau and, for a blocked plan, the input its graph stages itself
        assert len(f.retargeted.bases) == (2 if f.plan.square else 3)
    kept = first[0].clone(), first[1].clone()
    second = f(b)
    assert first[0].data_ptr() not in (f.h.data_ptr(), second[0].data_ptr())
    assert torch.equal(first[0], kept[0]) and torch.equal(first[1], kept[1])
    h, tau = torch.empty_like(a), a.new_empty((batch, n))
    f.stage(a, h, f.staged if f.reads_input else None)
    f.launch(h, tau, a if f.reads_input else None)
    assert torch.equal(first[0], h) and torch.equal(first[1], tau)
    shifted = a.new_empty(a.numel() + 1)[1:].view_as(a).copy_(a)      # off 16-byte alignment: staged whole
    assert all(map(torch.equal, f(shifted), first))
    # outputs freed before the next call come back from torch's allocator at the same addresses, which the
    # graph's words then already hold (not written again); the call still factors the data it is given
    source = b.clone()
    out = f(source)
    addresses = [t.data_ptr() for t in out]
    del out
    source.copy_(a)
    again = f(source)
    assert [t.data_ptr() for t in again] == addresses
    assert all(map(torch.equal, again, first))
    assert_factors(a[:1], (first[0][:1], first[1][:1]))
    assert_factors(a[1:], (first[0][1:], first[1][1:]))
    assert_factors(b, second)


@pytest.mark.gpu
@pytest.mark.parametrize("batch,n", [(5, 512), (7, 384)])
def test_pair_updates_on_chip_in_a_graph_give_the_bits_of_eager_launches(batch, n, monkeypatch):
    # on Hopper the pairs' rest updates of whole row blocks take `pair_update_kernel`, whose TMA descriptors
    # of h the captured graph holds: launched on other outputs (`RetargetedGraph` rewrites their address),
    # calls give the bits of the same launches run eagerly on those outputs, and factor
    if not submission._on_chip_device(torch.cuda.current_device()):
        pytest.skip("pair_update_kernel runs on compute capability 9.0 with a Triton of ON_CHIP_TRITON")
    monkeypatch.setattr(submission, "PAIR_MIN_BYTES", 0)
    monkeypatch.setattr(submission, "PAIR_MIN_TILES", 0)
    monkeypatch.setattr(submission, "TRAIL_FUSE_PROGRAMS", 0)
    a = reference.generate_input(batch, n, 1, 91, "dense")
    b = reference.generate_input(batch, n, 1, 92, "rankdef")
    f = submission.Factorization(batch, n, a.device)
    smem = submission._device_limits(a.device.index)[1]
    width = 2 * submission.PANEL_WIDTH
    assert any(step.pair and submission.on_chip_strip(n, step.c, width, step.rest, smem) for step in f.steps)
    assert f.retargeted is not None
    first = f(a)
    kept = first[0].clone(), first[1].clone()
    second = f(b)                   # other outputs, the first call's kept: the descriptors' words rewritten
    for data, got in ((a, kept), (b, second)):
        h, tau = torch.empty_like(data), data.new_empty((batch, n))
        f.stage(data, h, f.staged if f.reads_input else None)
        f.launch(h, tau, data if f.reads_input else None)
        assert torch.equal(got[0], h) and torch.equal(got[1], tau)
        assert_factors(data, got)
    assert torch.equal(first[0], kept[0])


@pytest.mark.gpu
@pytest.mark.parametrize("batch,n,eager,pairs", [
    (3, 300, True, False), (2, 1100, True, False), (2, 1100, False, False), (3, 300, True, True), (2, 1100, False, True),
])
def test_panels_bound_once_a_call_give_the_bits_of_plain_launches(batch, n, eager, pairs, monkeypatch):
    # a call converts the first panel's arguments once and swaps in each panel's T and c (`_launch_panel`);
    # launching every panel with its own arguments instead gives the same bits, eagerly and in a graph, with
    # pairs too (whose second panels write the pairs' T)
    if pairs:
        monkeypatch.setattr(submission, "PAIR_MIN_BYTES", 0)
        monkeypatch.setattr(submission, "PAIR_MIN_TILES", 0)
        monkeypatch.setattr(submission, "TRAIL_FUSE_PROGRAMS", 0)
    monkeypatch.setattr(submission, "EAGER_MIN_BYTES", 0 if eager else 1 << 62)
    a = reference.generate_input(batch, n, 1, 83, "dense")
    f = submission.Factorization(batch, n, a.device)
    assert f.eager == eager and any(step.pair for step in f.steps) == pairs
    stream = submission.cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    assert f._bind_panels(f._cute_args(torch.empty_like(a), a.new_empty((batch, n)))[0], stream) is not None
    bound = f(a)
    monkeypatch.setattr(f, "_bind_panels", lambda cute_args, stream: None)
    if not eager:
        f.graph = f._capture()
        assert f.graph is not None
    plain = f(a)
    assert torch.equal(bound[0], plain[0]) and torch.equal(bound[1], plain[1])
    assert_factors(a, bound)


@pytest.mark.gpu
def test_first_update_reads_a_contiguous_input_as_a_staged_copy(monkeypatch):
    # 640 x 300: one CTA a matrix and a first pair whose two updates are fused (their 640 and 2560 column
    # tiles give every SM 4 programs up to 160 SMs), so a contiguous input is read in place
    monkeypatch.setattr(submission, "EAGER_MIN_BYTES", 0)
    a = reference.generate_input(640, 300, 1, 73, "dense")
    a[0] *= 1e-30                   # lifted before the tensor-core updates
    a[1] *= 1e30
    a[2, :, 100:] = 0.0
    a[3, :, :submission.PANEL_WIDTH] *= 1e-30     # tiny staged columns, normal others: not lifted
    a[4, :, submission.PANEL_WIDTH:] *= 1e-30     # normal staged columns, tiny others: not lifted
    f = submission.Factorization(*a.shape[:2], a.device)
    assert f.reads_input
    original = a.clone()
    h, tau = f(a)
    staged = f(a.transpose(-1, -2).contiguous().transpose(-1, -2))     # same values, not contiguous
    assert torch.equal(a, original)
    assert torch.equal(h, staged[0]) and torch.equal(tau, staged[1])
    for b in range(6):
        assert_factors(a[b:b + 1], (h[b:b + 1], tau[b:b + 1]))
    assert_factors(a[6:], (h[6:], tau[6:]))
