"""A pair's trailing update that holds its column strip in registers, reading C once (Triton, GPU).

    python bench/probe_onepass.py [--shapes 640x512] [--columns 0,128,256] [--reps 7]

Main's fused update (`submission._wy_update_kernel`) reads its strip of C
twice, V^T C top to bottom and then C - V Y bottom to top, and the second
read comes from DRAM (twenty-fourth session: ~84 MB of strips in flight
against the 50 MB L2). Its time at 640x512, c 0 is ~550 us where a copy of
the same columns by whole-strip loads takes ~334 (forty-third session).

`_onepass_update_kernel` is the same math with the strip C = H[b, c:n, cols]
loaded once into registers, as a tuple of NCH row blocks of BLOCK_M rows
(NCH = ceil((n - c) / BLOCK_M), a compile-time count, so every block is its
own register tensor and all NCH loads are in flight together):

1. the NCH blocks of C are loaded (rows past n masked to 0);
2. P = (V^T C)^T summed block by block, V's rows read from H (L2) and split
   to bf16 as main's kernel does (3xBF16);
3. Y = T^T P^T in float32 (W 32) or 3xBF16 (W 64), as main's;
4. C -= V Y block by block from the registers, V's rows read again, and
   each block stored.

So C goes through DRAM once each way; V (m x W floats a matrix) is read
twice a strip from L2, W / BLOCK_N times C's bytes each time. Each
configuration is checked against main's on the same input (the largest
difference relative to the update's largest entry) and timed alone (h
restored, L2 flushed, events; the median of `reps`), with its registers and
spills.

Not run on a GPU: compiled here for sm_90a (Triton 3.6, W 64, n - c = 512),
every configuration takes 128-255 registers with 2-8 KB of spills a thread,
even with a barrier between row blocks (to stop the loads of V from being
hoisted); at 64 rows (two blocks) it takes 230 registers, so the 3xBF16
W 64 products alone hold most of the register file (main's fused kernel at
BLOCK_N 32, 8 warps: 178). The CuTe form is `probe_strip_registers.py`.
"""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["QR_SKIP_PRECOMPILE"] = "1"

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from probe_update import compare_pair_updates, main_update  # noqa: E402
from submission import (_bf16_pair, _dot_3xbf16, _load_reflectors, _load_strip,  # noqa: E402
                        _subtract_reflected, _times_t)

# (BLOCK_M, BLOCK_N, warps) of the configurations timed against main's
CONFIGURATIONS = ((64, 32, 8), (32, 32, 8), (64, 16, 4), (32, 16, 4), (64, 32, 4), (64, 64, 8))


@triton.jit
def _onepass_update_kernel(h_ptr, t_ptr, n, c, col_lo, col_hi,
                           W: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, NCH: tl.constexpr):
    """C[:, cols] := C[:, cols] - V T^T V^T C[:, cols] for one tile of columns, C = H[b, c:, col_lo:col_hi],
    C's NCH row blocks held in registers between the product and the update."""
    pid_n = tl.program_id(0)
    b = tl.program_id(1)
    h_ptr += b.to(tl.int64) * n * n
    t_ptr += b.to(tl.int64) * W * W
    cols = col_lo + pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    k = tl.arange(0, W)

    # ----- C's row blocks, all loads in flight -----
    blocks = ()
    for i in tl.static_range(NCH):
        rows = c + i * BLOCK_M + tl.arange(0, BLOCK_M)
        blocks = blocks + (_load_strip(h_ptr, 1.0, rows, c, n, cols, col_hi, n),)

    # ----- Y := T^T V^T C -----
    acc = tl.zeros((BLOCK_N, W), dtype=tl.float32)
    for i in tl.static_range(NCH):
        r0 = c + i * BLOCK_M
        rows = r0 + tl.arange(0, BLOCK_M)
        v = _load_reflectors(h_ptr, r0, rows, c, n, c, n, W)
        acc = _dot_3xbf16(tl.trans(blocks[i]), v, acc)
    t = tl.load(t_ptr + k[:, None] * W + k[None, :])
    y_big, y_small = _bf16_pair(tl.trans(_times_t(acc, t, W)))

    # ----- C := C - V Y, block by block from the registers -----
    for i in tl.static_range(NCH):
        r0 = c + i * BLOCK_M
        rows = r0 + tl.arange(0, BLOCK_M)
        v = _load_reflectors(h_ptr, r0, rows, c, n, c, n, W)
        _subtract_reflected(h_ptr, rows, cols, col_hi, n, v, blocks[i], y_big, y_small)


def onepass(block_m: int, block_n: int, warps: int):
    """A launch of `_onepass_update_kernel` on the columns [c + W, n), as `compare_pair_updates` calls it."""
    def launch(h, t, n, c, extra):
        width = t.shape[-1]
        grid = (triton.cdiv(n - c - width, block_n), h.shape[0])
        return _onepass_update_kernel[grid](h, t, n, c, c + width, n, W=width, BLOCK_M=block_m, BLOCK_N=block_n,
                                            NCH=triton.cdiv(n - c, block_m), num_warps=warps, num_stages=1)
    return launch


def configurations():
    yield "main fused", lambda h, t, n, c, extra: main_update(h, t, n, c)
    for block_m, block_n, warps in CONFIGURATIONS:
        yield f"one pass BM {block_m} BN {block_n} warps {warps}", onepass(block_m, block_n, warps)


if __name__ == "__main__":
    sys.exit(compare_pair_updates(sys.argv[1:], __doc__.splitlines()[0], configurations))
