"""One panel by HouseholderPanel's CholeskyQR2 path against its column steps (GPU probe).

    python bench/probe_cholqr_panel.py [--shapes 2x4096,8x2048,60x1024] [--columns 0,half] [--merges]
                                       [--variant full=CHOLESKY_FIRST_ORDER_LIMIT=0 ...]

For each shape's blocked plan, the panel at each column c (`half`: n / 2 rounded to a panel) is
factored from the same input by the plan's kernel without `cholesky` (the column steps) and with it
(`HouseholderPanel._cholesky_qr`), once as the submission is and once per `--variant` (its module
constants overridden while it compiles, `NAME=VALUE` joined by `:`), and the probe prints each one's
time (one launch queued behind a GPU sleep, median of 15: `probe_panel.launch_us`) and the largest
differences of R (over the panel's largest entry), V, tau and T from the column steps'. In exact
arithmetic both give geqrf's reflectors, so the differences are rounding, amplified by the panel's
condition number. With --merges the panel at c is a pair's second (c >= width): the first panel, at
c - width, is factored once first (its plan as the schedule has it), and both ways of the second
start from its output and its T in the scratch, and write the pair's merged T (the second panel's
columns are not updated by the first reflector: the same input for both, enough for times and
agreement). The clock-stamped version of the first kernel, with the phases' cycles, is this file at
commit dee55db.
"""
import argparse
import ast
import sys
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import submission  # noqa: E402
from probe_panel import launch_us  # noqa: E402


def overrides(text: str) -> tuple[str, dict]:
    """(name, {constant: value}) from 'name=CONST=VALUE[:CONST=VALUE...]'."""
    name, _, rest = text.partition("=")
    values = {}
    for item in filter(None, rest.split(":")):
        key, _, value = item.partition("=")
        if not hasattr(submission, key):
            raise SystemExit(f"variant {name}: submission has no constant {key}")
        values[key] = ast.literal_eval(value)
    return name, values


def run(plan, a: torch.Tensor, c: int, constants: dict, scratch_in: torch.Tensor | None = None) -> tuple:
    """(H's panel, tau, T, launch us, H, scratch) of `plan` on a copy of `a` (and of `scratch_in`, else
    a zero scratch), compiled with `constants` set."""
    batch, n, _ = a.shape
    width = submission.PANEL_WIDTH
    h = a.clone()
    tau = torch.zeros(batch, n, device="cuda")
    t_width = 2 * width if plan.merges else width
    t = torch.zeros(batch, t_width, t_width, device="cuda")
    if scratch_in is None:
        scratch_in = torch.zeros(batch, plan.cluster, submission.scratch_slots(width), device="cuda")
    scratch = scratch_in.clone()
    stream = submission.cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    args = (*(submission._cute_tensor(x) for x in (h, h, tau, t, scratch)), submission.cutlass.Int32(c), stream)
    saved = {key: getattr(submission, key) for key in constants}
    try:
        for key, value in constants.items():
            setattr(submission, key, value)
        submission._COMPILED.pop(plan, None)
        fn = submission._panel_kernel(plan, args)
    finally:
        for key, value in saved.items():
            setattr(submission, key, value)
        submission._COMPILED.pop(plan, None)
    fn(*args)
    torch.cuda.synchronize()
    panel, tau_out, t_out, h_out, scratch_out = (h[:, c:, c:c + width].clone(), tau[:, c:c + width].clone(), t.clone(),
                                                 h.clone(), scratch.clone())
    us = launch_us(fn, args, lambda: (h.copy_(a), scratch.copy_(scratch_in)))
    return panel, tau_out, t_out, us, h_out, scratch_out


def probe(shape: str, c: int, variants: list, merges: bool) -> None:
    """The column steps, the CholeskyQR2 path and its variants on the panel at column c of `shape`'s
    plan (a pair's second with `merges`): times and differences."""
    batch, n = map(int, shape.split("x"))
    width = submission.PANEL_WIDTH
    sms, smem = submission._device_limits(torch.cuda.current_device())
    blocked = submission.make_plan(batch, n, sms, smem)
    plan = replace(submission.panel_plan(blocked, n, c, merges), cholesky=True)
    a = torch.randn(batch, n, n, device="cuda")
    scratch = None
    if merges:      # the pair's first panel: V1 in a's columns c - width .. c - 1, T1 in the scratch
        *_, a, scratch = run(submission.panel_plan(blocked, n, c - width), a, c - width, {})
    hh, th, tt, us_h, *_ = run(replace(plan, cholesky=False), a, c, {}, scratch)
    size = a[:, c:, c:c + width].abs().amax()
    upper = torch.triu(torch.ones(width, width, dtype=torch.bool, device="cuda"))
    line = f"{shape} c={c:5d} G={plan.cluster} rows={plan.rows} threads={plan.threads}: column steps {us_h:7.1f} us"
    for name, constants in [("cholesky", {}), *variants]:
        hc, tc, tcc, us_c, *_ = run(plan, a, c, constants, scratch)
        r_diff = ((hh[:, :width] - hc[:, :width]).abs() * upper).amax() / size
        v_diff = torch.cat(((hh[:, :width] - hc[:, :width]).abs() * ~upper, (hh[:, width:] - hc[:, width:]).abs()),
                           dim=1).amax()
        line += (f", {name} {us_c:7.1f} us ({us_c / us_h:.2f}; |dR|/max {float(r_diff):.1e} |dV| {float(v_diff):.1e} "
                 f"|dtau| {float((th - tc).abs().amax()):.1e} |dT| {float((tt - tcc).abs().amax()):.1e})")
    print(line, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="2x4096,8x2048,60x1024")
    parser.add_argument("--columns", default="0,half")
    parser.add_argument("--merges", action="store_true", help="the panels at --columns are pairs' second panels")
    parser.add_argument("--variant", action="append", default=[], help="name=CONST=VALUE[:CONST=VALUE...]")
    args = parser.parse_args()
    variants = [overrides(text) for text in args.variant]
    for shape in args.shapes.split(","):
        n = int(shape.split("x")[1])
        for column in args.columns.split(","):
            c = n // 2 // submission.PANEL_WIDTH * submission.PANEL_WIDTH if column == "half" else int(column)
            if args.merges and c < submission.PANEL_WIDTH:
                raise SystemExit(f"--merges: column {c} has no first panel of a pair before it")
            probe(shape, c, variants, args.merges)
    return 0


if __name__ == "__main__":
    sys.exit(main())
