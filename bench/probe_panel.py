"""One panel launch of HouseholderPanel variants: T formation on or off, threads per CTA (GPU).

    python bench/probe_panel.py
    python bench/probe_panel.py --shape 640x512 --threads 128,256 --columns 0,224,320,448 [--cluster 2]
        [--batch 132] [--no-t]

Compiles each variant directly and times single launches at c = 0 and
c = n/2 (CUDA events, median of 15, input restored before each) for the
plans of 640x512, 60x1024 and 8x2048, every panel holding all n rows. With
--shape, the panels at the given columns of that shape's blocked plan, each
holding the rows `panel_plan` gives it (as the factorization launches
them), at each thread count; --cluster sets the CTAs a matrix instead, --batch launches that many
matrices with the shape's plan (say one CTA an SM, against the shape's waves of CTAs that share SMs),
--no-t leaves T's formation out. Each launch is queued behind a GPU sleep, so the events time the
kernel alone, not the launch's ~50 us of host.
"""
import argparse
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import submission  # noqa: E402
from submission import cutlass, cute  # noqa: E402

SHAPES = ((640, 512, 1), (60, 1024, 2), (8, 2048, 16))     # batch, n, cluster
REPEATS = 15
SLEEP_CYCLES = 2_000_000        # ~1 ms of GPU sleep, longer than a launch's host time


def panel_us(batch: int, n: int, cluster: int, threads: int, form_t: bool, c: int, rows: int | None = None,
             resident: bool = True) -> float:
    width = submission.PANEL_WIDTH
    rows = rows or submission.blocked_plan(n, cluster, True).rows
    a = torch.randn(batch, n, n, device="cuda")
    h = a.clone()
    tau = torch.zeros(batch, n, device="cuda")
    t = torch.zeros(batch, width, width, device="cuda")
    scratch = torch.zeros(batch, cluster, submission.scratch_slots(width), device="cuda")
    args = tuple(submission._cute_tensor(x) for x in (h, h, tau, t, scratch))
    stream = submission.cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    panel = submission.HouseholderPanel(rows, width, cluster, threads, form_t, resident)
    args = (*args, cutlass.Int32(c), stream)
    return launch_us(cute.compile(panel, *args), args, lambda: h.copy_(a))


def launch_us(fn, args: tuple, reset) -> float:
    """Median over REPEATS of one launch `fn(*args)` between CUDA events, `reset()` before each, the
    launch queued behind a GPU sleep so that its host time is off the clock."""
    times = []
    for _ in range(REPEATS):
        reset()
        torch.cuda.synchronize()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(SLEEP_CYCLES)
        start.record()
        fn(*args)
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop) * 1e3)
    return statistics.median(times)


def plan_panels(shape: str, threads: list[int], columns: list[int], cluster: int | None, batch: int | None,
                form_t: bool) -> None:
    """The panels at `columns` of `shape`'s blocked plan (or of a plan of `cluster` CTAs a matrix), with
    the rows they are launched with, over the shape's batch or `batch` matrices."""
    planned, n = map(int, shape.split("x"))
    batch = batch or planned
    sms, smem = submission._device_limits(torch.cuda.current_device())
    plan = submission.make_plan(planned, n, sms, smem)
    if cluster is not None:
        plan = submission.blocked_plan(n, cluster, planned * cluster <= sms)
    for c in columns:
        rows = submission.panel_plan(plan, n, c).rows
        times = [panel_us(batch, n, plan.cluster, count, form_t, c, rows, plan.resident) for count in threads]
        print(f"{shape} batch={batch} G={plan.cluster} T={int(form_t)} c={c:5d} rows={rows:5d}: "
              + "  ".join(f"{count} threads {us:8.1f} us" for count, us in zip(threads, times)), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape")
    parser.add_argument("--threads", default="128,256")
    parser.add_argument("--columns", default="0")
    parser.add_argument("--cluster", type=int, help="CTAs a matrix, instead of the plan's")
    parser.add_argument("--batch", type=int, help="matrices a launch, instead of the shape's")
    parser.add_argument("--no-t", action="store_true", help="leave T's formation out")
    args = parser.parse_args()
    if args.shape:
        plan_panels(args.shape, [int(x) for x in args.threads.split(",")], [int(x) for x in args.columns.split(",")],
                    args.cluster, args.batch, not args.no_t)
        return 0
    for batch, n, cluster in SHAPES:
        for threads in ((128, 256, 512) if cluster == 1 else (256, 512)):
            for form_t in ((True, False) if cluster == 1 else (True,)):     # a cluster panel forms T
                at = [panel_us(batch, n, cluster, threads, form_t, c) for c in (0, n // 2)]
                print(f"{batch}x{n} G={cluster} threads={threads} form_t={form_t}: "
                      f"c=0 {at[0]:8.1f} us  c=n/2 {at[1]:8.1f} us", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
