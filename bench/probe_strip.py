"""A trailing update that holds its column strip in shared memory (CuTe, mma.sync), against main's (GPU).

    python bench/probe_strip.py [--shapes 640x512,60x1024,40x352] [--reps 7]

Main's fused update (`submission._wy_update_kernel`, Triton) reads its strip
of C twice (V^T C, then C - V Y) and waits on its own loads: a 32-column
pass at 640x512 takes ~590 us where one read and one write of the trailing
matrix would take ~320 at 4 TB/s. `StripUpdate` is the same math with one
CTA per column strip of every matrix:

1. the strip C = H[b, c:n, j0:j0 + BN] goes to shared memory (one read);
2. P = V^T C on tensor cores (3xBF16, mma.sync m16n8k16): warps take
   16-row chunks in turn, their partial sums are added in warp order;
3. Y = T^T P in float32;
4. C -= V Y on tensor cores, in shared memory, then the strip goes back (one
   write).

V's entries come from H (L2) as each mma fragment needs them. Each
configuration is checked against main's kernel on the same input and timed
alone (h restored, L2 flushed, events; the median of `reps`).

With `tiles` (V staged), phase 2 gives each warp one 16 x 8 tile of P over
every chunk, so that no warp waits on another's partial sums; V is staged
as the unit lower trapezoid itself (ones on the diagonal, zeros above it
and past n - c) so that its loads need no tests, its entries and C's are
split in two bf16 terms (the three products use no third), and phase 3
gives each thread four rows of one column of Y.

    python bench/probe_strip.py --shapes 640x512 --tiles-only
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

import submission  # noqa: E402
from probe_tma import main_fused  # noqa: E402
from probe_update import median_us, random_batches  # noqa: E402
from submission import WARP, _asm_results, _bf16_split, _mma_16816, cute, cutlass, cuda, SmemAllocator  # noqa: E402
from submission import dsl_user_op, llvm  # noqa: E402

PRODUCTS = ((0, 1), (1, 0), (0, 0))     # (split of A, of B): big x small, small x big, then big x big


@dsl_user_op
def _copy_async_16(dst, src, valid, *, loc=None, ip=None):
    """16 bytes from global memory at src to shared memory at dst (cp.async, through L2 only), or 16 zero
    bytes if not `valid` (nothing read)."""
    llvm.inline_asm(
        None,
        [dst.toint(loc=loc, ip=ip).ir_value(), src.toint(loc=loc, ip=ip).ir_value(),
         cutlass.Int32(valid).ir_value(loc=loc, ip=ip)],
        "{ .reg .pred p; .reg .b32 size; setp.ne.s32 p, $2, 0; selp.b32 size, 16, 0, p; "
        "cp.async.cg.shared.global [$0], [$1], 16, size; }",
        "r,l,r", has_side_effects=True, asm_dialect=0, loc=loc, ip=ip)


@dsl_user_op
def _copy_async_wait(*, loc=None, ip=None):
    """Wait for this thread's cp.async copies."""
    llvm.inline_asm(None, [], "cp.async.wait_all;", "", has_side_effects=True, asm_dialect=0, loc=loc, ip=ip)


@dsl_user_op
def _bf16_split2(x0, x1, *, loc=None, ip=None):
    """(big, middle): two registers of two bf16 each (x0's in the low half), as `_bf16_split`'s first two."""
    return _asm_results(
        cutlass.Int32, 2, [cutlass.Float32(x).ir_value(loc=loc, ip=ip) for x in (x0, x1)],
        "{ .reg .b32 t0, t1; .reg .f32 r0, r1; "
        "cvt.rn.bf16x2.f32 $0, $3, $2; shl.b32 t0, $0, 16; and.b32 t1, $0, 0xffff0000; "
        "sub.f32 r0, $2, t0; sub.f32 r1, $3, t1; "
        "cvt.rn.bf16x2.f32 $1, r1, r0; }",
        "=&r,=&r,f,f", loc=loc, ip=ip)


@dsl_user_op
def _bits(x, *, loc=None, ip=None):
    """A float32's bits as an Int32 (timing only: see `fake_planes`)."""
    i32 = cutlass.Int32.mlir_type
    return cutlass.Int32(llvm.inline_asm(i32, [cutlass.Float32(x).ir_value(loc=loc, ip=ip)], "mov.b32 $0, $1;",
                                         "=r,f", has_side_effects=False, asm_dialect=0, loc=loc, ip=ip))


class StripUpdate:
    """C := C - V T^T V^T C, C = H[b, c:n, col_lo:col_hi], one CTA per BN columns of C and matrix b.

    V (rows x W) is the block reflector of the panel at column c (unit diagonal, zero above, H below),
    T (W x W, upper) its triangular factor. `rows` bounds n - c (a multiple of 16); n, c, col_lo and
    col_hi are multiples of 4 (16-byte copies). With `stage_v` V's rows go to shared memory with the
    strip; otherwise each warp reads its next chunk's V fragments from H while it multiplies this one.
    """

    def __init__(self, rows: int, width: int, block_n: int, threads: int, stage_v: bool,
                 phases: tuple = (2, 3, 4), tiles: bool = False, unroll: int = 2, fake_planes: bool = False):
        self.phases = phases            # of 2-4 (a probe of where the time goes: the others are skipped)
        assert width == 32 and block_n % 8 == 0 and rows % 16 == 0
        # a warp a tile of P (2 x BN / 8 tiles), four entries of Y a thread
        assert not tiles or (stage_v and threads == WARP * block_n // 4)
        self.tiles = tiles
        self.unroll = unroll            # chunks of the tiles' phase 2 loop unrolled
        # timing only: the tiles' phase 2 takes V's two fp32 rows as if they were its bf16 planes (the loads
        # of planes made once a panel, without the splits; wrong products)
        self.fake_planes = fake_planes
        self.split = _bf16_split2 if tiles else _bf16_split
        self.rows = rows
        self.width = width
        self.block_n = block_n
        self.threads = threads
        self.stage_v = stage_v
        self.ld = block_n + 4           # fragment reads of the strip land on 32 distinct banks
        self.ldv = width + 4

    @cute.jit
    def __call__(self, mH: cute.Tensor, mT: cute.Tensor, c: cutlass.Int32, col_lo: cutlass.Int32,
                 col_hi: cutlass.Int32, stream: cuda.CUstream):
        tiles = (col_hi - col_lo + self.block_n - 1) // self.block_n
        self.kernel(mH, mT, c, col_lo, col_hi).launch(
            grid=(tiles, mH.shape[0], 1), block=(self.threads, 1, 1), stream=stream)

    @cute.jit
    def _v(self, mH, sV, b, r, col, c, m):
        """V[c + r, col] (r local to the strip, col within the panel at c)."""
        x = cutlass.Float32(0.0)
        if cutlass.const_expr(self.tiles):
            x = sV[cutlass.min(r, self.rows - 1), col]      # the trapezoid itself; past it, a prefetch not used
        else:
            if r < m:
                if r > col:
                    if cutlass.const_expr(self.stage_v):
                        x = sV[r, col]
                    else:
                        x = mH[b, c + r, c + col]
                if r == col:
                    x = cutlass.Float32(1.0)
        return x

    @cute.jit
    def _load_v_chunk(self, rV, mH, sV, b, q, c, m, group, pair):
        """rV[4 half + mm ...]: V at rows q + 2t + 8 half + (0, 1) (local), column g + 8 mm: phase 2's share."""
        for half in cutlass.range_constexpr(2):
            for mm in cutlass.range_constexpr(4):
                for d in cutlass.range_constexpr(2):
                    rV[8 * half + 2 * mm + d] = self._v(mH, sV, b, q + 2 * pair + 8 * half + d, group + 8 * mm, c, m)

    @cute.jit
    def _load_v_rows(self, rV, mH, sV, b, q, c, m, group, pair):
        """rV[8 ks + 2 e + d]: V at row q + g + 8 (e % 2) (local), column 16 ks + 2t + 8 (e // 2) + d: phase 4's."""
        for ks in cutlass.range_constexpr(2):
            for e in cutlass.range_constexpr(4):
                for d in cutlass.range_constexpr(2):
                    rV[8 * ks + 2 * e + d] = self._v(mH, sV, b, q + group + 8 * (e % 2),
                                                     16 * ks + 2 * pair + 8 * (e // 2) + d, c, m)

    @cute.kernel
    def kernel(self, mH: cute.Tensor, mT: cute.Tensor, c: cutlass.Int32, col_lo: cutlass.Int32,
               col_hi: cutlass.Int32):
        W = self.width
        BN = self.block_n
        NW = self.threads // WARP
        NT = BN // 8                    # n-tiles of 8 columns
        n = mH.shape[1]
        tidx, _, _ = cute.arch.thread_idx()
        lane = tidx % WARP
        warp = tidx // WARP
        group = lane // 4
        pair = lane % 4
        tile, b, _ = cute.arch.block_idx()
        j0 = col_lo + tile * BN
        width = cutlass.min(BN, col_hi - j0)
        m = n - c
        chunks = (m + 15) // 16
        base = cutlass.Int64(b) * n * n

        smem = SmemAllocator()
        sC = smem.allocate_tensor(cutlass.Float32, cute.make_layout((self.rows, self.ld), stride=(self.ld, 1)), 16)
        sP = smem.allocate_tensor(cutlass.Float32, cute.make_layout((W, BN), stride=(BN, 1)), 16)
        sY = smem.allocate_tensor(cutlass.Float32, cute.make_layout((W, BN), stride=(BN, 1)), 16)
        sT = smem.allocate_tensor(cutlass.Float32, cute.make_layout((W, W), stride=(W, 1)), 16)
        sV = sT
        if cutlass.const_expr(self.stage_v):
            sV = smem.allocate_tensor(cutlass.Float32, cute.make_layout((self.rows, self.ldv), stride=(self.ldv, 1)), 16)

        # ----- 1. the strip, T (and V) into shared memory by cp.async: rows past n - c as zeros -----
        Q = BN // 4
        for e in cutlass.range(tidx, 16 * chunks * Q, self.threads, unroll=4):
            r = e // Q
            k = 4 * (e % Q)
            ok = r < m and k < width
            src = base + cutlass.Int64(c + cutlass.min(r, m - 1)) * n + j0 + cutlass.min(k, width - 4)
            _copy_async_16(sC.iterator + r * self.ld + k, mH.iterator + src, ok)
        for e in cutlass.range(tidx, W * W // 4, self.threads):
            _copy_async_16(sT.iterator + 4 * e, mT.iterator + cutlass.Int64(b) * W * W + 4 * e, True)
        if cutlass.const_expr(self.stage_v):
            for e in cutlass.range(tidx, 16 * chunks * (W // 4), self.threads, unroll=4):
                r = e // (W // 4)
                k = 4 * (e % (W // 4))
                src = base + cutlass.Int64(c + cutlass.min(r, m - 1)) * n + c + k
                _copy_async_16(sV.iterator + r * self.ldv + k, mH.iterator + src, r < m)
        _copy_async_wait()
        cute.arch.sync_threads()
        if cutlass.const_expr(self.tiles):      # V's top square: ones on the diagonal, zeros above
            for e in cutlass.range(tidx, W * W, self.threads):
                r = e // W
                col = e % W
                if col > r:
                    sV[r, col] = cutlass.Float32(0.0)
                if col == r:
                    sV[r, col] = cutlass.Float32(1.0)
            cute.arch.sync_threads()

        # ----- 2. P := V^T C: warp-partial sums over 16-row chunks, then added in warp order -----
        if cutlass.const_expr(2 in self.phases):
            if cutlass.const_expr(self.tiles):
                self._project_tiles(sC, sV, sP, chunks, warp, group, pair)
            else:
                self._project(mH, sC, sV, sP, b, c, m, chunks, warp, group, pair)
        if cutlass.const_expr(3 in self.phases):
            if cutlass.const_expr(self.tiles):
                self._reflect_columns(sT, sP, sY, tidx)
            else:
                self._reflect(sT, sP, sY, tidx)
        if cutlass.const_expr(4 in self.phases):
            self._apply(mH, sC, sV, sY, b, c, m, chunks, warp, group, pair)
        cute.arch.sync_threads()
        self._store(mH, sC, b, c, m, j0, width, tidx)

    @cute.jit
    def _project(self, mH, sC, sV, sP, b, c, m, chunks, warp, group, pair):
        W = self.width
        BN = self.block_n
        NW = self.threads // WARP
        NT = BN // 8
        rP = cute.make_rmem_tensor(4 * 2 * NT, cutlass.Float32)
        for e in cutlass.range_constexpr(4 * 2 * NT):
            rP[e] = cutlass.Float32(0.0)
        rV = cute.make_rmem_tensor(16, cutlass.Float32)
        self._load_v_chunk(rV, mH, sV, b, 16 * warp, c, m, group, pair)
        for q in cutlass.range(16 * warp, 16 * chunks, 16 * NW):
            # v[k][half][mm]: split k of V at rows q + 2t + 8 half + (0, 1), column g + 8 mm
            # x[k][half][nt]: split k of C at the same rows, column 8 nt + g
            v = [[[None] * 4, [None] * 4] for _ in "bms"]
            x = [[[None] * NT, [None] * NT] for _ in "bms"]
            for half in cutlass.range_constexpr(2):
                for mm in cutlass.range_constexpr(4):
                    split = _bf16_split(rV[8 * half + 2 * mm], rV[8 * half + 2 * mm + 1])
                    for k in cutlass.range_constexpr(3):
                        v[k][half][mm] = split[k]
            self._load_v_chunk(rV, mH, sV, b, q + 16 * NW, c, m, group, pair)
            for half in cutlass.range_constexpr(2):
                row = q + 2 * pair + 8 * half
                for nt in cutlass.range_constexpr(NT):
                    split = _bf16_split(sC[row, 8 * nt + group], sC[row + 1, 8 * nt + group])
                    for k in cutlass.range_constexpr(3):
                        x[k][half][nt] = split[k]
            for mt in cutlass.range_constexpr(2):
                for nt in cutlass.range_constexpr(NT):
                    t = mt * NT + nt
                    acc = [rP[4 * t], rP[4 * t + 1], rP[4 * t + 2], rP[4 * t + 3]]
                    for p in cutlass.range_constexpr(len(PRODUCTS)):
                        ka, kb = PRODUCTS[p]
                        a = [v[ka][0][2 * mt], v[ka][0][2 * mt + 1], v[ka][1][2 * mt], v[ka][1][2 * mt + 1]]
                        acc = _mma_16816(a, [x[kb][0][nt], x[kb][1][nt]], acc)
                    for e in cutlass.range_constexpr(4):
                        rP[4 * t + e] = acc[e]
        for s in cutlass.range_constexpr(NW):
            if warp == s:
                for mt in cutlass.range_constexpr(2):
                    for nt in cutlass.range_constexpr(NT):
                        for e in cutlass.range_constexpr(4):
                            i = 16 * mt + group + 8 * (e // 2)
                            j = 8 * nt + 2 * pair + e % 2
                            if cutlass.const_expr(s == 0):
                                sP[i, j] = rP[4 * (mt * NT + nt) + e]
                            else:
                                sP[i, j] = sP[i, j] + rP[4 * (mt * NT + nt) + e]
            cute.arch.sync_threads()

    @cute.jit
    def _project_tiles(self, sC, sV, sP, chunks, warp, group, pair):
        """2. P := V^T C, warp (mt, nt) summing P's rows 16 mt .. + 16 and columns 8 nt .. + 8 over every
        chunk: one accumulator a product, so that a chunk's three mma do not wait on each other"""
        NT = self.block_n // 8
        mt = warp // NT
        nt = warp % NT
        acc = [[cutlass.Float32(0.0)] * 4 for _ in PRODUCTS]
        for q in cutlass.range(0, 16 * chunks, 16, unroll=self.unroll):
            # v[k][half][mm]: split k of V at rows q + 2t + 8 half + (0, 1), column 16 mt + g + 8 mm
            # x[k][half]: split k of C at the same rows, column 8 nt + g
            v = [[[None] * 2, [None] * 2] for _ in range(2)]
            x = [[None] * 2 for _ in range(2)]
            for half in cutlass.range_constexpr(2):
                row = q + 2 * pair + 8 * half
                for mm in cutlass.range_constexpr(2):
                    col = 16 * mt + group + 8 * mm
                    if cutlass.const_expr(self.fake_planes):
                        split = [_bits(sV[row, col]), _bits(sV[row + 1, col])]
                    else:
                        split = _bf16_split2(sV[row, col], sV[row + 1, col])
                    for k in cutlass.range_constexpr(2):
                        v[k][half][mm] = split[k]
                split = _bf16_split2(sC[row, 8 * nt + group], sC[row + 1, 8 * nt + group])
                for k in cutlass.range_constexpr(2):
                    x[k][half] = split[k]
            for p in cutlass.range_constexpr(len(PRODUCTS)):
                ka, kb = PRODUCTS[p]
                a = [v[ka][0][0], v[ka][0][1], v[ka][1][0], v[ka][1][1]]
                acc[p] = _mma_16816(a, [x[kb][0], x[kb][1]], acc[p])
        for e in cutlass.range_constexpr(4):
            sP[16 * mt + group + 8 * (e // 2), 8 * nt + 2 * pair + e % 2] = (acc[0][e] + acc[1][e]) + acc[2][e]
        cute.arch.sync_threads()

    @cute.jit
    def _reflect_columns(self, sT, sP, sY, tidx):
        """3. Y := T^T P, float32, thread e the rows 4 (e // BN) .. + 4 of column e % BN: a warp reads one
        row of T a term (a broadcast) and a row of P"""
        W = self.width
        BN = self.block_n
        j = tidx % BN
        i0 = 4 * (tidx // BN)
        y = [cutlass.Float32(0.0)] * 4
        for l in cutlass.range_constexpr(W):
            p = sP[l, j]
            for d in cutlass.range_constexpr(4):
                y[d] = y[d] + sT[l, i0 + d] * p
        for d in cutlass.range_constexpr(4):
            sY[i0 + d, j] = y[d]
        cute.arch.sync_threads()

    @cute.jit
    def _reflect(self, sT, sP, sY, tidx):
        """3. Y := T^T P, float32"""
        W = self.width
        BN = self.block_n
        for e in cutlass.range(tidx, W * BN, self.threads):
            i = e // BN
            j = e % BN
            y = cutlass.Float32(0.0)
            for l in cutlass.range_constexpr(W):
                y = y + sT[l, i] * sP[l, j]
            sY[i, j] = y
        cute.arch.sync_threads()

    @cute.jit
    def _apply(self, mH, sC, sV, sY, b, c, m, chunks, warp, group, pair):
        """4. C -= V Y on 16-row chunks, Y's fragments held by every warp"""
        BN = self.block_n
        NW = self.threads // WARP
        NT = BN // 8
        rV = cute.make_rmem_tensor(16, cutlass.Float32)
        # y[k][ks][half][nt]: split k of Y at rows 16 ks + 2t + 8 half + (0, 1), column 8 nt + g
        yf = [[[[None] * NT, [None] * NT] for _ in range(2)] for _ in "bms"]
        for ks in cutlass.range_constexpr(2):
            for half in cutlass.range_constexpr(2):
                for nt in cutlass.range_constexpr(NT):
                    i = 16 * ks + 2 * pair + 8 * half
                    split = self.split(sY[i, 8 * nt + group], sY[i + 1, 8 * nt + group])
                    for k in cutlass.range_constexpr(len(split)):
                        yf[k][ks][half][nt] = split[k]
        self._load_v_rows(rV, mH, sV, b, 16 * warp, c, m, group, pair)
        for q in cutlass.range(16 * warp, 16 * chunks, 16 * NW):
            # v[k][ks][e]: split k of V at row q + g + 8 (e % 2), columns 16 ks + 2t + 8 (e // 2) + (0, 1)
            v = [[[None] * 4 for _ in range(2)] for _ in "bms"]
            for ks in cutlass.range_constexpr(2):
                for e in cutlass.range_constexpr(4):
                    split = self.split(rV[8 * ks + 2 * e], rV[8 * ks + 2 * e + 1])
                    for k in cutlass.range_constexpr(len(split)):
                        v[k][ks][e] = split[k]
            self._load_v_rows(rV, mH, sV, b, q + 16 * NW, c, m, group, pair)
            for nt in cutlass.range_constexpr(NT):
                acc = [cutlass.Float32(0.0)] * 4
                for ks in cutlass.range_constexpr(2):
                    for p in cutlass.range_constexpr(len(PRODUCTS)):
                        ka, kb = PRODUCTS[p]
                        acc = _mma_16816(v[ka][ks], [yf[kb][ks][0][nt], yf[kb][ks][1][nt]], acc)
                for e in cutlass.range_constexpr(4):
                    r = q + group + 8 * (e // 2)
                    j = 8 * nt + 2 * pair + e % 2
                    sC[r, j] = sC[r, j] - acc[e]

    @cute.jit
    def _store(self, mH, sC, b, c, m, j0, width, tidx):
        """5. the strip back"""
        Q = self.block_n // 4
        for e in cutlass.range(tidx, m * Q, self.threads, unroll=4):
            r = e // Q
            k = 4 * (e % Q)
            if k < width:
                for d in cutlass.range_constexpr(4):
                    mH[b, c + r, j0 + k + d] = sC[r, k + d]


def time_configurations(configurations: list, h, pristine, reps: int, device) -> bool:
    """Check each (name, launch) against the first on h restored from pristine (those of phases 234: the
    others skip work) and print its median time; False at the first launch that fails (the context may be
    lost)."""
    expected = None
    for name, launch in configurations:
        h.copy_(pristine)
        try:
            launch()
            torch.cuda.synchronize()
        except Exception as error:
            print(f"{name:44s} failed: {type(error).__name__}: {str(error)[:300]}", flush=True)
            return False
        if expected is None:
            expected, diff = h.clone(), 0.0
        elif "phases 234" not in name:
            diff = float("nan")
        else:
            diff = ((h - expected).abs().max() / expected.abs().max()).item()
        median = median_us(launch, lambda: h.copy_(pristine), reps, device, queued=True)
        print(f"{name:44s} {median:9.1f} us   max diff {diff:.1e}", flush=True)
    return True


_COMPILED = {}


def strip_update(h, t, n, lo, block_n, threads, stage_v, phases=(2, 3, 4), tiles=False, **options):
    """Update columns [lo, n) of every matrix of h by the panel at c = 0 (V from h, T = t)."""
    rows = triton.cdiv(n, 16) * 16
    key = (rows, block_n, threads, stage_v, phases, tiles, tuple(sorted(options.items())))
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    args = (submission._cute_tensor(h), submission._cute_tensor(t), cutlass.Int32(0), cutlass.Int32(lo),
            cutlass.Int32(n))
    if key not in _COMPILED:
        kernel = StripUpdate(rows, t.shape[-1], block_n, threads, stage_v, phases, tiles, **options)
        _COMPILED[key] = cute.compile(kernel, *args, stream)
    _COMPILED[key](*args, stream)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="640x512,60x1024,40x352")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--tiles-phase-2", action="store_true",
                        help="only the tiles' phase 2 (unrolled 2 and 4 chunks, with V's splits and without)")
    parser.add_argument("--tiles-only", action="store_true",
                        help="only the configurations that part the tiles' phases from the old ones (V staged)")
    args = parser.parse_args(argv)
    device = torch.device("cuda")
    W = submission.PANEL_WIDTH
    print(f"{torch.cuda.get_device_name()}; median of {args.reps}", flush=True)
    for batch, n, pristine, h in random_batches(args.shapes, device):
        t = (0.1 * torch.randn(batch, W, W, device=device)).triu().contiguous()
        print(f"--- {batch}x{n}, c = 0, columns [{W}, {n})", flush=True)
        configurations = [("main fused W32 BM 32 BN 64", lambda: main_fused(h, t, n, W, 4, 32, 64))]
        staged = [(32, 256, True, phases, tiles) for tiles in (False, True) for phases in ((2, 3, 4), (2, 3), (2,))]
        everything = [(32, 256, False, (2, 3, 4)), (32, 256, True, (2, 3, 4)), (32, 256, False, (2, 3)),
                      (32, 256, True, (2, 3)), (32, 256, True, (2,)), (32, 256, False, ()), (32, 256, True, ()),
                      (64, 256, False, (2, 3, 4)), (64, 256, False, ()), (16, 128, False, (2, 3, 4)),
                      (16, 128, False, ())]
        for block_n, threads, stage_v, phases, *tiles in (staged + [(32, 256, True, ())] if args.tiles_only
                                                          else everything + staged[3:]):
            smem = 4 * (n * (block_n + 4) + stage_v * n * (W + 4) + 2 * W * block_n + W * W)
            if smem > 227 * 1024:
                continue
            configurations.append((f"strip BN {block_n} threads {threads}{' V staged' if stage_v else ''}"
                                   f"{' tiles' if tiles and tiles[0] else ''} "
                                   f"phases {''.join(map(str, phases)) or '-'}",
                                   lambda a=(block_n, threads, stage_v, phases, *tiles): strip_update(h, t, n, W, *a)))
        if args.tiles_phase_2:
            configurations = configurations[:1]
            for phases, options in (((2,), {}), ((2,), {"unroll": 4}), ((2,), {"fake_planes": True}),
                                    ((2, 3), {"fake_planes": True}), ((), {})):
                configurations.append((f"strip tiles phases {''.join(map(str, phases)) or '-'} {options}",
                                       lambda a=(32, 256, True, phases, True), o=options: strip_update(h, t, n, W, *a,
                                                                                                      **o)))
        if not time_configurations(configurations, h, pristine, args.reps, device):
            return 1
        del pristine, h
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
