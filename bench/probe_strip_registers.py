"""A trailing update by one CTA a matrix that holds each column strip in registers, reading C once (CuTe, GPU).

    python bench/probe_strip_registers.py [--shapes 640x512] [--widths 64,32] [--columns 0,128,256]
        [--phases 234,-] [--strips 32:1:0,...] [--reps 7]

`probe_strip_stream.py` streams a matrix's strips through shared memory next
to V's bf16 planes; at W 64 the planes (128 KB at 512 rows) leave room for
8-column strips only, and it lost (1198 against 541 us at 640x512, c 0). Here
the strips live in registers and shared memory holds V's planes, the
projection's partial sums and T. CTA b updates C = H[b, c:n, c + W:n] by the
panel at c (V: m x W, m = n - c, unit lower trapezoid; T: W x W upper) in
strips of BN columns (32 or 16); warp w owns the 16-row chunks w, w + 8, ... of
every strip, and a lane holds, for each of its chunks q and tiles t < NT =
BN / 8, the four entries

    C[16 q + 8 h + 2 (lane % 4) + i, NT (lane / 4) + t],   h, i in {0, 1},

which are at once the B fragment of mma's m16n8k16 for P = V^T C (k = row;
tile t's eight columns are t, NT + t, ..., so a lane's NT tiles are NT
adjacent columns, one vector load) and the accumulator fragment for
C^T -= Z^T V^T (Z = T^T P, Z^T's rows stored in the matching order), so that
the strip is loaded once, updated in place and stored from the registers:

1. the loads of the strip `ahead` strips on are issued while strip s is
   worked on (with `fence`, followed by a barrier, as ptxas otherwise sinks
   them into phase 2);
2. P = V^T C: each warp sums its chunks' 3xBF16 products (V's planes by
   `ldmatrix.trans`) in registers and writes its W x BN partial sums to
   shared memory; the eight partial sums are added in a fixed order (the
   same bits every run);
3. -Z^T = -P^T T on tensor cores (3xBF16), warp (ct, ks) a 16 x 16 tile,
   into two bf16 planes;
4. C^T -= Z^T V^T on tensor cores into the strip's registers (V's planes by
   `ldmatrix`), then the strip is stored from them (vector stores).

Shared memory at 512 rows, W 64, BN 32: V's planes 128 KB, the partial sums
64 KB, T 16 KB, Z^T's planes 8 KB. One CTA an SM (256 threads, up to 255
registers). `phases` (timing only) skips phases 2-4 ('-': the copy through
the registers). Each configuration is checked against main's fused update on
the same input and timed alone (h restored, L2 flushed, events, queued
behind a GPU sleep; the median of `reps`). bench/NOTES.md (fifty-sixth
session) has the builds' figures.
"""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["QR_SKIP_PRECOMPILE"] = "1"

import torch  # noqa: E402
import triton  # noqa: E402

import submission  # noqa: E402
from probe_strip import PRODUCTS, _bf16_split2, _copy_async_16, _copy_async_wait  # noqa: E402
from probe_strip_stream import (_ldmatrix_x4, _store_global, case_arguments, phase_sets,  # noqa: E402
                                plane_word, update_cases)
from submission import WARP, _mma_16816, cute, cutlass, cuda, SmemAllocator  # noqa: E402
from submission import dsl_user_op, llvm  # noqa: E402

THREADS = 256           # eight warps
WARPS = THREADS // WARP


@dsl_user_op
def _load_global(address, valid, count: int, *, loc=None, ip=None):
    """`count` (2 or 4) floats from global memory at `address` (a 64-bit address aligned to their size) by one
    vector load, or zeros if not `valid` (nothing read)."""
    f32 = cutlass.Float32.mlir_type
    outputs = ", ".join(f"${k}" for k in range(count))
    zeros = " ".join(f"mov.b32 ${k}, 0;" for k in range(count))
    result = llvm.inline_asm(
        llvm.StructType.get_literal([f32] * count),
        [cutlass.Int64(address).ir_value(loc=loc, ip=ip), cutlass.Int32(valid).ir_value(loc=loc, ip=ip)],
        f"{{ .reg .pred p; setp.ne.s32 p, ${count + 1}, 0; {zeros} "
        f"@p ld.global.v{count}.f32 {{{outputs}}}, [${count}]; }}",
        "=&f," * count + "l,r", has_side_effects=True, asm_dialect=0, loc=loc, ip=ip)
    return [cutlass.Float32(llvm.extractvalue(f32, result, [k], loc=loc, ip=ip)) for k in range(count)]


class RegisterStrips:
    """C := C - V T^T V^T C, C = H[b, c:n, col_lo:col_hi], one CTA a matrix b, strips of `block_n` columns in
    turn, each in registers, `ahead` strips' loads in flight meanwhile. `rows` bounds m = n - c, a multiple of
    16 WARPS; c and col_hi - col_lo multiples of 4."""

    def __init__(self, rows: int, width: int, block_n: int = 32, ahead: int = 1, fence: bool = False,
                 phases: tuple = (2, 3, 4)):
        assert width in (32, 64) and block_n in (16, 32) and ahead in (1, 2) and rows % (16 * WARPS) == 0
        self.rows = rows
        self.width = width
        self.block_n = block_n
        self.nt = block_n // 8      # 8-column tiles of a strip (P's n-tiles): a lane's consecutive columns
        self.ct = block_n // 16     # 16-column tiles of a strip (the apply's m-tiles)
        self.ahead = ahead          # strips loaded ahead of the one worked on
        # a barrier right after a strip's loads, so that ptxas issues them before phase 2 instead of sinking
        # them into it
        self.fence = fence
        self.chunks = rows // (16 * WARPS)      # 16-row chunks a warp
        self.phases = phases

    @cute.jit
    def __call__(self, mH: cute.Tensor, mT: cute.Tensor, c: cutlass.Int32, col_lo: cutlass.Int32,
                 col_hi: cutlass.Int32, stream: cuda.CUstream):
        self.kernel(mH, mT, c, col_lo, col_hi).launch(grid=(mH.shape[0], 1, 1), block=(THREADS, 1, 1), stream=stream)

    @cute.jit
    def _load(self, mH, b, c, m, j0, col_hi, warp, lane):
        """The strip's entries this lane holds, C[16 (warp + WARPS q) + 8 h + 2 (lane % 4) + i, j0 + NT (lane / 4) + t]
        at index (q NT + t) 4 + 2 h + i of a flat list, NT = block_n / 8 (tile t of the fragments holds the
        columns t, NT + t, 2 NT + t, ...: a lane's NT tiles are NT consecutive columns, one vector load); zero
        past m rows or col_hi."""
        n = mH.shape[1]
        col = j0 + self.nt * (lane // 4)
        x = [cutlass.Float32(0.0)] * (self.chunks * self.nt * 4)
        for q in cutlass.range_constexpr(self.chunks):
            for h in cutlass.range_constexpr(2):
                for i in cutlass.range_constexpr(2):
                    r = 16 * (warp + WARPS * q) + 8 * h + 2 * (lane % 4) + i
                    offset = (cutlass.Int64(b) * n + c + cutlass.min(r, m - 1)) * n + cutlass.min(col, n - self.nt)
                    values = _load_global(mH.iterator.toint() + 4 * offset, r < m and col < col_hi, self.nt)
                    for t in cutlass.range_constexpr(self.nt):
                        x[(q * self.nt + t) * 4 + 2 * h + i] = values[t]
        return x

    @cute.jit
    def _store(self, mH, x, b, c, m, j0, col_hi, warp, lane):
        """The strip's entries this lane holds (`_load`'s order) back to H, rows under m, columns under col_hi."""
        n = mH.shape[1]
        col = j0 + self.nt * (lane // 4)
        for q in cutlass.range_constexpr(self.chunks):
            for h in cutlass.range_constexpr(2):
                for i in cutlass.range_constexpr(2):
                    r = 16 * (warp + WARPS * q) + 8 * h + 2 * (lane % 4) + i
                    if r < m and col < col_hi:
                        offset = (cutlass.Int64(b) * n + c + r) * n + col
                        _store_global(mH.iterator.toint() + 4 * offset,
                                      [x[(q * self.nt + t) * 4 + 2 * h + i] for t in range(self.nt)])

    @cute.kernel
    def kernel(self, mH: cute.Tensor, mT: cute.Tensor, c: cutlass.Int32, col_lo: cutlass.Int32,
               col_hi: cutlass.Int32):
        W = self.width
        n = mH.shape[1]
        tidx, _, _ = cute.arch.thread_idx()
        lane = tidx % WARP
        warp = tidx // WARP
        b, _, _ = cute.arch.block_idx()
        m = n - c
        strips = (col_hi - col_lo + self.block_n - 1) // self.block_n

        smem = SmemAllocator()
        plane = cute.make_layout((self.rows * W // 2,), stride=(1,))
        sHi = smem.allocate_tensor(cutlass.Int32, plane, 128)
        sLo = smem.allocate_tensor(cutlass.Int32, plane, 128)
        part = cute.make_layout((WARPS, W, self.block_n), stride=(W * self.block_n, self.block_n, 1))
        sPart = smem.allocate_tensor(cutlass.Float32, part, 16)
        sT = smem.allocate_tensor(cutlass.Float32, cute.make_layout((W, W), stride=(W, 1)), 16)
        z_plane = cute.make_layout(self.block_n * W // 2)
        sZHi = smem.allocate_tensor(cutlass.Int32, z_plane, 128)
        sZLo = smem.allocate_tensor(cutlass.Int32, z_plane, 128)

        # ----- 0. the first strip's loads; T by cp.async; V's planes (the trapezoid, split) -----
        x = self._load(mH, b, c, m, col_lo, col_hi, warp, lane)
        for e in cutlass.range(tidx, W * W // 4, THREADS):
            _copy_async_16(sT.iterator + 4 * e, mT.iterator + cutlass.Int64(b) * W * W + 4 * e, True)
        for e in cutlass.range(tidx, self.rows * (W // 4), THREADS, unroll=8):
            r = e // (W // 4)
            col = 4 * (e % (W // 4))
            offset = (cutlass.Int64(b) * n + c + cutlass.min(r, m - 1)) * n + c + col
            values = _load_global(mH.iterator.toint() + 4 * offset, r < m, 4)
            for k in cutlass.range_constexpr(4):
                if col + k >= r:
                    values[k] = cutlass.Float32(0.0)
                if col + k == r:
                    values[k] = cutlass.Float32(1.0)
            word = plane_word(r, col // 8, W) + col % 8 // 2
            for k in cutlass.range_constexpr(2):
                split = _bf16_split2(values[2 * k], values[2 * k + 1])
                sHi[word + k] = split[0]
                sLo[word + k] = split[1]
        _copy_async_wait()
        cute.arch.sync_threads()

        if cutlass.const_expr(self.ahead == 2):
            x_next = self._load(mH, b, c, m, col_lo + self.block_n, col_hi, warp, lane)
        for s in cutlass.range(strips, unroll=1):
            j0 = col_lo + s * self.block_n
            # ----- 1. the loads of strip s + ahead in flight while strip s is worked on -----
            x_ahead = self._load(mH, b, c, m, j0 + self.ahead * self.block_n, col_hi, warp, lane)
            if cutlass.const_expr(self.fence):
                cute.arch.sync_threads()
            if cutlass.const_expr(2 in self.phases):
                self._project(x, sHi, sLo, sPart, warp, lane)
                cute.arch.sync_threads()
            if cutlass.const_expr(3 in self.phases):
                self._reflect(sPart, sT, sZHi, sZLo, tidx, warp, lane)
            if cutlass.const_expr(4 in self.phases):
                x = self._apply(x, sHi, sLo, sZHi, sZLo, warp, lane)
            self._store(mH, x, b, c, m, j0, col_hi, warp, lane)
            if cutlass.const_expr(self.ahead == 2):
                x = x_next
                x_next = x_ahead
            else:
                x = x_ahead

    @cute.jit
    def _project(self, x, sHi, sLo, sPart, warp, lane):
        """2. sPart[warp] := V^T C over the warp's chunks, W x block_n, in halves of 32 rows of P (the accumulators
        of a half: 2 m-tiles x NT n-tiles)"""
        W = self.width
        group = lane // 4
        pair = lane % 4
        # lane i addresses row i % 8 + 8 (i // 16) of the chunk, 16-byte chunk 2 mt + (i // 8) % 2 of V's row
        v_row = lane % 8 + 8 * (lane // 16)
        for half in cutlass.range_constexpr(W // 32):
            acc = [[cutlass.Float32(0.0)] * 4 for _ in range(2 * self.nt)]
            for q in cutlass.range_constexpr(self.chunks):
                row0 = 16 * (warp + WARPS * q)
                xs = [[None] * self.nt for _ in range(2)]        # xs[k][t]: split k of C's B fragment of tile t
                for t in cutlass.range_constexpr(self.nt):
                    e = (q * self.nt + t) * 4
                    b0 = _bf16_split2(x[e], x[e + 1])         # rows 2 (lane % 4) + 0, 1
                    b1 = _bf16_split2(x[e + 2], x[e + 3])     # and 8 below
                    for k in cutlass.range_constexpr(2):
                        xs[k][t] = [b0[k], b1[k]]
                for u in cutlass.range_constexpr(2):
                    mt = 2 * half + u
                    word = plane_word(row0 + v_row, 2 * mt + (lane // 8) % 2, W)
                    v = (_ldmatrix_x4((sHi.iterator + word).toint(), True),
                         _ldmatrix_x4((sLo.iterator + word).toint(), True))
                    for p in cutlass.range_constexpr(len(PRODUCTS)):
                        ka, kb = PRODUCTS[p]
                        for t in cutlass.range_constexpr(self.nt):
                            acc[u * self.nt + t] = _mma_16816(v[ka], xs[kb][t], acc[u * self.nt + t])
            for u in cutlass.range_constexpr(2):
                for t in cutlass.range_constexpr(self.nt):
                    for e in cutlass.range_constexpr(4):
                        sPart[warp, 16 * (2 * half + u) + group + 8 * (e // 2), self.nt * (2 * pair + e % 2) + t] = \
                            acc[u * self.nt + t][e]

    @cute.jit
    def _reflect(self, sPart, sT, sZHi, sZLo, tidx, warp, lane):
        """3. P := the partial sums added in warp order (into sPart[0], thread e the R = W block_n / THREADS entries
        from e R); then warp (ct, ks) forms the 16 x 16 tile (ct, ks) of -Z^T = -P^T T on tensor cores
        (3xBF16, T upper: the k-steps up to ks) with its rows in `_apply`'s column order, into Z^T's planes"""
        W = self.width
        R = W * self.block_n // THREADS
        i = tidx * R // self.block_n
        j = tidx * R % self.block_n
        for e in cutlass.range_constexpr(R):
            total = sPart[0, i, j + e]
            for w in cutlass.range_constexpr(1, WARPS):
                total = total + sPart[w, i, j + e]
            sPart[0, i, j + e] = total
        cute.arch.sync_threads()
        group = lane // 4
        pair = lane % 4
        KS = W // 16
        if warp < self.ct * KS:
            ct = warp // KS
            ks = warp % KS
            # row m of the tile is strip column NT (m % 8) + 2 ct + m // 8
            cols = (self.nt * group + 2 * ct, self.nt * group + 2 * ct + 1)
            acc = [[cutlass.Float32(0.0)] * 4 for _ in range(2)]
            for kl in cutlass.range(ks + 1, unroll=1):
                a = [[None] * 4 for _ in range(2)]      # a[k]: split k of -P^T's A fragment (k = l)
                for r in cutlass.range_constexpr(4):        # a0..a3: (m half r % 2, k half r // 2)
                    l = 16 * kl + 8 * (r // 2) + 2 * pair
                    split = _bf16_split2(-sPart[0, l, cols[r % 2]], -sPart[0, l + 1, cols[r % 2]])
                    for k in cutlass.range_constexpr(2):
                        a[k][r] = split[k]
                for nt in cutlass.range_constexpr(2):
                    b = [[None] * 2 for _ in range(2)]      # b[k][half]: T[16 kl + 2 pair + 8 half + (0, 1), i]
                    for half in cutlass.range_constexpr(2):
                        l = 16 * kl + 8 * half + 2 * pair
                        col = 16 * ks + 8 * nt + group
                        split = _bf16_split2(sT[l, col], sT[l + 1, col])
                        for k in cutlass.range_constexpr(2):
                            b[k][half] = split[k]
                    for p in cutlass.range_constexpr(len(PRODUCTS)):
                        ka, kb = PRODUCTS[p]
                        acc[nt] = _mma_16816(a[ka], b[kb], acc[nt])
            for nt in cutlass.range_constexpr(2):
                for half in cutlass.range_constexpr(2):
                    split = _bf16_split2(acc[nt][2 * half], acc[nt][2 * half + 1])
                    word = plane_word(16 * ct + group + 8 * half, 2 * ks + nt, W) + pair
                    sZHi[word] = split[0]
                    sZLo[word] = split[1]
        cute.arch.sync_threads()

    @cute.jit
    def _apply(self, x, sHi, sLo, sZHi, sZLo, warp, lane):
        """4. C^T += Z^T V^T (Z^T = -Y^T) into the strip's registers: m-tile ct (columns 16 ct ..), k-step ks (V's
        columns 16 ks ..), n-tiles of 8 rows"""
        W = self.width
        x = list(x)
        # A (Z^T, row-major, rows of W): lane i addresses row 16 ct + i % 8 + 8 ((i // 8) % 2), chunk 2 ks + i // 16
        z_row = lane % 8 + 8 * ((lane // 8) % 2)
        # B (V^T: V's rows, row-major): lane i addresses row q + i % 8 + 8 (i // 16), chunk 2 ks + (i // 8) % 2, so
        # that registers 0, 1 are the rows q .. q + 7 n-tile's b0, b1 and registers 2, 3 those of rows q + 8 ..
        v_row = lane % 8 + 8 * (lane // 16)
        for ct in cutlass.range_constexpr(self.ct):
            for ks in cutlass.range_constexpr(W // 16):
                word = plane_word(16 * ct + z_row, 2 * ks + lane // 16, W)
                z = (_ldmatrix_x4((sZHi.iterator + word).toint(), False),
                     _ldmatrix_x4((sZLo.iterator + word).toint(), False))
                for q in cutlass.range_constexpr(self.chunks):
                    row0 = 16 * (warp + WARPS * q)
                    word = plane_word(row0 + v_row, 2 * ks + (lane // 8) % 2, W)
                    v = (_ldmatrix_x4((sHi.iterator + word).toint(), False),
                         _ldmatrix_x4((sLo.iterator + word).toint(), False))
                    for h in cutlass.range_constexpr(2):
                        # accumulator of (columns NT g + 2 ct, then + 1; rows row0 + 8 h ..): tiles 2 ct, 2 ct + 1
                        e0 = (q * self.nt + 2 * ct) * 4 + 2 * h
                        e1 = (q * self.nt + 2 * ct + 1) * 4 + 2 * h
                        acc = [x[e0], x[e0 + 1], x[e1], x[e1 + 1]]
                        for p in cutlass.range_constexpr(len(PRODUCTS)):
                            ka, kb = PRODUCTS[p]
                            acc = _mma_16816(z[ka], [v[kb][2 * h], v[kb][2 * h + 1]], acc)
                        x[e0], x[e0 + 1], x[e1], x[e1 + 1] = acc[0], acc[1], acc[2], acc[3]
        return x


_COMPILED = {}


def register_update(h, t, n, c, block_n=32, ahead=1, fence=False, phases=(2, 3, 4)):
    """Update columns [c + W, n) of every matrix of h by the panel at c (V from h, T = t, W x W)."""
    width = t.shape[-1]
    rows = triton.cdiv(n - c, 16 * WARPS) * 16 * WARPS
    key = (rows, width, block_n, ahead, fence, phases)
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream) if h.is_cuda else cuda.CUstream(0)
    args = (submission._cute_tensor(h), submission._cute_tensor(t), cutlass.Int32(c), cutlass.Int32(c + width),
            cutlass.Int32(n))
    if key not in _COMPILED:
        _COMPILED[key] = cute.compile(RegisterStrips(rows, width, block_n, ahead, fence, phases), *args, stream)
    _COMPILED[key](*args, stream)


def main(argv: list[str]) -> int:
    parser = case_arguments(__doc__, "64,32", "0,128,256", "234,-")
    parser.add_argument("--strips", default="32:1:0", help="block_n:ahead:fence (0 or 1), comma-separated")
    args = parser.parse_args(argv)
    for h, t, n, c, configurations in update_cases(args):
        for strip in args.strips.split(","):
            block_n, ahead, fence = map(int, strip.split(":"))
            for phases in phase_sets(args.phases):
                configurations.append((
                    f"registers BN {block_n} ahead {ahead} fence {fence} phases {''.join(map(str, phases)) or '-'}",
                    lambda c=c, t=t, a=(block_n, ahead, bool(fence), phases): register_update(h, t, n, c, *a)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
