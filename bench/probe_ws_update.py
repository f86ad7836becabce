"""A warp-specialized trailing update in Gluon (TMA producer warp, mma.sync consumers), against main's (GPU).

    python bench/probe_ws_update.py [--shapes 640x512,60x1024] [--columns 0,256] [--reps 7]

Main's fused W = 64 update (`submission._wy_update_kernel`) issues its own
loads, one row block ahead, and computes between them: ncu and the register
caps of the twenty-second session say each program waits on its chain of
loads and products. Here one warp streams V's and C's row blocks through a
ring of STAGES shared-memory slots by TMA (top to bottom for V^T C, then
bottom to top for the update), while WM x WN warps load them into mma.sync
operand registers, split them into bf16 pairs and multiply (3xBF16, as main;
only the accumulation order differs). mma.sync, not wgmma, so that the same
kernel would serve Blackwell. H is read as one 2-D (batch n) x n view; V's
rows past n (the next matrix's) are zeroed in registers, C's are never stored.

Each configuration updates the columns right of the pair at column c (random
h and T), is checked against main's kernel on the same input, and timed
alone (h restored, L2 flushed, events; the median of `reps`).
"""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["QR_SKIP_PRECOMPILE"] = "1"

import triton  # noqa: E402
from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402
from triton.experimental.gluon.language.nvidia.ampere import mma_v2  # noqa: E402
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma  # noqa: E402
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor  # noqa: E402

import submission  # noqa: E402
from probe_update import compare_pair_updates, main_update  # noqa: E402

W = 2 * submission.PANEL_WIDTH     # a pair's block reflector
BF16_PAIR_PTX = gl.constexpr(submission.BF16_PAIR_PTX.value)
BF16_PAIR_CONSTRAINTS = gl.constexpr(submission.BF16_PAIR_CONSTRAINTS.value)


@gluon.jit
def _split(x):
    """x ~= hi + lo, both bfloat16 (16 of float32's 24 mantissa bits): `submission._bf16_pair`'s PTX."""
    return gl.inline_asm_elementwise(BF16_PAIR_PTX, BF16_PAIR_CONSTRAINTS, [x], dtype=(gl.bfloat16, gl.bfloat16),
                                     is_pure=True, pack=2)


@gluon.jit
def _mma3(a, b, acc):
    """acc + a @ b in 3xBF16 (a, b float32 in their dot-operand layouts)."""
    a_hi, a_lo = _split(a)
    b_hi, b_lo = _split(b)
    acc = mma_v2(a_lo, b_hi, acc)
    acc = mma_v2(a_hi, b_lo, acc)
    return mma_v2(a_hi, b_hi, acc)


@gluon.jit
def _unit_lower(v, r0, c, n, ROW_LAYOUT: gl.constexpr, COL_LAYOUT: gl.constexpr, BM: gl.constexpr,
                W: gl.constexpr):
    """V's rows r0.. of the panel at column c from H's: H below the diagonal, 1 on it, 0 above and past n."""
    rows = r0 + gl.arange(0, BM, layout=ROW_LAYOUT)
    k = c + gl.arange(0, W, layout=COL_LAYOUT)
    below = (gl.expand_dims(rows, 1) > gl.expand_dims(k, 0)) & gl.expand_dims(rows < n, 1)
    diag = gl.expand_dims(rows, 1) == gl.expand_dims(k, 0)
    return gl.where(below, v, gl.where(diag, 1.0, 0.0))


@gluon.jit
def _loader(v_desc, c_desc, v_ring, c_ring, ready, empty, b, n, c, col0, blocks,
            BM: gl.constexpr, STAGES: gl.constexpr):
    """Producer warp: V's and C's row blocks top to bottom (pass 1), then bottom to top (pass 2)."""
    for j in range(2 * blocks):
        s = j % STAGES
        mbarrier.wait(empty.index(s), ((j // STAGES) & 1) ^ 1)
        i = gl.where(j < blocks, j, 2 * blocks - 1 - j)
        r0 = c + i * BM
        mbarrier.expect(ready.index(s), v_desc.block_type.nbytes + c_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(v_desc, [b * n + r0, c], ready.index(s), v_ring.index(s))
        tma.async_copy_global_to_shared(c_desc, [b * n + r0, col0], ready.index(s), c_ring.index(s))


@gluon.jit
def _compute(v_ring, c_ring, ready, empty, h_ptr, t_ptr, b, n, c, col0, col_hi, blocks,
             W: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr, STAGES: gl.constexpr, WM: gl.constexpr,
             WN: gl.constexpr, KC: gl.constexpr):
    mma: gl.constexpr = gl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[WM, WN], instr_shape=[16, 8])
    op_a: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=mma, k_width=2)
    op_b: gl.constexpr = gl.DotOperandLayout(operand_index=1, parent=mma, k_width=2)

    # ----- P := C^T V (BN x W), KC rows of a block at a time -----
    acc = gl.zeros([BN, W], gl.float32, mma)
    for j in range(blocks):
        s = j % STAGES
        mbarrier.wait(ready.index(s), (j // STAGES) & 1)
        r0 = c + j * BM
        for kk in gl.static_range(BM // KC):
            ct = c_ring.index(s).slice(kk * KC, KC, dim=0).permute((1, 0)).load(op_a)
            v = v_ring.index(s).slice(kk * KC, KC, dim=0).load(op_b)
            if (r0 + kk * KC < c + W) | (r0 + kk * KC + KC > n):
                v = _unit_lower(v, r0 + kk * KC, c, n, gl.SliceLayout(1, op_b), gl.SliceLayout(0, op_b), KC, W)
            acc = _mma3(ct, v, acc)
        mbarrier.arrive(empty.index(s))

    # ----- Y^T := P T (BN x W), then Y (W x BN) split for pass 2 -----
    k_row = gl.arange(0, W, layout=gl.SliceLayout(1, op_b))
    k_col = gl.arange(0, W, layout=gl.SliceLayout(0, op_b))
    t = gl.load(t_ptr + b.to(gl.int64) * W * W + gl.expand_dims(k_row, 1) * W + gl.expand_dims(k_col, 0))
    yt = _mma3(gl.convert_layout(acc, op_a), t, gl.zeros([BN, W], gl.float32, mma))
    y = gl.convert_layout(gl.permute(yt, (1, 0)), op_b)
    y_hi, y_lo = _split(y)

    # ----- C := C - V Y, row blocks bottom to top -----
    cols = col0 + gl.arange(0, BN, layout=gl.SliceLayout(0, mma))
    for j in range(blocks, 2 * blocks):
        s = j % STAGES
        mbarrier.wait(ready.index(s), (j // STAGES) & 1)
        r0 = c + (2 * blocks - 1 - j) * BM
        v = v_ring.index(s).load(op_a)
        out = c_ring.index(s).load(mma)
        mbarrier.arrive(empty.index(s))
        if (r0 < c + W) | (r0 + BM > n):
            v = _unit_lower(v, r0, c, n, gl.SliceLayout(1, op_a), gl.SliceLayout(0, op_a), BM, W)
        v_hi, v_lo = _split(-v)
        out = mma_v2(v_lo, y_hi, out)
        out = mma_v2(v_hi, y_lo, out)
        out = mma_v2(v_hi, y_hi, out)
        rows = r0 + gl.arange(0, BM, layout=gl.SliceLayout(1, mma))
        mask = gl.expand_dims(rows < n, 1) & gl.expand_dims(cols < col_hi, 0)
        gl.store(h_ptr + b.to(gl.int64) * n * n + gl.expand_dims(rows, 1) * n + gl.expand_dims(cols, 0), out,
                 mask=mask)


@gluon.jit
def wy_update_ws_kernel(v_desc, c_desc, h_ptr, t_ptr, n, c, col_lo, col_hi,
                        W: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr, STAGES: gl.constexpr,
                        WM: gl.constexpr, WN: gl.constexpr, KC: gl.constexpr, LOADER_REGS: gl.constexpr):
    """C[:, cols] := C - V T^T V^T C for one column tile, C = H[b, c:, col_lo:col_hi] (H: batch x n x n)."""
    pid_n = gl.program_id(0)
    b = gl.program_id(1)
    col0 = col_lo + pid_n * BN
    blocks = gl.cdiv(n - c, BM)
    v_ring = gl.allocate_shared_memory(gl.float32, [STAGES, BM, W], v_desc.layout)
    c_ring = gl.allocate_shared_memory(gl.float32, [STAGES, BM, BN], c_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    gl.warp_specialize([
        (_compute, (v_ring, c_ring, ready, empty, h_ptr, t_ptr, b, n, c, col0, col_hi, blocks, W, BM, BN, STAGES,
                    WM, WN, KC)),
        (_loader, (v_desc, c_desc, v_ring, c_ring, ready, empty, b, n, c, col0, blocks, BM, STAGES)),
    ], [1], [LOADER_REGS])


def ws_fused(h, t, n, c, stages, wm, wn, kc, maxnreg, block_m=64, block_n=64):
    """The pair update by `wy_update_ws_kernel`."""
    batch = h.shape[0]
    flat = h.view(batch * n, n)
    v_layout = gl.NVMMASharedLayout.get_default_for([block_m, W], gl.float32)
    c_layout = gl.NVMMASharedLayout.get_default_for([block_m, block_n], gl.float32)
    v_desc = TensorDescriptor(flat, [batch * n, n], [n, 1], [block_m, W], v_layout)
    c_desc = TensorDescriptor(flat, [batch * n, n], [n, 1], [block_m, block_n], c_layout)
    options = {} if maxnreg is None else {"maxnreg": maxnreg}
    return wy_update_ws_kernel[(triton.cdiv(n - c - W, block_n), batch)](
        v_desc, c_desc, h, t, n, c, c + W, n, W=W, BM=block_m, BN=block_n, STAGES=stages, WM=wm, WN=wn, KC=kc,
        LOADER_REGS=40, num_warps=wm * wn, **options)


def configurations():
    """(name, launch(h, t, n, c, extra)) of every configuration timed; main's first."""
    rows = [("main fused W64", lambda h, t, n, c, extra: main_update(h, t, n, c))]
    shapes = [(stages, 4, 2, 32, maxnreg) for stages in (2, 3, 4) for maxnreg in (None, 128)]
    shapes += [(3, 4, 2, 16, None), (2, 2, 2, 16, None), (3, 2, 2, 16, None)]
    for stages, wm, wn, kc, maxnreg in shapes:
        rows.append((f"ws stages {stages} warps {wm}x{wn} KC {kc} maxnreg {maxnreg}",
                     lambda h, t, n, c, extra, a=(stages, wm, wn, kc, maxnreg): ws_fused(h, t, n, c, *a)))
    return rows


if __name__ == "__main__":
    sys.exit(compare_pair_updates(sys.argv[1:], __doc__.split("\n\n")[0], configurations))
