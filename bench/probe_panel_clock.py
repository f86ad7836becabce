"""Where a panel's column step spends its cycles: HouseholderPanel with SM clock stamps (GPU).

    python bench/probe_panel_clock.py [--shapes 640x512,2x4096] [--columns 0] [--batch 132] [--merges] [--warm-v1]
        [--remove later,arithmetic,larfg]

The panel of `submission.py` is loaded from a copy of its text with stamps
inserted at fixed places (each edit must apply exactly once): thread 0 of
every CTA stores the SM's 32-bit cycle counter, as two floats of 16 bits
each (exact), into slots past the cluster scratch it already gets, and the
host takes each stamp relative to the CTA's first. Thread 0 is lane 0 of
warp 0, the warp that updates column j + 1 first where columns are not
resident (where they are, warp (j + 1) % warps owns it, and thread 0's
"reflect" phase is its own columns only). Per column step j the phases are:

    finish   column j loaded as v; a cluster also scales column j - 1 into v here
             (one CTA scales every column after the last step, in the last "barrier")
    larfg    column j's reflector: a cluster receives its norms (the mbarrier wait) and forms it,
             one CTA reads it (formed during step j - 1 by another warp, inside that step's "barrier")
    dots     v scaled; a cluster: this CTA's dot products sent and every CTA's received
    reflect  warp 0's columns reflected (column j + 1 first, its norms published)
    barrier  the CTA barrier that ends the step (one CTA: after the next column's reflector is formed)

A panel that takes its columns two a trip (`_column_pairs`: one CTA, streamed
columns) stamps its trips instead (TRIP_PHASES of warp 0, FORM_PHASES of the
last warp, which forms the reflectors: PAIR_EDITS). A trip's start stamp can
come after the trip's first shared-memory loads (the stamp's asm does not
order memory), so the cycles between one trip's end and the next one's start,
which the printed marks show, belong to the next trip's first phase. With
--remove the paired trips leave parts out (REMOVALS), for timing only: what
the rest costs without them.

The panel runs once on random data at the plan's rows, threads and cluster
(`panel_plan`; with --merges a pair's second panel, whose "T formed" includes
the merge with the random columns before it as V1), always by the column steps
(never CholeskyQR2), over the shape's batch (or --batch matrices); the printed
figures are medians over CTAs, in cycles, per phase for a few columns and
summed over the panel, with the launch's time by CUDA events for scale.
"""
import argparse
import importlib.util
import os
import statistics
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["QR_SKIP_PRECOMPILE"] = "1"

PHASES = ("finish", "larfg", "dots", "reflect", "barrier")
PANEL_STAMPS = ("staged", "loop", "finished", "written back", "cross gram", "gram", "T2 formed", "T formed")
STEP_STAMPS = len(PHASES)           # stamps a column step stores (the barrier's end is the next step's start)

CLOCK = '''
    @dsl_user_op
    def _clock32(*, loc=None, ip=None):
        """The SM's cycle counter (low 32 bits)."""
        return cutlass.Int32(llvm.inline_asm(cutlass.Int32.mlir_type, [], "mov.u32 $0, %clock;", "=r",
                                             has_side_effects=True, asm_dialect=0, loc=loc, ip=ip))

    @dsl_user_op
    def _wait_acquire_cluster('''

# stamp slots: the CTA's start, then PANEL_STAMPS, then STEP_STAMPS a column step
STEP = "                    self._stamp(mScratch, b, rank, tidx, 1 + len(PANEL_STAMPS) + STEP_STAMPS * j + {})\n"
PANEL = "            self._stamp(mScratch, b, rank, tidx, 1 + {})\n"
# (anchor, text inserted before it, text inserted after it); every anchor occurs once in HouseholderPanel's text
EDITS = (
    ("            tidx, lane, warp, b, rank = self._position()\n\n", "",
     "            self._stamp(mScratch, b, rank, tidx, 0)\n"),
    ("            self._sync()                # a cluster's mbarriers are initialized before any CTA stores into another\n",
     "", PANEL.format(0)),
    ("            if cutlass.const_expr(self.paired):\n                self._column_pairs(", PANEL.format(1), ""),
    ("                for j in cutlass.range(w):\n                    d = c + j\n", "", STEP.format(0)),
    ("                    # ----- reflector of column j from the published |x|^2, |x|_inf and alpha -----\n",
     "", STEP.format(1)),
    ("                    # ----- A[d:, k] -= tau (v^T A[d:, k]) v for panel columns k > j -----\n", STEP.format(2), ""),
    ("                        _wait_acquire_cluster(sBars.iterator + BAR_DOTS + j % 2, (j // 2) % 2)\n", "",
     STEP.format(3)),
    ("                    cute.arch.sync_threads()        # a cluster's CTAs meet at the next column's mbarrier wait\n",
     STEP.format(4), ""),
    ("\n            self._write_back(mH, sP, b, r0, nloc, c, w, lane, warp)\n", PANEL.format(2), PANEL.format(3)),
    ("                self._cross_gram(mA, sP, sT, b, r0, nloc, c, lane, warp)\n", "", PANEL.format(4)),
    ("            self._gram(sP, sGram, r0, nloc, c, lane, warp)\n", "", PANEL.format(5)),
    ("                    self._merge_t_blocks(sGram, sT, 2 ** level, w, tidx)\n", "", "    " + PANEL.format(6)),
    ("                self._form_t(mA, sP, sTau, sGram, sT, mT, mScratch, b, rank, r0, nloc, c, w, tidx, lane, warp)\n",
     "", PANEL.format(7)),
)
# a `_column_pairs` trip at column j (even) stamps into column j's and j + 1's slots: warp 0 (thread 0) at
# the trip's start, after its own work before the middle barrier, after that barrier, after its work
# before the end barrier and after that barrier; the last warp (which forms the reflectors) before and
# after forming column j + 1's reflector, and before and after forming column j + 2's
TRIP = "{indent}self._stamp_warp(mScratch, b, warp, lane, {warp}, 1 + len(PANEL_STAMPS) + STEP_STAMPS * j + {slot})\n"
FIRST = TRIP.format(indent=" " * 16, warp=0, slot="{}")
LAST = TRIP.format(indent=" " * 16, warp="self.threads // WARP - 1", slot="{}")
LAST_INNER = TRIP.format(indent=" " * 24, warp="self.threads // WARP - 1", slot="{}")
PAIR_EDITS = (
    ("            for j in cutlass.range(0, w, 2):\n", "", FIRST.format(0)),
    ("                if j + 1 < w:\n                    if warp == self._reflector_warp(j + 1):\n",
     FIRST.format(1) + LAST.format(5), ""),
    ("                if j + 2 < w:\n                    if warp == self._reflector_warp(j + 2):\n",
     FIRST.format(3) + LAST.format(7), ""),
    ("                        self._form_reflector(sNext, sP, sTau, sGram, mTau, mScratch, b, r0, nloc, c, j + 2, lane)\n"
     "                cute.arch.sync_threads()\n",
     "", FIRST.format(4)),
)
# the form-reflector lines of a trip, each followed by the last warp's stamp (and the middle barrier by warp 0's)
PAIR_FORMS = (
    ("c, j + 1, lane)\n                cute.arch.sync_threads()\n\n",
     "c, j + 1, lane)\n" + LAST_INNER.format(6) + "                cute.arch.sync_threads()\n" + FIRST.format(2) + "\n"),
    ("c, j + 2, lane)\n                cute.arch.sync_threads()\n",
     "c, j + 2, lane)\n" + LAST_INNER.format(8) + "                cute.arch.sync_threads()\n"),
)
# parts of a paired panel's trips removed for timing (--remove; the factors come out wrong): (anchor, replacement)
REMOVALS = {
    # phase B's later columns: no trips of their loop
    "later": ("                    for k in cutlass.range(first + NW, w, NW):\n",
              "                    for k in cutlass.range(first + NW, first + NW, NW):\n"),
    # their arithmetic: each later column loaded, scaled by tau (so that its store is not a no-op) and stored
    "arithmetic": ("                        self._reflect(rV, rA, tau, sNext, 0, k)\n"
                   "                        self._reflect(rV2, rA, tau_next, sNext, 0, k)\n",
                   "                        for t in cutlass.range_constexpr(self.rows_per_lane):\n"
                   "                            rA[t] = rA[t] * tau\n"),
    # the reflector's formation: its inputs still waited for (the named barrier), `_larfg`'s work gone
    "larfg": ("            beta, tau, lift, scale = self._larfg(sNext[q + NEXT_ALPHA], sNext[q + NEXT_XNORM2], "
              "sNext[q + NEXT_XMAX],\n                                                 sP, mScratch, b, 0, r0, nloc, "
              "c + k, k, lane)\n",
              "            beta, tau, lift, scale = (sNext[q + NEXT_ALPHA], sNext[q + NEXT_XNORM2] * 0.0 + 0.5,\n"
              "                                      sNext[q + NEXT_XMAX] * 0.0 + 1.0, cutlass.Float32(1.0))\n"),
}
TRIP_PHASES = ("A work", "A wait", "B work", "B wait")      # warp 0's, between its five stamps
FORM_PHASES = ("A to form", "form A", "B to form", "form B")  # the last warp's, from the trip's start

STAMP_METHOD = '''
        @cute.jit
        def _stamp(self, mScratch, b, rank, tidx, slot):
            """Thread 0: the cycle counter into stamp `slot` past the cluster scratch, its high and low 16 bits
            as two floats."""
            if tidx == 0:
                clock = _clock32()
                mScratch[b, rank, STAMP_BASE + 2 * slot] = cutlass.Float32((clock >> 16) & 0xFFFF)
                mScratch[b, rank, STAMP_BASE + 2 * slot + 1] = cutlass.Float32(clock & 0xFFFF)

        @cute.jit
        def _stamp_warp(self, mScratch, b, warp, lane, stamping, slot):
            """Lane 0 of warp `stamping` (one CTA): the cycle counter into stamp `slot`, as `_stamp` stores it."""
            if warp == stamping:
                if lane == 0:
                    clock = _clock32()
                    mScratch[b, 0, STAMP_BASE + 2 * slot] = cutlass.Float32((clock >> 16) & 0xFFFF)
                    mScratch[b, 0, STAMP_BASE + 2 * slot + 1] = cutlass.Float32(clock & 0xFFFF)

        @cute.jit
        def _load_column('''


def stamped_module(removals: tuple = ()):
    """submission.py with HouseholderPanel's stamps, and without the trip parts named in `removals`
    (REMOVALS), loaded as its own module."""
    text = (ROOT / "submission.py").read_text()
    start = text.index("    class HouseholderPanel:")
    end = text.index("\n    class ", start + 1)
    head, panel, tail = text[:start], text[start:end], text[end:]
    for anchor, before, after in EDITS + PAIR_EDITS:
        assert panel.count(anchor) == 1, f"anchor not found once: {anchor!r}"
        panel = panel.replace(anchor, before + anchor + after)
    for anchor, replacement in PAIR_FORMS + tuple(REMOVALS[name] for name in removals):
        assert panel.count(anchor) == 1, f"anchor not found once: {anchor!r}"
        panel = panel.replace(anchor, replacement)
    assert panel.count("        @cute.jit\n        def _load_column(") == 1
    panel = panel.replace("\n        @cute.jit\n        def _load_column(", STAMP_METHOD, 1)
    assert head.count("\n    @dsl_user_op\n    def _wait_acquire_cluster(") == 1
    head = head.replace("\n    @dsl_user_op\n    def _wait_acquire_cluster(", CLOCK, 1)
    # the stamps' slots come past the scratch the kernels use (read when the kernels are traced)
    constants = (f"STAMP_BASE = scratch_slots(PANEL_WIDTH)\nPANEL_STAMPS = {PANEL_STAMPS!r}\n"
                 f"STEP_STAMPS = {STEP_STAMPS}\n")
    module_text = head + panel + tail
    assert module_text.count("\n\ndef exchange_floats(") == 1
    module_text = module_text.replace("\n\ndef exchange_floats(", "\n\n" + constants + "\n\ndef exchange_floats(", 1)
    path = ROOT / "scratchpad" / "stamped_submission.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(module_text)
    spec = importlib.util.spec_from_file_location("stamped_submission", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_panel(qr, batch: int, n: int, c: int, plan, warm_v1: bool = False):
    """One launch of `plan`'s panel at column c over `batch` random matrices: (stamps as a batch x cluster x
    slots tensor of cycles since the CTA's first stamp, 0 where never stamped; the launch's microseconds).
    With `warm_v1` the width columns before c (V1 of a merging panel) are read just before the launch,
    so that they start in L2 (as where the update before the panel has just read them)."""
    width = qr.PANEL_WIDTH
    slots = qr.STAMP_BASE + 2 * (1 + len(PANEL_STAMPS) + STEP_STAMPS * width)
    a = torch.randn(batch, n, n, device="cuda")
    tau = torch.zeros(batch, n, device="cuda")
    t_width = 2 * width if plan.merges else width
    t = torch.zeros(batch, t_width, t_width, device="cuda")
    scratch = torch.zeros(batch, plan.cluster, slots, device="cuda")
    args = tuple(qr._cute_tensor(x) for x in (a, a, tau, t, scratch))
    stream = qr.cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    panel = qr.HouseholderPanel(plan.rows, width, plan.cluster, plan.threads, True, plan.resident, plan.merges)
    args = (*args, qr.cutlass.Int32(c), stream)
    fn = qr.cute.compile(panel, *args)
    pristine = a.clone()
    fn(*args)                                   # warm-up
    torch.cuda.synchronize()
    a.copy_(pristine)
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(2_000_000)
    if warm_v1:
        a[:, c:, max(c - width, 0):c].sum()
    start.record()
    fn(*args)
    stop.record()
    torch.cuda.synchronize()
    halves = scratch[..., qr.STAMP_BASE:].cpu().to(torch.int64)
    clocks = halves[..., 0::2] * 65536 + halves[..., 1::2]
    since = (clocks[..., 1:] - clocks[..., :1]) % (1 << 32)
    return torch.where(clocks[..., 1:] == 0, 0, since), start.elapsed_time(stop) * 1e3      # 0: never stamped


def report(stamps: torch.Tensor, width: int, us: float) -> None:
    """Medians over CTAs of each phase's cycles."""
    ctas = stamps.reshape(-1, stamps.shape[-1]).double()
    panel = ctas[:, :len(PANEL_STAMPS)]
    steps = ctas[:, len(PANEL_STAMPS):].reshape(-1, width, STEP_STAMPS)
    starts = steps[:, :, 0]
    ends = torch.cat([starts[:, 1:], panel[:, 2:3]], dim=1)      # a step ends where the next one starts
    bounds = torch.cat([steps, ends[:, :, None]], dim=2)          # (ctas, width, phases + 1)
    phases = bounds[:, :, 1:] - bounds[:, :, :-1]
    median = lambda x: statistics.median(x.tolist())              # noqa: E731
    total = median(panel[:, PANEL_STAMPS.index("T formed")])
    print(f"  launch {us:.1f} us; a CTA's stamps (median cycles): "
          + ", ".join(f"{name} {median(panel[:, k]):.0f}" for k, name in enumerate(PANEL_STAMPS)), flush=True)
    if not steps[:, 1::2, STEP_STAMPS - 1].any():        # odd columns' last slot: stamped by single steps only
        report_trips(panel, steps, median)
        return
    print(f"  {'column':>8s}" + "".join(f"{name:>9s}" for name in PHASES) + f"{'step':>9s}", flush=True)
    for j in sorted({0, 1, width // 4, width // 2, 3 * width // 4, width - 2, width - 1}):
        cells = [median(phases[:, j, p]) for p in range(len(PHASES))]
        print(f"  {j:8d}" + "".join(f"{x:9.0f}" for x in cells) + f"{median(phases[:, j].sum(1)):9.0f}", flush=True)
    sums = [median(phases[:, :, p].sum(1)) for p in range(len(PHASES))]
    print(f"  {'panel':>8s}" + "".join(f"{x:9.0f}" for x in sums) + f"{median(phases.sum((1, 2))):9.0f}"
          f"   of {total:.0f} cycles to T formed", flush=True)


def report_trips(panel: torch.Tensor, steps: torch.Tensor, median) -> None:
    """`_column_pairs`' trips: warp 0's phases (TRIP_PHASES) and the last warp's (FORM_PHASES), medians over
    CTAs of cycles, for a few trips and summed over the panel (0 where a trip forms no reflector); then
    where the panel's loop stamp, the first trip's start, the last trip's end and the finished columns lie."""
    first, last = steps[:, 0::2, :], steps[:, 1::2, :4]       # (ctas, trips, stamps)
    marks = {"loop": panel[:, PANEL_STAMPS.index("loop")], "first trip": first[:, 0, 0],
             "last trip's end": first[:, -1, -1], "finished": panel[:, PANEL_STAMPS.index("finished")]}
    print("  " + ", ".join(f"{name} {median(at):.0f}" for name, at in marks.items()), flush=True)
    trips = torch.cat([first[:, :, 1:] - first[:, :, :-1],
                       torch.stack([last[:, :, 0] - first[:, :, 0], last[:, :, 1] - last[:, :, 0],
                                    last[:, :, 2] - first[:, :, 2], last[:, :, 3] - last[:, :, 2]], dim=2)], dim=2)
    trips = torch.where(torch.cat([first[:, :, 1:], last], dim=2) > 0, trips, 0)
    names = TRIP_PHASES + FORM_PHASES
    print(f"  {'trip at':>8s}" + "".join(f"{name:>10s}" for name in names) + f"{'trip':>9s}", flush=True)
    count = trips.shape[1]
    for t in sorted({0, 1, count // 4, count // 2, 3 * count // 4, count - 1}):
        cells = [median(trips[:, t, p]) for p in range(len(names))]
        print(f"  {2 * t:8d}" + "".join(f"{x:10.0f}" for x in cells)
              + f"{median(trips[:, t, :len(TRIP_PHASES)].sum(1)):9.0f}", flush=True)
    sums = [median(trips[:, :, p].sum(1)) for p in range(len(names))]
    print(f"  {'panel':>8s}" + "".join(f"{x:10.0f}" for x in sums)
          + f"{median(trips[:, :, :len(TRIP_PHASES)].sum((1, 2))):9.0f}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="640x512,60x1024,2x4096")
    parser.add_argument("--columns", default="0")
    parser.add_argument("--batch", type=int, help="matrices a launch, instead of the shape's")
    parser.add_argument("--merges", action="store_true", help="the panels at --columns are pairs' second panels")
    parser.add_argument("--warm-v1", action="store_true", help="V1 (the columns before the panel) starts in L2")
    parser.add_argument("--remove", help=f"parts of a paired panel's trips to leave out, timing only: "
                                         f"{', '.join(REMOVALS)}")
    args = parser.parse_args()
    qr = stamped_module(tuple(args.remove.split(",")) if args.remove else ())
    sms, smem = qr._device_limits(torch.cuda.current_device())
    print(f"{torch.cuda.get_device_name()}", flush=True)
    for shape in args.shapes.split(","):
        planned, n = map(int, shape.split("x"))
        batch = args.batch or planned
        plan = qr.make_plan(planned, n, sms, smem)
        for c in (c for c in map(int, args.columns.split(",")) if c < n):
            panel = qr.panel_plan(plan, n, c, args.merges)
            print(f"--- {shape} c = {c}, {batch} matrices: rows {panel.rows}, {panel.threads} threads, "
                  f"cluster {panel.cluster}, resident {panel.resident}, merges {panel.merges}", flush=True)
            stamps, us = run_panel(qr, batch, n, c, panel, args.warm_v1)
            report(stamps, qr.PANEL_WIDTH, us)
    return 0


if __name__ == "__main__":
    sys.exit(main())
