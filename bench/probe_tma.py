"""The fused trailing update with its tiles loaded by TMA and pipelined by Triton, against main's (GPU).

    python bench/probe_tma.py [--shapes 640x512,60x1024] [--reps 7]

Main's fused update (`submission._wy_update_kernel`) loads V and C with
per-element pointers and one row block ahead by hand, at one pipeline stage:
Triton's own stages through shared memory cost registers there and were
slower. Here the same math loads V and C through TMA tensor descriptors
(3-D: batch, row, column; rows past n read as zeros), so that Triton's
pipeliner keeps `STAGES - 1` row blocks in flight in shared memory without
holding their addresses in registers. The question: does the update, which
ncu found waiting on its own loads, run closer to DRAM speed that way?

Each configuration updates the columns [W, n) by the first panel's reflector
(c = 0, random h and T), is checked against main's kernel on the same input,
and timed alone (h restored, L2 flushed, events; the median of `reps`).
"""
import argparse
import itertools
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["QR_SKIP_PRECOMPILE"] = "1"

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

import submission  # noqa: E402
from probe_update import median_us, random_batches  # noqa: E402

PANEL = submission.PANEL_WIDTH


@triton.jit
def _reflector_block(v_desc, b, r0, c, W: tl.constexpr, BLOCK_M: tl.constexpr):
    """V[r0:r0 + BLOCK_M, 0:W] of the panel at column c: unit diagonal, zero above, H below."""
    rows = r0 + tl.arange(0, BLOCK_M)
    k = c + tl.arange(0, W)
    h = v_desc.load([b, r0, c]).reshape(BLOCK_M, W)
    return tl.where(rows[:, None] > k[None, :], h, tl.where(rows[:, None] == k[None, :], 1.0, 0.0))


@triton.jit
def _wy_update_tma_kernel(
    v_desc, c_desc, h_ptr, t_ptr,
    n, c, col_lo, col_hi,
    W: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, STAGES: tl.constexpr,
    TMA_STORE: tl.constexpr,
):
    """C[:, cols] := C[:, cols] - V T^T V^T C[:, cols] for one column tile, C = H[b, c:, col_lo:col_hi]."""
    pid_n = tl.program_id(0)
    b = tl.program_id(1)
    col0 = col_lo + pid_n * BLOCK_N
    cols = col0 + tl.arange(0, BLOCK_N)
    k = tl.arange(0, W)
    blocks = tl.cdiv(n - c, BLOCK_M)

    acc = tl.zeros((BLOCK_N, W), dtype=tl.float32)
    for i in tl.range(0, blocks, num_stages=STAGES):
        r0 = c + i * BLOCK_M
        v = _reflector_block(v_desc, b, r0, c, W, BLOCK_M)
        tile = c_desc.load([b, r0, col0]).reshape(BLOCK_M, BLOCK_N)
        acc = submission._dot_3xbf16(tl.trans(tile), v, acc)
    t = tl.load(t_ptr + b.to(tl.int64) * W * W + k[:, None] * W + k[None, :])
    y_big, y_small = submission._bf16_pair(tl.trans(tl.dot(acc, t, input_precision="ieee")))

    for i in tl.range(0, blocks, num_stages=STAGES):
        r0 = c + (blocks - 1 - i) * BLOCK_M
        v = _reflector_block(v_desc, b, r0, c, W, BLOCK_M)
        tile = c_desc.load([b, r0, col0]).reshape(BLOCK_M, BLOCK_N)
        out = tile - submission._dot_3xbf16_split(v, y_big, y_small, tl.zeros(tile.shape, dtype=tl.float32))
        if TMA_STORE:
            c_desc.store([b, r0, col0], out.reshape(1, BLOCK_M, BLOCK_N))
        else:
            rows = r0 + tl.arange(0, BLOCK_M)
            tl.store(h_ptr + b.to(tl.int64) * n * n + rows[:, None] * n + cols[None, :], out,
                     mask=(rows < n)[:, None] & (cols < col_hi)[None, :])


def main_fused(h, t, n, lo, warps, block_m, block_n):
    """Main's fused update of the columns [lo, n) by the panel at c = 0 (V from h, T = t)."""
    batch, width = h.shape[0], t.shape[-1]
    return submission._wy_update_kernel[(triton.cdiv(n - lo, block_n), batch)](
        h, t, h, h, n, 0, lo, n, W=width, BLOCK_M=block_m, BLOCK_N=block_n, FROM_INPUT=False,
        num_warps=warps, num_stages=1)


def tma_fused(h, t, n, lo, warps, block_m, block_n, stages, tma_store):
    """The same update by `_wy_update_tma_kernel`, its V and C tiles read through 3-D tensor descriptors."""
    batch, width = h.shape[0], t.shape[-1]
    shape, strides = [batch, n, n], [n * n, n, 1]
    v_desc = TensorDescriptor(h, shape, strides, [1, block_m, width])
    c_desc = TensorDescriptor(h, shape, strides, [1, block_m, block_n])
    return _wy_update_tma_kernel[(triton.cdiv(n - lo, block_n), batch)](
        v_desc, c_desc, h, t, n, 0, lo, n, W=width, BLOCK_M=block_m, BLOCK_N=block_n, STAGES=stages,
        TMA_STORE=tma_store, num_warps=warps, num_stages=1)


def configurations():
    """(name, W, launch(h, t, n)) of every configuration timed."""
    rows = []
    for width, block_m in ((PANEL, 32), (2 * PANEL, 64)):
        rows.append((f"main W{width} BM {block_m}", width,
                     lambda h, t, n, w=width, m=block_m: main_fused(h, t, n, w, 4, m, 64)))
        for warps, stages, block_m_tma, tma_store in itertools.product(
                (4, 8) if width > PANEL else (4,), (1, 2, 3), sorted({block_m, 64}), (False, True)):
            rows.append((f"tma  W{width} BM {block_m_tma} warps {warps} stages {stages} "
                         f"{'tma-store' if tma_store else 'st'}", width,
                         lambda h, t, n, w=width, a=(warps, block_m_tma, 64, stages, tma_store): tma_fused(h, t, n, w, *a)))
    return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="640x512,60x1024")
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args(argv)
    device = torch.device("cuda")
    print(f"{torch.cuda.get_device_name()}; median of {args.reps}", flush=True)
    for batch, n, pristine, h in random_batches(args.shapes, device):
        t = {w: (0.1 * torch.randn(batch, w, w, device=device)).triu() for w in (PANEL, 2 * PANEL)}
        expected = {}
        print(f"--- {batch}x{n}, c = 0", flush=True)
        for name, width, launch in configurations():
            h.copy_(pristine)
            try:
                kernel = launch(h, t[width], n)         # compiles
            except Exception as error:                  # a configuration Triton cannot build
                print(f"{name:40s} failed: {type(error).__name__}: {str(error).splitlines()[0][:120]}", flush=True)
                continue
            if name.startswith("main"):
                expected[width] = h.clone()
            error = ((h - expected[width]).abs().max() / expected[width].abs().max()).item()
            median = median_us(lambda: launch(h, t[width], n), lambda: h.copy_(pristine), args.reps, device)
            print(f"{name:40s} {median:9.1f} us   {kernel.n_regs} regs, {kernel.n_spills} spills, "
                  f"max diff {error:.1e}", flush=True)
        del pristine, h, expected
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
