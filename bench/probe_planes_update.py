"""The pair's trailing update fed by TMA, with V as bf16 planes, against main's fused update (GPU).

    python bench/probe_planes_update.py [--shapes 640x512,60x1024] [--columns 0,256] [--reps 7] [--anatomy]

Main's fused W = 64 update (`submission._wy_update_kernel`) loads V as
float32 through per-element pointers and splits it into its bf16 pair in
every program, twice (V^T C, then the update), so that V reaches the
tensor cores only after a trip through registers and back to shared
memory. Here V's two bf16 planes (hi, lo: batch x n x W each, the unit
triangle selected) are written once per pair by `_planes_kernel`, and the
update loads them and C through 3-D TMA tensor descriptors, pipelined by
Triton over STAGES row blocks: the planes go from the TMA buffers straight
into the products (wgmma on Hopper, tcgen05 on Blackwell; local ptxas of
Triton 3.6 for sm_90: 106 registers at 4 warps, no spills). C is still
split in registers for V^T C, and the products and their order are
main's (the same bits); the result leaves by a TMA store. On the H200 it
ties main's kernel at best and loses once the planes' own kernel is counted
(bench/NOTES.md, twenty-fourth session; the patch that wired it into the
submission is in git history at 9548d14, `bench/wip/planes-update.patch`).

`--anatomy` times where the update's time goes instead: the same kernel
with fewer products, without V^T C (a copy of C), TMA copies of other
tiles, and torch copies of the same columns and of as many contiguous floats.

The warp-specialized Gluon kernel of `probe_ws_update.py` (mma.sync) lost
by 35-50%: its 3xBF16 mma.sync products alone are ~2500 cycles a row block.
Here the products stay on the wgmma path that main's kernel uses.

Each configuration updates the columns right of the pair at column c
(random h and T), is checked against main's kernel on the same input, and
timed alone (h restored, L2 flushed, events; the median of `reps`). The
planes' own kernel is timed alone too: the new update's cost is the sum.
"""
import os
import sys
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["QR_SKIP_PRECOMPILE"] = "1"

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

import submission  # noqa: E402
from probe_update import compare_pair_updates, main_update  # noqa: E402

W = 2 * submission.PANEL_WIDTH     # a pair's block reflector
PLANE_BLOCK_M = 64


@triton.jit
def _planes_kernel(h_ptr, hi_ptr, lo_ptr, n, c, W: tl.constexpr, BLOCK_M: tl.constexpr):
    """hi, lo[b, rows, :] := _bf16_pair(V[rows]) for the panel pair at column c, rows c + program 0's block..."""
    b = tl.program_id(1)
    r0 = c + tl.program_id(0) * BLOCK_M
    rows = r0 + tl.arange(0, BLOCK_M)
    v = submission._load_reflectors(h_ptr + b.to(tl.int64) * n * n, r0, rows, c, n, c, n, W)
    hi, lo = submission._bf16_pair(v)
    plane = b.to(tl.int64) * n * W + rows[:, None] * W + tl.arange(0, W)[None, :]
    tl.store(hi_ptr + plane, hi, mask=(rows < n)[:, None])
    tl.store(lo_ptr + plane, lo, mask=(rows < n)[:, None])


@triton.jit
def _planes_update_kernel(c_desc, hi_desc, lo_desc, t_ptr, n, c, col_lo,
                          W: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, STAGES: tl.constexpr,
                          PRODUCTS: tl.constexpr = 3, PROJECT: tl.constexpr = True):
    """C := C - V T^T V^T C for one column tile, C = H[b, c:, col_lo:] (c_desc's columns), V given by its bf16
    planes hi + lo; rows past n are read as zeros and not stored (3-D descriptors).

    For the anatomy (`--anatomy`, wrong results on purpose): PRODUCTS 1 keeps only hi x hi of each
    3xBF16 product, 0 none (V^T C becomes C's column sums, the update a copy); PROJECT False skips the
    V^T C pass, so C is read once and written once."""
    pid_n = tl.program_id(0)
    b = tl.program_id(1)
    col0 = col_lo + pid_n * BLOCK_N
    k = tl.arange(0, W)
    blocks = tl.cdiv(n - c, BLOCK_M)

    # ----- (V^T C)^T, top to bottom -----
    acc = tl.zeros((BLOCK_N, W), dtype=tl.float32)
    for i in tl.range(0, blocks if PROJECT else 0, num_stages=STAGES):
        r0 = c + i * BLOCK_M
        tile = c_desc.load([b, r0, col0]).reshape(BLOCK_M, BLOCK_N)
        v_hi = hi_desc.load([b, r0, 0]).reshape(BLOCK_M, W)
        v_lo = lo_desc.load([b, r0, 0]).reshape(BLOCK_M, W)
        tile_hi, tile_lo = submission._bf16_pair(tl.trans(tile))
        if PRODUCTS == 3:
            acc = tl.dot(tile_hi, v_hi, tl.dot(tile_lo, v_hi, tl.dot(tile_hi, v_lo, acc)))
        elif PRODUCTS == 1:
            acc = tl.dot(tile_hi, v_hi, acc)
        else:
            acc += tl.sum(tile, axis=0)[:, None] + tl.sum(v_hi.to(tl.float32) + v_lo.to(tl.float32), axis=0)[None, :]

    # ----- Y = T^T V^T C, split -----
    t = tl.load(t_ptr + b.to(tl.int64) * W * W + k[:, None] * W + k[None, :])
    y_hi, y_lo = submission._bf16_pair(tl.trans(submission._times_t(acc, t, W)))

    # ----- C - V Y, bottom to top (main's products in main's order: the same bits) -----
    for i in tl.range(0, blocks, num_stages=STAGES):
        r0 = c + (blocks - 1 - i) * BLOCK_M
        tile = c_desc.load([b, r0, col0]).reshape(BLOCK_M, BLOCK_N)
        v_hi = hi_desc.load([b, r0, 0]).reshape(BLOCK_M, W)
        v_lo = lo_desc.load([b, r0, 0]).reshape(BLOCK_M, W)
        if PRODUCTS == 3:
            reflected = tl.dot(v_hi, y_hi, tl.dot(v_lo, y_hi, tl.dot(v_hi, y_lo, tl.zeros((BLOCK_M, BLOCK_N), tl.float32))))
        elif PRODUCTS == 1:
            reflected = tl.dot(v_hi, y_hi, tl.zeros((BLOCK_M, BLOCK_N), tl.float32))
        else:
            reflected = tl.sum(v_hi.to(tl.float32) + v_lo.to(tl.float32), axis=1)[:, None] \
                + tl.sum(y_hi.to(tl.float32) + y_lo.to(tl.float32), axis=0)[None, :]
        c_desc.store([b, r0, col0], (tile - reflected).reshape(1, BLOCK_M, BLOCK_N))


def write_planes(h, n, c, planes):
    """V's bf16 planes of the pair at c into planes (2 x batch x n x W)."""
    batch = h.shape[0]
    return _planes_kernel[(triton.cdiv(n - c, PLANE_BLOCK_M), batch)](
        h, planes[0], planes[1], n, c, W=W, BLOCK_M=PLANE_BLOCK_M, num_warps=4)


def planes_fused(h, t, n, c, planes, warps, stages, block_m, block_n, products=3, project=True):
    """The same update by `_planes_update_kernel`, given the planes."""
    batch = h.shape[0]
    c_desc = TensorDescriptor(h, [batch, n, n], [n * n, n, 1], [1, block_m, block_n])
    hi_desc, lo_desc = (TensorDescriptor(p, [batch, n, W], [n * W, W, 1], [1, block_m, W]) for p in planes)
    return _planes_update_kernel[(triton.cdiv(n - c - W, block_n), batch)](
        c_desc, hi_desc, lo_desc, t, n, c, c + W, W=W, BLOCK_M=block_m, BLOCK_N=block_n, STAGES=stages,
        PRODUCTS=products, PROJECT=project, num_warps=warps, num_stages=stages)


def configurations():
    """(name, launch(h, t, n, c, planes)) of every configuration timed; main's first."""
    rows = [("main fused W64", lambda h, t, n, c, planes: main_update(h, t, n, c)),
            ("planes alone (h unchanged)", lambda h, t, n, c, planes: write_planes(h, n, c, planes))]
    for warps, stages, block_m, block_n in ((4, 1, 64, 64), (4, 2, 64, 64), (4, 3, 64, 64), (8, 2, 64, 64),
                                             (8, 3, 128, 64), (4, 2, 64, 32), (4, 3, 64, 32), (4, 4, 64, 32),
                                             (8, 1, 64, 128), (8, 2, 64, 128)):
        rows.append((f"planes warps {warps} stages {stages} BM {block_m} BN {block_n}",
                     lambda h, t, n, c, planes, a=(warps, stages, block_m, block_n): planes_fused(h, t, n, c, planes, *a)))
    return rows


def anatomy():
    """Main, the best planes configuration of the first GPU run (4 warps, 3 stages, 64 x 64 tiles), and the
    same with fewer products or without V^T C: where the update's time goes."""
    best = (4, 3, 64, 64)
    rows = [("main fused W64", lambda h, t, n, c, planes: main_update(h, t, n, c))]
    for products, project, name in ((3, True, "3xBF16"), (1, True, "hi x hi only"), (0, True, "no products"),
                                    (0, False, "copy: C read once, written once")):
        rows.append((f"planes {name}", lambda h, t, n, c, planes, p=products, q=project:
                     planes_fused(h, t, n, c, planes, *best, products=p, project=q)))
    for stages in (2, 4):
        rows.append((f"planes no products, {stages} stages", lambda h, t, n, c, planes, s=stages:
                     planes_fused(h, t, n, c, planes, 4, s, 64, 64, products=0)))
    rows.append(("planes no products, 8 warps", lambda h, t, n, c, planes:
                 planes_fused(h, t, n, c, planes, 8, 3, 64, 64, products=0)))
    for warps, stages, block_m, block_n in ((4, 2, 64, 128), (8, 2, 64, 128), (4, 3, 32, 128), (4, 4, 32, 64),
                                             (4, 2, 128, 64), (4, 6, 16, 64)):
        rows.append((f"copy warps {warps} stages {stages} BM {block_m} BN {block_n}",
                     lambda h, t, n, c, planes, a=(warps, stages, block_m, block_n):
                     planes_fused(h, t, n, c, planes, *a, products=0, project=False)))
    rows.append(("torch: the same columns times 1, in place", lambda h, t, n, c, planes:
                 untimed_kernel(h[:, c:, c + W:].mul_(1.0))))
    rows.append(("torch: as many floats, contiguous, times 1", lambda h, t, n, c, planes:
                 untimed_kernel(h.view(-1)[:h.shape[0] * (n - c) * (n - c - W)].mul_(1.0))))
    return rows


def untimed_kernel(_):
    """What `compare_pair_updates` reads of a launch that is not a Triton kernel."""
    return SimpleNamespace(n_regs=0, n_spills=0)


def prepare_planes(h, n, c):
    """V's planes of the pair at c in h."""
    planes = torch.zeros(2, h.shape[0], n, W, dtype=torch.bfloat16, device=h.device)
    write_planes(h, n, c, planes)
    return planes


if __name__ == "__main__":
    argv = [a for a in sys.argv[1:] if a != "--anatomy"]
    sys.exit(compare_pair_updates(argv, __doc__.split("\n\n")[0],
                                  anatomy if "--anatomy" in sys.argv else configurations, prepare_planes))
