"""Two-level blocking priced by its updates: wide block reflectors applied as three batched GEMMs (GPU).

    python bench/probe_wide_update.py [--shapes 640x512] [--outer 256] [--reps 7]

Main's schedule applies each pair's 64-column block reflector to every
column right of it, so a column at j is read twice and written once by each
of the j / 64 pairs left of it: the fused update moves bytes at a copy's
rate, and its time is set by those bytes, not by its products. Two-level
blocking instead stops each pair's update at the end of its outer block
(256 columns, say) and applies the outer block's reflector
Q = I - V T V^T (V: n x 256 below the diagonal, T: 256 x 256 upper) to the
columns beyond it at once, as three tiled products on tensor cores
(3xBF16, as every product of the update):

    Y = V^T C        (W x m, over the n - c rows)
    Z = T^T Y        (W x m; T upper, so the k <= i terms only)
    C = C - V Z      (rows x m; V's trapezoid, so the k <= row - c terms only)

with Y and Z (W x m floats a matrix) through global memory. Each product's
tile reads its operands once per tile, so its intensity grows with W where
the fused update's stays at a copy's.

The probe times, on random h and T, each update of the schedules below
(the fused W = 64 kernel as the plans launch it, and the wide GEMMs at
several tile shapes and products: `WIDE_CONFIGS`, `_product`) alone, h
restored, L2 flushed and the launch queued behind a GPU sleep, the median
of `reps`, and sums each schedule's updates (a wide update at its best
accurate configuration). The wide products are checked against float64 on
a few matrices. Panels, Grams and the outer T's merge are not timed: a
schedule's total is what its updates cost.
"""
import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["QR_SKIP_PRECOMPILE"] = "1"

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import submission  # noqa: E402
from probe_update import median_us, random_batches  # noqa: E402

PAIR = 2 * submission.PANEL_WIDTH
# (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages, product: see `_product`) of the three wide products
WIDE_CONFIGS = ((128, 128, 32, 8, 3, 0), (64, 64, 32, 4, 3, 0), (128, 128, 32, 8, 3, 1), (64, 64, 32, 4, 3, 1),
                (128, 128, 64, 8, 3, 1), (128, 128, 32, 8, 3, 2), (64, 64, 32, 4, 3, 2),
                (128, 128, 32, 8, 3, 3), (64, 64, 32, 4, 3, 3), (128, 128, 64, 8, 3, 3), (256, 128, 32, 8, 2, 3),
                (256, 128, 32, 8, 2, 1))


@triton.jit
def _product(a, b, acc, DOT: tl.constexpr):
    """acc + a @ b: 3xBF16 by the update's own splits (DOT 0), by Triton's bf16x3 (1), or one TF32 pass (2: for
    comparison only, not accurate enough for the factorization). Product 3, operands read as bf16 planes, is
    the kernels' own branch; where it reaches here (T^T Y) it takes Triton's bf16x3."""
    if DOT == 0:
        return submission._dot_3xbf16(a, b, acc)
    elif DOT == 1:
        return tl.dot(a, b, acc, input_precision="bf16x3")
    else:
        return tl.dot(a, b, acc, input_precision="tf32")


@triton.jit
def _reflectors(h_ptr, rows, ks, c, n):
    """V[rows, ks] of the block reflector at column c: H below the diagonal, 1 on it, 0 above and past n."""
    cols = c + ks
    h = tl.load(h_ptr + rows[:, None] * n + cols[None, :], mask=(rows < n)[:, None] & (cols < n)[None, :], other=0.0)
    return tl.where(rows[:, None] > cols[None, :], h, tl.where(rows[:, None] == cols[None, :], 1.0, 0.0))


@triton.jit
def _wide_project_kernel(h_ptr, y_ptr, vh_ptr, vl_ptr, n, c, col_lo, m, W: tl.constexpr,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, DOT: tl.constexpr):
    """y[b, ks, cols - col_lo] := V[:, ks]^T C[:, cols], C = H[b, c:, col_lo:col_lo + m]; V's rows from c + ks[0].
    With DOT 3, V is read as bf16 planes (vh, vl: n x W a matrix) and only C is split here."""
    pid_k = tl.program_id(0)
    pid_n = tl.program_id(1)
    b = tl.program_id(2)
    h_ptr += b.to(tl.int64) * n * n
    vh_ptr += b.to(tl.int64) * n * W
    vl_ptr += b.to(tl.int64) * n * W
    ks = pid_k * BLOCK_M + tl.arange(0, BLOCK_M)
    j = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for r0 in range(c + pid_k * BLOCK_M, n, BLOCK_K):
        rows = r0 + tl.arange(0, BLOCK_K)
        tile = tl.load(h_ptr + rows[:, None] * n + (col_lo + j)[None, :], mask=(rows < n)[:, None], other=0.0)
        if DOT == 3:
            v_hi = tl.trans(tl.load(vh_ptr + rows[:, None] * W + ks[None, :]))
            v_lo = tl.trans(tl.load(vl_ptr + rows[:, None] * W + ks[None, :]))
            c_hi, c_lo = submission._bf16_pair(tile)
            acc = tl.dot(v_hi, c_hi, tl.dot(v_lo, c_hi, tl.dot(v_hi, c_lo, acc)))
        else:
            acc = _product(tl.trans(_reflectors(h_ptr, rows, ks, c, n)), tile, acc, DOT)
    tl.store(y_ptr + b.to(tl.int64) * W * m + ks[:, None] * m + j[None, :], acc)


@triton.jit
def _wide_times_t_kernel(t_ptr, y_ptr, z_ptr, m, W: tl.constexpr,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, DOT: tl.constexpr):
    """z[b, i, j] := sum over k <= i of T[b, k, i] y[b, k, j]."""
    pid_i = tl.program_id(0)
    pid_n = tl.program_id(1)
    b = tl.program_id(2)
    t_ptr += b.to(tl.int64) * W * W
    y_ptr += b.to(tl.int64) * W * m
    i = pid_i * BLOCK_M + tl.arange(0, BLOCK_M)
    j = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, (pid_i + 1) * BLOCK_M, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        t_trans = tl.load(t_ptr + k[None, :] * W + i[:, None])
        acc = _product(t_trans, tl.load(y_ptr + k[:, None] * m + j[None, :]), acc, DOT)
    tl.store(z_ptr + b.to(tl.int64) * W * m + i[:, None] * m + j[None, :], acc)


@triton.jit
def _wide_apply_kernel(h_ptr, z_ptr, vh_ptr, vl_ptr, zh_ptr, zl_ptr, n, c, col_lo, m, W: tl.constexpr,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, DOT: tl.constexpr):
    """C[rows, cols] -= V[rows, :] z[b, :, cols - col_lo], C = H[b, c:, col_lo:col_lo + m]; with DOT 3 the
    products read V and z as bf16 planes (hi, lo: vh, vl n x W a matrix, V's rows from 0; zh, zl W x m)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    b = tl.program_id(2)
    h_ptr += b.to(tl.int64) * n * n
    z_ptr += b.to(tl.int64) * W * m
    vh_ptr += b.to(tl.int64) * n * W
    vl_ptr += b.to(tl.int64) * n * W
    zh_ptr += b.to(tl.int64) * W * m
    zl_ptr += b.to(tl.int64) * W * m
    rows = c + pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    j = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, tl.minimum(W, (pid_m + 1) * BLOCK_M), BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        if DOT == 3:
            v_at = rows[:, None] * W + k[None, :]
            z_at = k[:, None] * m + j[None, :]
            v_hi = tl.load(vh_ptr + v_at)           # rows < n: the probe's n - c are whole blocks
            v_lo = tl.load(vl_ptr + v_at)
            z_hi = tl.load(zh_ptr + z_at)
            acc = tl.dot(v_lo, z_hi, tl.dot(v_hi, tl.load(zl_ptr + z_at), acc))
            acc = tl.dot(v_hi, z_hi, acc)
        else:
            acc = _product(_reflectors(h_ptr, rows, k, c, n), tl.load(z_ptr + k[:, None] * m + j[None, :]), acc,
                           DOT)
    pointers = h_ptr + rows[:, None] * n + (col_lo + j)[None, :]
    mask = (rows < n)[:, None]
    tl.store(pointers, tl.load(pointers, mask=mask) - acc, mask=mask)


def bf16_planes(x):
    """(hi, lo) with hi = bf16(x), lo = bf16(x - hi)."""
    hi = x.to(torch.bfloat16)
    return hi, (x - hi.float()).to(torch.bfloat16)


def reflectors_of(h, c, width):
    """V of the block reflector at column c, (batch, n, width) in h's dtype: H below the diagonal, 1 on it, 0 above."""
    n = h.shape[-1]
    rows = torch.arange(n, device=h.device)[:, None]
    cols = c + torch.arange(width, device=h.device)[None, :]
    return torch.where(rows > cols, h[:, :, c:c + width], (rows == cols).to(h.dtype))


def planes_of(h, z, c, width, m):
    """The bf16 planes of V (all n rows) and of z (W x m a matrix) for product 3: (vh, vl, zh, zl)."""
    return (*bf16_planes(reflectors_of(h, c, width)), *z_planes(z, h.shape[0], width, m))


def z_planes(z, batch, width, m):
    """The bf16 planes of z's first batch W x m matrices."""
    return bf16_planes(z[:batch * width * m].view(batch, width, m))


def wide_update(h, t, y, z, c, col_lo, col_hi, config, parts=("project", "times_t", "apply"), planes=None):
    """The block reflector of width W = t's at c on columns [col_lo, col_hi) by the three products (those of
    `parts`); their kernels. With product 3 the project and the apply read V (and the apply z) as bf16 planes
    (`planes`, made here by torch if not given: in a real schedule the panels and T^T Y would write them), and
    T^T Y takes Triton's bf16x3."""
    batch, n, width = h.shape[0], h.shape[-1], t.shape[-1]
    m = col_hi - col_lo
    block_m, block_n, block_k, warps, stages, dot = config
    blocks = dict(W=width, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, DOT=dot, num_warps=warps,
                  num_stages=stages)
    cols = triton.cdiv(m, block_n)
    made = dot == 3 and planes is None
    vh, vl, zh, zl = (*bf16_planes(reflectors_of(h, c, width)), None, None) if made else planes or (z, z, z, z)
    kernels = {}
    if "project" in parts:
        kernels["project"] = _wide_project_kernel[(width // block_m, cols, batch)](
            h, y, vh, vl, n, c, col_lo, m, **blocks)
    if "times_t" in parts:
        kernels["times_t"] = _wide_times_t_kernel[(width // block_m, cols, batch)](
            t, y, z, m, **dict(blocks, DOT=1 if dot == 3 else dot))
    if made:                    # z's planes from this call's T^T Y
        zh, zl = z_planes(z, batch, width, m)
    if "apply" in parts:
        kernels["apply"] = _wide_apply_kernel[(triton.cdiv(n - c, block_m), cols, batch)](
            h, z, vh, vl, zh, zl, n, c, col_lo, m, **blocks)
    return kernels


def pair_update(h, t, c, col_hi):
    """Main's fused update of columns [c + 64, col_hi) by the pair at c, as the plans launch it."""
    batch, n = h.shape[0], h.shape[-1]
    lo = c + PAIR
    kernel = submission._wy_update_kernel[(triton.cdiv(col_hi - lo, submission.TRAIL_BLOCK_N), batch)](
        h, t, h, h, n, c, lo, col_hi, W=PAIR, BLOCK_M=submission._pick(submission.TRAIL_FUSED_BLOCK_M, PAIR),
        BLOCK_N=submission.TRAIL_BLOCK_N, FROM_INPUT=False, num_warps=submission.TRAIL_WARPS,
        num_stages=submission.TRAIL_STAGES)
    return {"fused": kernel}


def schedules(n: int, outer: int):
    """name -> the updates of a schedule: ("pair", c, 64, col_hi) and ("wide", c, W, col_hi), each on the
    columns [c + width, col_hi)."""
    pairs = range(0, n - PAIR, PAIR)
    half = outer // 2
    main = [("pair", c, PAIR, n) for c in pairs]
    two = [("pair", c, PAIR, min(n, (c // outer + 1) * outer)) for c in pairs] + [
        ("wide", c, outer, n) for c in range(0, n - outer, outer)]
    three = [("pair", c, PAIR, min(n, (c // half + 1) * half)) for c in pairs] + [
        ("wide", c, half, min(n, c + outer)) for c in range(0, n - half, outer)] + [
        ("wide", c, outer, n) for c in range(0, n - outer, outer)]
    return {"main": main, f"two-level {outer}": two, f"three-level {half}/{outer}": three}


def check_wide(h, t, y, z, c, col_lo, col_hi, config, matrices: int = 4) -> float:
    """Largest difference of the wide update from float64's on the first matrices, relative to the update's size."""
    before = h[:matrices].double()
    wide_update(h, t, y, z, c, col_lo, col_hi, config)
    v = reflectors_of(before, c, t.shape[-1])
    delta = v @ t[:matrices].double().transpose(1, 2) @ v.transpose(1, 2) @ before[:, :, col_lo:col_hi]
    after = h[:matrices, :, col_lo:col_hi].double()
    return ((after - (before[:, :, col_lo:col_hi] - delta)).abs().max() / delta.abs().max()).item()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="640x512")
    parser.add_argument("--outer", type=int, default=256, help="columns of an outer block")
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args(argv)
    device = torch.device("cuda")
    print(f"{torch.cuda.get_device_name()}; median of {args.reps}", flush=True)
    for batch, n, pristine, h in random_batches(args.shapes, device):
        t = {w: (torch.randn(batch, w, w, device=device) / w ** 0.5).triu()
             for w in (PAIR, args.outer // 2, args.outer)}
        y = torch.empty(batch * args.outer * n, device=device)
        z = torch.empty_like(y)

        def restore():
            h.copy_(pristine)

        def timed(launch):
            kernels = launch()          # compiles
            torch.cuda.synchronize()
            return median_us(launch, restore, args.reps, device, queued=True), kernels

        print(f"--- {batch}x{n}", flush=True)
        cost = {}
        for name, updates in schedules(n, args.outer).items():
            for update in updates:
                if update in cost:
                    continue
                kind, c, width, col_hi = update
                col_lo = c + width
                if kind == "pair":
                    cost[update], kernels = timed(lambda c=c, hi=col_hi: pair_update(h, t[PAIR], c, hi))
                    print(f"pair c {c:4d} cols [{col_lo}, {col_hi}) {cost[update]:9.1f} us  "
                          f"{kernels['fused'].n_regs} regs", flush=True)
                    continue
                for config in WIDE_CONFIGS:
                    if config[0] > width:       # a tile of more reflectors than the block has
                        continue
                    restore()
                    error = check_wide(h, t[width], y, z, c, col_lo, col_hi, config)
                    planes = planes_of(h, z, c, width, col_hi - col_lo) if config[-1] == 3 else None

                    def launch(parts=("project", "times_t", "apply"), c=c, w=width, config=config, planes=planes):
                        return wide_update(h, t[w], y, z, c, c + w, col_hi, config, parts, planes)

                    kernels = launch()
                    parts = {part: median_us(lambda p=part: launch((p,)), restore, args.reps, device, queued=True)
                             for part in kernels}
                    us = sum(parts.values())
                    regs = " ".join(f"{k}: {v.n_regs}/{v.n_spills}" for k, v in kernels.items())
                    print(f"wide c {c:4d} W {width:3d} cols [{col_lo}, {col_hi}) {config} {us:9.1f} us (" +
                          " ".join(f"{k} {v:.1f}" for k, v in parts.items()) + f")  diff {error:.1e}  "
                          f"regs/spills {regs}", flush=True)
                    if config[-1] != 2:         # one TF32 pass is a floor, not a candidate
                        cost[update] = min(cost.get(update, us), us)
                    del planes
            total = sum(cost[u] for u in updates)
            print(f"{name:24s} updates {total:9.1f} us", flush=True)
        del pristine, h, y, z
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
