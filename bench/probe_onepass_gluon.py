"""A trailing update that reads its column strip once: the strip staged whole in shared memory by TMA,
the products on wgmma (Gluon), against main's (GPU).

    python bench/probe_onepass_gluon.py [--shapes 640x512] [--columns 0,128,256,384] [--block-n 64]
        [--stages 4] [--asynchronous 0,1] [--persistent 0,1] [--remove 0] [--transposed-apply 0,1]
        [--specialized 1,2,3] [--planes] [--phases 234,-] [--reps 7]

Main's fused update reads C = H[b, c:n, cols] twice (V^T C, then C - V Y),
and the second read comes from DRAM: at 640x512, c = 0, W = 64 a program
of its tiles that only reads C twice and writes it once takes ~400 us, one
that reads it once ~300, the update ~530 (`probe_strip_layout.py`). The
earlier one-pass probes held V's planes in shared memory and the strip in
registers or in a two-strip ring, one CTA an SM, loads by thread; their
copies alone took 400-670 us. Here one CTA (one warpgroup) updates column
tiles of BN columns, V's bf16 planes (made beforehand, as a panel could
write them; their making is not timed) stream from L2:

1. every row block of the strip (BM x BN floats) is requested by TMA at
   once, each on its own mbarrier, into a strip of m / BM slots;
2. P^T = C^T V block by block as the slots arrive: C^T's block read from
   its slot into wgmma's A registers and split there, V's planes by TMA
   through a ring of STAGES (wgmma's B), three wgmma (3xBF16);
3. Y^T = P^T T (three wgmma), and -Y^T's planes for the apply;
4. block by block, C + V (-Y) on wgmma with the accumulator started from
   the slot, written back into the slot and stored by TMA; as a slot's
   store has read it, the program's next tile is requested into it.

With ASYNC a block's wgmma run while the previous block is stored (step
4); with APPLY_T step 4 is C^T + (-Y^T) V^T (the kernel's docstring).
Persistent: one CTA an SM walks the tiles; otherwise one CTA a tile.
`--specialized 1` adds build 7 (`onepass_ws_kernel`): the persistent
APPLY_T form with a producer warp that issues every TMA; 2 adds build 8:
build 7 with two consumer warpgroups on alternate row blocks; 3 adds
build 9: build 7 with asynchronous wgmma (`_consume_pipelined`), at each
`--remove` value (builds 1-6 take those below 4), and with `--planes`
after a kernel that makes V's planes. Builds 10 and 11 (V's planes held
whole and loaded once a matrix, made from h in the kernel) became the
submission's `pair_update_kernel`, whose helpers builds 1-9 share.
Phases "-" (the copy): the slots are waited for and stored back
unchanged, no products: the floor of this structure. Rows must come in
whole blocks ((n - c) % BM == 0) and W is a pair's 64. Each configuration
is checked against main's fused update and timed alone (h restored, L2
flushed, queued behind a GPU sleep, the median of `reps`).
"""
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
from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402
from triton.experimental.gluon.language.nvidia.hopper import (  # noqa: E402
    fence_async_shared, mbarrier, tma, warpgroup_mma_wait)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor  # noqa: E402

from probe_strip_layout import reflector_planes  # noqa: E402
from probe_strip_stream import case_arguments, phase_sets, update_cases  # noqa: E402
from probe_ws_update import _split  # noqa: E402
from submission import _allocate, _load_t, _rows_layout, _wgmma_3xbf16, _wgmma_a_layout, _wgmma_layout, _y_t  # noqa

WARPS = 4          # one warpgroup (build 7's consumers; its producer warp comes on top)
PRODUCER_REGS = 40
CONSUMER_REGS = 160    # build 8's second consumer warpgroup (a worker partition)
BLOCK_M = 64       # rows of a strip slot, and wgmma's M


@gluon.jit
def _store_planes(x, x_hi, x_lo):
    """x's bf16 planes into x_hi, x_lo."""
    hi, lo = _split(x)
    x_hi.store(hi)
    x_lo.store(lo)


@gluon.jit
def _request_block(h_desc, strip, arrived, tile, i, tiles, tiles_n, n, c, col_lo, BM: gl.constexpr,
                   BN: gl.constexpr, LIVE: gl.constexpr):
    """Ask TMA for row block i of column tile `tile`'s strip (none past the last tile, none unless LIVE)
    into slot i."""
    if LIVE and tile < tiles:
        b = tile // tiles_n
        col0 = col_lo + (tile % tiles_n) * BN
        mbarrier.expect(arrived.index(i), h_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(h_desc, [b * n + c + i * BM, col0], arrived.index(i), strip.index(i))


@gluon.jit
def _refill(v_desc, v_hi, v_lo, ready, use, pid, programs, tiles, tiles_n, n, c, blocks, BM: gl.constexpr,
            STAGES: gl.constexpr):
    """Ask TMA for V's planes of the program's use `use` into ring stage use % STAGES: a tile takes 2 blocks
    uses, row blocks 0 .. blocks - 1 twice; the program's k-th tile is pid + k programs."""
    tile = pid + use // (2 * blocks) * programs
    if tile < tiles:
        b = tile // tiles_n
        r = c + use % (2 * blocks) % blocks * BM
        stage = use % STAGES
        mbarrier.expect(ready.index(stage), 2 * v_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(v_desc, [2 * b * n + r, 0], ready.index(stage), v_hi.index(stage))
        tma.async_copy_global_to_shared(v_desc, [(2 * b + 1) * n + r, 0], ready.index(stage), v_lo.index(stage))


@gluon.jit
def _store_slot(h_desc, strip, arrived, i, row0, col0, next_tile, tiles, tiles_n, n, c, col_lo, BM: gl.constexpr,
                BN: gl.constexpr, LIVE: gl.constexpr):
    """Slot i stored by TMA (if LIVE) to rows row0 + i BM.. of columns col0..; once the store before it has
    read its slot (i - 1), the next tile's block i - 1 is requested there."""
    if LIVE:
        tma.async_copy_shared_to_global(h_desc, [row0 + i * BM, col0], strip.index(i))
    if i > 0:
        tma.store_wait(pendings=1)
        _request_block(h_desc, strip, arrived, next_tile, i - 1, tiles, tiles_n, n, c, col_lo, BM, BN, LIVE)


@gluon.jit
def _store_block(h_desc, strip, arrived, out, i, row0, col0, next_tile, tiles, tiles_n, n, c, col_lo,
                 BM: gl.constexpr, BN: gl.constexpr, LIVE: gl.constexpr, TRANSPOSED: gl.constexpr = False):
    """Slot i := out (or out^T with TRANSPOSED), then `_store_slot`."""
    if TRANSPOSED:
        strip.index(i).permute((1, 0)).store(out)
    else:
        strip.index(i).store(out)
    fence_async_shared()
    gl.thread_barrier()
    _store_slot(h_desc, strip, arrived, i, row0, col0, next_tile, tiles, tiles_n, n, c, col_lo, BM, BN, LIVE)


@gluon.jit
def onepass_update_kernel(h_desc, v_desc, t_ptr, n, c, col_lo, tiles_n, tiles,
                          W: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr, SLOTS: gl.constexpr,
                          STAGES: gl.constexpr, PRODUCTS: gl.constexpr, ASYNC: gl.constexpr, REMOVE: gl.constexpr,
                          APPLY_T: gl.constexpr):
    """C[:, cols] := C - V T^T V^T C for the column tiles pid, pid + programs, ... (tile = b tiles_n + j:
    matrix b's columns col_lo + j BN ..), C = H[b, c:, col_lo:] (h_desc: H seen as batch n rows of n),
    C read once (module docstring); V's planes by v_desc (batch x 2 x n x W bf16 seen as rows of W).
    Without PRODUCTS C is read and stored back unchanged. APPLY_T: the apply as C^T + (-Y^T) V^T, -Y^T
    in wgmma's A registers for every block, C^T's block read and written through a transposed view of
    its slot (no planes of Y in shared memory). REMOVE (timing only, wrong results) is a sum of
    1: no strip traffic (no loads nor stores of C), 2: no products."""
    LIVE: gl.constexpr = REMOVE % 2 == 0
    MULTIPLY: gl.constexpr = REMOVE // 2 % 2 == 0
    pid = gl.program_id(0)
    programs = gl.num_programs(0)
    blocks = (n - c) // BM

    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                         instr_shape=[16, BN, 16])      # BM x BN: the apply
    t_acc_layout: gl.constexpr = _wgmma_layout(W)         # BN x W: P^T, Y^T
    operand_layout: gl.constexpr = _wgmma_a_layout(W)
    rows_layout: gl.constexpr = _rows_layout()
    v_planes: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BM, W], gl.bfloat16)
    y_planes: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BN, W], gl.bfloat16)
    t_planes: gl.constexpr = gl.NVMMASharedLayout.get_default_for([W, W], gl.bfloat16)

    strip = gl.allocate_shared_memory(gl.float32, [SLOTS, BM, BN], h_desc.layout)
    arrived = gl.allocate_shared_memory(gl.int64, [SLOTS, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(SLOTS):
        mbarrier.init(arrived.index(i), count=1)
    for i in range(blocks):
        _request_block(h_desc, strip, arrived, pid, i, tiles, tiles_n, n, c, col_lo, BM, BN, LIVE)
    if PRODUCTS:
        v_hi = gl.allocate_shared_memory(gl.bfloat16, [STAGES, BM, W], v_planes)
        v_lo = gl.allocate_shared_memory(gl.bfloat16, [STAGES, BM, W], v_planes)
        v_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        if not APPLY_T:
            y_hi = gl.allocate_shared_memory(gl.bfloat16, [BN, W], y_planes)    # -Y^T
            y_lo = gl.allocate_shared_memory(gl.bfloat16, [BN, W], y_planes)
        t_hi = gl.allocate_shared_memory(gl.bfloat16, [W, W], t_planes)
        t_lo = gl.allocate_shared_memory(gl.bfloat16, [W, W], t_planes)
        for st in gl.static_range(STAGES):
            mbarrier.init(v_ready.index(st), count=1)
        for first in gl.static_range(STAGES - 1):
            _refill(v_desc, v_hi, v_lo, v_ready, first, pid, programs, tiles, tiles_n, n, c, blocks, BM, STAGES)

    for tile in range(pid, tiles, programs):
        k = (tile - pid) // programs                # the program's k-th tile
        b = tile // tiles_n
        col0 = col_lo + (tile % tiles_n) * BN
        row0 = b * n + c
        first_use = 2 * blocks * k
        if PRODUCTS:
            t = _load_t(t_ptr, b, W)                # used after P: its latency hidden

            # ----- P^T := C^T V, C^T's planes in registers (wgmma's A), slot by slot as they arrive -----
            p_t = gl.zeros([BN, W], gl.float32, t_acc_layout)
            for i in range(blocks):
                use = first_use + i
                stage = use % STAGES
                if LIVE:
                    mbarrier.wait(arrived.index(i), k & 1)
                c_hi, c_lo = _split(strip.index(i).permute((1, 0)).load(operand_layout))
                mbarrier.wait(v_ready.index(stage), (use // STAGES) & 1)
                if MULTIPLY:
                    p_t = _wgmma_3xbf16(c_hi, c_lo, v_hi.index(stage), v_lo.index(stage), p_t, False)
                gl.thread_barrier()
                _refill(v_desc, v_hi, v_lo, v_ready, use + STAGES - 1, pid, programs, tiles, tiles_n, n, c,
                        blocks, BM, STAGES)

            # ----- -Y^T := -P^T T -----
            y_t = _y_t(p_t, t, t_hi, t_lo, W)
            if APPLY_T:
                ny_hi, ny_lo = _split(gl.convert_layout(-y_t, operand_layout))
            else:
                _store_planes(-y_t, y_hi, y_lo)
                fence_async_shared()
            gl.thread_barrier()

            # ----- C := C + V (-Y), slot by slot, stored by TMA; the next tile requested into stored slots -----
            out = gl.zeros([BM, BN], gl.float32, acc_layout)     # carried by the ASYNC loop
            for i in range(blocks):
                use = first_use + blocks + i
                stage = use % STAGES
                mbarrier.wait(v_ready.index(stage), (use // STAGES) & 1)
                if APPLY_T:
                    out_t = strip.index(i).permute((1, 0)).load(t_acc_layout)
                    if MULTIPLY:
                        out_t = _wgmma_3xbf16(ny_hi, ny_lo, v_hi.index(stage).permute((1, 0)),
                                      v_lo.index(stage).permute((1, 0)), out_t, False)
                    _store_block(h_desc, strip, arrived, out_t, i, row0, col0, tile + programs, tiles, tiles_n, n,
                                 c, col_lo, BM, BN, LIVE, True)
                elif ASYNC and MULTIPLY:
                    token = _wgmma_3xbf16(v_hi.index(stage), v_lo.index(stage), y_hi.permute((1, 0)), y_lo.permute((1, 0)),
                                  strip.index(i).load(acc_layout), True)
                    if i > 0:
                        _store_block(h_desc, strip, arrived, out, i - 1, row0, col0, tile + programs, tiles,
                                     tiles_n, n, c, col_lo, BM, BN, LIVE)
                    out = warpgroup_mma_wait(num_outstanding=0, deps=(token,))
                else:
                    out = strip.index(i).load(acc_layout)
                    if MULTIPLY:
                        out = _wgmma_3xbf16(v_hi.index(stage), v_lo.index(stage), y_hi.permute((1, 0)), y_lo.permute((1, 0)),
                                    out, False)
                    _store_block(h_desc, strip, arrived, out, i, row0, col0, tile + programs, tiles, tiles_n, n, c,
                                 col_lo, BM, BN, LIVE)
                gl.thread_barrier()
                _refill(v_desc, v_hi, v_lo, v_ready, use + STAGES - 1, pid, programs, tiles, tiles_n, n, c,
                        blocks, BM, STAGES)
            if ASYNC and MULTIPLY and not APPLY_T:
                _store_block(h_desc, strip, arrived, out, blocks - 1, row0, col0, tile + programs, tiles, tiles_n,
                             n, c, col_lo, BM, BN, LIVE)
        else:
            for i in range(blocks):
                if LIVE:
                    mbarrier.wait(arrived.index(i), k & 1)
            for i in range(blocks):
                _store_block(h_desc, strip, arrived, strip.index(i).load(rows_layout), i, row0, col0,
                             tile + programs, tiles, tiles_n, n, c, col_lo, BM, BN, LIVE)
        tma.store_wait(pendings=0)
        _request_block(h_desc, strip, arrived, tile + programs, blocks - 1, tiles, tiles_n, n, c, col_lo, BM, BN,
                       LIVE)


@gluon.jit
def _store_and_refill(h_desc, strip, arrived, computed, i, k, row0, col0, next_tile, tiles, tiles_n, n, c, col_lo,
                      BM: gl.constexpr, BN: gl.constexpr, LIVE: gl.constexpr):
    """Producer: once the consumers have written slot i of the k-th tile, `_store_slot` (without LIVE: no
    wait, no traffic)."""
    if LIVE:
        mbarrier.wait(computed.index(i), k & 1)
    _store_slot(h_desc, strip, arrived, i, row0, col0, next_tile, tiles, tiles_n, n, c, col_lo, BM, BN, LIVE)


@gluon.jit
def _produce(h_desc, v_desc, strip, arrived, computed, v_hi, v_lo, v_ready, v_empty, n, c, col_lo, tiles_n, tiles,
             BM: gl.constexpr, BN: gl.constexpr, STAGES: gl.constexpr, LIVE: gl.constexpr = True,
             STREAM_V: gl.constexpr = True):
    """The producer warp: every TMA of the CTA's tiles (timing only: without LIVE none of the strip's,
    without STREAM_V none of V's). V's planes stream through the ring in use order
    (a tile's 2 blocks uses, each stage reused once the consumers release it); the stores of a tile's
    slots follow STAGES - 1 uses behind, each followed by the next tile's request into the slot before."""
    pid = gl.program_id(0)
    programs = gl.num_programs(0)
    blocks = (n - c) // BM
    for i in range(blocks):
        _request_block(h_desc, strip, arrived, pid, i, tiles, tiles_n, n, c, col_lo, BM, BN, LIVE)
    for tile in range(pid, tiles, programs):
        k = (tile - pid) // programs
        col0 = col_lo + (tile % tiles_n) * BN
        row0 = tile // tiles_n * n + c
        for j in range(2 * blocks):
            use = 2 * blocks * k + j
            if STREAM_V:
                mbarrier.wait(v_empty.index(use % STAGES), ((use // STAGES) & 1) ^ 1)
                _refill(v_desc, v_hi, v_lo, v_ready, use, pid, programs, tiles, tiles_n, n, c, blocks, BM, STAGES)
            if j >= blocks + STAGES - 1:
                _store_and_refill(h_desc, strip, arrived, computed, j - blocks - (STAGES - 1), k, row0, col0,
                                  tile + programs, tiles, tiles_n, n, c, col_lo, BM, BN, LIVE)
        for i in range(gl.maximum(blocks - (STAGES - 1), 0), blocks):
            _store_and_refill(h_desc, strip, arrived, computed, i, k, row0, col0, tile + programs, tiles, tiles_n, n,
                              c, col_lo, BM, BN, LIVE)
        tma.store_wait(pendings=0)
        _request_block(h_desc, strip, arrived, tile + programs, blocks - 1, tiles, tiles_n, n, c, col_lo, BM, BN,
                       LIVE)


@gluon.jit
def _consume(strip, arrived, computed, v_hi, v_lo, v_ready, v_empty, t_hi, t_lo, p_sum, p_bars, t_ptr, n, c, tiles_n,
             tiles, W: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr, STAGES: gl.constexpr, PART: gl.constexpr,
             PARTS: gl.constexpr):
    """A consumer warpgroup: build 6's products (P^T = C^T V, -Y^T = -P^T T, C^T + (-Y^T) V^T) on the row
    blocks i = PART (mod PARTS) of the slots and V's ring that the producer fills, releasing each ring stage
    after its products and each slot once written back. With two parts the partial sums of P^T meet in
    p_sum (part 1 stores its own and arrives p_bars[0]; part 0 adds it to its own in that order, stores
    the sum and T's planes, arrives p_bars[1]); part 1 arrives p_bars[2] once its Y^T is formed, before
    part 0 overwrites T's planes for the next tile. Both form -Y^T from the same sum. (With one part
    p_sum and p_bars are not used.)"""
    pid = gl.program_id(0)
    programs = gl.num_programs(0)
    blocks = (n - c) // BM
    t_acc_layout: gl.constexpr = _wgmma_layout(W)
    operand_layout: gl.constexpr = _wgmma_a_layout(W)
    for tile in range(pid, tiles, programs):
        k = (tile - pid) // programs
        t = _load_t(t_ptr, tile // tiles_n, W)      # used after P: its latency hidden

        # ----- this part's share of P^T := C^T V -----
        p_t = gl.zeros([BN, W], gl.float32, t_acc_layout)
        for i in range(PART, blocks, PARTS):
            use = 2 * blocks * k + i
            stage = use % STAGES
            mbarrier.wait(arrived.index(i), k & 1)
            c_hi, c_lo = _split(strip.index(i).permute((1, 0)).load(operand_layout))
            mbarrier.wait(v_ready.index(stage), (use // STAGES) & 1)
            p_t = _wgmma_3xbf16(c_hi, c_lo, v_hi.index(stage), v_lo.index(stage), p_t, False)
            mbarrier.arrive(v_empty.index(stage))

        # ----- the shares summed; -Y^T := -P^T T -----
        if PARTS == 1:
            _store_planes(t, t_hi, t_lo)
            fence_async_shared()
            gl.thread_barrier()
        elif PART == 1:
            p_sum.store(p_t)
            mbarrier.arrive(p_bars.index(0))
            mbarrier.wait(p_bars.index(1), k & 1)
            p_t = p_sum.load(t_acc_layout)
        else:
            mbarrier.wait(p_bars.index(2), (k & 1) ^ 1)         # part 1 done with the last tile's T planes
            _store_planes(t, t_hi, t_lo)
            fence_async_shared()
            mbarrier.wait(p_bars.index(0), k & 1)
            p_t = p_t + p_sum.load(t_acc_layout)
            gl.thread_barrier()
            p_sum.store(p_t)
            mbarrier.arrive(p_bars.index(1))
        p_hi, p_lo = _split(gl.convert_layout(p_t, operand_layout))
        y_t = _wgmma_3xbf16(p_hi, p_lo, t_hi, t_lo, gl.zeros([BN, W], gl.float32, t_acc_layout), False)
        if PARTS == 2 and PART == 1:
            mbarrier.arrive(p_bars.index(2))
        ny_hi, ny_lo = _split(gl.convert_layout(-y_t, operand_layout))

        # ----- this part's blocks of C^T := C^T + (-Y^T) V^T, written back for the producer to store -----
        for i in range(PART, blocks, PARTS):
            use = 2 * blocks * k + blocks + i
            stage = use % STAGES
            mbarrier.wait(v_ready.index(stage), (use // STAGES) & 1)
            out_t = _wgmma_3xbf16(ny_hi, ny_lo, v_hi.index(stage).permute((1, 0)), v_lo.index(stage).permute((1, 0)),
                          strip.index(i).permute((1, 0)).load(t_acc_layout), False)
            mbarrier.arrive(v_empty.index(stage))
            strip.index(i).permute((1, 0)).store(out_t)
            fence_async_shared()
            gl.thread_barrier()
            mbarrier.arrive(computed.index(i))


@gluon.jit
def _consume_pipelined(strip, arrived, computed, v_hi, v_lo, v_ready, v_empty, t_hi, t_lo, t_ptr, n, c, tiles_n,
                       tiles, W: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr, STAGES: gl.constexpr,
                       LIVE: gl.constexpr, MULTIPLY: gl.constexpr, STREAM_V: gl.constexpr):
    """Build 9's consumer warpgroup: build 7's (`_consume`, one part) with its wgmma asynchronous
    (`_tile_products`). Timing only: without LIVE no slot is waited for, without MULTIPLY no wgmma is
    issued, without STREAM_V no ring stage is waited for (the kernel's REMOVE)."""
    pid = gl.program_id(0)
    blocks = (n - c) // BM
    for k in range(gl.cdiv(tiles - pid, gl.num_programs(0))):     # the CTA's k-th tile
        t = _load_t(t_ptr, (pid + k * gl.num_programs(0)) // tiles_n, W)     # used after P: its latency hidden
        _tile_products(strip, arrived, computed, v_hi, v_lo, v_ready, v_empty, t_hi, t_lo, t, k, blocks,
                       2 * blocks * k, W, BN, STAGES, LIVE, MULTIPLY, STREAM_V, True)


@gluon.jit
def _tile_products(strip, arrived, computed, v_hi, v_lo, v_ready, v_empty, t_hi, t_lo, t, k, blocks, first_use,
                   W: gl.constexpr, BN: gl.constexpr, STAGES: gl.constexpr, LIVE: gl.constexpr,
                   MULTIPLY: gl.constexpr, WAIT: gl.constexpr, RELEASE: gl.constexpr):
    """Builds 9 and 10: the CTA's k-th tile, its slots arriving (LIVE) and written back for the producer,
    V's planes of use u in buffer u % STAGES (waited for with WAIT, released with RELEASE; the tile's
    uses first_use .., P's then the apply's). In P^T = C^T V block i's three wgmma run while block i +
    1's C^T is read from its slot and split; in the apply, two blocks a trip, the second block's run while
    the first's result is written back."""
    t_acc_layout: gl.constexpr = _wgmma_layout(W)
    operand_layout: gl.constexpr = _wgmma_a_layout(W)

    # ----- P^T := C^T V, block i's wgmma in flight while block i + 1 is read and split (block i's planes
    # kept alive through the wait: ptxas does not hold a wgmma's A registers for it) -----
    p_t = gl.zeros([BN, W], gl.float32, t_acc_layout)
    c_hi, c_lo = _operand_block(strip, arrived, 0, k, operand_layout, LIVE)
    for i in range(blocks):
        use = first_use + i
        stage = use % STAGES
        if WAIT:
            mbarrier.wait(v_ready.index(stage), (use // STAGES) & 1)
        if MULTIPLY:
            p_t = _wgmma_3xbf16(c_hi, c_lo, v_hi.index(stage), v_lo.index(stage), p_t, True)
        next_hi, next_lo = _operand_block(strip, arrived, gl.minimum(i + 1, blocks - 1), k, operand_layout, LIVE)
        p_t, c_hi, c_lo = warpgroup_mma_wait(num_outstanding=0, deps=(p_t, c_hi, c_lo))
        if RELEASE:
            mbarrier.arrive(v_empty.index(stage))
        c_hi = next_hi
        c_lo = next_lo

    # ----- -Y^T := -P^T T -----
    ny_hi, ny_lo = _split(gl.convert_layout(-_y_t(p_t, t, t_hi, t_lo, W), operand_layout))

    # ----- C^T := C^T + (-Y^T) V^T, two blocks a trip: the second block's wgmma in flight while the first
    # is written back (no wgmma left in flight across trips: ptxas then serializes them all; -Y^T's
    # planes kept alive through each wait) -----
    apply_use = first_use + blocks
    for j in range(blocks // 2):
        first = _apply_async(strip, v_hi, v_lo, v_ready, ny_hi, ny_lo, 2 * j, apply_use, STAGES, t_acc_layout,
                             MULTIPLY, WAIT)
        second = _apply_async(strip, v_hi, v_lo, v_ready, ny_hi, ny_lo, 2 * j + 1, apply_use, STAGES,
                              t_acc_layout, MULTIPLY, WAIT)
        first = warpgroup_mma_wait(num_outstanding=3, deps=(first, ny_hi, ny_lo))[0]
        _write_back(strip, computed, v_empty, first, 2 * j, apply_use, STAGES, RELEASE)
        second = warpgroup_mma_wait(num_outstanding=0, deps=(second, ny_hi, ny_lo))[0]
        _write_back(strip, computed, v_empty, second, 2 * j + 1, apply_use, STAGES, RELEASE)
    if blocks % 2 == 1:
        last = _apply_async(strip, v_hi, v_lo, v_ready, ny_hi, ny_lo, blocks - 1, apply_use, STAGES,
                            t_acc_layout, MULTIPLY, WAIT)
        last = warpgroup_mma_wait(num_outstanding=0, deps=(last, ny_hi, ny_lo))[0]
        _write_back(strip, computed, v_empty, last, blocks - 1, apply_use, STAGES, RELEASE)


@gluon.jit
def _operand_block(strip, arrived, i, k, OPERAND_LAYOUT: gl.constexpr, LIVE: gl.constexpr):
    """Builds 9, 10: slot i's C^T (the k-th tile's, once arrived; without LIVE, not waited for) as wgmma A
    planes."""
    if LIVE:
        mbarrier.wait(arrived.index(i), k & 1)
    return _split(strip.index(i).permute((1, 0)).load(OPERAND_LAYOUT))


@gluon.jit
def _apply_async(strip, v_hi, v_lo, v_ready, ny_hi, ny_lo, i, apply_use, STAGES: gl.constexpr,
                 ACC_LAYOUT: gl.constexpr, MULTIPLY: gl.constexpr, WAIT: gl.constexpr):
    """Builds 9, 10: block i's C^T + (-Y^T) V^T issued as asynchronous wgmma (V's planes of use apply_use +
    i, waited for with WAIT; timing only: without MULTIPLY C^T's block unchanged)."""
    use = apply_use + i
    stage = use % STAGES
    if WAIT:
        mbarrier.wait(v_ready.index(stage), (use // STAGES) & 1)
    out_t = strip.index(i).permute((1, 0)).load(ACC_LAYOUT)
    if MULTIPLY:
        out_t = _wgmma_3xbf16(ny_hi, ny_lo, v_hi.index(stage).permute((1, 0)), v_lo.index(stage).permute((1, 0)), out_t,
                      True)
    return out_t


@gluon.jit
def _write_back(strip, computed, v_empty, out_t, i, apply_use, STAGES: gl.constexpr, RELEASE: gl.constexpr):
    """Builds 9, 10: slot i := out_t^T, handed to the producer (computed[i]); its ring stage released with
    RELEASE."""
    if RELEASE:
        mbarrier.arrive(v_empty.index((apply_use + i) % STAGES))
    strip.index(i).permute((1, 0)).store(out_t)
    fence_async_shared()
    gl.thread_barrier()
    mbarrier.arrive(computed.index(i))


@gluon.jit
def onepass_ws_kernel(h_desc, v_desc, t_ptr, n, c, col_lo, tiles_n, tiles,
                      W: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr, SLOTS: gl.constexpr,
                      STAGES: gl.constexpr, CONSUMERS: gl.constexpr, PRODUCER_REGS: gl.constexpr,
                      CONSUMER_REGS: gl.constexpr, PIPELINED: gl.constexpr, REMOVE: gl.constexpr):
    """Build 6 (`onepass_update_kernel` with APPLY_T, persistent) warp-specialized: a producer warp issuing
    every TMA (`_produce`) and CONSUMERS warpgroups computing (`_consume`): build 7 the kernel's
    warpgroup, build 8 that and a worker partition of 4 warps (CONSUMER_REGS registers) on alternate row
    blocks, build 9 (PIPELINED, one consumer) `_consume_pipelined`, where REMOVE (timing only) is
    `onepass_update_kernel`'s and 4: no V streamed (the ring's stages neither loaded nor waited for).
    Slots and V's stages pass between them by mbarriers (arrived / computed, ready / empty)."""
    strip, arrived, computed, v_hi, v_lo, v_ready, v_empty, t_hi, t_lo = _allocate(h_desc, SLOTS, STAGES, STAGES, W,
                                                                                   BM, BN)
    if PIPELINED:
        gl.warp_specialize([
            (_consume_pipelined, (strip, arrived, computed, v_hi, v_lo, v_ready, v_empty, t_hi, t_lo, t_ptr, n, c,
                                  tiles_n, tiles, W, BM, BN, STAGES, REMOVE % 2 == 0, REMOVE // 2 % 2 == 0,
                                  REMOVE // 4 % 2 == 0)),
            (_produce, (h_desc, v_desc, strip, arrived, computed, v_hi, v_lo, v_ready, v_empty, n, c, col_lo,
                        tiles_n, tiles, BM, BN, STAGES, REMOVE % 2 == 0, REMOVE // 4 % 2 == 0)),
        ], [1], [PRODUCER_REGS])
    elif CONSUMERS == 1:
        gl.warp_specialize([
            (_consume, (strip, arrived, computed, v_hi, v_lo, v_ready, v_empty, t_hi, t_lo, t_hi, v_ready, t_ptr, n,
                        c, tiles_n, tiles, W, BM, BN, STAGES, 0, 1)),
            (_produce, (h_desc, v_desc, strip, arrived, computed, v_hi, v_lo, v_ready, v_empty, n, c, col_lo,
                        tiles_n, tiles, BM, BN, STAGES)),
        ], [1], [PRODUCER_REGS])
    else:
        sum_layout: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[1, 0])
        p_sum = gl.allocate_shared_memory(gl.float32, [BN, W], sum_layout)
        p_bars = gl.allocate_shared_memory(gl.int64, [3, 1], mbarrier.MBarrierLayout())
        for i in gl.static_range(3):
            mbarrier.init(p_bars.index(i), count=1)
        gl.warp_specialize([
            (_consume, (strip, arrived, computed, v_hi, v_lo, v_ready, v_empty, t_hi, t_lo, p_sum, p_bars, t_ptr, n,
                        c, tiles_n, tiles, W, BM, BN, STAGES, 0, 2)),
            (_consume, (strip, arrived, computed, v_hi, v_lo, v_ready, v_empty, t_hi, t_lo, p_sum, p_bars, t_ptr, n,
                        c, tiles_n, tiles, W, BM, BN, STAGES, 1, 2)),
            (_produce, (h_desc, v_desc, strip, arrived, computed, v_hi, v_lo, v_ready, v_empty, n, c, col_lo,
                        tiles_n, tiles, BM, BN, STAGES)),
        ], [4, 1], [CONSUMER_REGS, PRODUCER_REGS])


@triton.jit
def _planes_kernel(h_ptr, planes_ptr, n, c, W: tl.constexpr, BM: tl.constexpr):
    """`reflector_planes` in one launch, rows c.. of V only: program (i, b) writes row block i."""
    b = tl.program_id(1)
    rows = c + tl.program_id(0) * BM + tl.arange(0, BM)
    k = c + tl.arange(0, W)
    inside = rows < n
    below = inside[:, None] & (rows[:, None] > k[None, :])
    v = tl.load(h_ptr + b * n * n + rows[:, None] * n + k[None, :], mask=below, other=0.0)
    v = tl.where(rows[:, None] == k[None, :], 1.0, v)
    hi = v.to(tl.bfloat16)
    plane = planes_ptr + (2 * b * n + rows[:, None]) * W + (k[None, :] - c)
    tl.store(plane, hi, mask=inside[:, None])
    tl.store(plane + n * W, (v - hi.to(tl.float32)).to(tl.bfloat16), mask=inside[:, None])


def make_planes(h, c, width, planes):
    """V's planes of the pair at c into `planes` (batch x 2 x n x width bf16; rows c.. written)."""
    batch, n = h.shape[0], h.shape[1]
    _planes_kernel[(triton.cdiv(n - c, BLOCK_M), batch)](h, planes, n, c, W=width, BM=BLOCK_M, num_warps=4)
    return planes


def onepass_update(h, t, n, c, planes, block_n=64, stages=4, products=True, asynchronous=False, programs=None,
                   remove=0, transposed_apply=False, specialized=0):
    """Update columns [c + W, n) of every matrix of h by the pair at c (V's planes `planes`, T = t, W x W),
    on `programs` persistent CTAs (None: one a tile); `specialized` 1: build 7, 2: build 8, 3: build 9
    (`onepass_ws_kernel` with 1 or 2 consumer warpgroups, 3: one, pipelined)."""
    batch, width = h.shape[0], t.shape[-1]
    assert (n - c) % BLOCK_M == 0 and (n - c - width) % block_n == 0, "whole row blocks and column tiles"
    layout = gl.NVMMASharedLayout.get_default_for([BLOCK_M, block_n], gl.float32)
    h_desc = TensorDescriptor(h.view(batch * n, n), [batch * n, n], [n, 1], [BLOCK_M, block_n], layout)
    v_layout = gl.NVMMASharedLayout.get_default_for([BLOCK_M, width], gl.bfloat16)
    v_desc = TensorDescriptor(planes.view(-1, width), [2 * batch * n, width], [width, 1], [BLOCK_M, width],
                              v_layout)
    tiles_n = (n - c - width) // block_n
    tiles = batch * tiles_n
    if specialized:
        return onepass_ws_kernel[(min(tiles, programs or tiles),)](
            h_desc, v_desc, t, n, c, c + width, tiles_n, tiles, W=width, BM=BLOCK_M, BN=block_n,
            SLOTS=triton.cdiv(n, BLOCK_M), STAGES=stages, CONSUMERS=2 if specialized == 2 else 1,
            PRODUCER_REGS=PRODUCER_REGS, CONSUMER_REGS=CONSUMER_REGS, PIPELINED=specialized == 3, REMOVE=remove,
            num_warps=WARPS)
    return onepass_update_kernel[(min(tiles, programs or tiles),)](
        h_desc, v_desc, t, n, c, c + width, tiles_n, tiles, W=width, BM=BLOCK_M, BN=block_n,
        SLOTS=triton.cdiv(n, BLOCK_M), STAGES=stages, PRODUCTS=products, ASYNC=asynchronous, REMOVE=remove,
        APPLY_T=transposed_apply, num_warps=WARPS)


def main(argv: list[str]) -> int:
    parser = case_arguments(__doc__, "64", "0,128,256,384", "234,-")
    parser.add_argument("--block-n", default="64", help="columns of a tile (W: T^T's planes take C's)")
    parser.add_argument("--stages", default="4", help="V's ring stages")
    parser.add_argument("--asynchronous", default="0,1")
    parser.add_argument("--persistent", default="0,1", help="0: a CTA a tile, 1: a CTA an SM")
    parser.add_argument("--remove", default="0", help="REMOVE values to time (the kernel's docstring)")
    parser.add_argument("--transposed-apply", default="0,1", help="APPLY_T values (the kernel's docstring)")
    parser.add_argument("--specialized", default="",
                        help="builds 7 (1), 8 (2), 9 (3, at each --remove) too, persistent, at each ring")
    parser.add_argument("--planes", action="store_true", help="build 9 with V's planes made in the timed call too")
    args = parser.parse_args(argv)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    numbers = {name: list(map(int, getattr(args, name).split(","))) for name in
               ("block_n", "stages", "asynchronous", "persistent", "remove", "transposed_apply")}
    for h, t, n, c, configurations in update_cases(args):
        made = {}

        def planes(t=t, c=c):
            """V's planes, made from h at the first launch (h is pristine then; V's columns change later)."""
            if c not in made:
                made[c] = reflector_planes(h, c, t.shape[-1])
            return made[c]

        for block_n, stages, persistent in itertools.product(numbers["block_n"], numbers["stages"],
                                                             numbers["persistent"]):
            shape = f"BN {block_n} ring {stages} {'persistent' if persistent else 'a CTA a tile'}"
            common = dict(block_n=block_n, stages=stages, programs=sms if persistent else None)
            for phases in phase_sets(args.phases):
                for asynchronous, remove, transposed in itertools.product(
                        numbers["asynchronous"], numbers["remove"], numbers["transposed_apply"]):
                    if ((not phases and (asynchronous or remove or transposed)) or (asynchronous and transposed)
                            or remove >= 4):
                        continue
                    name = (f"{shape}{' async' if asynchronous else ''}{' apply^T' if transposed else ''}"
                            f"{f' without {remove}' if remove else ''} phases {''.join(map(str, phases)) or '-'}")
                    options = dict(common, products=bool(phases), asynchronous=bool(asynchronous), remove=remove,
                                   transposed_apply=bool(transposed))
                    configurations.append((name, lambda o=options, t=t, c=c: onepass_update(h, t, n, c, planes(),
                                                                                          **o)))
            for specialized in map(int, filter(None, args.specialized.split(",")) if persistent else ()):
                for remove in numbers["remove"] if specialized == 3 else (0,):
                    configurations.append((f"{shape} build {6 + specialized}{f' without {remove}' if remove else ''}"
                                           " phases 234", lambda o=common, which=specialized, r=remove, t=t, c=c:
                                           onepass_update(h, t, n, c, planes(), specialized=which, remove=r, **o)))
                if specialized == 3 and args.planes:
                    configurations.append((f"{shape} build 9 after V's planes (Triton) phases 234",
                                           lambda o=common, t=t, c=c: onepass_update(
                                               h, t, n, c, make_planes(h, c, t.shape[-1], torch.empty_like(planes())),
                                               specialized=3, **o)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
