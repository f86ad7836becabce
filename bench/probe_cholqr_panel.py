"""One panel by HouseholderPanel's CholeskyQR2 path against its column steps (GPU probe).

    python bench/probe_cholqr_panel.py [--shapes 2x4096,8x2048,60x1024] [--columns 0,half]

For each shape's blocked plan, the panel at each column c (`half`: n / 2 rounded to a panel) is
factored from the same input by the plan's kernel with `cholesky` (`HouseholderPanel._cholesky_qr`)
and without it, and the probe prints each one's time (one launch queued behind a GPU sleep, median of
15: `probe_panel.launch_us`) and the largest differences of R (over the panel's largest entry), V, tau
and T between them. In exact arithmetic both give geqrf's reflectors, so the differences are rounding,
amplified by the panel's condition number. The clock-stamped version of the first kernel, with the
phases' cycles, is this file at commit dee55db.
"""
import argparse
import sys
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import submission  # noqa: E402
from probe_panel import launch_us  # noqa: E402


def probe(shape: str, c: int) -> None:
    """Both paths on the panel at column c of `shape`'s plan: times and differences."""
    batch, n = map(int, shape.split("x"))
    width = submission.PANEL_WIDTH
    sms, smem = submission._device_limits(torch.cuda.current_device())
    plan = replace(submission.panel_plan(submission.make_plan(batch, n, sms, smem), n, c), cholesky=True)
    a = torch.randn(batch, n, n, device="cuda")
    results = {}
    for cholesky in (False, True):
        h = a.clone()
        tau = torch.zeros(batch, n, device="cuda")
        t = torch.zeros(batch, width, width, device="cuda")
        scratch = torch.zeros(batch, plan.cluster, submission.scratch_slots(width), device="cuda")
        stream = submission.cuda.CUstream(torch.cuda.current_stream().cuda_stream)
        args = (*(submission._cute_tensor(x) for x in (h, h, tau, t, scratch)), submission.cutlass.Int32(c), stream)
        fn = submission._panel_kernel(replace(plan, cholesky=cholesky), args)
        fn(*args)
        torch.cuda.synchronize()
        results[cholesky] = (h[:, c:, c:c + width].clone(), tau[:, c:c + width].clone(), t.clone(),
                             launch_us(fn, args, lambda: h.copy_(a)))
    (hh, th, tt, us_h), (hc, tc, tcc, us_c) = results[False], results[True]
    size = a[:, c:, c:c + width].abs().amax()
    upper = torch.triu(torch.ones(width, width, dtype=torch.bool, device="cuda"))
    r_diff = ((hh[:, :width] - hc[:, :width]).abs() * upper).amax() / size
    v_diff = torch.cat(((hh[:, :width] - hc[:, :width]).abs() * ~upper, (hh[:, width:] - hc[:, width:]).abs()),
                       dim=1).amax()
    print(f"{shape} c={c:5d} G={plan.cluster} rows={plan.rows} threads={plan.threads}: column steps {us_h:7.1f} us, "
          f"cholesky {us_c:7.1f} us ({us_c / us_h:.2f}); |dR|/max {float(r_diff):.1e} |dV| {float(v_diff):.1e} "
          f"|dtau| {float((th - tc).abs().amax()):.1e} |dT| {float((tt - tcc).abs().amax()):.1e}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="2x4096,8x2048,60x1024")
    parser.add_argument("--columns", default="0,half")
    args = parser.parse_args()
    for shape in args.shapes.split(","):
        n = int(shape.split("x")[1])
        for column in args.columns.split(","):
            c = n // 2 // submission.PANEL_WIDTH * submission.PANEL_WIDTH if column == "half" else int(column)
            probe(shape, c)
    return 0


if __name__ == "__main__":
    sys.exit(main())
