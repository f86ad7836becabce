"""A panel factored without per-column exchanges: CholeskyQR2 and Householder reconstruction (GPU probe).

    python bench/probe_cholqr_panel.py [--shapes 2x4096,8x2048,60x1024,640x512] [--columns 0,half]

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
GRAM_WARPS = 4                  # warps that take the Gram's row chunks (their packed triangles: 8.4 KB)
# the probe's own scratch slots, after HouseholderPanel's: column maxima, the two Grams, U and S
SLOT_MAX = submission.scratch_slots(submission.PANEL_WIDTH)
SLOT_G1 = SLOT_MAX + submission.PANEL_WIDTH
SLOT_G2 = SLOT_G1 + submission.PANEL_WIDTH ** 2
SLOT_U = SLOT_G2 + submission.PANEL_WIDTH ** 2
SLOT_S = SLOT_U + submission.PANEL_WIDTH ** 2
PROBE_SLOTS = SLOT_S + submission.PANEL_WIDTH
# sVec's rows
VEC_SCALE, VEC_INV1, VEC_INV2, VEC_INVU, VEC_SIGN, VEC_FLAG = range(6)
VEC_ROWS = 6
NORMAL_RANGE = (2.0 ** -126, 2.0 ** 126)


class CholeskyPanel(submission.HouseholderPanel):
    """See the module docstring. Needs w = width (no narrow last panel) and W rows or more a CTA."""

    def __init__(self, rows: int, width: int, cluster: int, threads: int):
        super().__init__(rows, width, cluster, threads, True, False)

    @cute.kernel
    def kernel(self, mA: cute.Tensor, mH: cute.Tensor, mTau: cute.Tensor,
               mT: cute.Tensor, mScratch: cute.Tensor, c: cutlass.Int32):
        W = self.width
        G = self.cluster
        tidx, _, _ = cute.arch.thread_idx()
        lane = tidx % WARP
        warp = tidx // WARP
        b = cute.arch.block_idx()[0]
        rank = cutlass.Int32(0)
        if cutlass.const_expr(G > 1):
            b = cute.arch.cluster_idx()[0]
            rank = cute.arch.block_idx_in_cluster()
        n = mH.shape[1]
        w = cutlass.min(W, n - c)
        chunk = (n - c + G - 1) // G
        r0 = c + rank * chunk
        nloc = cutlass.max(cutlass.min(chunk, n - r0), 0)

        smem = submission.SmemAllocator()
        sP = smem.allocate_tensor(cutlass.Float32, cute.make_layout((self.ld, W)), 16)
        sTau = smem.allocate_tensor(cutlass.Float32, cute.make_layout(W), 16)
        sGram = smem.allocate_tensor(cutlass.Float32, cute.make_layout((W, W)), 16)
        sT = smem.allocate_tensor(cutlass.Float32, cute.make_layout((W, W)), 16)
        # triangles R[i, j] with column j contiguous and rows a bank apart (a lane a column stores a row)
        padded = cute.make_layout((W, W), stride=(1, W + 1))
        sG = smem.allocate_tensor(cutlass.Float32, padded, 16)
        sR1 = smem.allocate_tensor(cutlass.Float32, padded, 16)
        sR2 = smem.allocate_tensor(cutlass.Float32, padded, 16)
        sU = smem.allocate_tensor(cutlass.Float32, padded, 16)
        sVec = smem.allocate_tensor(cutlass.Float32, cute.make_layout((VEC_ROWS, W)), 16)
        sParts = smem.allocate_tensor(cutlass.Float32, cute.make_layout(GRAM_WARPS * W * (W + 1) // 2), 16)

        self._stage(mA, sP, b, r0, nloc, c, w, lane, warp)
        cute.arch.sync_threads()

        # ----- column scales (every CTA alike, from the cluster's maxima in rank order) -----
        for k in cutlass.range(warp, W, self.threads // WARP):
            largest = cutlass.Float32(0.0)
            for r in cutlass.range(lane, nloc, WARP):
                largest = cute.arch.fmax(largest, cute.arch.fmax(sP[r, k], -sP[r, k]))
            largest = cute.arch.warp_reduction_max(largest)
            if lane == 0:
                sVec[VEC_SCALE, k] = largest
        cute.arch.sync_threads()
        if cutlass.const_expr(G > 1):
            if tidx < W:
                mScratch[b, rank, SLOT_MAX + tidx] = sVec[VEC_SCALE, tidx]
            self._sync()
        if warp == 0:
            largest = sVec[VEC_SCALE, lane]
            if cutlass.const_expr(G > 1):
                largest = mScratch[b, 0, SLOT_MAX + lane]
                for g in cutlass.range_constexpr(1, G):
                    largest = cute.arch.fmax(largest, mScratch[b, g, SLOT_MAX + lane])
            flag = cutlass.Float32(0.0)
            if cute.arch.vote_all_sync(largest >= NORMAL_RANGE[0]):
                if cute.arch.vote_all_sync(largest < NORMAL_RANGE[1]):
                    flag = cutlass.Float32(1.0)
            sVec[VEC_SCALE, lane] = _inverse_power_of_two(largest)
            sVec[VEC_FLAG, lane] = flag
        cute.arch.sync_threads()
        for r in cutlass.range(tidx, nloc, self.threads):
            for k in cutlass.range_constexpr(W):
                sP[r, k] = sP[r, k] * sVec[VEC_SCALE, k]
        cute.arch.sync_threads()

        # ----- CholeskyQR, twice: G = A^T A, R = chol(G), A := A R^-1 -----
        self._cholesky_sweep(sP, sG, sParts, sR1, sVec, VEC_INV1, mScratch, SLOT_G1, b, rank, r0, nloc, c,
                             tidx, lane, warp, False)
        self._cholesky_sweep(sP, sG, sParts, sR2, sVec, VEC_INV2, mScratch, SLOT_G2, b, rank, r0, nloc, c,
                             tidx, lane, warp, True)
        ok = sVec[VEC_FLAG, 0] != 0.0
        if tidx == 0:
            if rank == 0:
                mScratch[b, 0, submission.SLOT_SCALED] = sVec[VEC_FLAG, 0]

        # ----- reconstruction: rank 0's warp 0 factors Q's top rows minus S; U and S to every CTA -----
        if ok:
            if rank == 0:
                if warp == 0:
                    self._rebuild_top(sP, sR1, sR2, sU, sVec, sTau, mTau, b, c, lane)
            cute.arch.sync_threads()
            if cutlass.const_expr(G > 1):
                if rank == 0:
                    for p in cutlass.range(tidx, W * W, self.threads):
                        mScratch[b, 0, SLOT_U + p] = sU[p % W, p // W]
                    if tidx < W:
                        mScratch[b, 0, SLOT_S + tidx] = sVec[VEC_SIGN, tidx]
                self._sync()
                if rank != 0:
                    for p in cutlass.range(tidx, W * W, self.threads):
                        sU[p % W, p // W] = mScratch[b, 0, SLOT_U + p]
                    if tidx < W:
                        u = mScratch[b, 0, SLOT_U + tidx * (W + 1)]
                        sVec[VEC_INVU, tidx] = 1.0 / u
                        sTau[tidx] = -mScratch[b, 0, SLOT_S + tidx] * u
                    cute.arch.sync_threads()
            first_row = 0
            if rank == 0:
                first_row = W
            self._solve_rows(sP, sU, sVec, VEC_INVU, first_row, nloc, tidx)
        else:
            if cutlass.const_expr(G > 1):
                self._sync()                # the exchange's barrier, which every CTA of the cluster meets
        cute.arch.sync_threads()

        self._write_back(mH, sP, b, r0, nloc, c, w, lane, warp)
        self._form_t(mA, sP, sTau, sGram, sT, mT, mScratch, b, rank, r0, nloc, c, w, tidx, lane, warp)

    @cute.jit
    def _raw_entry(self, sP, r, col, r0, nloc, c):
        """A[r, col] of the panel in sP, 0 at rows >= nloc."""
        x = cutlass.Float32(0.0)
        if r < nloc:
            x = sP[r, col]
        return x

    @cute.jit
    def _cholesky_sweep(self, sP, sGram, sParts, sR, sVec, inv_row, mScratch, slot, b, rank, r0, nloc, c,
                        tidx, lane, warp, check: bool):
        """G = A^T A (the cluster's sum), sR := chol(G) with 1 / R[j, j] in sVec[inv_row, j], A := A R^-1;
        with `check`, sVec[VEC_FLAG, 0] keeps 1 only if G is within PROBE_ORTH_LIMIT of I."""
        W = self.width
        G = self.cluster
        self._gram(sP, sGram, r0, nloc, c, lane, warp, entry=self._raw_entry, sParts=sParts, gram_warps=GRAM_WARPS,
                   diagonal=True)
        if cutlass.const_expr(G > 1):
            for p in cutlass.range(tidx, W * W, self.threads):
                i = p % W
                j = p // W
                if i <= j:
                    mScratch[b, rank, slot + p] = sGram[i, j]
            self._sync()
            for p in cutlass.range(tidx, W * W, self.threads):
                i = p % W
                j = p // W
                if i <= j:
                    total = mScratch[b, 0, slot + p]
                    for g in cutlass.range_constexpr(1, G):
                        total = total + mScratch[b, g, slot + p]
                    sGram[i, j] = total
            cute.arch.sync_threads()
        if warp == 0:
            self._cholesky_warp(sGram, sR, sVec, inv_row, lane, check)
        cute.arch.sync_threads()
        self._solve_rows(sP, sR, sVec, inv_row, 0, nloc, tidx)
        cute.arch.sync_threads()

    @cute.jit
    def _cholesky_warp(self, sGram, sR, sVec, inv_row, lane, check: bool):
        """One warp: R with R^T R = G (sGram's upper triangle), lane j holding column j; sR := R, zeros
        below the diagonal. A pivot that is not positive (or NaN), or with `check` a row of |G - I|
        summing over PROBE_ORTH_LIMIT, clears sVec[VEC_FLAG, 0]."""
        W = self.width
        g = [None] * W                  # lane j: g[i] = G[i, j] as the elimination leaves it (i <= j)
        for i in cutlass.range_constexpr(W):
            g[i] = sGram[cutlass.min(i, lane), cutlass.max(i, lane)]
        good = sVec[VEC_FLAG, 0]
        if cutlass.const_expr(check):
            row_sum = cutlass.Float32(0.0)
            for i in cutlass.range_constexpr(W):
                d = g[i]
                if i == lane:
                    d = d - 1.0
                row_sum = row_sum + cute.arch.fmax(d, -d)
            if cute.arch.vote_all_sync(row_sum <= PROBE_ORTH_LIMIT):
                pass
            else:
                good = cutlass.Float32(0.0)
        for k in cutlass.range_constexpr(W):
            pivot = cute.arch.shuffle_sync(g[k], k)
            if pivot > 0.0:
                pass
            else:
                good = cutlass.Float32(0.0)
            inverse = cute.math.rsqrt(pivot)
            r = g[k] * inverse                          # R[k, j] for lanes j >= k
            for i in cutlass.range_constexpr(k + 1, W):
                g[i] = g[i] - cute.arch.shuffle_sync(r, i) * r
            entry = cutlass.Float32(0.0)
            if lane >= k:
                entry = r
            sR[k, lane] = entry
            if lane == k:
                sVec[inv_row, k] = 1.0 / r
        if lane == 0:
            sVec[VEC_FLAG, 0] = good

    @cute.jit
    def _solve_rows(self, sP, sR, sVec, inv_row, first_row, nloc, tidx):
        """sP[r, :] := sP[r, :] R^-1 (R upper in sR, 1 / R[j, j] in sVec[inv_row, j]) for rows r in
        [first_row, nloc), a thread a row: x R = a by forward substitution."""
        W = self.width
        for r in cutlass.range(first_row + tidx, nloc, self.threads):
            x = [sP[r, j] for j in range(W)]
            for j in cutlass.range_constexpr(W):
                acc = x[j]
                for i in cutlass.range_constexpr(j):
                    acc = acc - x[i] * sR[i, j]
                x[j] = acc * sVec[inv_row, j]
            for j in cutlass.range_constexpr(W):
                sP[r, j] = x[j]

    @cute.jit
    def _rebuild_top(self, sP, sR1, sR2, sU, sVec, sTau, mTau, b, c, lane):
        """Rank 0's warp 0, lane j holding column j of Q's top W rows (local rows 0..W-1):
        Q_top - S = L U (S_k = -sign of the k-th pivot); sU := U, sVec[VEC_SIGN] := S, 1 / U[j, j] into
        sVec[VEC_INVU]; tau_j = -S_j U[j, j] into sTau and mTau; sP's top rows := L below the diagonal
        and R = S R2 R1 D^-1 on and above it."""
        W = self.width
        q = cute.make_rmem_tensor(W, cutlass.Float32)
        for i in cutlass.range_constexpr(W):
            q[i] = sP[i, lane]
        rfinal = [None] * W                             # lane j: column j of R2 R1 D^-1, then S R2 R1 D^-1
        for i in cutlass.range_constexpr(W):
            total = cutlass.Float32(0.0)
            for k in cutlass.range_constexpr(i, W):
                if k <= lane:
                    total = total + sR2[i, k] * sR1[k, lane]
            rfinal[i] = total / sVec[VEC_SCALE, lane]
        for k in cutlass.range_constexpr(W):
            pivot = cute.arch.shuffle_sync(q[k], k)
            sign = cutlass.Float32(1.0)
            if pivot >= 0.0:
                sign = cutlass.Float32(-1.0)
            u = pivot - sign
            inverse = 1.0 / u
            if lane == k:
                q[k] = u
                for i in cutlass.range_constexpr(k + 1, W):
                    q[i] = q[i] * inverse
            for i in cutlass.range_constexpr(k + 1, W):
                l = cute.arch.shuffle_sync(q[i], k)
                if lane > k:
                    q[i] = q[i] - l * q[k]
            rfinal[k] = rfinal[k] * sign
            if lane == 0:
                sVec[VEC_SIGN, k] = sign
                sVec[VEC_INVU, k] = inverse
                sTau[k] = -sign * u
                mTau[b, c + k] = -sign * u
        for i in cutlass.range_constexpr(W):
            upper = cutlass.Float32(0.0)
            if i <= lane:
                upper = q[i]
            sU[i, lane] = upper
            if i <= lane:
                sP[i, lane] = rfinal[i]
            else:
                sP[i, lane] = q[i]


if cutlass is not None:

    @submission.dsl_user_op
    def _inverse_power_of_two(x, *, loc=None, ip=None):
        """2^-e for a positive normal float x in [2^e, 2^(e+1)), e < 126 (its exponent field negated)."""
        result = submission.llvm.inline_asm(
            cutlass.Float32.mlir_type,
            [cutlass.Float32(x).ir_value(loc=loc, ip=ip)],
            "{ .reg .b32 t; mov.b32 t, $1; and.b32 t, t, 0x7f800000; sub.s32 t, 0x7f000000, t; mov.b32 $0, t; }",
            "=f,f", has_side_effects=False, asm_dialect=0, loc=loc, ip=ip)
        return cutlass.Float32(result)


def _compiled(panel, h, tau, t, scratch, c):
    args = tuple(submission._cute_tensor(x) for x in (h, h, tau, t, scratch))
    stream = submission.cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    args = (*args, cutlass.Int32(c), stream)
    return cute.compile(panel, *args), args


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
    args = parser.parse_args()
    for shape in args.shapes.split(","):
        n = int(shape.split("x")[1])
        for column in args.columns.split(","):
            c = n // 2 // submission.PANEL_WIDTH * submission.PANEL_WIDTH if column == "half" else int(column)
            probe(shape, c)
    return 0


if __name__ == "__main__":
    sys.exit(main())
