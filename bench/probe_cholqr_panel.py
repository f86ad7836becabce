"""One panel by HouseholderPanel's CholeskyQR2 path against its column steps (GPU probe).

    python bench/probe_cholqr_panel.py [--shapes 2x4096,8x2048,60x1024] [--columns 0,half]
                                       [--variant full=CHOLESKY_FIRST_ORDER_LIMIT=0 ...]

For each shape's blocked plan, the panel at each column c (`half`: n / 2 rounded to a panel) is
factored from the same input by the plan's kernel without `cholesky` (the column steps) and with it
(`HouseholderPanel._cholesky_qr`), once as the submission is and once per `--variant` (its module
constants overridden while it compiles, `NAME=VALUE` joined by `:`), and the probe prints each one's
time (one launch queued behind a GPU sleep, median of 15: `probe_panel.launch_us`) and the largest
differences of R (over the panel's largest entry), V, tau and T from the column steps'. In exact
arithmetic both give geqrf's reflectors, so the differences are rounding, amplified by the panel's
condition number. The clock-stamped version of the first kernel, with the
phases' cycles, is this file at commit dee55db.
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


def run(plan, a: torch.Tensor, c: int, constants: dict) -> tuple:
    """(H's panel, tau, T, launch us) of `plan` on a copy of `a`, compiled with `constants` set."""
    batch, n, _ = a.shape
    width = submission.PANEL_WIDTH
    h = a.clone()
    tau = torch.zeros(batch, n, device="cuda")
    t = torch.zeros(batch, width, width, device="cuda")
    scratch = torch.zeros(batch, plan.cluster, submission.scratch_slots(width), device="cuda")
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
    return h[:, c:, c:c + width].clone(), tau[:, c:c + width].clone(), t.clone(), launch_us(fn, args, lambda: h.copy_(a))


def probe(shape: str, c: int, variants: list) -> None:
    """The column steps, the CholeskyQR2 path and its variants on the panel at column c of `shape`'s
    plan: times and differences."""
    batch, n = map(int, shape.split("x"))
    width = submission.PANEL_WIDTH
    sms, smem = submission._device_limits(torch.cuda.current_device())
    plan = replace(submission.panel_plan(submission.make_plan(batch, n, sms, smem), n, c), cholesky=True)
    a = torch.randn(batch, n, n, device="cuda")
    hh, th, tt, us_h = run(replace(plan, cholesky=False), a, c, {})
    size = a[:, c:, c:c + width].abs().amax()
    upper = torch.triu(torch.ones(width, width, dtype=torch.bool, device="cuda"))
    line = f"{shape} c={c:5d} G={plan.cluster} rows={plan.rows} threads={plan.threads}: column steps {us_h:7.1f} us"
    for name, constants in [("cholesky", {}), *variants]:
        hc, tc, tcc, us_c = run(plan, a, c, constants)
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
    parser.add_argument("--variant", action="append", default=[], help="name=CONST=VALUE[:CONST=VALUE...]")
    args = parser.parse_args()
    variants = [overrides(text) for text in args.variant]
    for shape in args.shapes.split(","):
        n = int(shape.split("x")[1])
        for column in args.columns.split(","):
            c = n // 2 // submission.PANEL_WIDTH * submission.PANEL_WIDTH if column == "half" else int(column)
            probe(shape, c, variants)
    return 0


if __name__ == "__main__":
    sys.exit(main())
