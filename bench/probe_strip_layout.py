"""The fused trailing update and copies of its columns with H stored in other layouts (GPU).

    python bench/probe_strip_layout.py [--shapes 640x512] [--columns 0,128,256,384] [--layouts 0,1,64,128]
        [--variants base,masked,...] [--reps 7]

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
contiguous floats. Then, row-major, the update's VARIANTS: main's column
masks, V read as bf16 planes made beforehand, eviction hints, Triton's
software pipelining, other tiles and warps. Each update is checked
against main's (the result put back in row-major order); each timing
restores h, flushes L2 and takes the median of `reps` launches queued
behind a GPU sleep.
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
def _load_rows(h_ptr, p_ptr, rows, c, n, col0, cols, col_hi, STRIP: tl.constexpr, W: tl.constexpr,
               MASKED: tl.constexpr, PLANES: tl.constexpr, HINT: tl.constexpr):
    """V[rows] (unit lower trapezoid of the W columns at c) and C[rows, col0 + cols]; rows outside [c, n)
    read nothing. V is (hi, lo) bf16 from the planes at p_ptr (rows x W, the triangle selected) with
    PLANES, else float32 from h. MASKED also masks C's columns at col_hi and V's at n, as main does; HINT
    is the loads' eviction policy."""
    k = tl.arange(0, W)
    inside = (rows >= c) & (rows < n)
    c_mask = inside[:, None]
    if MASKED:
        c_mask = c_mask & ((col0 + cols) < col_hi)[None, :]
    tile = tl.load(h_ptr + _offsets(rows, col0, cols, n, STRIP), mask=c_mask, other=0.0, eviction_policy=HINT)
    if PLANES:
        plane = p_ptr + rows[:, None] * W + k[None, :]
        v = (tl.load(plane, mask=inside[:, None], other=0.0),
             tl.load(plane + n * W, mask=inside[:, None], other=0.0))
    else:
        v_mask = inside[:, None]
        if MASKED:
            v_mask = v_mask & ((c + k) < n)[None, :]
        v = tl.load(h_ptr + _offsets(rows, c, k, n, STRIP), mask=v_mask, other=0.0)
        v = tl.where(rows[:, None] > (c + k)[None, :], v, tl.where(rows[:, None] == (c + k)[None, :], 1.0, 0.0))
    return v, tile


@triton.jit
def _project_rows(v, tile, acc, PLANES: tl.constexpr):
    """acc + (V^T C)^T of one row block, 3xBF16 as `_dot_3xbf16`."""
    if PLANES:
        return _dot_3xbf16_split(tl.trans(tile), v[0], v[1], acc)
    else:
        return _dot_3xbf16(tl.trans(tile), v, acc)


@triton.jit
def _reflect_rows(v, tile, y_big, y_small, PLANES: tl.constexpr):
    """C - V Y of one row block, 3xBF16 as `_subtract_reflected`."""
    zero = tl.zeros(tile.shape, dtype=tl.float32)
    if PLANES:
        return tile - tl.dot(v[0], y_big, tl.dot(v[1], y_big, tl.dot(v[0], y_small, zero)))
    else:
        return tile - _dot_3xbf16_split(v, y_big, y_small, zero)


@triton.jit
def _layout_update_kernel(h_ptr, p_ptr, t_ptr, n, c, col_lo, col_hi, STRIP: tl.constexpr, MODE: tl.constexpr,
                          W: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, MASKED: tl.constexpr,
                          PLANES: tl.constexpr, HINTS: tl.constexpr, STAGES: tl.constexpr):
    """MODE 0: C := C - V T^T V^T C for one tile of columns (C = H[b, c:, col_lo:col_hi]) as
    `_wy_update_kernel` does it, H stored by STRIP. MODE 1: C read and written back. MODE 2: C read twice,
    written once. HINTS: the first pass's loads evict last, the second's and the stores first. STAGES 0:
    the next row block loaded into registers ahead (main's form); else the loops are Triton's
    software-pipelined `tl.range` of that many stages."""
    pid_n = tl.program_id(0)
    b = tl.program_id(1)
    h_ptr += b.to(tl.int64) * n * n
    p_ptr += b.to(tl.int64) * 2 * n * W
    t_ptr += b.to(tl.int64) * W * W
    col0 = col_lo + pid_n * BLOCK_N
    cols = tl.arange(0, BLOCK_N)
    k = tl.arange(0, W)
    first: tl.constexpr = "evict_last" if HINTS else ""
    second: tl.constexpr = "evict_first" if HINTS else ""
    store_mask = (col0 + cols < col_hi)[None, :] if MASKED else (cols < BLOCK_N)[None, :]
    if MODE == 1:
        for r0 in range(c, n, BLOCK_M):
            rows = r0 + tl.arange(0, BLOCK_M)
            v, tile = _load_rows(h_ptr, p_ptr, rows, c, n, col0, cols, col_hi, STRIP, W, MASKED, False, "")
            tl.store(h_ptr + _offsets(rows, col0, cols, n, STRIP), tile, mask=(rows < n)[:, None] & store_mask)
    else:
        acc = tl.zeros((BLOCK_N, W), dtype=tl.float32)
        if STAGES == 0:
            rows = c + tl.arange(0, BLOCK_M)
            v, tile = _load_rows(h_ptr, p_ptr, rows, c, n, col0, cols, col_hi, STRIP, W, MASKED, PLANES, first)
            for r0 in range(c + BLOCK_M, n + BLOCK_M, BLOCK_M):
                rows = r0 + tl.arange(0, BLOCK_M)
                v_next, tile_next = _load_rows(h_ptr, p_ptr, rows, c, n, col0, cols, col_hi, STRIP, W, MASKED,
                                               PLANES, first)
                if MODE == 0:
                    acc = _project_rows(v, tile, acc, PLANES)
                else:
                    acc += tl.sum(tile, axis=0)[:, None] + tl.sum(v, axis=0)[None, :]
                v, tile = v_next, tile_next
        else:
            for r0 in tl.range(c, n, BLOCK_M, num_stages=STAGES):
                rows = r0 + tl.arange(0, BLOCK_M)
                v, tile = _load_rows(h_ptr, p_ptr, rows, c, n, col0, cols, col_hi, STRIP, W, MASKED, PLANES,
                                     first)
                acc = _project_rows(v, tile, acc, PLANES)
        t = tl.load(t_ptr + k[:, None] * W + k[None, :])
        if MODE == 0:
            y_big, y_small = _bf16_pair(tl.trans(_times_t(acc, t, W)))
        else:
            y_big, y_small = _bf16_pair(tl.trans(acc * 1e-30))
        last = c + (n - 1 - c) // BLOCK_M * BLOCK_M
        if STAGES == 0:
            rows = last + tl.arange(0, BLOCK_M)
            v, tile = _load_rows(h_ptr, p_ptr, rows, c, n, col0, cols, col_hi, STRIP, W, MASKED, PLANES, second)
            for i in range(0, tl.cdiv(n - c, BLOCK_M)):
                rows_above = last - (i + 1) * BLOCK_M + tl.arange(0, BLOCK_M)
                v_above, tile_above = _load_rows(h_ptr, p_ptr, rows_above, c, n, col0, cols, col_hi, STRIP, W,
                                                 MASKED, PLANES, second)
                if MODE == 0:
                    tile = _reflect_rows(v, tile, y_big, y_small, PLANES)
                else:
                    tile += tl.sum(y_big.to(tl.float32), axis=0)[None, :]
                tl.store(h_ptr + _offsets(rows, col0, cols, n, STRIP), tile, mask=(rows < n)[:, None] & store_mask,
                         eviction_policy=second)
                rows, v, tile = rows_above, v_above, tile_above
        else:
            for i in tl.range(0, tl.cdiv(n - c, BLOCK_M), num_stages=STAGES):
                rows = last - i * BLOCK_M + tl.arange(0, BLOCK_M)
                v, tile = _load_rows(h_ptr, p_ptr, rows, c, n, col0, cols, col_hi, STRIP, W, MASKED, PLANES,
                                     second)
                tl.store(h_ptr + _offsets(rows, col0, cols, n, STRIP),
                         _reflect_rows(v, tile, y_big, y_small, PLANES), mask=(rows < n)[:, None] & store_mask,
                         eviction_policy=second)


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


VARIANTS = {      # name: the row-major update's options over BASE
    "base": {},
    "masked": dict(MASKED=True),
    "planes": dict(PLANES=True),
    "hints": dict(HINTS=True),
    "stages 2": dict(STAGES=2),
    "stages 3": dict(STAGES=3),
    "planes stages 2": dict(PLANES=True, STAGES=2),
    "BN 32": dict(BLOCK_N=32),
    "BM 32": dict(BLOCK_M=32),
    "8 warps": dict(num_warps=8),
    "planes BM 32": dict(PLANES=True, BLOCK_M=32),
}
BASE = dict(MASKED=False, PLANES=False, HINTS=False, STAGES=0, BLOCK_N=submission.TRAIL_BLOCK_N,
            BLOCK_M=submission._pick(submission.TRAIL_FUSED_BLOCK_M, WIDTH), num_warps=submission.TRAIL_WARPS)


def layout_update(x, planes, t, n, c, strip, mode, **options):
    """`_layout_update_kernel` on every matrix of x (stored by `strip`), columns [c + W, n), with BASE's
    options but those given; planes: V's (batch x 2 x n x W bf16) for PLANES."""
    options = {**BASE, **options}
    return _layout_update_kernel[(triton.cdiv(n - c - WIDTH, options["BLOCK_N"]), x.shape[0])](
        x, planes, t, n, c, c + WIDTH, n, STRIP=strip, MODE=MODES[mode], W=WIDTH, **options)


def reflector_planes(h, c: int, width: int = WIDTH):
    """V's bf16 planes (hi, lo) of the `width` columns at c: batch x 2 x n x width, rows above c zero (what a
    panel writing them would give)."""
    v = h[:, :, c:c + width].tril(-c - 1)
    v[:, c + torch.arange(width), torch.arange(width)] = 1.0
    hi = v.bfloat16()
    return torch.stack((hi, (v - hi.float()).bfloat16()), dim=1).contiguous()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="640x512")
    parser.add_argument("--columns", default="0,128,256,384", help="pair columns c (multiples of 64)")
    parser.add_argument("--layouts", default="0,1,64,128", help="STRIP values (module docstring), '' for none")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="row-major update variants, '' for none")
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
            planes = reflector_planes(pristine, c)
            layouts = map(int, filter(None, args.layouts.split(",")))
            cases = [(f"layout {strip} {mode}", strip, mode, {}) for strip in layouts for mode in MODES]
            cases += [(f"row-major {name}", 0, "update", VARIANTS[name])
                      for name in filter(None, args.variants.split(","))]
            for name, strip, mode, options in cases:
                source = to_layout(pristine, strip)
                x = source.clone()
                kernel = layout_update(x, planes, t, n, c, strip, mode, **options)
                torch.cuda.synchronize()
                check = ""
                if mode == "update":
                    diff = (from_layout(x, n, strip) - expected).abs().max().item() / size
                    check = f", diff {diff:.1e} of the update"
                median = median_us(lambda: layout_update(x, planes, t, n, c, strip, mode, **options),
                                   lambda: x.copy_(source), args.reps, device, queued=True)
                print(f"{name:36s} {median:9.1f} us   {kernel.n_regs} regs, {kernel.n_spills} spills{check}",
                      flush=True)
            flat = torch.empty(batch * (n - c) * (n - c - WIDTH), device=device)
            median = median_us(lambda: flat.mul_(1.0), lambda: None, args.reps, device, queued=True)
            print(f"{'contiguous copy, as many floats':36s} {median:9.1f} us", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
