"""A one-pass update's first half on warpgroup MMA: Y = V^T C with C split into bf16 pairs on chip (GPU probe).

    python bench/probe_wgmma_project.py [--shape 640x512] [--columns 0,128,256] [--widths 64,128]
        [--variants 32:2:0,64:1:4,64:2:4:2] [--parts] [--reps 7]
    python bench/probe_wgmma_project.py --update --widths 128 --variants 32:2:0:4   # the whole one-pass update
    python bench/probe_wgmma_project.py --compile-only ...   # builds the first variant here (PTX kept), no GPU

The question: can a trailing update read each trailing column once at
W = 128 (a block reflector of four panels, half of W = 64's passes over C)
without paying for it in tensor-core time? Main's Triton kernel does two
passes a pair and a 128-column Triton pass costs as much as two 64-column
ones, so only a kernel that keeps C's strip on chip and multiplies on
warpgroup MMA could. This probe builds that kernel's first half.

A CTA owns BN trailing columns of one matrix, rows [c, n) (the strip a
one-pass update keeps for its second half, C -= V Z). It issues the whole
strip's cp.async copies into shared memory at once (one group a KC-row
chunk), then per chunk splits the chunk's floats into bf16 pairs
(hi = bf16(x), lo = bf16(x - hi)) and accumulates
Y^T += V_hi^T C_hi + V_lo^T C_hi + V_hi^T C_lo on W / 64 warpgroups (wgmma,
both operands from shared memory). V's chunks (bf16 planes, made by the
host here) come through registers a few chunks ahead (`Projection`), or by
TMA multicast shared by a cluster of CTAs through a ring of buffers
(`ClusterProjection`, a variant's fourth entry). Y goes to global memory.
With --update, `OnePassUpdate` goes on to Z = T^T Y and C - V Z from the
strip, storing C: the whole update, C read and written once.

Each variant is checked against float64 and timed alone (L2 flushed,
median); `--parts` also times Projection without the products, the split or
V's copies. The floors beside them: torch's read of the same columns, and
main's whole fused W = 64 updates that a pass of width W replaces (at c, and
for W = 128 at c + 64 too; two reads and a write of C each).
All shapes static (one compile per shape, c, W and variant).
"""
import argparse
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["QR_SKIP_PRECOMPILE"] = "1"

import torch  # noqa: E402

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
import cutlass.utils.hopper_helpers as sm90_utils  # noqa: E402
from cutlass import pipeline  # noqa: E402
from cutlass.cute.nvgpu import cpasync, warpgroup  # noqa: E402
from cutlass.cute.runtime import make_ptr  # noqa: E402
from cutlass.utils import LayoutEnum, SmemAllocator  # noqa: E402

KC = 64         # rows of a chunk (four k-steps of 16)
WARPGROUP = 128
SHARED_MEMORY = 227 * 1024      # dynamic shared memory a CTA may take on H200


class Projection:
    """Y[b, col, :] = sum over rows r in [c, n) of C[b, r, col] V[b, r, :] for col in [c + W, n), 3xBF16.

    As wgmma: Y^T (W x BN) += V^T (W x KC) C (KC x BN) per chunk, a warpgroup per 64 rows of Y^T; both
    operands MN-major in shared memory (V's rows hold W contiguous bf16, C's rows BN floats)."""

    def __init__(self, batch: int, n: int, c: int, width: int, columns: int = 32, ahead: int = 2,
                 pad: int = 0, parts: str = "all"):
        assert (n - c) % KC == 0 and (n - c - width) % columns == 0 and width % 64 == 0
        self.batch, self.n, self.c, self.width = batch, n, c, width
        self.columns = columns          # BN: trailing columns a CTA owns (the wgmma's N)
        self.ahead = ahead              # V's chunks in flight in registers
        self.pad = pad                  # floats after each strip row in shared memory
        self.threads = WARPGROUP * (width // 64)
        # the parts timed apart: no products, no split, or no V (its copies left out; wrong results)
        self.products = parts != "no-products"
        self.split = parts != "no-split"
        self.loads_v = parts != "no-v"
        self.chunks = (n - c) // KC

    @cute.jit
    def __call__(self, mH: cute.Pointer, mVh: cute.Pointer, mVl: cute.Pointer, mY: cute.Pointer,
                 stream):
        """h (batch, n, n) float32, V's planes (batch, n, W) bfloat16 (rows from c on read), Y (batch, n, W)
        float32 (rows c + W on written): all contiguous, by their first element's address."""
        W, BN = self.width, self.columns
        tiled_mma = sm90_utils.make_trivial_tiled_mma(
            cutlass.BFloat16, cutlass.BFloat16, warpgroup.OperandMajorMode.MN, warpgroup.OperandMajorMode.MN,
            cutlass.Float32, (W // 64, 1, 1), (64, BN))
        a_layout = sm90_utils.make_smem_layout_a(LayoutEnum.COL_MAJOR, (W, BN, KC), cutlass.BFloat16, 1)
        b_layout = sm90_utils.make_smem_layout_b(LayoutEnum.COL_MAJOR, (W, BN, KC), cutlass.BFloat16, 1)
        self.kernel(mH, mVh, mVl, mY, tiled_mma, a_layout, b_layout).launch(
            grid=((self.n - self.c - W) // BN, self.batch, 1), block=(self.threads, 1, 1), stream=stream)

    @cute.kernel
    def kernel(self, mH: cute.Pointer, mVh: cute.Pointer, mVl: cute.Pointer, mY: cute.Pointer,
               tiled_mma: cute.TiledMma, a_layout: cute.ComposedLayout, b_layout: cute.ComposedLayout):
        n, c, W, BN, T = self.n, self.c, self.width, self.columns, self.threads
        tidx, _, _ = cute.arch.thread_idx()
        tile, b, _ = cute.arch.block_idx()
        col0 = c + W + tile * BN
        rows = self.chunks * KC

        smem = SmemAllocator()
        # the strip, (column, row): a chunk is (BN, KC) like the B operand
        sC = smem.allocate_tensor(cutlass.Float32, cute.make_layout((BN, rows), stride=(1, BN + self.pad)), 16)
        sVh = smem.allocate_tensor(cutlass.BFloat16, a_layout.outer, 1024, a_layout.inner)    # (W, KC, 1)
        sVl = smem.allocate_tensor(cutlass.BFloat16, a_layout.outer, 1024, a_layout.inner)
        sXh = smem.allocate_tensor(cutlass.BFloat16, b_layout.outer, 1024, b_layout.inner)    # (BN, KC, 1)
        sXl = smem.allocate_tensor(cutlass.BFloat16, b_layout.outer, 1024, b_layout.inner)

        self._load_strip(mH, sC, b, col0, tidx)
        # V^T in the A operand's (M, K) order
        gVh = cute.make_tensor(mVh + cute.assume(b * n * W + c * W, divby=W), cute.make_layout((W, rows), stride=(1, W)))
        gVl = cute.make_tensor(mVl + cute.assume(b * n * W + c * W, divby=W), cute.make_layout((W, rows), stride=(1, W)))

        # V's chunks: through registers, 8 bf16 a copy, `ahead` chunks in flight
        v_copy = cute.make_tiled_copy_tv(
            cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.BFloat16, num_bits_per_copy=128),
            cute.make_layout((W // 8, T // (W // 8)), stride=(1, W // 8)), cute.make_layout((8, 1)))
        v_thr = v_copy.get_slice(tidx)
        in_flight = []
        for i in cutlass.range_constexpr(min(self.ahead, self.chunks)):
            rVh = cute.make_fragment_like(v_thr.partition_S(cute.local_tile(gVh, (W, KC), (0, 0))))
            rVl = cute.make_fragment_like(rVh)
            cute.copy(v_copy, v_thr.partition_S(cute.local_tile(gVh, (W, KC), (0, i))), rVh)
            cute.copy(v_copy, v_thr.partition_S(cute.local_tile(gVl, (W, KC), (0, i))), rVl)
            in_flight.append((rVh, rVl))

        tCgY = self._y_part(mY, b, col0, tiled_mma, tidx)
        acc = cute.make_fragment(tCgY.shape, cutlass.Float32)
        acc.fill(0.0)

        for i in cutlass.range_constexpr(self.chunks):
            rVh, rVl = in_flight[i % len(in_flight)]
            if cutlass.const_expr(self.loads_v):
                cute.copy(v_copy, rVh, v_thr.partition_D(sVh[(None, None, 0)]))
                cute.copy(v_copy, rVl, v_thr.partition_D(sVl[(None, None, 0)]))
            if cutlass.const_expr(self.loads_v and i + len(in_flight) < self.chunks):
                cute.copy(v_copy, v_thr.partition_S(cute.local_tile(gVh, (W, KC), (0, i + len(in_flight)))), rVh)
                cute.copy(v_copy, v_thr.partition_S(cute.local_tile(gVl, (W, KC), (0, i + len(in_flight)))), rVl)
            cute.arch.cp_async_wait_group(self.chunks - 1 - i)     # this thread's copies of chunk i landed
            cute.arch.sync_threads()                                 # everyone's
            if cutlass.const_expr(self.split):
                self._split_chunk(sC, sXh, sXl, i, tidx)
            cute.arch.fence_proxy(cute.arch.ProxyKind.async_shared, space=cute.arch.SharedSpace.shared_cta)
            cute.arch.sync_threads()
            if cutlass.const_expr(self.products):
                self._multiply(tiled_mma, acc, sVh, sVl, sXh, sXl, 0, tidx)
            cute.arch.sync_threads()        # both operands' buffers are free again
        for e in cutlass.range_constexpr(cute.size(acc)):
            tCgY[e] = acc[e]

    @cute.jit
    def _y_part(self, mY: cute.Pointer, b, col0, tiled_mma: cute.TiledMma, tidx):
        """This thread's entries of Y^T's tile, (W, BN) at Y[b, col0:col0 + BN, :], as the MMA's C."""
        W = self.width
        gY = cute.make_tensor(mY + cute.assume(b * self.n * W + col0 * W, divby=W),
                              cute.make_layout((W, self.columns), stride=(1, W)))
        return tiled_mma.get_slice(tidx).partition_C(gY)

    @cute.jit
    def _multiply(self, tiled_mma: cute.TiledMma, acc: cute.Tensor, sVh: cute.Tensor, sVl: cute.Tensor,
                  sXh: cute.Tensor, sXl: cute.Tensor, stage, tidx):
        """acc += A_hi B_hi + A_lo B_hi + A_hi B_lo on wgmma, A's pair (sVh, sVl) from its buffer `stage`, B's
        (sXh, sXl) from its only one (V^T C over a chunk here; T^T Y and V Z in OnePassUpdate); returns once
        the products are done (both operands' buffers free)."""
        thr_mma = tiled_mma.get_slice(tidx)
        tCrVh = tiled_mma.make_fragment_A(thr_mma.partition_A(sVh))
        tCrVl = tiled_mma.make_fragment_A(thr_mma.partition_A(sVl))
        tCrXh = tiled_mma.make_fragment_B(thr_mma.partition_B(sXh))
        tCrXl = tiled_mma.make_fragment_B(thr_mma.partition_B(sXl))
        tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
        warpgroup.fence()
        for k in cutlass.range_constexpr(cute.size(tCrVh, mode=[2])):
            cute.gemm(tiled_mma, acc, tCrVh[(None, None, k, stage)], tCrXh[(None, None, k, 0)], acc)
            cute.gemm(tiled_mma, acc, tCrVl[(None, None, k, stage)], tCrXh[(None, None, k, 0)], acc)
            cute.gemm(tiled_mma, acc, tCrVh[(None, None, k, stage)], tCrXl[(None, None, k, 0)], acc)
        warpgroup.commit_group()
        warpgroup.wait_group(0)

    @cute.jit
    def _load_strip(self, mH: cute.Pointer, sC: cute.Tensor, b, col0, tidx):
        """Start the cp.async copies of the CTA's strip, C[b, c:, col0:col0 + BN] as (column, row), into sC:
        4 floats a copy, threads along the columns first, one commit group a chunk."""
        n, BN, T = self.n, self.columns, self.threads
        gC = cute.make_tensor(mH + cute.assume(b * n * n + self.c * n + col0, divby=BN),
                              cute.make_layout((BN, self.chunks * KC), stride=(1, n)))
        strip_copy = cute.make_tiled_copy_tv(
            cute.make_copy_atom(cpasync.CopyG2SOp(), cutlass.Float32, num_bits_per_copy=128),
            cute.make_layout((BN // 4, T // (BN // 4)), stride=(1, BN // 4)), cute.make_layout((4, 1)))
        strip_thr = strip_copy.get_slice(tidx)
        for i in cutlass.range_constexpr(self.chunks):
            cute.copy(strip_copy, strip_thr.partition_S(cute.local_tile(gC, (BN, KC), (0, i))),
                      strip_thr.partition_D(cute.local_tile(sC, (BN, KC), (0, i))))
            cute.arch.cp_async_commit_group()

    @cute.jit
    def _split_chunk(self, sC: cute.Tensor, sXh: cute.Tensor, sXl: cute.Tensor, i: cutlass.Constexpr, tidx):
        """The strip's chunk i as the B operand's bf16 pair: sXh = bf16(x), sXl = bf16(x - sXh); 8 columns
        of a row a thread-step (two 16-byte loads, two 16-byte stores)."""
        BN, T = self.columns, self.threads
        layouts = (cute.make_layout((BN // 8, T // (BN // 8)), stride=(1, BN // 8)), cute.make_layout((8, 1)))
        load = cute.make_tiled_copy_tv(
            cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32, num_bits_per_copy=128), *layouts)
        store = cute.make_tiled_copy_tv(
            cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.BFloat16, num_bits_per_copy=128), *layouts)
        load_thr, store_thr = load.get_slice(tidx), store.get_slice(tidx)
        tXh = store_thr.partition_D(sXh[(None, None, 0)])
        tXl = store_thr.partition_D(sXl[(None, None, 0)])
        chunk = load_thr.partition_S(cute.local_tile(sC, (BN, KC), (0, i)))
        rX = cute.make_fragment_like(chunk)
        rHi = cute.make_fragment_like(tXh)
        rLo = cute.make_fragment_like(tXl)
        cute.copy(load, chunk, rX)
        x = rX.load()
        hi = x.to(cutlass.BFloat16)
        rHi.store(hi)
        rLo.store((x - hi.to(cutlass.Float32)).to(cutlass.BFloat16))
        cute.copy(store, rHi, tXh)
        cute.copy(store, rLo, tXl)


class ClusterProjection(Projection):
    """Projection with V's chunks shared by a cluster of `cluster` CTAs (adjacent column tiles of one
    matrix): each CTA loads 1 / cluster of a chunk by TMA and multicasts it to all, so a cluster reads V
    once (Projection's CTAs each read all of it, W / BN times their bytes of C). V's chunks go through a
    ring of `stages` buffers (full and empty mbarriers across the cluster, `PipelineTmaAsync`); C's strip
    as in Projection."""

    def __init__(self, batch: int, n: int, c: int, width: int, columns: int = 64, stages: int = 2,
                 pad: int = 4, cluster: int = 2):
        super().__init__(batch, n, c, width, columns, 0, pad)
        assert ((n - c - width) // columns) % cluster == 0
        self.stages, self.cluster = stages, cluster

    @cute.jit
    def __call__(self, mH: cute.Pointer, mVh: cute.Pointer, mVl: cute.Pointer, mY: cute.Pointer,
                 stream):
        W, BN, n = self.width, self.columns, self.n
        tiled_mma = sm90_utils.make_trivial_tiled_mma(
            cutlass.BFloat16, cutlass.BFloat16, warpgroup.OperandMajorMode.MN, warpgroup.OperandMajorMode.MN,
            cutlass.Float32, (W // 64, 1, 1), (64, BN))
        a_layout = sm90_utils.make_smem_layout_a(LayoutEnum.COL_MAJOR, (W, BN, KC), cutlass.BFloat16, self.stages)
        b_layout = sm90_utils.make_smem_layout_b(LayoutEnum.COL_MAJOR, (W, BN, KC), cutlass.BFloat16, 1)
        # V^T of every matrix, (W, rows, batch): the A operand's (M, K, L)
        v_layout = cute.make_layout((W, n, self.batch), stride=(1, W, n * W))
        op = cpasync.CopyBulkTensorTileG2SMulticastOp() if self.cluster > 1 else cpasync.CopyBulkTensorTileG2SOp()
        one_stage = cute.slice_(a_layout, (None, None, 0))
        tma_h, tma_vh = cpasync.make_tiled_tma_atom(op, cute.make_tensor(mVh, v_layout), one_stage, (W, KC),
                                                    num_multicast=self.cluster)
        tma_l, tma_vl = cpasync.make_tiled_tma_atom(op, cute.make_tensor(mVl, v_layout), one_stage, (W, KC),
                                                    num_multicast=self.cluster)
        self.kernel(mH, mY, tma_h, tma_vh, tma_l, tma_vl, tiled_mma, a_layout, b_layout).launch(
            grid=((self.n - self.c - W) // BN, self.batch, 1), block=(self.threads, 1, 1),
            cluster=(self.cluster, 1, 1), stream=stream)

    @cute.kernel
    def kernel(self, mH: cute.Pointer, mY: cute.Pointer, tma_h: cute.CopyAtom, mVh: cute.Tensor,
               tma_l: cute.CopyAtom, mVl: cute.Tensor, tiled_mma: cute.TiledMma,
               a_layout: cute.ComposedLayout, b_layout: cute.ComposedLayout):
        tidx, b, warp, rank, col0 = self._cta(tma_h, tma_l)
        smem = SmemAllocator()
        barriers, sC, sVh, sVl, sXh, sXl = self._pass_one_buffers(smem, a_layout, b_layout)

        ring, v_copies = self._v_ring(barriers, a_layout, sVh, sVl, tma_h, mVh, tma_l, mVl, b, rank)
        self._load_strip(mH, sC, b, col0, tidx)
        tCgY = self._y_part(mY, b, col0, tiled_mma, tidx)
        acc = cute.make_fragment(tCgY.shape, cutlass.Float32)
        acc.fill(0.0)

        self._pass_one(ring, v_copies, self.chunks, sC, sVh, sVl, sXh, sXl, tiled_mma, acc, warp, tidx)
        for e in cutlass.range_constexpr(cute.size(acc)):
            tCgY[e] = acc[e]
        cute.arch.cluster_arrive()          # no CTA leaves while a peer may still multicast into it
        cute.arch.cluster_wait()

    @cute.jit
    def _cta(self, tma_h: cute.CopyAtom, tma_l: cute.CopyAtom):
        """(thread, matrix, warp, rank in the cluster, first strip column) of this thread's CTA; warp 0
        prefetches V's TMA descriptors."""
        tidx, _, _ = cute.arch.thread_idx()
        tile, b, _ = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        if warp == 0:
            cpasync.prefetch_descriptor(tma_h)
            cpasync.prefetch_descriptor(tma_l)
        return tidx, b, warp, rank, self.c + self.width + tile * self.columns

    @cute.jit
    def _pass_one_buffers(self, smem, a_layout: cute.ComposedLayout, b_layout: cute.ComposedLayout):
        """V's ring's mbarriers, the strip (BN, rows), V's ring (W, KC, stages) and C's split chunk
        (BN, KC), each a bf16 pair."""
        BN = self.columns
        barriers = smem.allocate_array(cutlass.Int64, 2 * self.stages)
        sC = smem.allocate_tensor(cutlass.Float32,
                                  cute.make_layout((BN, self.chunks * KC), stride=(1, BN + self.pad)), 16)
        sVh = smem.allocate_tensor(cutlass.BFloat16, a_layout.outer, 1024, a_layout.inner)
        sVl = smem.allocate_tensor(cutlass.BFloat16, a_layout.outer, 1024, a_layout.inner)
        sXh = smem.allocate_tensor(cutlass.BFloat16, b_layout.outer, 1024, b_layout.inner)
        sXl = smem.allocate_tensor(cutlass.BFloat16, b_layout.outer, 1024, b_layout.inner)
        return barriers, sC, sVh, sVl, sXh, sXl

    @cute.jit
    def _pass_one(self, ring, v_copies, loads_total: cutlass.Constexpr, sC, sVh, sVl, sXh, sXl,
                  tiled_mma: cute.TiledMma, acc: cute.Tensor, warp, tidx):
        """acc += V^T C over the strip, a chunk at a time as it lands (split into C's pair, V's chunk from
        the ring); V's loads run `stages` ahead, through the first `loads_total` of the sequence chunk 0,
        1, ..., chunks - 1, 0, 1, .... Returns the ring's (producer, consumer) states."""
        S, N = self.stages, self.chunks
        loads = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, S)
        reads = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, S)
        for q in cutlass.range_constexpr(min(S, loads_total)):
            self._load_v(ring, loads, v_copies, q % N, warp)
        for i in cutlass.range_constexpr(N):
            cute.arch.cp_async_wait_group(N - 1 - i)     # this thread's copies of chunk i landed (T's before)
            cute.arch.sync_threads()                       # everyone's
            self._split_chunk(sC, sXh, sXl, i, tidx)
            cute.arch.fence_proxy(cute.arch.ProxyKind.async_shared, space=cute.arch.SharedSpace.shared_cta)
            cute.arch.sync_threads()
            ring.consumer_wait(reads)
            self._multiply(tiled_mma, acc, sVh, sVl, sXh, sXl, reads.index, tidx)
            ring.consumer_release(reads)
            reads.advance()
            if cutlass.const_expr(i + S < loads_total):
                self._load_v(ring, loads, v_copies, (i + S) % N, warp)
            cute.arch.sync_threads()        # C's pair buffer is free again
        return loads, reads

    @cute.jit
    def _v_ring(self, barriers, a_layout, sVh, sVl, tma_h, mVh, tma_l, mVl, b, rank):
        """V's ring over the buffers sVh, sVl (W, KC, stages): full and empty mbarriers across the cluster,
        whose CTAs along N share each chunk (the A operand's multicast); and each CTA's part of a chunk's
        copies (`_load_v`)."""
        W, CL = self.width, self.cluster
        v_bytes = 2 * cute.size_in_bytes(cutlass.BFloat16, cute.slice_(a_layout, (None, None, 0)))
        ring = pipeline.PipelineTmaAsync.create(
            barrier_storage=barriers, num_stages=self.stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, CL * (self.threads // 32)),
            tx_count=v_bytes, cta_layout_vmnk=cute.make_layout((1, 1, CL, 1)))
        mask = cute.make_layout_image_mask(cute.make_layout((1, CL, 1)), (0, rank, 0), mode=1)
        gVh = cute.local_tile(mVh, (W, KC), (0, None, b))           # (W, KC, row tiles)
        gVl = cute.local_tile(mVl, (W, KC), (0, None, b))
        tVs_h, tVg_h = cpasync.tma_partition(tma_h, rank, cute.make_layout(CL), cute.group_modes(sVh, 0, 2),
                                             cute.group_modes(gVh, 0, 2))
        tVs_l, tVg_l = cpasync.tma_partition(tma_l, rank, cute.make_layout(CL), cute.group_modes(sVl, 0, 2),
                                             cute.group_modes(gVl, 0, 2))
        return ring, (tma_h, tVs_h, tVg_h, tma_l, tVs_l, tVg_l, mask)

    @cute.jit
    def _load_v(self, ring, loads, v_copies, chunk: cutlass.Constexpr, warp):
        """Warp 0: V's chunk `chunk` of the strip (rows c + KC chunk on) into the ring's next buffer, this CTA's
        part multicast to the cluster; every thread advances the producer state."""
        tma_h, tVs_h, tVg_h, tma_l, tVs_l, tVg_l, mask = v_copies
        row_tile = self.c // KC + chunk
        if warp == 0:
            ring.producer_acquire(loads)
            cute.copy(tma_h, tVg_h[(None, row_tile)], tVs_h[(None, loads.index)],
                      tma_bar_ptr=ring.producer_get_barrier(loads), mcast_mask=mask)
            cute.copy(tma_l, tVg_l[(None, row_tile)], tVs_l[(None, loads.index)],
                      tma_bar_ptr=ring.producer_get_barrier(loads), mcast_mask=mask)
        loads.advance()


class OnePassUpdate(ClusterProjection):
    """C := C - V T^T V^T C over a CTA's strip of BN trailing columns, C read and written once: V^T C as in
    ClusterProjection (Y in the accumulators), Z = T^T Y on wgmma (T's bf16 pair staged by cp.async at the
    start, Y's pair in shared memory), then per chunk C - V Z on wgmma with the chunk's accumulators taken
    from the strip (V's chunks through the ring a second time, as the K-major A operand over the same bytes,
    which are 64-element rows under the same swizzle either way; Z's pair negated), and the chunk stored."""

    def __init__(self, batch: int, n: int, c: int, width: int, columns: int = 32, stages: int = 2,
                 pad: int = 0, cluster: int = 4):
        super().__init__(batch, n, c, width, columns, stages, pad, cluster)

    def shared_bytes(self) -> int:
        """Shared memory a CTA takes: the ring's barriers and the strip, V's ring, and the bf16 pairs of C's
        split chunk, T and Y (each allocation after the first aligned to 1 KB)."""
        W, BN = self.width, self.columns
        first = 16 * self.stages + 4 * self.chunks * KC * (BN + self.pad)     # the barriers, then the strip
        return sum(-(-x // 1024) * 1024 for x in (first, 4 * self.stages * W * KC, 4 * BN * KC, 4 * W * W,
                                                  4 * BN * W))

    @cute.jit
    def __call__(self, mH: cute.Pointer, mVh: cute.Pointer, mVl: cute.Pointer, mTh: cute.Pointer,
                 mTl: cute.Pointer, stream):
        """h (batch, n, n) float32, updated in place; V's planes (batch, n, W) and T's (batch, W, W, T[l, i]
        row-major) bfloat16, contiguous, by their first element's address."""
        W, BN, n, S = self.width, self.columns, self.n, self.stages
        bf16, MN, K = cutlass.BFloat16, warpgroup.OperandMajorMode.MN, warpgroup.OperandMajorMode.K
        tiled_mma = sm90_utils.make_trivial_tiled_mma(bf16, bf16, MN, MN, cutlass.Float32, (W // 64, 1, 1), (64, BN))
        groups = W // 64                # warpgroups: across W for Y and Z, across BN for the update
        update_mma = sm90_utils.make_trivial_tiled_mma(bf16, bf16, K, MN, cutlass.Float32, (1, groups, 1),
                                                       (KC, BN // groups))
        layouts = (
            sm90_utils.make_smem_layout_a(LayoutEnum.COL_MAJOR, (W, BN, KC), bf16, S),   # V^T's chunks (W, KC, S)
            sm90_utils.make_smem_layout_a(LayoutEnum.ROW_MAJOR, (KC, BN, W), bf16, S),   # the same as V's (KC, W, S)
            sm90_utils.make_smem_layout_b(LayoutEnum.COL_MAJOR, (W, BN, KC), bf16, 1),   # C's split chunk (BN, KC)
            sm90_utils.make_smem_layout_a(LayoutEnum.COL_MAJOR, (W, BN, W), bf16, 1),    # T^T (W, W)
            # Y's, then -Z's (BN, W): swizzled in atoms as wide as a warpgroup's N in the update
            cute.tile_to_shape(sm90_utils.make_smem_layout_atom(
                sm90_utils.get_smem_layout_atom(LayoutEnum.COL_MAJOR, bf16, BN // groups), bf16),
                (BN, W, 1), order=(1, 0, 2)),
        )
        v_layout = cute.make_layout((W, n, self.batch), stride=(1, W, n * W))
        op = cpasync.CopyBulkTensorTileG2SMulticastOp()
        one_stage = cute.slice_(layouts[0], (None, None, 0))
        tma_h, tma_vh = cpasync.make_tiled_tma_atom(op, cute.make_tensor(mVh, v_layout), one_stage, (W, KC),
                                                    num_multicast=self.cluster)
        tma_l, tma_vl = cpasync.make_tiled_tma_atom(op, cute.make_tensor(mVl, v_layout), one_stage, (W, KC),
                                                    num_multicast=self.cluster)
        self.kernel(mH, mTh, mTl, tma_h, tma_vh, tma_l, tma_vl, tiled_mma, update_mma, *layouts).launch(
            grid=((n - self.c - W) // BN, self.batch, 1), block=(self.threads, 1, 1),
            cluster=(self.cluster, 1, 1), stream=stream)

    @cute.kernel
    def kernel(self, mH: cute.Pointer, mTh: cute.Pointer, mTl: cute.Pointer, tma_h: cute.CopyAtom,
               mVh: cute.Tensor, tma_l: cute.CopyAtom, mVl: cute.Tensor, tiled_mma: cute.TiledMma,
               update_mma: cute.TiledMma, a_layout: cute.ComposedLayout, av_layout: cute.ComposedLayout,
               b_layout: cute.ComposedLayout, t_layout: cute.ComposedLayout, y_layout: cute.ComposedLayout):
        n, c, BN, S, N = self.n, self.c, self.columns, self.stages, self.chunks
        tidx, b, warp, rank, col0 = self._cta(tma_h, tma_l)
        rows = N * KC
        smem = SmemAllocator()
        barriers, sC, sVh, sVl, sXh, sXl = self._pass_one_buffers(smem, a_layout, b_layout)
        sTh = smem.allocate_tensor(cutlass.BFloat16, t_layout.outer, 1024, t_layout.inner)
        sTl = smem.allocate_tensor(cutlass.BFloat16, t_layout.outer, 1024, t_layout.inner)
        sYh = smem.allocate_tensor(cutlass.BFloat16, y_layout.outer, 1024, y_layout.inner)
        sYl = smem.allocate_tensor(cutlass.BFloat16, y_layout.outer, 1024, y_layout.inner)
        sVh_rows = cute.make_tensor(sVh.iterator, av_layout.outer)      # V's chunks as (KC, W, S)
        sVl_rows = cute.make_tensor(sVl.iterator, av_layout.outer)
        # Y's pair as the (W, BN) tile the accumulators cover
        tYh = tiled_mma.get_slice(tidx).partition_C(
            cute.make_tensor(sYh.iterator, cute.select(y_layout.outer, mode=[1, 0])))
        tYl = tiled_mma.get_slice(tidx).partition_C(
            cute.make_tensor(sYl.iterator, cute.select(y_layout.outer, mode=[1, 0])))

        ring, v_copies = self._v_ring(barriers, a_layout, sVh, sVl, tma_h, mVh, tma_l, mVl, b, rank)
        self._load_t(mTh, sTh, b, tidx)
        self._load_t(mTl, sTl, b, tidx)
        cute.arch.cp_async_commit_group()       # T's group first: waiting for chunk i then waits for T too
        self._load_strip(mH, sC, b, col0, tidx)
        acc = cute.make_fragment(tYh.shape, cutlass.Float32)
        acc.fill(0.0)

        # ----- Y := V^T C; V's loads go on into the second pass's (the chunks again, in the order read) -----
        loads, reads = self._pass_one(ring, v_copies, 2 * N, sC, sVh, sVl, sXh, sXl, tiled_mma, acc, warp, tidx)
        # ----- Z := T^T Y, then -Z's pair in Y's place -----
        self._store_pair(acc.load(), tYh, tYl)
        cute.arch.fence_proxy(cute.arch.ProxyKind.async_shared, space=cute.arch.SharedSpace.shared_cta)
        cute.arch.sync_threads()
        acc.fill(0.0)
        self._multiply(tiled_mma, acc, sTh, sTl, sYh, sYl, 0, tidx)
        cute.arch.sync_threads()
        self._store_pair(-acc.load(), tYh, tYl)
        cute.arch.fence_proxy(cute.arch.ProxyKind.async_shared, space=cute.arch.SharedSpace.shared_cta)
        cute.arch.sync_threads()
        # ----- C := C - V Z, a chunk at a time from the strip, stored -----
        thr_u = update_mma.get_slice(tidx)
        sC_rows = cute.make_tensor(sC.iterator, cute.make_layout((rows, BN), stride=(BN + self.pad, 1)))
        gC_rows = cute.make_tensor(mH + cute.assume(b * n * n + c * n + col0, divby=BN),
                                   cute.make_layout((rows, BN), stride=(n, 1)))
        for i in cutlass.range_constexpr(N):
            tCs = thr_u.partition_C(cute.local_tile(sC_rows, (KC, BN), (i, 0)))
            tCg = thr_u.partition_C(cute.local_tile(gC_rows, (KC, BN), (i, 0)))
            accC = cute.make_fragment(tCs.shape, cutlass.Float32)
            for e in cutlass.range_constexpr(cute.size(accC)):
                accC[e] = tCs[e]
            ring.consumer_wait(reads)
            self._multiply(update_mma, accC, sVh_rows, sVl_rows, sYh, sYl, reads.index, tidx)
            ring.consumer_release(reads)
            reads.advance()
            if cutlass.const_expr(N + i + S < 2 * N):
                self._load_v(ring, loads, v_copies, (i + S) % N, warp)
            for e in cutlass.range_constexpr(cute.size(accC)):
                tCg[e] = accC[e]
        cute.arch.cluster_arrive()          # no CTA leaves while a peer may still multicast into it
        cute.arch.cluster_wait()

    @cute.jit
    def _load_t(self, mT: cute.Pointer, sT: cute.Tensor, b, tidx):
        """Start the cp.async copies of matrix b's T plane (W x W bf16, T[l, i] at l W + i) into sT as T^T's
        (i, l), 8 entries a copy."""
        W, T = self.width, self.threads
        gT = cute.make_tensor(mT + cute.assume(b * W * W, divby=W), cute.make_layout((W, W), stride=(1, W)))
        copy = cute.make_tiled_copy_tv(
            cute.make_copy_atom(cpasync.CopyG2SOp(), cutlass.BFloat16, num_bits_per_copy=128),
            cute.make_layout((W // 8, T // (W // 8)), stride=(1, W // 8)), cute.make_layout((8, 1)))
        thr = copy.get_slice(tidx)
        cute.copy(copy, thr.partition_S(gT), thr.partition_D(sT[(None, None, 0)]))

    @cute.jit
    def _store_pair(self, x, tHi: cute.Tensor, tLo: cute.Tensor):
        """The bf16 pair of the values x (this thread's accumulator entries) into the partitions tHi, tLo:
        hi = bf16(x), lo = bf16(x - hi)."""
        hi = x.to(cutlass.BFloat16)
        lo = (x - hi.to(cutlass.Float32)).to(cutlass.BFloat16)
        rHi = cute.make_fragment(tHi.shape, cutlass.BFloat16)
        rLo = cute.make_fragment(tLo.shape, cutlass.BFloat16)
        rHi.store(hi)
        rLo.store(lo)
        cute.autovec_copy(rHi, tHi)
        cute.autovec_copy(rLo, tLo)


def pointers(h: torch.Tensor, vh: torch.Tensor, vl: torch.Tensor, y: torch.Tensor) -> tuple:
    types = (cutlass.Float32, cutlass.BFloat16, cutlass.BFloat16, cutlass.Float32)
    return tuple(make_ptr(t, x.data_ptr(), cute.AddressSpace.gmem, assumed_align=16) for t, x in zip(types, (h, vh, vl, y)))


def compile_projection(n: int, c: int, width: int, batch: int, variant: tuple, parts: str = "all"):
    """`variant`: (columns a CTA, V's chunks in flight, strip row padding), or with a fourth entry, the
    cluster size of a ClusterProjection (the second entry then counts V's ring buffers)."""
    import cuda.bindings.driver as cuda
    null = (make_ptr(t, 0, cute.AddressSpace.gmem, assumed_align=16)
            for t in (cutlass.Float32, cutlass.BFloat16, cutlass.BFloat16, cutlass.Float32))
    if len(variant) == 4:
        assert parts == "all", "ClusterProjection has no parts"
        projection = ClusterProjection(batch, n, c, width, *variant)
    else:
        projection = Projection(batch, n, c, width, *variant, parts=parts)
    return cute.compile(projection, *null, cuda.CUstream(0))


def compile_update(n: int, c: int, width: int, batch: int, variant: tuple):
    """OnePassUpdate of `variant` (columns a CTA, V's ring buffers, strip row padding, cluster size)."""
    import cuda.bindings.driver as cuda
    null = (make_ptr(t, 0, cute.AddressSpace.gmem, assumed_align=16)
            for t in (cutlass.Float32, cutlass.BFloat16, cutlass.BFloat16, cutlass.BFloat16, cutlass.BFloat16))
    return cute.compile(OnePassUpdate(batch, n, c, width, *variant), *null, cuda.CUstream(0))


def median_us(launch, reps: int, device) -> float:
    import utils
    watch = utils.Stopwatch(device)
    times = []
    for _ in range(reps):
        utils.flush_l2(device)
        utils.synchronize(device)
        watch.start()
        launch()
        watch.stop()
        times.append(watch.elapsed_ns() / 1e3)
    return statistics.median(times)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="640x512")
    parser.add_argument("--columns", default="0,128,256")
    parser.add_argument("--widths", default="64,128")
    parser.add_argument("--variants", default="32:2:0,64:1:4,64:2:4:2",
                        help="columns a CTA : V's chunks in flight : strip padding [: cluster sharing V's "
                             "chunks, the second entry then V's ring buffers], comma-separated")
    parser.add_argument("--parts", action="store_true", help="also time each variant without products / split / V")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--update", action="store_true",
                        help="the whole one-pass update (OnePassUpdate; variants of four entries)")
    parser.add_argument("--compile-only", action="store_true")
    args = parser.parse_args(argv)
    batch, n = map(int, args.shape.split("x"))
    columns = [int(x) for x in args.columns.split(",")]
    widths = [int(x) for x in args.widths.split(",")]
    variants = [tuple(map(int, v.split(":"))) for v in args.variants.split(",")]
    if args.compile_only:           # here: each process builds one kernel (the first load fails without a GPU)
        os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
        try:
            (compile_update if args.update else compile_projection)(n, columns[0], widths[0], 2, variants[0])
            print("compiled")
        except Exception as error:
            print(f"{type(error).__name__}: {str(error)[:400]}")
        return 0

    import cuda.bindings.driver as cuda
    import submission
    sys.path.insert(0, str(ROOT / "bench"))
    from probe_update import main_update
    device = torch.device("cuda")
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    g = torch.Generator(device=device).manual_seed(7)
    h = torch.randn(batch, n, n, device=device, generator=g)
    print(f"{torch.cuda.get_device_name()}; {batch}x{n}; median of {args.reps}, L2 flushed, us")
    if args.update:
        return time_updates(h, columns, widths, variants, args.reps, g, stream, main_update)
    print(f"{'c':>5} {'W':>4} {'variant':>9} {'max rel err':>12} {'V^T C':>8} {'no products':>8} {'no split':>8} "
          f"{'no V':>8}")
    for c in columns:
        for width in widths:
            v = torch.randn(batch, n, width, device=device, generator=g)
            v[:, :c] = 0
            vh = v.to(torch.bfloat16)
            vl = (v - vh.float()).to(torch.bfloat16)
            cols = slice(c + width, n)
            exact = torch.einsum("brk,brj->bkj", h[:, c:, cols].double(), (vh.double() + vl.double())[:, c:])
            for variant in variants:
                tiles, rest = divmod(n - c - width, variant[0])
                if rest or (len(variant) == 4 and tiles % variant[3]):
                    continue
                y = torch.zeros(batch, n, width, device=device)
                args_ = pointers(h, vh, vl, y)
                fn = compile_projection(n, c, width, batch, variant)
                fn(*args_, stream)
                torch.cuda.synchronize()
                err = ((y[:, cols].double() - exact).abs().max() / exact.abs().max()).item()
                times = [median_us(lambda: fn(*args_, stream), args.reps, device)]
                for parts in ("no-products", "no-split", "no-v") if args.parts and len(variant) == 3 else ():
                    part = compile_projection(n, c, width, batch, variant, parts)
                    times.append(median_us(lambda: part(*args_, stream), args.reps, device))
                name = ":".join(map(str, variant))
                print(f"{c:5d} {width:4d} {name:>9} {err:12.2e} " + " ".join(f"{t:8.1f}" for t in times), flush=True)
            t_read = median_us(lambda: h[:, c:, cols].sum(dim=1), args.reps, device)
            print(f"{c:5d} {width:4d} {'torch read of the columns':>31} {t_read:8.1f}")
            # main's pair updates that a pass of this width replaces: at c, and for W = 128 at c + 64 too
            pair = 2 * submission.PANEL_WIDTH
            t = torch.randn(batch, pair, pair, device=device, generator=g).triu_() * 0.01
            h2 = h.clone()
            for start in range(c, c + width, pair):
                if n - start - pair > 0:
                    t_main = median_us(lambda: main_update(h2, t, n, start), args.reps, device)
                    print(f"{c:5d} {width:4d} {f'main fused W64 update at c = {start}':>31} {t_main:8.1f}")
    return 0


def time_updates(h, columns, widths, variants, reps: int, g, stream, main_update) -> int:
    """OnePassUpdate against float64 and timed, beside main's W = 64 passes it replaces."""
    import submission
    batch, n, _ = h.shape
    device = h.device
    print(f"{'c':>5} {'W':>4} {'variant':>11} {'max rel err':>12} {'one pass':>9}")
    for c in columns:
        for width in widths:
            v = torch.randn(batch, n, width, device=device, generator=g) / n ** 0.5
            t = (torch.randn(batch, width, width, device=device, generator=g) / width ** 0.5).triu_()
            planes = [x.to(torch.bfloat16) for x in (v, t)]
            planes = [(p, (x - p.float()).to(torch.bfloat16)) for x, p in zip((v, t), planes)]
            (vh, vl), (th, tl) = planes
            rows, cols = slice(c, n), slice(c + width, n)
            v64 = (vh.double() + vl.double())[:, rows]
            t64 = th.double() + tl.double()
            c64 = h[:, rows, cols].double()
            exact = c64 - v64 @ (t64.transpose(1, 2) @ (v64.transpose(1, 2) @ c64))
            for variant in variants:
                tiles, rest = divmod(n - c - width, variant[0])
                if len(variant) != 4 or rest or tiles % variant[3]:
                    continue
                name = ":".join(map(str, variant))
                need = OnePassUpdate(batch, n, c, width, *variant).shared_bytes()
                if need > SHARED_MEMORY:
                    print(f"{c:5d} {width:4d} {name:>11} needs {need >> 10} KB of shared memory: skipped")
                    continue
                fn = compile_update(n, c, width, batch, variant)
                h1 = h.clone()
                ptrs = [make_ptr(ty, x.data_ptr(), cute.AddressSpace.gmem, assumed_align=16) for ty, x in
                        zip((cutlass.Float32,) + (cutlass.BFloat16,) * 4, (h1, vh, vl, th, tl))]
                fn(*ptrs, stream)
                torch.cuda.synchronize()
                # against the update's own size (V T^T V^T C), not C's
                err = ((h1[:, rows, cols].double() - exact).abs().max() / (c64 - exact).abs().max()).item()
                untouched = torch.equal(h1[:, :, :c + width], h[:, :, :c + width])
                t_one = median_us(lambda: fn(*ptrs, stream), reps, device)
                print(f"{c:5d} {width:4d} {name:>11} {err:12.2e} {t_one:9.1f}"
                      + ("" if untouched else "  (columns left of the strip changed!)"), flush=True)
            pair = 2 * submission.PANEL_WIDTH
            t_pair = torch.randn(batch, pair, pair, device=device, generator=g).triu_() * 0.01
            h2 = h.clone()
            for start in range(c, c + width, pair):
                if n - start - pair > 0:
                    t_main = median_us(lambda: main_update(h2, t_pair, n, start), reps, device)
                    print(f"{c:5d} {width:4d} {f'main fused W64 update at c = {start}':>31} {t_main:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
