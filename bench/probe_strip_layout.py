"""The fused trailing update and copies of its columns with H stored in other layouts (GPU).

    python bench/probe_strip_layout.py [--shapes 640x512] [--columns 0,128,256,384] [--layouts 0,1,64,128]
        [--reps 7]

The update's columns move at a copy's rate, and a copy of them (one read,
one write of C = H[b, c:n, c + W:n], rows of 1.8 KB out of 2 KB) takes
~1.4x as long as a copy of as many contiguous floats (twenty-fourth
session: 441-480 against 313 us at 640x512, c = 0, by torch, TMA tiles and
Triton alike). If the difference is DRAM's access pattern, a layout in
which a program's column strip is one contiguous run would make every
pass over C faster. Layouts, by STRIP:

- 0: row-major, as the submission stores H (element (i, j) at i n + j);
- 1: column-major (j n + i);
- S > 1: strips of S columns, each n x S row-major and contiguous
  (element (i, j) at (j // S) n S + i S + j % S).

For each layout and pair column c (W = 64, columns [c + W, n)) it times
main's fused update, the same update with the layout's addresses
(`_layout_update_kernel`, otherwise `_wy_update_kernel`'s algorithm and
tiles), and the update's traffic without its products: C read once and
written once, and C read twice and written once; then a copy of as many
contiguous floats. Each update is checked against main's (the result put
back in row-major order); each timing restores h, flushes L2 and takes
the median of `reps` launches queued behind a GPU sleep.
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
from probe_update import main_update, median_us, random_batches  # noqa: E402
from submission import _bf16_pair, _dot_3xbf16, _dot_3xbf16_split, _times_t  # noqa: E402

WIDTH = 2 * submission.PANEL_WIDTH      # a pair's block reflector
MODES = {"update": 0, "copy": 1, "two reads": 2}


@triton.jit
def _offsets(rows, col0, cols, n, STRIP: tl.constexpr):
    """Offsets of H[rows, col0 + cols] in one matrix stored by STRIP (module docstring); col0 + cols must lie
    in one strip (col0 a multiple of the tile's width, the width dividing STRIP)."""
    if STRIP == 0:
        return rows[:, None] * n + (col0 + cols)[None, :]
    elif STRIP == 1:
        return (col0 + cols)[None, :] * n + rows[:, None]
    else:
        return (col0 // STRIP) * (n * STRIP) + rows[:, None] * STRIP + (col0 % STRIP + cols)[None, :]


@triton.jit
def _load_rows(h_ptr, rows, c, n, col0, cols, STRIP: tl.constexpr, W: tl.constexpr):
    """V[rows] (unit lower trapezoid of the W columns at c) and C[rows, col0 + cols]; rows outside [c, n)
    read nothing."""
    k = tl.arange(0, W)
    inside = (rows >= c) & (rows < n)
    v = tl.load(h_ptr + _offsets(rows, c, k, n, STRIP), mask=inside[:, None], other=0.0)
    v = tl.where(rows[:, None] > (c + k)[None, :], v, tl.where(rows[:, None] == (c + k)[None, :], 1.0, 0.0))
    tile = tl.load(h_ptr + _offsets(rows, col0, cols, n, STRIP), mask=inside[:, None], other=0.0)
    return v, tile


@triton.jit
def _layout_update_kernel(h_ptr, t_ptr, n, c, col_lo, STRIP: tl.constexpr, MODE: tl.constexpr, W: tl.constexpr,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """MODE 0: C := C - V T^T V^T C for one tile of columns (C = H[b, c:, col_lo:]) as `_wy_update_kernel`
    does it, H stored by STRIP. MODE 1: C read and written back. MODE 2: C read twice, written once."""
    pid_n = tl.program_id(0)
    b = tl.program_id(1)
    h_ptr += b.to(tl.int64) * n * n
    t_ptr += b.to(tl.int64) * W * W
    col0 = col_lo + pid_n * BLOCK_N
    cols = tl.arange(0, BLOCK_N)
    k = tl.arange(0, W)
    if MODE == 1:
        for r0 in range(c, n, BLOCK_M):
            rows = r0 + tl.arange(0, BLOCK_M)
            v, tile = _load_rows(h_ptr, rows, c, n, col0, cols, STRIP, W)
            tl.store(h_ptr + _offsets(rows, col0, cols, n, STRIP), tile, mask=(rows < n)[:, None])
    else:
        acc = tl.zeros((BLOCK_N, W), dtype=tl.float32)
        rows = c + tl.arange(0, BLOCK_M)
        v, tile = _load_rows(h_ptr, rows, c, n, col0, cols, STRIP, W)
        for r0 in range(c + BLOCK_M, n + BLOCK_M, BLOCK_M):
            rows = r0 + tl.arange(0, BLOCK_M)
            v_next, tile_next = _load_rows(h_ptr, rows, c, n, col0, cols, STRIP, W)
            if MODE == 0:
                acc = _dot_3xbf16(tl.trans(tile), v, acc)
            else:
                acc += tl.sum(tile, axis=0)[:, None] + tl.sum(v, axis=0)[None, :]
            v, tile = v_next, tile_next
        t = tl.load(t_ptr + k[:, None] * W + k[None, :])
        if MODE == 0:
            y_big, y_small = _bf16_pair(tl.trans(_times_t(acc, t, W)))
        else:
            y_big, y_small = _bf16_pair(tl.trans(acc * 1e-30))
        r0 = c + (n - 1 - c) // BLOCK_M * BLOCK_M
        rows = r0 + tl.arange(0, BLOCK_M)
        v, tile = _load_rows(h_ptr, rows, c, n, col0, cols, STRIP, W)
        for _ in range(0, tl.cdiv(n - c, BLOCK_M)):
            r0 -= BLOCK_M
            rows_above = r0 + tl.arange(0, BLOCK_M)
            v_above, tile_above = _load_rows(h_ptr, rows_above, c, n, col0, cols, STRIP, W)
            if MODE == 0:
                tile -= _dot_3xbf16_split(v, y_big, y_small, tl.zeros(tile.shape, dtype=tl.float32))
            else:
                tile += tl.sum(y_big.to(tl.float32), axis=0)[None, :]
            tl.store(h_ptr + _offsets(rows, col0, cols, n, STRIP), tile, mask=(rows < n)[:, None])
            rows, v, tile = rows_above, v_above, tile_above


def to_layout(h, strip: int):
    """h (batch x n x n, row-major) stored by `strip`, as a flat tensor per matrix."""
    batch, n, _ = h.shape
    if strip == 0:
        return h.clone()
    if strip == 1:
        return h.transpose(1, 2).contiguous()
    return h.view(batch, n, n // strip, strip).permute(0, 2, 1, 3).contiguous()


def from_layout(x, n: int, strip: int):
    """The inverse of `to_layout`: a row-major batch x n x n tensor."""
    if strip == 0:
        return x.clone()
    if strip == 1:
        return x.transpose(1, 2).contiguous()
    return x.permute(0, 2, 1, 3).reshape(x.shape[0], n, n)


def layout_update(x, t, n, c, strip, mode):
    """`_layout_update_kernel` on every matrix of x (stored by `strip`), columns [c + W, n)."""
    block_n = submission.TRAIL_BLOCK_N
    return _layout_update_kernel[(triton.cdiv(n - c - WIDTH, block_n), x.shape[0])](
        x, t, n, c, c + WIDTH, STRIP=strip, MODE=MODES[mode], W=WIDTH,
        BLOCK_M=submission._pick(submission.TRAIL_FUSED_BLOCK_M, WIDTH), BLOCK_N=block_n,
        num_warps=submission.TRAIL_WARPS, num_stages=submission.TRAIL_STAGES)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="640x512")
    parser.add_argument("--columns", default="0,128,256,384", help="pair columns c (multiples of 64)")
    parser.add_argument("--layouts", default="0,1,64,128", help="STRIP values (module docstring)")
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args(argv)
    device = torch.device("cuda")
    print(f"{torch.cuda.get_device_name()}; median of {args.reps}, queued", flush=True)
    for batch, n, pristine, h in random_batches(args.shapes, device):
        t = (0.1 * torch.randn(batch, WIDTH, WIDTH, device=device)).triu().contiguous()
        for c in map(int, args.columns.split(",")):
            print(f"--- {batch}x{n}, W {WIDTH}, c = {c}, columns [{c + WIDTH}, {n})", flush=True)
            h.copy_(pristine)
            kernel = main_update(h, t, n, c)
            torch.cuda.synchronize()
            expected, size = h.clone(), (h - pristine).abs().max().item()
            median = median_us(lambda: main_update(h, t, n, c), lambda: h.copy_(pristine), args.reps, device,
                               queued=True)
            print(f"{'main fused (row-major)':36s} {median:9.1f} us   {kernel.n_regs} regs", flush=True)
            for strip in map(int, args.layouts.split(",")):
                source = to_layout(pristine, strip)
                x = source.clone()
                for mode in MODES:
                    x.copy_(source)
                    kernel = layout_update(x, t, n, c, strip, mode)
                    torch.cuda.synchronize()
                    check = ""
                    if mode == "update":
                        diff = (from_layout(x, n, strip) - expected).abs().max().item() / size
                        check = f", diff {diff:.1e} of the update"
                    median = median_us(lambda: layout_update(x, t, n, c, strip, mode), lambda: x.copy_(source),
                                       args.reps, device, queued=True)
                    print(f"{f'layout {strip} {mode}':36s} {median:9.1f} us   {kernel.n_regs} regs{check}",
                          flush=True)
            flat = torch.empty(batch * (n - c) * (n - c - WIDTH), device=device)
            median = median_us(lambda: flat.mul_(1.0), lambda: None, args.reps, device, queued=True)
            print(f"{'contiguous copy, as many floats':36s} {median:9.1f} us", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
