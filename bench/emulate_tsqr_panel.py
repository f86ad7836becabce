"""Accuracy of a blocked QR whose panels are an orthonormal Q plus Householder reconstruction, emulated
in float32 (CPU).

    python bench/emulate_tsqr_panel.py [--panel tsqr|cholqr2] [--matrices 8] [--shapes 640x512,60x1024]
                                       [--orth-limit 0.5]

Each PANEL_WIDTH-column panel A (m x b, the rows from its diagonal down) gets an orthonormal Q and
an R the way a panel kernel without per-column exchanges would form them:
    tsqr     rows split in blocks of LEAF_ROWS, each QR'd on its own (Householder, float32); pairs
             of stacked R factors QR'd until one R is left; Q = the tree's Qs applied down
    cholqr2  columns scaled by powers of two to a largest entry in [1, 2); G = A^T A, R1 = chol(G),
             Q1 = A R1^-1, twice (CholeskyQR2); a matrix's panel falls back to Householder (float32
             geqrf, T by larft) where a column is exactly zero, a Cholesky breaks down, or the
             second Gram is further than --orth-limit from I (largest row sum): only there could Q1 be too
             far from orthonormal for the second pass to repair
and then
    rebuild  LU without pivoting of Q - [S; 0] with S_ii = -sign of the i-th pivot before the
             shift, so |pivot| >= 1 (Ballard et al., "Reconstructing Householder vectors from
             Tall-Skinny QR"): Q - [S; 0] = V U with V unit lower trapezoidal, and then
             T = -U S V1^-T (V1: V's top b x b), tau = diag(T), R = S R_tsqr.
Then C -= V T^T V^T C on the trailing columns, in float32. The checker of reference.py judges the
result (H, tau) on the first --matrices matrices of each benchmark case of --shapes, next to
torch.geqrf on the same matrices; `fallback` counts the panels that took the Householder path and
`vs geqrf` is the largest entry of |H - H_geqrf| over the largest of |A|. Nothing here runs on a GPU.
"""
import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import eval as harness  # noqa: E402
import reference  # noqa: E402
import submission  # noqa: E402
from compare import _residuals  # noqa: E402

LEAF_ROWS = 32


def tsqr(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(Q, R) of a batch of m x b panels by a binary tree over row blocks of LEAF_ROWS (b <= LEAF_ROWS).

    Up the tree: each leaf block is QR'd, then each pair of neighbouring R factors, stacked, until one
    R is left (an odd one out goes up as it is). Down the tree: the root's identity, multiplied by
    each node's Q and split between its two children, becomes each leaf's share of Q.
    """
    batch, m, b = a.shape
    leaves = [torch.linalg.qr(a[:, r:r + LEAF_ROWS]) for r in range(0, m, LEAF_ROWS)]
    merges = []                             # per level up: (Q of the stacked pair, rows of its upper R) or None
    rs = [r for _, r in leaves]
    while len(rs) > 1:
        level, merged = [], []
        for i in range(0, len(rs), 2):
            if i + 1 == len(rs):
                level.append(None)
                merged.append(rs[i])
            else:
                q, r = torch.linalg.qr(torch.cat((rs[i], rs[i + 1]), dim=1))
                level.append((q, rs[i].shape[1]))
                merged.append(r)
        merges.append(level)
        rs = merged
    shares = [torch.eye(rs[0].shape[1], b, dtype=a.dtype).expand(batch, -1, -1)]
    for level in reversed(merges):
        below = []
        for node, share in zip(level, shares):
            if node is None:
                below.append(share)
            else:
                q, upper_rows = node
                product = q @ share
                below += [product[:, :upper_rows], product[:, upper_rows:]]
        shares = below
    return torch.cat([q @ share for (q, _), share in zip(leaves, shares)], dim=1), rs[0]


def reconstruct(q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(V, T, S) with Q - [S; 0] = V U, V unit lower trapezoidal, T = -U S V1^-T, by an unpivoted LU."""
    batch, _, b = q.shape
    work = q.clone()
    signs = torch.empty(batch, b, dtype=q.dtype)
    for i in range(b):
        pivot = work[:, i, i]
        s = -torch.where(pivot >= 0, 1.0, -1.0).to(q.dtype)
        signs[:, i] = s
        work[:, i, i] = pivot - s
        work[:, i + 1:, i] /= work[:, i, i].unsqueeze(1)
        work[:, i + 1:, i + 1:] -= work[:, i + 1:, i:i + 1] * work[:, i:i + 1, i + 1:]
    v = torch.tril(work, diagonal=-1)
    v[:, torch.arange(b), torch.arange(b)] = 1.0
    u = torch.triu(work[:, :b])
    # T V1^T = -U S  ->  T = (-U S) V1^-T, V1 unit lower: a triangular solve from the right
    rhs = -u * signs.unsqueeze(1)
    t = torch.linalg.solve_triangular(v[:, :b].transpose(1, 2), rhs, upper=True, left=False, unitriangular=True)
    return v, torch.triu(t), signs


def cholqr2(a: torch.Tensor, orth_limit: float, first_order_limit: float = 0.0
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(Q, R, ok, first) of a batch of m x b panels by CholeskyQR2 on power-of-two column scales; `ok` is
    False for a matrix whose panel must fall back (a zero column, a Cholesky breakdown, or
    ||Q1^T Q1 - I||_inf > orth_limit, a bound on its 2-norm). `first` marks the matrices whose E =
    Q1^T Q1 - I has ||E||_inf <= first_order_limit: their second factor is chol(I + E) to first order,
    I + (E above the diagonal) + diag(E) / 2."""
    eye = torch.eye(a.shape[2], dtype=a.dtype)
    largest = a.abs().amax(dim=1)                                   # batch x b
    ok = (largest > 0).all(dim=1)
    scale = torch.exp2(-torch.floor(torch.log2(torch.where(largest > 0, largest, 1.0))))
    q = a * scale.unsqueeze(1)
    r = torch.diag_embed(1.0 / scale)                               # A = Q (R2 R1 D^-1)
    first = torch.zeros_like(ok)
    for sweep in range(2):
        gram = q.transpose(1, 2) @ q
        factor_r, info = torch.linalg.cholesky_ex(gram, upper=True)
        if sweep == 1:
            e = gram - eye
            size = e.abs().sum(dim=2).amax(dim=1)                             # ||E||_inf >= ||E||_2
            ok &= size <= orth_limit
            first = size <= first_order_limit
            linear = eye + torch.triu(e, diagonal=1) + torch.diag_embed(torch.diagonal(e, dim1=1, dim2=2) / 2)
            factor_r = torch.where(first.view(-1, 1, 1), linear, factor_r)
            info = torch.where(first, 0, info)
        ok &= info == 0
        factor_r = torch.where(ok.view(-1, 1, 1), factor_r, eye)    # a fallen-back matrix: anything finite
        q = torch.linalg.solve_triangular(factor_r, q, upper=True, left=False)
        r = factor_r @ r
    return q, r, ok, first


def householder(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(V, T, R) of a batch of m x b panels by float32 geqrf and larft's T."""
    packed, tau = torch.geqrf(a)
    b = a.shape[2]
    v = torch.tril(packed, diagonal=-1)
    v[:, torch.arange(b), torch.arange(b)] = 1.0
    t = torch.zeros(a.shape[0], b, b, dtype=a.dtype)
    for j in range(b):
        t[:, :j, j] = -tau[:, j:j + 1] * (t[:, :j, :j] @ (v[:, :, :j].transpose(1, 2) @ v[:, :, j:j + 1])).squeeze(2)
        t[:, j, j] = tau[:, j]
    return v, t, torch.triu(packed[:, :b])


def factor(a: torch.Tensor, width: int, panel_qr: str = "tsqr", orth_limit: float = 0.5,
           fallbacks: list | None = None, first_order_limit: float = 0.0, first_orders: list | None = None
           ) -> tuple[torch.Tensor, torch.Tensor]:
    """geqrf-format (H, tau) of a float32 batch, panels by `panel_qr` and reconstruction; each panel's
    count of fallen-back matrices is appended to `fallbacks`, of first-order second factors (`cholqr2`)
    to `first_orders`."""
    h = a.clone()
    batch, n, _ = a.shape
    tau = torch.zeros(batch, n, dtype=a.dtype)
    for c in range(0, n, width):
        b = min(width, n - c)
        if panel_qr == "tsqr":
            q, r = tsqr(h[:, c:, c:c + b])
            ok = torch.ones(batch, dtype=torch.bool)
        else:
            q, r, ok, first = cholqr2(h[:, c:, c:c + b], orth_limit, first_order_limit)
            if first_orders is not None:
                first_orders.append(int((first & ok).sum()))
        v, t, signs = reconstruct(q)
        r = signs.unsqueeze(2) * r                          # R = S R_q
        if not bool(ok.all()):
            hv, ht, hr = householder(h[:, c:, c:c + b])
            keep = ok.view(-1, 1, 1)
            v, t, r = torch.where(keep, v, hv), torch.where(keep, t, ht), torch.where(keep, r, hr)
        if fallbacks is not None:
            fallbacks.append(int((~ok).sum()))
        panel = torch.tril(v, diagonal=-1)                  # V below the diagonal, R on and above
        panel[:, :b] += torch.triu(r)
        h[:, c:, c:c + b] = panel
        tau[:, c:c + b] = torch.diagonal(t, dim1=1, dim2=2)
        if c + b < n:
            trailing = h[:, c:, c + b:]
            h[:, c:, c + b:] = trailing - v @ (t.transpose(1, 2) @ (v.transpose(1, 2) @ trailing))
    return h, tau


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matrices", type=int, default=8)
    parser.add_argument("--shapes", default="640x512,60x1024", help="benchmark cases of these batch x n")
    parser.add_argument("--panel", choices=("tsqr", "cholqr2"), default="tsqr")
    parser.add_argument("--orth-limit", type=float, default=0.5, help="cholqr2's fallback rule")
    parser.add_argument("--first-order", type=float, default=0.0,
                        help="cholqr2: the second factor to first order where ||Q1^T Q1 - I||_inf is at most this")
    parser.add_argument("--tests", action="store_true", help="the test cases of task.yml instead of the benchmarks")
    args = parser.parse_args()
    shapes = args.shapes.split(",")
    for bench in harness.parse_specs(harness.task_yml_specs("tests" if args.tests else "benchmarks"), "task.yml", None):
        if f"{bench.args['batch']}x{bench.args['n']}" not in shapes:
            continue
        a = reference.generate_input(**bench.args)[:args.matrices].contiguous()
        h_geqrf, tau_geqrf = torch.geqrf(a)
        fallbacks, first_orders = [], []
        ours = factor(a, submission.PANEL_WIDTH, args.panel, args.orth_limit, fallbacks, args.first_order, first_orders)
        for name, out in (("geqrf", (h_geqrf, tau_geqrf)), (args.panel, ours)):
            ok, message = reference.check_implementation(a, out)
            figures = "factor %8.3f  orth %8.3f" % _residuals(message) if ok else message
            if out is ours:
                figures += "  vs geqrf %.1e  fallback %d, first order %d of %d panels x matrices" % (
                    float((out[0] - h_geqrf).abs().amax() / a.abs().amax()), sum(fallbacks),
                    sum(first_orders), len(fallbacks) * a.shape[0])
            print(f"{bench.spec:58s} {name:7s} {'pass' if ok else 'FAIL'}  {figures}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
