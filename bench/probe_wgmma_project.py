"""A one-pass update's first half on warpgroup MMA: Y = V^T C with C split into bf16 pairs on chip (GPU probe).

    python bench/probe_wgmma_project.py [--shape 640x512] [--columns 0,128,256] [--widths 64,128] [--reps 7]
    python bench/probe_wgmma_project.py --compile-only     # builds the kernels here (PTX kept), no GPU

The question: can a trailing update read each trailing column once at
W = 128 (a block reflector of four panels, half of W = 64's passes over C)
without paying for it in tensor-core time? Main's Triton kernel does two
passes a pair and a 128-column Triton pass costs as much as two 64-column
ones, so only a kernel that keeps C's strip on chip and multiplies on
warpgroup MMA could. This probe builds that kernel's first half.

A CTA owns BN = 64 trailing columns of one matrix, rows [c, n) (the strip
a one-pass update keeps for its second half, C -= V Z). It issues the whole
strip's cp.async copies into shared memory at once (one group a KC-row
chunk), then per chunk: splits the chunk's floats into bf16 pairs
(hi = bf16(x), lo = bf16(x - hi)), loads V's chunk (bf16 planes, made by
the host here) and accumulates Y^T += C_hi^T V_hi + C_hi^T V_lo + C_lo^T V_hi
on two warpgroups (wgmma m64nW/2k16, both operands from shared memory).
Y^T (BN x W) goes to global memory.

Timed alone, also without the products or without the split (the parts apart), against: a read of the same columns by torch (the pass's
DRAM floor), and main's fused W = 64 update of the same c (two reads and a
write of C). All shapes static (one compile per shape, c and W).
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
from cutlass.cute.nvgpu import cpasync, warpgroup  # noqa: E402
from cutlass.cute.runtime import make_ptr  # noqa: E402
from cutlass.utils import LayoutEnum, SmemAllocator  # noqa: E402

BN = 64         # trailing columns a CTA owns: the M of one warpgroup's wgmma
KC = 64         # rows of a chunk (four k-steps of 16)
THREADS = 256   # two warpgroups, each N = W / 2 of Y^T
PAD = 4         # floats after each strip column in shared memory (16-byte rows, fewer bank conflicts)


class Projection:
    """Y[b, col, :] = sum over rows r in [c, n) of C[b, r, col] V[b, r, :] for col in [c + W, n), 3xBF16."""

    def __init__(self, batch: int, n: int, c: int, width: int, parts: str = "all"):
        assert (n - c) % KC == 0 and (n - c - width) % BN == 0 and width % 16 == 0
        self.batch, self.n, self.c, self.width = batch, n, c, width
        self.products = parts in ("all", "no-split")      # the parts timed apart: no products, or no split
        self.split = parts in ("all", "no-products")
        self.chunks = (n - c) // KC

    @cute.jit
    def __call__(self, mH: cute.Pointer, mVh: cute.Pointer, mVl: cute.Pointer, mY: cute.Pointer,
                 stream):
        """h (batch, n, n) float32, V's planes (batch, n, W) bfloat16 (rows from c on read), Y (batch, n, W)
        float32 (rows c + W on written): all contiguous, by their first element's address."""
        W = self.width
        tiled_mma = sm90_utils.make_trivial_tiled_mma(
            cutlass.BFloat16, cutlass.BFloat16, warpgroup.OperandMajorMode.MN, warpgroup.OperandMajorMode.MN,
            cutlass.Float32, (1, 2, 1), (BN, W // 2))
        a_layout = sm90_utils.make_smem_layout_a(LayoutEnum.COL_MAJOR, (BN, W, KC), cutlass.BFloat16, 1)
        b_layout = sm90_utils.make_smem_layout_b(LayoutEnum.COL_MAJOR, (BN, W, KC), cutlass.BFloat16, 2)
        self.kernel(mH, mVh, mVl, mY, tiled_mma, a_layout, b_layout).launch(
            grid=((self.n - self.c - W) // BN, self.batch, 1), block=(THREADS, 1, 1), stream=stream)

    @cute.kernel
    def kernel(self, mH: cute.Pointer, mVh: cute.Pointer, mVl: cute.Pointer, mY: cute.Pointer,
               tiled_mma: cute.TiledMma, a_layout: cute.ComposedLayout, b_layout: cute.ComposedLayout):
        n, c, W = self.n, self.c, self.width
        tidx, _, _ = cute.arch.thread_idx()
        tile, b, _ = cute.arch.block_idx()
        col0 = c + W + tile * BN
        rows = self.chunks * KC

        smem = SmemAllocator()
        # the strip, (column, row): column-major so that a chunk is (BN, KC) like the A operand
        sC = smem.allocate_tensor(cutlass.Float32, cute.make_layout((BN, rows), stride=(1, BN + PAD)), 16)
        sAh = smem.allocate_tensor(cutlass.BFloat16, a_layout.outer, 1024, a_layout.inner)
        sAl = smem.allocate_tensor(cutlass.BFloat16, a_layout.outer, 1024, a_layout.inner)
        sBh = smem.allocate_tensor(cutlass.BFloat16, b_layout.outer, 1024, b_layout.inner)     # two chunks of V: (W, KC, 2)
        sBl = smem.allocate_tensor(cutlass.BFloat16, b_layout.outer, 1024, b_layout.inner)

        # global views in the operands' (M or N, K) order: C^T of this CTA's columns, V^T
        gC = cute.make_tensor(mH + cute.assume(b * n * n + c * n + col0, divby=BN),
                              cute.make_layout((BN, rows), stride=(1, n)))
        gVh = cute.make_tensor(mVh + cute.assume(b * n * W + c * W, divby=W), cute.make_layout((W, rows), stride=(1, W)))
        gVl = cute.make_tensor(mVl + cute.assume(b * n * W + c * W, divby=W), cute.make_layout((W, rows), stride=(1, W)))

        # the strip: cp.async, 4 floats a copy, threads along the columns first
        strip_copy = cute.make_tiled_copy_tv(
            cute.make_copy_atom(cpasync.CopyG2SOp(), cutlass.Float32, num_bits_per_copy=128),
            cute.make_layout((BN // 4, THREADS // (BN // 4)), stride=(1, BN // 4)), cute.make_layout((4, 1)))
        strip_thr = strip_copy.get_slice(tidx)
        for i in cutlass.range_constexpr(self.chunks):
            cute.copy(strip_copy, strip_thr.partition_S(cute.local_tile(gC, (BN, KC), (0, i))),
                      strip_thr.partition_D(cute.local_tile(sC, (BN, KC), (0, i))))
            cute.arch.cp_async_commit_group()

        # V's chunks: through registers, 8 bf16 a copy, into the buffer the chunk's parity names
        v_copy = cute.make_tiled_copy_tv(
            cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.BFloat16, num_bits_per_copy=128),
            cute.make_layout((W // 8, THREADS // (W // 8)), stride=(1, W // 8)), cute.make_layout((8, 1)))
        v_thr = v_copy.get_slice(tidx)
        rVh = cute.make_fragment_like(v_thr.partition_S(cute.local_tile(gVh, (W, KC), (0, 0))))
        rVl = cute.make_fragment_like(rVh)

        # the split: 8 columns of a row a thread-step, floats from the strip, bf16 pairs to the A operand
        split_copy = cute.make_tiled_copy_tv(
            cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32, num_bits_per_copy=128),
            cute.make_layout((BN // 8, THREADS // (BN // 8)), stride=(1, BN // 8)), cute.make_layout((8, 1)))
        split_thr = split_copy.get_slice(tidx)
        a_store = cute.make_tiled_copy_tv(
            cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.BFloat16, num_bits_per_copy=128),
            cute.make_layout((BN // 8, THREADS // (BN // 8)), stride=(1, BN // 8)), cute.make_layout((8, 1)))
        a_thr = a_store.get_slice(tidx)
        tAh = a_thr.partition_D(sAh[(None, None, 0)])
        tAl = a_thr.partition_D(sAl[(None, None, 0)])
        rX = cute.make_fragment_like(split_thr.partition_S(cute.local_tile(sC, (BN, KC), (0, 0))))
        rHi = cute.make_fragment_like(tAh)
        rLo = cute.make_fragment_like(tAl)

        thr_mma = tiled_mma.get_slice(tidx)
        tCrAh = tiled_mma.make_fragment_A(thr_mma.partition_A(sAh))
        tCrAl = tiled_mma.make_fragment_A(thr_mma.partition_A(sAl))
        tCrBh = tiled_mma.make_fragment_B(thr_mma.partition_B(sBh))
        tCrBl = tiled_mma.make_fragment_B(thr_mma.partition_B(sBl))
        gY = cute.make_tensor(mY + cute.assume(b * n * W + col0 * W, divby=W), cute.make_layout((BN, W), stride=(W, 1)))
        tCgY = thr_mma.partition_C(gY)
        acc = cute.make_fragment(tCgY.shape, cutlass.Float32)
        acc.fill(0.0)
        tiled_mma.set(warpgroup.Field.ACCUMULATE, True)

        cute.copy(v_copy, v_thr.partition_S(cute.local_tile(gVh, (W, KC), (0, 0))), rVh)
        cute.copy(v_copy, v_thr.partition_S(cute.local_tile(gVl, (W, KC), (0, 0))), rVl)
        for i in cutlass.range_constexpr(self.chunks):
            p = i % 2
            cute.copy(v_copy, rVh, v_thr.partition_D(sBh[(None, None, p)]))
            cute.copy(v_copy, rVl, v_thr.partition_D(sBl[(None, None, p)]))
            if cutlass.const_expr(i + 1 < self.chunks):     # the next chunk's V in flight meanwhile
                cute.copy(v_copy, v_thr.partition_S(cute.local_tile(gVh, (W, KC), (0, i + 1))), rVh)
                cute.copy(v_copy, v_thr.partition_S(cute.local_tile(gVl, (W, KC), (0, i + 1))), rVl)
            cute.arch.cp_async_wait_group(self.chunks - 1 - i)     # this thread's copies of chunk i landed
            cute.arch.sync_threads()                                 # everyone's
            if cutlass.const_expr(self.split):
                cute.copy(split_copy, split_thr.partition_S(cute.local_tile(sC, (BN, KC), (0, i))), rX)
                x = rX.load()
                hi = x.to(cutlass.BFloat16)
                rHi.store(hi)
                rLo.store((x - hi.to(cutlass.Float32)).to(cutlass.BFloat16))
                cute.copy(a_store, rHi, tAh)
                cute.copy(a_store, rLo, tAl)
            cute.arch.fence_proxy(cute.arch.ProxyKind.async_shared, space=cute.arch.SharedSpace.shared_cta)
            cute.arch.sync_threads()
            if cutlass.const_expr(self.products):
                warpgroup.fence()
                for k in cutlass.range_constexpr(KC // 16):
                    cute.gemm(tiled_mma, acc, tCrAh[(None, None, k, 0)], tCrBh[(None, None, k, p)], acc)
                    cute.gemm(tiled_mma, acc, tCrAh[(None, None, k, 0)], tCrBl[(None, None, k, p)], acc)
                    cute.gemm(tiled_mma, acc, tCrAl[(None, None, k, 0)], tCrBh[(None, None, k, p)], acc)
                warpgroup.commit_group()
                warpgroup.wait_group(0)
            cute.arch.sync_threads()        # the A operand and V's buffer are free again
        for e in cutlass.range_constexpr(cute.size(acc)):
            tCgY[e] = acc[e]


def pointers(h: torch.Tensor, vh: torch.Tensor, vl: torch.Tensor, y: torch.Tensor) -> tuple:
    types = (cutlass.Float32, cutlass.BFloat16, cutlass.BFloat16, cutlass.Float32)
    return tuple(make_ptr(t, x.data_ptr(), cute.AddressSpace.gmem, assumed_align=16) for t, x in zip(types, (h, vh, vl, y)))


def compile_projection(n: int, c: int, width: int, batch: int, parts: str = "all"):
    import cuda.bindings.driver as cuda
    null = (make_ptr(t, 0, cute.AddressSpace.gmem, assumed_align=16)
            for t in (cutlass.Float32, cutlass.BFloat16, cutlass.BFloat16, cutlass.Float32))
    return cute.compile(Projection(batch, n, c, width, parts), *null, cuda.CUstream(0))


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
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--compile-only", action="store_true")
    args = parser.parse_args(argv)
    batch, n = map(int, args.shape.split("x"))
    columns = [int(x) for x in args.columns.split(",")]
    widths = [int(x) for x in args.widths.split(",")]
    if args.compile_only:
        os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
        for c in columns:
            for width in widths:
                try:
                    compile_projection(n, c, width, 2)
                    print(f"c={c} W={width}: compiled", flush=True)
                except Exception as error:       # no GPU here: the module's load fails after PTX
                    print(f"c={c} W={width}: {type(error).__name__}: {str(error)[:400]}", flush=True)
        return 0

    import cuda.bindings.driver as cuda
    import submission
    device = torch.device("cuda")
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    g = torch.Generator(device=device).manual_seed(7)
    h = torch.randn(batch, n, n, device=device, generator=g)
    print(f"{torch.cuda.get_device_name()}; {batch}x{n}; median of {args.reps}, L2 flushed, us")
    print(f"{'c':>5} {'W':>4} {'max rel err':>12} {'wgmma V^T C':>12} {'no products':>12} {'no split':>9} "
          f"{'torch read':>11} {'main W64 update':>16}")
    for c in columns:
        for width in widths:
            if (n - c - width) < BN:
                continue
            v = torch.randn(batch, n, width, device=device, generator=g)
            v[:, :c] = 0
            vh = v.to(torch.bfloat16)
            vl = (v - vh.float()).to(torch.bfloat16)
            y = torch.zeros(batch, n, width, device=device)
            fn = compile_projection(n, c, width, batch)
            hv, vhv, vlv, yv = pointers(h, vh, vl, y)
            fn(hv, vhv, vlv, yv, stream)
            torch.cuda.synchronize()
            cols = slice(c + width, n)
            exact = torch.einsum("brk,brj->bkj", h[:, c:, cols].double(), (vh.double() + vl.double())[:, c:])
            err = ((y[:, cols].double() - exact).abs().max() / exact.abs().max()).item()
            t_wgmma = median_us(lambda: fn(hv, vhv, vlv, yv, stream), args.reps, device)
            t_parts = []
            for parts in ("no-products", "no-split"):
                part = compile_projection(n, c, width, batch, parts)
                t_parts.append(median_us(lambda: part(hv, vhv, vlv, yv, stream), args.reps, device))
            t_read = median_us(lambda: h[:, c:, cols].sum(dim=1), args.reps, device)
            t_main = ""
            if width == 2 * submission.PANEL_WIDTH:
                sys.path.insert(0, str(ROOT / "bench"))
                from probe_update import main_pair_update
                t = torch.randn(batch, width, width, device=device, generator=g).triu_() * 0.01
                h2 = h.clone()
                t_main = f"{median_us(lambda: main_pair_update(h2, t, n, c), args.reps, device):16.1f}"
            print(f"{c:5d} {width:4d} {err:12.2e} {t_wgmma:12.1f} {t_parts[0]:12.1f} {t_parts[1]:9.1f} "
                  f"{t_read:11.1f} {t_main:>16}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
