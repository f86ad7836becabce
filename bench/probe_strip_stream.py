"""A trailing update by one CTA a matrix that streams its column strips through shared memory, loading
the next strip while it updates this one (CuTe, mma.sync), against main's (GPU).

    python bench/probe_strip_stream.py [--shapes 640x512] [--widths 32,64] [--columns 0,128]
        [--threads 256,512] [--block-n 32,16] [--phases 234,23,-] [--reps 7]

`probe_strip.py`'s one-CTA-a-strip kernel loads, multiplies and stores in
series, and stages V (fp32) and splits it again for every strip. Here CTA b
updates C = H[b, c:n, c + W:n] by the panel at c (V: m x W, m = n - c, unit
lower trapezoid; T: W x W upper; W = 32, or a pair's 64):

0. V's big and middle bf16 terms go to shared memory once, as two planes
   of m x W bf16 (rows of 2 W bytes, their 16-byte chunks swizzled so that
   the eight rows an `ldmatrix` reads fill the 32 banks), with ones on the
   diagonal, zeros above it and past m;
1. strip s + 1 (BN columns) is loaded by cp.async into the other of two
   fp32 buffers while strip s is updated (a barrier after each strip's
   store frees its buffer for the load two strips on);
2. P = V^T C: warp (share, mt, nt) sums the 16 x 8 tile (mt, nt) of P over
   its share of the 16-row chunks, two chunks a trip into separate
   accumulators, V's fragments by `ldmatrix.trans` from the planes, C's
   split in registers; three products (3xBF16);
3. Y = T^T P in float32, a thread a few rows of one column;
4. C -= V Y on tensor cores (V by `ldmatrix`), the n-tiles' mma chains
   interleaved, in the buffer; then the strip is stored (16-byte stores).
   With `direct_store` (the configurations marked "direct") phase 4
   stores its results from registers instead, 8 bytes a lane (whole
   32-byte sectors), and no store pass follows.

Shared memory: two strips of m x (BN + 4) floats, the planes (m x W x 4
bytes), T, P and Y; at m = 512: W 32 BN 32 220 KB, W 64 BN 8 196 KB (BN
16 would take 232 KB, over the 227 a CTA may have). One CTA an SM. Each configuration is checked
against main's fused update (`_wy_update_kernel` as the plans launch it)
on the same input and timed alone (h restored, L2 flushed, events; the
median of `reps`).
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
from probe_strip import PRODUCTS, _bf16_split2, _copy_async_16, _copy_async_wait, time_configurations  # noqa: E402
from probe_update import main_update, random_batches  # noqa: E402
from submission import WARP, _mma_16816, cute, cutlass, cuda, SmemAllocator  # noqa: E402
from submission import dsl_user_op, llvm  # noqa: E402


@dsl_user_op
def _ldmatrix_x4(address, transpose: bool, *, loc=None, ip=None):
    """Four 8 x 8 bf16 matrices from shared memory (ldmatrix .x4): lane i gives the 16-byte row at `address`
    (a 32-bit shared address) of row i % 8 of matrix i // 8, and gets one register of each matrix, in mma's
    fragment layout (of the transpose with `transpose`)."""
    i32 = cutlass.Int32.mlir_type
    result = llvm.inline_asm(
        llvm.StructType.get_literal([i32] * 4), [cutlass.Int32(address).ir_value(loc=loc, ip=ip)],
        f"ldmatrix.sync.aligned.m8n8.x4{'.trans' if transpose else ''}.shared.b16 {{$0, $1, $2, $3}}, [$4];",
        "=r,=r,=r,=r,r", has_side_effects=True, asm_dialect=0, loc=loc, ip=ip)
    return [cutlass.Int32(llvm.extractvalue(i32, result, [k], loc=loc, ip=ip)) for k in range(4)]


@dsl_user_op
def _store_global(address, values: list, *, loc=None, ip=None):
    """Two or four floats to global memory at `address` (a 64-bit address aligned to their size), one
    vector store."""
    operands = ", ".join(f"${k + 1}" for k in range(len(values)))
    llvm.inline_asm(
        None, [cutlass.Int64(address).ir_value(loc=loc, ip=ip)]
        + [cutlass.Float32(x).ir_value(loc=loc, ip=ip) for x in values],
        f"st.global.v{len(values)}.f32 [$0], {{{operands}}};", "l" + ",f" * len(values), has_side_effects=True,
        asm_dialect=0, loc=loc, ip=ip)


SMEM_BYTES = 227 * 1024       # an H100/H200 CTA's shared memory at most


@cute.jit
def plane_word(r, chunk, width: int):
    """Word offset in a plane of `width` bf16 a row of the 16-byte chunk `chunk` (columns 8 chunk .. + 8) of
    row r: width / 2 words a row, the chunk swizzled so that any eight consecutive rows' chunks fill the 32
    banks (rows of 64 bytes: chunk XOR (r / 2) % 4; of 128 bytes: chunk XOR r % 8)."""
    if cutlass.const_expr(width == 32):
        return r * 16 + (chunk ^ ((r // 2) % 4)) * 4
    return r * 32 + (chunk ^ (r % 8)) * 4


class StreamedStrips:
    """C := C - V T^T V^T C, C = H[b, c:n, col_lo:col_hi], one CTA a matrix b, BN-column strips in turn.

    `rows` bounds m = n - c rounded up to 64 rows; n, c, col_lo and col_hi are multiples of 4 (16-byte copies).
    `phases` (timing only) skips the products not listed (2: P, 3: Y, 4: C -= V Y): () is the streamed copy.
    """

    def __init__(self, rows: int, width: int, block_n: int, threads: int, phases: tuple = (2, 3, 4),
                 direct_store: bool = False):
        assert width in (32, 64) and block_n in (8, 16, 32) and rows % 64 == 0
        self.rows = rows
        self.width = width
        self.block_n = block_n
        self.threads = threads
        self.tiles = (width // 16) * (block_n // 8)     # 16 x 8 tiles of P
        self.shares = threads // WARP // self.tiles     # warps that sum one tile, each over a share of chunks
        assert self.shares * self.tiles * WARP == threads and self.shares in (1, 2)
        self.phases = phases
        # phase 4 stores its results straight from registers (8 bytes a lane, whole 32-byte sectors), not
        # into the buffer for a store pass after it
        self.direct_store = direct_store
        assert not direct_store or 4 in phases
        self.ld = block_n + 4           # phase 2's fragment reads of a strip land on 32 distinct banks
        smem = 4 * (2 * rows * self.ld + rows * width + 2 * width * block_n + width * width)
        assert smem <= SMEM_BYTES, (smem, SMEM_BYTES)

    @cute.jit
    def __call__(self, mH: cute.Tensor, mT: cute.Tensor, c: cutlass.Int32, col_lo: cutlass.Int32,
                 col_hi: cutlass.Int32, stream: cuda.CUstream):
        self.kernel(mH, mT, c, col_lo, col_hi).launch(
            grid=(mH.shape[0], 1, 1), block=(self.threads, 1, 1), stream=stream)

    @cute.kernel
    def kernel(self, mH: cute.Tensor, mT: cute.Tensor, c: cutlass.Int32, col_lo: cutlass.Int32,
               col_hi: cutlass.Int32):
        W = self.width
        BN = self.block_n
        n = mH.shape[1]
        tidx, _, _ = cute.arch.thread_idx()
        lane = tidx % WARP
        warp = tidx // WARP
        b, _, _ = cute.arch.block_idx()
        m = n - c
        # 16-row chunks, rounded up to pairs per share (phase 2's loop): rows past m are staged as zeros
        chunks = ((m + 15) // 16 + 2 * self.shares - 1) // (2 * self.shares) * (2 * self.shares)
        strips = (col_hi - col_lo + BN - 1) // BN
        base = cutlass.Int64(b) * n * n

        smem = SmemAllocator()
        strip_layout = cute.make_layout((self.rows, self.ld), stride=(self.ld, 1))
        buffers = smem.allocate_tensor(cutlass.Float32, cute.make_layout(2 * self.rows * self.ld), 16)
        plane_layout = cute.make_layout((self.rows * W // 2,), stride=(1,))
        sHi = smem.allocate_tensor(cutlass.Int32, plane_layout, 128)
        sLo = smem.allocate_tensor(cutlass.Int32, plane_layout, 128)
        sT = smem.allocate_tensor(cutlass.Float32, cute.make_layout((W, W), stride=(W, 1)), 16)
        sP = smem.allocate_tensor(cutlass.Float32, cute.make_layout((W, BN), stride=(BN, 1)), 16)
        sY = smem.allocate_tensor(cutlass.Float32, cute.make_layout((W, BN), stride=(BN, 1)), 16)

        # ----- 0. the first strip and T by cp.async; V's planes (the trapezoid, split) -----
        self._load_strip(mH, cute.make_tensor(buffers.iterator, strip_layout), base, c, m, chunks, col_lo, col_hi,
                         tidx)
        for e in cutlass.range(tidx, W * W // 4, self.threads):
            _copy_async_16(sT.iterator + 4 * e, mT.iterator + cutlass.Int64(b) * W * W + 4 * e, True)
        for e in cutlass.range(tidx, 16 * chunks * (W // 2), self.threads, unroll=4):
            r = e // (W // 2)
            p = e % (W // 2)
            x0 = cutlass.Float32(0.0)
            x1 = cutlass.Float32(0.0)
            if r < m:
                x0 = mH[b, c + r, c + 2 * p]
                x1 = mH[b, c + r, c + 2 * p + 1]
            if 2 * p >= r:
                x0 = cutlass.Float32(0.0)
            if 2 * p == r:
                x0 = cutlass.Float32(1.0)
            if 2 * p + 1 >= r:
                x1 = cutlass.Float32(0.0)
            if 2 * p + 1 == r:
                x1 = cutlass.Float32(1.0)
            split = _bf16_split2(x0, x1)
            word = plane_word(r, p // 4, W) + p % 4
            sHi[word] = split[0]
            sLo[word] = split[1]

        for s in cutlass.range(strips, unroll=1):
            j0 = col_lo + s * BN
            # ----- 1. strip s is in; strip s + 1 starts loading into the other buffer -----
            _copy_async_wait()
            cute.arch.sync_threads()
            sC = cute.make_tensor(buffers.iterator + (s % 2) * self.rows * self.ld, strip_layout)
            if s + 1 < strips:
                sNext = cute.make_tensor(buffers.iterator + (1 - s % 2) * self.rows * self.ld, strip_layout)
                self._load_strip(mH, sNext, base, c, m, chunks, j0 + BN, col_hi, tidx)
            strip = (mH, base, c, m, j0, col_hi)        # where the strip goes back
            self._update(sC, sHi, sLo, sT, sP, sY, strip, chunks, tidx, warp, lane)
            if cutlass.const_expr(not self.direct_store):
                self._store(sC, strip, tidx)
            cute.arch.sync_threads()        # the buffer's reads done before the load two strips on

    @cute.jit
    def _load_strip(self, mH, sC, base, c, m, chunks, j0, col_hi, tidx):
        """cp.async of C's rows [0, 16 chunks) and columns [j0, j0 + BN): zeros past m rows or col_hi."""
        Q = self.block_n // 4
        width = cutlass.min(self.block_n, col_hi - j0)
        for e in cutlass.range(tidx, 16 * chunks * Q, self.threads, unroll=4):
            r = e // Q
            k = 4 * (e % Q)
            src = base + cutlass.Int64(c + cutlass.min(r, m - 1)) * mH.shape[1] + j0 + cutlass.min(k, width - 4)
            _copy_async_16(sC.iterator + r * self.ld + k, mH.iterator + src, r < m and k < width)

    @cute.jit
    def _update(self, sC, sHi, sLo, sT, sP, sY, strip, chunks, tidx, warp, lane):
        if cutlass.const_expr(2 in self.phases):
            self._project(sC, sHi, sLo, sP, chunks, warp, lane)
        if cutlass.const_expr(3 in self.phases):
            self._reflect(sT, sP, sY, tidx)
        if cutlass.const_expr(4 in self.phases):
            self._apply(sC, sHi, sLo, sY, strip, chunks, warp, lane)
        cute.arch.sync_threads()

    @cute.jit
    def _project(self, sC, sHi, sLo, sP, chunks, warp, lane):
        """2. P := V^T C, warp (share, mt, nt) summing tile (mt, nt) over the chunks share, share + shares,
        ...; share 0 writes its sums, share 1 adds its own after a barrier"""
        NT = self.block_n // 8
        group = lane // 4
        pair = lane % 4
        tile = warp % self.tiles
        share = warp // self.tiles
        mt = tile // NT
        nt = tile % NT
        # acc[3 u + p]: product p of the chunks of parity u in the warp's share (independent mma chains)
        acc = [[cutlass.Float32(0.0)] * 4 for _ in range(2 * len(PRODUCTS))]
        # lane i addresses row i % 8 + 8 (i // 16) of the chunk, 16-byte chunk 2 mt + (i // 8) % 2 of V's row
        v_row = lane % 8 + 8 * (lane // 16)
        v_chunk = 2 * mt + (lane // 8) % 2
        for q0 in cutlass.range(16 * share, 16 * chunks, 32 * self.shares, unroll=1):
            for u in cutlass.range_constexpr(2):
                q = q0 + 16 * self.shares * u
                word = plane_word(q + v_row, v_chunk, self.width)
                v = (_ldmatrix_x4((sHi.iterator + word).toint(), True),
                     _ldmatrix_x4((sLo.iterator + word).toint(), True))
                x = [[None] * 2 for _ in range(2)]      # x[k][half]: split k of C at rows q + 2t + 8 half + (0, 1)
                for half in cutlass.range_constexpr(2):
                    row = q + 2 * pair + 8 * half
                    split = _bf16_split2(sC[row, 8 * nt + group], sC[row + 1, 8 * nt + group])
                    for k in cutlass.range_constexpr(2):
                        x[k][half] = split[k]
                for p in cutlass.range_constexpr(len(PRODUCTS)):
                    ka, kb = PRODUCTS[p]
                    acc[3 * u + p] = _mma_16816(v[ka], x[kb], acc[3 * u + p])
        for p in cutlass.range_constexpr(len(PRODUCTS)):
            for e in cutlass.range_constexpr(4):
                acc[p][e] = acc[p][e] + acc[3 + p][e]
        for s in cutlass.range_constexpr(self.shares):
            if share == s:
                for e in cutlass.range_constexpr(4):
                    i = 16 * mt + group + 8 * (e // 2)
                    j = 8 * nt + 2 * pair + e % 2
                    total = (acc[0][e] + acc[1][e]) + acc[2][e]
                    if cutlass.const_expr(s == 0):
                        sP[i, j] = total
                    else:
                        sP[i, j] = sP[i, j] + total
            cute.arch.sync_threads()

    @cute.jit
    def _reflect(self, sT, sP, sY, tidx):
        """3. Y := T^T P, float32, thread e the rows R (e // BN) .. + R of column e % BN (R = W BN / threads)"""
        W = self.width
        BN = self.block_n
        R = W * BN // self.threads
        j = tidx % BN
        i0 = R * (tidx // BN)
        y = [cutlass.Float32(0.0)] * R
        for l in cutlass.range_constexpr(W):
            p = sP[l, j]
            for d in cutlass.range_constexpr(R):
                y[d] = y[d] + sT[l, i0 + d] * p
        for d in cutlass.range_constexpr(R):
            sY[i0 + d, j] = y[d]
        cute.arch.sync_threads()

    @cute.jit
    def _apply(self, sC, sHi, sLo, sY, strip, chunks, warp, lane):
        """4. C -= V Y on 16-row chunks warp, warp + warps, ..., Y's fragments split once by every warp; into
        the buffer, or with `direct_store` to H (rows under m, columns under the strip's width)"""
        NT = self.block_n // 8
        KS = self.width // 16
        warps = self.threads // WARP
        group = lane // 4
        pair = lane % 4
        # y[k][ks][nt]: split k of Y at rows 16 ks + 2t + 8 half + (0, 1) (half 0, 1), column 8 nt + g
        y = [[[None] * NT for _ in range(KS)] for _ in range(2)]
        for ks in cutlass.range_constexpr(KS):
            for nt in cutlass.range_constexpr(NT):
                halves = [None, None]
                for half in cutlass.range_constexpr(2):
                    i = 16 * ks + 2 * pair + 8 * half
                    halves[half] = _bf16_split2(sY[i, 8 * nt + group], sY[i + 1, 8 * nt + group])
                for k in cutlass.range_constexpr(2):
                    y[k][ks][nt] = [halves[0][k], halves[1][k]]
        # lane i addresses row i % 8 + 8 ((i // 8) % 2) of the chunk, 16-byte chunk 2 ks + i // 16 of V's row
        v_row = lane % 8 + 8 * ((lane // 8) % 2)
        for q in cutlass.range(16 * warp, 16 * chunks, 16 * warps, unroll=1):
            v = [[None] * KS, [None] * KS]          # v[k][ks]
            for ks in cutlass.range_constexpr(KS):
                word = plane_word(q + v_row, 2 * ks + lane // 16, self.width)
                v[0][ks] = _ldmatrix_x4((sHi.iterator + word).toint(), False)
                v[1][ks] = _ldmatrix_x4((sLo.iterator + word).toint(), False)
            # the n-tiles' chains interleaved: consecutive mma do not wait on each other
            acc = [[cutlass.Float32(0.0)] * 4 for _ in range(NT)]
            for ks in cutlass.range_constexpr(KS):
                for p in cutlass.range_constexpr(len(PRODUCTS)):
                    ka, kb = PRODUCTS[p]
                    for nt in cutlass.range_constexpr(NT):
                        acc[nt] = _mma_16816(v[ka][ks], y[kb][ks][nt], acc[nt])
            for nt in cutlass.range_constexpr(NT):
                if cutlass.const_expr(self.direct_store):
                    mH, base, c, m, j0, col_hi = strip
                    width = cutlass.min(self.block_n, col_hi - j0)
                    for half in cutlass.range_constexpr(2):
                        r = q + group + 8 * half
                        j = 8 * nt + 2 * pair
                        x = [sC[r, j] - acc[nt][2 * half], sC[r, j + 1] - acc[nt][2 * half + 1]]
                        if r < m and j < width:
                            offset = base + cutlass.Int64(c + r) * mH.shape[1] + j0 + j
                            _store_global(mH.iterator.toint() + 4 * offset, x)
                else:
                    for e in cutlass.range_constexpr(4):
                        r = q + group + 8 * (e // 2)
                        j = 8 * nt + 2 * pair + e % 2
                        sC[r, j] = sC[r, j] - acc[nt][e]

    @cute.jit
    def _store(self, sC, strip, tidx):
        """5. the strip back, 16 bytes a store (after `_update`'s last barrier)"""
        mH, base, c, m, j0, col_hi = strip
        Q = self.block_n // 4
        width = cutlass.min(self.block_n, col_hi - j0)
        for e in cutlass.range(tidx, m * Q, self.threads, unroll=4):
            r = e // Q
            k = 4 * (e % Q)
            if k < width:
                address = mH.iterator.toint() + 4 * (base + cutlass.Int64(c + r) * mH.shape[1] + j0 + k)
                _store_global(address, [sC[r, k], sC[r, k + 1], sC[r, k + 2], sC[r, k + 3]])


_COMPILED = {}


def streamed_update(h, t, n, c, threads, block_n, phases=(2, 3, 4), direct_store=False):
    """Update columns [c + W, n) of every matrix of h by the panel at c (V from h, T = t, W x W)."""
    width = t.shape[-1]
    rows = triton.cdiv(n, 64) * 64
    key = (rows, width, threads, block_n, phases, direct_store)
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    args = (submission._cute_tensor(h), submission._cute_tensor(t), cutlass.Int32(c), cutlass.Int32(c + width),
            cutlass.Int32(n))
    if key not in _COMPILED:
        _COMPILED[key] = cute.compile(StreamedStrips(rows, width, block_n, threads, phases, direct_store),
                                      *args, stream)
    _COMPILED[key](*args, stream)


def case_arguments(doc: str, widths: str, columns: str, phases: str) -> argparse.ArgumentParser:
    """A parser of the arguments `update_cases` reads (--shapes, --reps, --widths, --columns) and --phases
    (`phase_sets`), with these defaults; its description is doc's first paragraph."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--shapes", default="640x512")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--widths", default=widths, help="panel widths W: 32, or a pair's 64")
    parser.add_argument("--columns", default=columns, help="panel columns c")
    parser.add_argument("--phases", default=phases, help="phase sets to time (2, 3, 4: the phases), '-': the copy")
    return parser


def phase_sets(text: str) -> list[tuple]:
    """'234,23,-' -> [(2, 3, 4), (2, 3), ()]."""
    return [tuple(int(d) for d in part if d != "-") for part in text.split(",")]


def update_cases(args):
    """For each shape of args.shapes (random h), panel width of args.widths (random upper T) and column of
    args.columns: print the case, yield (h, t, n, c, configurations) with configurations holding main's
    fused update first for the caller to extend, then time them all (`time_configurations`, args.reps);
    exits with status 1 at a configuration that fails to launch (the context may be lost)."""
    device = torch.device("cuda")
    print(f"{torch.cuda.get_device_name()}; median of {args.reps}", flush=True)
    for batch, n, pristine, h in random_batches(args.shapes, device):
        for width in map(int, args.widths.split(",")):
            t = (0.1 * torch.randn(batch, width, width, device=device)).triu().contiguous()
            for c in map(int, args.columns.split(",")):
                print(f"--- {batch}x{n}, W {width}, c = {c}, columns [{c + width}, {n})", flush=True)
                configurations = [("main fused", lambda c=c, t=t: main_update(h, t, n, c))]
                yield h, t, n, c, configurations
                if not time_configurations(configurations, h, pristine, args.reps, device):
                    sys.exit(1)


def main(argv: list[str]) -> int:
    parser = case_arguments(__doc__, "32,64", "0", "234,23,-")
    parser.add_argument("--threads", default="256,512")
    parser.add_argument("--block-n", default="32,16,8", help="strip widths (those that fit shared memory)")
    args = parser.parse_args(argv)
    for h, t, n, c, configurations in update_cases(args):
        width = t.shape[-1]
        for block_n in map(int, args.block_n.split(",")):
            for threads in map(int, args.threads.split(",")):
                try:
                    StreamedStrips(triton.cdiv(n, 64) * 64, width, block_n, threads)
                except AssertionError:      # no such tiling, or too much shared memory
                    continue
                for phases in phase_sets(args.phases):
                    for direct in (False, True) if 4 in phases else (False,):
                        configurations.append((
                            f"streamed BN {block_n} threads {threads} phases "
                            f"{''.join(map(str, phases)) or '-'}{' direct' if direct else ''}",
                            lambda a=(c, threads, block_n, phases, direct), t=t: streamed_update(h, t, n, *a)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
