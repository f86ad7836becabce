"""A panel factored without per-column exchanges: CholeskyQR2 and Householder reconstruction (GPU probe).

    python bench/probe_cholqr_panel.py [--shapes 2x4096,8x2048,60x1024,640x512] [--columns 0,half] [--stamps]

For each shape's blocked plan, the panel at each column c (`half`: n / 2 rounded to a panel) is
factored by `CholeskyPanel` and by the plan's `HouseholderPanel` from the same input, and the probe
prints the largest differences of R, V, tau and T between the two (scaled by the panel's largest
entry, or by 1 for V, tau and T) and each kernel's time (one launch queued behind a GPU sleep, median
of 15: `probe_panel.launch_us`). In exact arithmetic both give geqrf's reflectors, so the differences
are rounding, amplified by the panel's condition number.

`CholeskyPanel` (one CTA or a cluster a matrix, rows split as HouseholderPanel splits them, a thread a
row at a time):
    scale    every column by a power of two, 2^-e for its largest |entry| in [2^e, 2^(e+1))
    twice    G = A^T A over the CTA's rows on tensor cores (3xBF16), summed over the cluster in rank
             order; R_k = chol(G) by one warp (a lane a column, shuffles); A := A R_k^-1 a row a thread
    check    the second G within PROBE_ORTH_LIMIT of I (largest row sum of |G - I|), every pivot
             positive, every column's largest entry a normal float below 2^126; else the matrix's
             panel would take HouseholderPanel's path (the probe only flags it: its slot
             SLOT_SCALED of rank 0 holds 0 instead of 1)
    rebuild  rank 0's warp 0: LU without pivoting of Q's top W rows minus S, S_i = -sign of the i-th
             pivot (Ballard et al., "Reconstructing Householder vectors from Tall-Skinny QR"):
             L (V's top rows), U and S through the cluster scratch; V = Q U^-1 on every other row;
             tau_i = -S_i U_ii; R = S R_2 R_1 D^-1 into the top rows above the diagonal
    then     HouseholderPanel's write-back and T formation (larft from V and tau)
`bench/emulate_tsqr_panel.py --panel cholqr2` models this in float32 on the CPU, held to the
checker.
"""
import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import submission  # noqa: E402
from submission import WARP, cutlass, cute  # noqa: E402
from probe_panel import launch_us  # noqa: E402

PROBE_ORTH_LIMIT = 0.5
# the probe's own scratch slots, after HouseholderPanel's: the two Grams' parts and rank 0's M = U R2
SLOT_G1 = submission.scratch_slots(submission.PANEL_WIDTH)
SLOT_G2 = SLOT_G1 + submission.PANEL_WIDTH ** 2
SLOT_M = SLOT_G2 + submission.PANEL_WIDTH ** 2
SLOT_STAMPS = SLOT_M + submission.PANEL_WIDTH ** 2
STAMPS = ("staged", "gram 1", "chol 1", "solve 1", "gram 2", "chol 2", "top rows", "rebuilt", "M shared",
          "V solved and T", "written back")
PROBE_SLOTS = SLOT_STAMPS + len(STAMPS)
# sVec's rows
VEC_INV1, VEC_INV2, VEC_INVM, VEC_SIGN, VEC_FLAG = range(5)
VEC_ROWS = 5
GRAM_RANGE = (2.0 ** -100, 2.0 ** 100)      # a column's |a|^2 that the first Cholesky takes (else: fall back)


class CholeskyPanel(submission.HouseholderPanel):
    """See the module docstring. Needs w = width (no narrow last panel) and W rows or more a CTA."""

    def __init__(self, rows: int, width: int, cluster: int, threads: int, stamps: bool = False):
        super().__init__(rows, width, cluster, threads, True, False)
        self.stamps = stamps

    @cute.jit
    def _stamp(self, mScratch, b, rank, tidx, clock0, slot: int):
        """With `stamps`, thread 0: cycles since clock0 into the stamp slot STAMPS[slot]."""
        if cutlass.const_expr(self.stamps):
            if tidx == 0:
                mScratch[b, rank, SLOT_STAMPS + slot] = cutlass.Float32(_clock32() - clock0)

    @cute.kernel
    def kernel(self, mA: cute.Tensor, mH: cute.Tensor, mTau: cute.Tensor,
               mT: cute.Tensor, mScratch: cute.Tensor, c: cutlass.Int32):
        W = self.width
        G = self.cluster
        NW = self.threads // WARP
        tidx, lane, warp, b, rank = self._position()
        clock0 = _clock32()
        n = mH.shape[1]
        w = cutlass.min(W, n - c)
        chunk = (n - c + G - 1) // G
        r0 = c + rank * chunk
        nloc = cutlass.max(cutlass.min(chunk, n - r0), 0)

        smem = submission.SmemAllocator()
        sP = smem.allocate_tensor(cutlass.Float32, cute.make_layout((self.ld, W)), 16)
        # triangles X[i, j] with column j contiguous and 16-byte aligned (vector loads in `_solve_rows`)
        padded = cute.make_layout((W, W), stride=(1, W + 4))
        sG = smem.allocate_tensor(cutlass.Float32, padded, 16)
        sR1 = smem.allocate_tensor(cutlass.Float32, padded, 16)
        sR2 = smem.allocate_tensor(cutlass.Float32, padded, 16)
        sU = smem.allocate_tensor(cutlass.Float32, padded, 16)
        sM = smem.allocate_tensor(cutlass.Float32, padded, 16)
        sRf = smem.allocate_tensor(cutlass.Float32, padded, 16)
        sL = smem.allocate_tensor(cutlass.Float32, cute.make_layout((W, W), stride=(W + 4, 1)), 16)   # rows contiguous
        sRow = smem.allocate_tensor(cutlass.Float32, cute.make_layout((W, 2), stride=(1, W)), 16)   # a warp's broadcasts
        sVec = smem.allocate_tensor(cutlass.Float32, cute.make_layout((VEC_ROWS, W)), 16)
        sParts = smem.allocate_tensor(cutlass.Float32, cute.make_layout(NW * W * (W + 1) // 2), 16)

        self._stage(mA, sP, b, r0, nloc, c, w, lane, warp)
        if tidx == 0:
            sVec[VEC_FLAG, 0] = cutlass.Float32(1.0)
        for p in cutlass.range(tidx, W * W, self.threads):
            sL[p // W, p % W] = cutlass.Float32(0.0)
        cute.arch.sync_threads()
        self._stamp(mScratch, b, rank, tidx, clock0, 0)

        # ----- CholeskyQR, twice: G = A^T A, R = chol(G) (the first on power-of-two column scales), A := A R^-1
        # (the second sweep's A R2^-1 only on Q's top rows, below) -----
        for sweep, slot, sR, inv_row in ((0, SLOT_G1, sR1, VEC_INV1), (1, SLOT_G2, sR2, VEC_INV2)):
            self._cluster_gram(sP, sG, sParts, mScratch, slot, b, rank, r0, nloc, c, tidx, lane, warp)
            self._stamp(mScratch, b, rank, tidx, clock0, 1 + 3 * sweep)
            if warp == 0:
                self._cholesky_warp(sG, sR, sRow, sVec, inv_row, lane, sweep == 0)
            cute.arch.sync_threads()
            self._stamp(mScratch, b, rank, tidx, clock0, 2 + 3 * sweep)
            if cutlass.const_expr(sweep == 0):
                self._solve_rows(sP, sR1, sVec, VEC_INV1, 0, nloc, tidx, self.threads)
                cute.arch.sync_threads()
                self._stamp(mScratch, b, rank, tidx, clock0, 3)
        ok = sVec[VEC_FLAG, 0] != 0.0
        if tidx == 0:
            if rank == 0:
                mScratch[b, 0, submission.SLOT_SCALED] = sVec[VEC_FLAG, 0]

        # ----- rank 0: Q's top rows, Q_top - S = L U, R = S R2 R1, M = U R2; V = Q1 M^-1 on every other row.
        # Rank 0's warp 0 forms T meanwhile (it arrives at M's cluster barrier before, waits after). -----
        if ok:
            if rank == 0:
                if lane < W // NW:                      # W // NW lanes of every warp: the chains side by side
                    self._solve_row(sP, sR2, sVec, VEC_INV2, warp * (W // NW) + lane)
                cute.arch.sync_threads()
                self._stamp(mScratch, b, rank, tidx, clock0, 6)
                if warp == 0:
                    self._rebuild_top(sP, sU, sL, sRow, sVec, mTau, b, c, lane)
                else:
                    self._product(sR2, sR1, sRf, tidx - WARP, self.threads - WARP)
                cute.arch.sync_threads()
                if warp == 0:
                    if cutlass.const_expr(G > 1):
                        cute.arch.cluster_arrive()
                    self._t_rows(sU, sL, sVec, mT, b, lane)
                else:
                    self._product(sU, sR2, sM, tidx - WARP, self.threads - WARP)
                    for p in cutlass.range(tidx - WARP, W * W, self.threads - WARP):   # R on and above the diagonal
                        i = p % W
                        j = p // W
                        if i <= j:
                            sP[i, j] = sVec[VEC_SIGN, i] * sRf[i, j]
                    cute.arch.barrier(barrier_id=1, number_of_threads=self.threads - WARP)
                    if cutlass.const_expr(G > 1):
                        for p in cutlass.range(tidx - WARP, W * W, self.threads - WARP):
                            mScratch[b, 0, SLOT_M + p] = sM[p % W, p // W]
                        cute.arch.cluster_arrive()
                    self._stamp(mScratch, b, rank, tidx - WARP, clock0, 7)
                    if tidx - WARP < W:
                        sVec[VEC_INVM, tidx - WARP] = cute.arch.rcp_approx(sM[tidx - WARP, tidx - WARP])
                    cute.arch.barrier(barrier_id=1, number_of_threads=self.threads - WARP)
                    self._stamp(mScratch, b, rank, tidx - WARP, clock0, 8)
                    self._solve_rows(sP, sM, sVec, VEC_INVM, W, nloc, tidx - WARP, self.threads - WARP)
                if cutlass.const_expr(G > 1):
                    cute.arch.cluster_wait()
            else:
                if cutlass.const_expr(G > 1):
                    cute.arch.cluster_arrive()
                    cute.arch.cluster_wait()
                    for p in cutlass.range(tidx, W * W, self.threads):
                        sM[p % W, p // W] = mScratch[b, 0, SLOT_M + p]
                    cute.arch.sync_threads()
                    if tidx < W:
                        sVec[VEC_INVM, tidx] = cute.arch.rcp_approx(sM[tidx, tidx])
                    cute.arch.sync_threads()
                    self._solve_rows(sP, sM, sVec, VEC_INVM, 0, nloc, tidx, self.threads)
            cute.arch.sync_threads()
            self._stamp(mScratch, b, rank, tidx, clock0, 9)
            self._write_back(mH, sP, b, r0, nloc, c, w, lane, warp)
            self._stamp(mScratch, b, rank, tidx, clock0, 10)
        else:
            if cutlass.const_expr(G > 1):
                self._sync()                # M's exchange barrier, which every CTA of the cluster meets

    @cute.jit
    def _raw_entry(self, sP, r, col, r0, nloc, c):
        """A[r, col] of the panel in sP, 0 at rows >= nloc."""
        x = cutlass.Float32(0.0)
        if r < nloc:
            x = sP[r, col]
        return x

    @cute.jit
    def _cluster_gram(self, sP, sG, sParts, mScratch, slot, b, rank, r0, nloc, c, tidx, lane, warp):
        """sG := A^T A on and above the diagonal, summed over the cluster's CTAs in rank order (the same bits
        in every CTA) through the scratch slots from `slot`."""
        W = self.width
        G = self.cluster
        self._gram(sP, sG, r0, nloc, c, lane, warp, entry=self._raw_entry, sParts=sParts,
                   gram_warps=self.threads // WARP, diagonal=True)
        if cutlass.const_expr(G > 1):
            for p in cutlass.range(tidx, W * W, self.threads):
                i = p % W
                j = p // W
                if i <= j:
                    mScratch[b, rank, slot + p] = sG[i, j]
            self._sync()
            for p in cutlass.range(tidx, W * W, self.threads):
                i = p % W
                j = p // W
                if i <= j:
                    total = mScratch[b, 0, slot + p]
                    for g in cutlass.range_constexpr(1, G):
                        total = total + mScratch[b, g, slot + p]
                    sG[i, j] = total
            cute.arch.sync_threads()

    @cute.jit
    def _cholesky_warp(self, sG, sR, sRow, sVec, inv_row, lane, scaled: bool):
        """One warp: R with R^T R = G (sG's upper triangle), lane j holding column j; sR := R, zeros
        below the diagonal, 1 / R[j, j] into sVec[inv_row, j]. `scaled` (the first sweep): the
        factorization is of D G D, D = diag(s), s_j = 2^-floor(e_j / 2) for G[j, j] in [2^e_j, 2^(e_j+1)),
        and R = chol(D G D) D^-1 (exact power-of-two scalings), every G[j, j] within GRAM_RANGE; else
        (the second) every row of |G - I| sums to at most PROBE_ORTH_LIMIT. A pivot that is not
        positive (or NaN), or a broken condition, clears sVec[VEC_FLAG, 0].

        Step k is a loop trip (a short body, which stays in the instruction cache): lane j's g[i] holds
        G[k + i, j] as the elimination leaves it, shifted down a slot each step so that the pivot row
        is always g[0]. The pivot row goes through sRow (by step parity: lane j >= k stores G[k, j] at
        j - k), from which every lane loads it whole in vector loads; slots past row W hold what
        nothing reads."""
        W = self.width
        good = sVec[VEC_FLAG, 0]
        g = cute.make_rmem_tensor(W, cutlass.Float32)
        row = cute.make_rmem_tensor(W, cutlass.Float32)
        for i in cutlass.range_constexpr(W):
            g[i] = sG[cutlass.min(i, lane), cutlass.max(i, lane)]
        scale = cutlass.Float32(1.0)
        if cutlass.const_expr(scaled):
            d = sG[lane, lane]
            if cute.arch.vote_all_sync(d >= GRAM_RANGE[0]):
                if cute.arch.vote_all_sync(d <= GRAM_RANGE[1]):
                    pass
                else:
                    good = cutlass.Float32(0.0)
            else:
                good = cutlass.Float32(0.0)
            scale = _inverse_sqrt_power_of_two(d)
            for i in cutlass.range_constexpr(W):
                g[i] = g[i] * (cute.arch.shuffle_sync(scale, i) * scale)
        else:
            row_sum = cutlass.Float32(0.0)
            for i in cutlass.range_constexpr(W):
                e = g[i]
                if i == lane:
                    e = e - 1.0
                row_sum = row_sum + cute.arch.fmax(e, -e)
            if cute.arch.vote_all_sync(row_sum <= PROBE_ORTH_LIMIT):
                pass
            else:
                good = cutlass.Float32(0.0)
        unscale = 1.0 / scale
        diagonal = cutlass.Float32(1.0)
        for k in cutlass.range(W, unroll=1):
            if lane >= k:
                sRow[lane - k, k % 2] = g[0]
            cute.arch.sync_warp()
            for i in cutlass.range_constexpr(W):
                row[i] = sRow[i, k % 2]
            if row[0] > 0.0:
                pass
            else:
                good = cutlass.Float32(0.0)
            inverse = cute.math.rsqrt(row[0])
            r = g[0] * inverse                            # chol(D G D)[k, j] for lanes j >= k
            entry = cutlass.Float32(0.0)
            if lane >= k:
                entry = r * unscale
            if lane == k:
                diagonal = r
            sR[k, lane] = entry
            for i in cutlass.range_constexpr(1, W):
                g[i - 1] = g[i] - (row[i] * inverse) * r
            g[W - 1] = cutlass.Float32(0.0)
        sVec[inv_row, lane] = scale * cute.arch.rcp_approx(diagonal)
        if lane == 0:
            sVec[VEC_FLAG, 0] = good

    @cute.jit
    def _solve_rows(self, sP, sR, sVec, inv_row, first_row, nloc, first, stride: int):
        """sP[r, :] := sP[r, :] R^-1 (R upper in sR, 1 / R[j, j] in sVec[inv_row, j]) for rows r in
        [first_row, nloc), rows first_row + first, + stride, ... by this thread: x R = a by forward
        substitution."""
        for r in cutlass.range(first_row + first, nloc, stride):
            self._solve_row(sP, sR, sVec, inv_row, r)

    @cute.jit
    def _solve_row(self, sP, sR, sVec, inv_row, r):
        """sP[r, :] := sP[r, :] R^-1 (`_solve_rows` for one row), each dot product in DOT_CHAINS chains."""
        W = self.width
        x = [sP[r, j] for j in range(W)]
        for j in cutlass.range_constexpr(W):
            chains = [cutlass.Float32(0.0)] * submission.DOT_CHAINS
            for i in cutlass.range_constexpr(j):
                chains[i % submission.DOT_CHAINS] = chains[i % submission.DOT_CHAINS] + x[i] * sR[i, j]
            x[j] = (x[j] - self._combine(chains, lambda u, v: u + v)) * sVec[inv_row, j]
        for j in cutlass.range_constexpr(W):
            sP[r, j] = x[j]

    @cute.jit
    def _rebuild_top(self, sP, sU, sL, sRow, sVec, mTau, b, c, lane):
        """Rank 0's warp 0, lane j holding column j of Q's top W rows (local rows 0..W-1):
        Q_top - S = L U (S_k = -sign of the k-th pivot); sU := U, sVec[VEC_SIGN] := S; tau_j = -S_j U[j, j]
        into mTau; L into sP's top rows below the diagonal and into sL. Step k is a loop trip, lane j's
        q[i] holding row k + i of what the elimination leaves (as in `_cholesky_warp`); lane k's column
        (the pivot and what becomes L's column k) goes to every lane through sRow."""
        W = self.width
        q = cute.make_rmem_tensor(W, cutlass.Float32)
        column = cute.make_rmem_tensor(W, cutlass.Float32)
        for i in cutlass.range_constexpr(W):
            q[i] = sP[i, lane]
        for k in cutlass.range(W, unroll=1):
            if lane == k:
                for i in cutlass.range_constexpr(W):
                    sRow[i, k % 2] = q[i]
            cute.arch.sync_warp()
            for i in cutlass.range_constexpr(W):
                column[i] = sRow[i, k % 2]
            sign = cutlass.Float32(1.0)
            if column[0] >= 0.0:
                sign = cutlass.Float32(-1.0)
            u = column[0] - sign
            inverse = cute.arch.rcp_approx(u)
            upper = q[0]                                  # U[k, j] for lanes j > k
            if lane == k:
                upper = u
            entry = cutlass.Float32(0.0)
            if lane >= k:
                entry = upper
            sU[k, lane] = entry
            if lane == 0:
                sVec[VEC_SIGN, k] = sign
                mTau[b, c + k] = -sign * u
            if lane > k:                                  # lane j: L[j, k]
                l = sRow[lane - k, k % 2] * inverse
                sP[lane, k] = l
                sL[lane, k] = l
            for i in cutlass.range_constexpr(1, W):
                q[i - 1] = q[i] - (column[i] * inverse) * upper
            q[W - 1] = cutlass.Float32(0.0)

    @cute.jit
    def _product(self, sX, sY, sZ, first, stride: int):
        """sZ := X Y for upper triangular X and Y (zeros below their diagonals), entries first,
        first + stride, ... by this thread."""
        W = self.width
        for p in cutlass.range(first, W * W, stride):
            i = p % W
            j = p // W
            total = cutlass.Float32(0.0)
            for k in cutlass.range_constexpr(W):
                total = total + sX[i, k] * sY[k, j]
            sZ[i, j] = total

    @cute.jit
    def _t_rows(self, sU, sL, sVec, mT, b, lane):
        """Rank 0's warp 0: T = -U S L^-T (Ballard et al.), lane i forming row i: x L^T = -(U S)[i, :] by
        forward substitution over the columns (row j of L from sL, zeros on and above its diagonal, and
        x's entries from j on still 0)."""
        W = self.width
        x = cute.make_rmem_tensor(W, cutlass.Float32)
        for j in cutlass.range_constexpr(W):
            x[j] = cutlass.Float32(0.0)
        for j in cutlass.range(W, unroll=1):
            chains = [cutlass.Float32(0.0)] * submission.DOT_CHAINS
            for k in cutlass.range_constexpr(W):
                chains[k % submission.DOT_CHAINS] = chains[k % submission.DOT_CHAINS] + x[k] * sL[j, k]
            acc = cutlass.Float32(0.0)
            if lane <= j:
                acc = -sU[lane, j] * sVec[VEC_SIGN, j]
            acc = acc - self._combine(chains, lambda u, v: u + v)
            for k in cutlass.range_constexpr(W):
                if k == j:
                    x[k] = acc
            mT[b, lane, j] = acc

if cutlass is not None:

    @submission.dsl_user_op
    def _clock32(*, loc=None, ip=None):
        """The SM's cycle counter (low 32 bits)."""
        return cutlass.Int32(submission.llvm.inline_asm(cutlass.Int32.mlir_type, [], "mov.u32 $0, %clock;", "=r",
                                                        has_side_effects=True, asm_dialect=0, loc=loc, ip=ip))

    @submission.dsl_user_op
    def _inverse_sqrt_power_of_two(x, *, loc=None, ip=None):
        """2^-floor(e / 2) for a positive normal float x in [2^e, 2^(e+1)) (from its exponent field)."""
        result = submission.llvm.inline_asm(
            cutlass.Float32.mlir_type,
            [cutlass.Float32(x).ir_value(loc=loc, ip=ip)],
            "{ .reg .b32 t; mov.b32 t, $1; shr.u32 t, t, 23; and.b32 t, t, 255; sub.s32 t, t, 127; shr.s32 t, t, 1; "
            "sub.s32 t, 127, t; shl.b32 t, t, 23; mov.b32 $0, t; }",
            "=f,f", has_side_effects=False, asm_dialect=0, loc=loc, ip=ip)
        return cutlass.Float32(result)


def _compiled(panel, h, tau, t, scratch, c):
    args = tuple(submission._cute_tensor(x) for x in (h, h, tau, t, scratch))
    stream = submission.cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    args = (*args, cutlass.Int32(c), stream)
    return cute.compile(panel, *args), args


def stamps(shape: str, c: int) -> None:
    """CholeskyPanel with clock stamps on the panel at column c of `shape`'s plan: the median over matrices
    of rank 0's cycles from one stamp to the next."""
    batch, n = map(int, shape.split("x"))
    width = submission.PANEL_WIDTH
    sms, smem = submission._device_limits(torch.cuda.current_device())
    plan = submission.panel_plan(submission.make_plan(batch, n, sms, smem), n, c)
    h = torch.randn(batch, n, n, device="cuda")
    tau = torch.zeros(batch, n, device="cuda")
    t = torch.zeros(batch, width, width, device="cuda")
    scratch = torch.zeros(batch, plan.cluster, PROBE_SLOTS, device="cuda")
    fn, args = _compiled(CholeskyPanel(plan.rows, width, plan.cluster, plan.threads, stamps=True), h, tau, t, scratch, c)
    fn(*args)
    torch.cuda.synchronize()
    at = scratch[:, 0, SLOT_STAMPS:].median(dim=0).values.tolist()
    parts = ", ".join(f"{name} {now - before:.0f}" for name, before, now in zip(STAMPS, [0.0] + at, at))
    print(f"{shape} c={c:5d} G={plan.cluster} cycles (rank 0, median): {parts}; all {at[-1]:.0f}", flush=True)


def probe(shape: str, c: int) -> None:
    """Both kernels on the panel at column c of `shape`'s plan: differences and times."""
    batch, n = map(int, shape.split("x"))
    width = submission.PANEL_WIDTH
    sms, smem = submission._device_limits(torch.cuda.current_device())
    plan = submission.panel_plan(submission.make_plan(batch, n, sms, smem), n, c)
    a = torch.randn(batch, n, n, device="cuda")
    results = {}
    for name in ("householder", "cholqr2"):
        h = a.clone()
        tau = torch.zeros(batch, n, device="cuda")
        t = torch.zeros(batch, width, width, device="cuda")
        scratch = torch.zeros(batch, plan.cluster, PROBE_SLOTS, device="cuda")
        if name == "householder":
            panel = submission.HouseholderPanel(plan.rows, width, plan.cluster, plan.threads, True, plan.resident)
        else:
            panel = CholeskyPanel(plan.rows, width, plan.cluster, plan.threads)
        fn, args = _compiled(panel, h, tau, t, scratch, c)
        fn(*args)
        torch.cuda.synchronize()
        results[name] = (h[:, c:, c:c + width].clone(), tau[:, c:c + width].clone(), t.clone(),
                         scratch[:, 0, submission.SLOT_SCALED].clone())
        results[name + " us"] = launch_us(fn, args, lambda: h.copy_(a))
    (hh, th, tt, _), (hc, tc, tcc, flags) = results["householder"], results["cholqr2"]
    size = a[:, c:, c:c + width].abs().amax()
    upper = torch.triu(torch.ones(width, width, dtype=torch.bool, device="cuda"))
    r_diff = ((hh[:, :width] - hc[:, :width]).abs() * upper).amax() / size
    v_diff = torch.cat(((hh[:, :width] - hc[:, :width]).abs() * ~upper, (hh[:, width:] - hc[:, width:]).abs()),
                       dim=1).amax()
    print(f"{shape} c={c:5d} G={plan.cluster} rows={plan.rows} threads={plan.threads}: "
          f"householder {results['householder us']:7.1f} us, cholqr2 {results['cholqr2 us']:7.1f} us; "
          f"cholqr2 path {int(flags.sum())}/{batch}; |dR|/max {float(r_diff):.1e} |dV| {float(v_diff):.1e} "
          f"|dtau| {float((th - tc).abs().amax()):.1e} |dT| {float((tt - tcc).abs().amax()):.1e}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="2x4096,8x2048,60x1024,640x512")
    parser.add_argument("--columns", default="0,half")
    parser.add_argument("--stamps", action="store_true", help="cycles between CholeskyPanel's phases instead")
    args = parser.parse_args()
    for shape in args.shapes.split(","):
        n = int(shape.split("x")[1])
        for column in args.columns.split(","):
            c = n // 2 // submission.PANEL_WIDTH * submission.PANEL_WIDTH if column == "half" else int(column)
            (stamps if args.stamps else probe)(shape, c)
    return 0


if __name__ == "__main__":
    sys.exit(main())
