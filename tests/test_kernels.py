"""The submission's kernels one by one, against float64 math (GPU only)."""
import pytest
import torch
import triton
import triton.language as tl

import submission

pytestmark = pytest.mark.gpu

WIDTH = submission.PANEL_WIDTH
PANEL_RTOL = 1e-4        # float32 panel factorization vs torch.geqrf
TRAILING_RTOL = 1e-4     # 3xBF16 block reflector vs float64


def _larft(v: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
    """T with H_0 ... H_{w-1} = I - V T V^T, by T = (I + diag(tau) striu(V^T V))^{-1} diag(tau)."""
    w = v.shape[-1]
    gram = torch.triu(v.transpose(-1, -2) @ v, diagonal=1)
    lhs = torch.eye(w, dtype=v.dtype, device=v.device) + tau[..., :, None] * gram
    return torch.linalg.solve_triangular(lhs, torch.diag_embed(tau), upper=True)


def _unit_lower(panel: torch.Tensor) -> torch.Tensor:
    v = torch.tril(panel, diagonal=-1)
    w = panel.shape[-1]
    v[..., range(w), range(w)] = 1.0
    return v


def _run_panel(h: torch.Tensor, plan: submission.Plan, c: int):
    batch, n, _ = h.shape
    tau = torch.zeros((batch, n), device=h.device)
    t = torch.zeros((batch, WIDTH, WIDTH), device=h.device)
    scratch = torch.zeros((batch, plan.cluster, submission.scratch_slots(WIDTH)), device=h.device)
    stream = submission.cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    args = (submission._cute_tensor(h), submission._cute_tensor(h), submission._cute_tensor(tau), submission._cute_tensor(t),
            submission._cute_tensor(scratch), submission.cutlass.Int32(c), stream)
    submission._panel_kernel(plan, args)(*args)
    torch.cuda.synchronize()
    return tau, t


@pytest.mark.parametrize("resident", [True, False], ids=["resident", "streamed"])
@pytest.mark.parametrize("rows", ["whole", "left"])
@pytest.mark.parametrize("batch,n,cluster,c", [
    (3, 300, 1, 0), (3, 300, 1, 64), (2, 256, 2, 32), (2, 512, 4, 0), (2, 300, 16, 96), (1, 250, 16, 224),
    (2, 520, 1, 384), (2, 600, 2, 256), (2, 300, 1, 275), (2, 1100, 2, 0), (1, 1300, 4, 256), (2, 700, 1, 32),
])
def test_panel_matches_geqrf_and_forms_t(batch, n, cluster, c, rows, resident):
    torch.manual_seed(n + c)
    a = torch.randn((batch, n, n), device="cuda")
    h = a.clone()
    plan = submission.blocked_plan(n, cluster, resident)
    if rows == "left":          # CTAs sized for the rows below the panel only, as Factorization runs them
        plan = submission.panel_plan(plan, n, c)
        # resident panels with many rows left go through CholeskyQR2 (the rest: the column steps)
        assert plan.cholesky == (resident and n - c > submission.CHOLESKY_MIN_ROWS)
    tau, t = _run_panel(h, plan, c)
    w = min(WIDTH, n - c)

    ref_h, ref_tau = torch.geqrf(a[:, c:, c:c + w].double())
    got = h[:, c:, c:c + w].double()
    assert torch.allclose(got, ref_h, rtol=PANEL_RTOL, atol=PANEL_RTOL * ref_h.abs().max())
    assert torch.allclose(tau[:, c:c + w].double(), ref_tau, rtol=PANEL_RTOL, atol=PANEL_RTOL)
    untouched = torch.ones_like(a, dtype=torch.bool)
    untouched[:, c:, c:c + w] = False
    assert torch.equal(h[untouched], a[untouched])

    ref_t = _larft(_unit_lower(ref_h), ref_tau)
    assert torch.allclose(t[:, :w, :w].double(), ref_t, rtol=PANEL_RTOL, atol=PANEL_RTOL)


@pytest.mark.parametrize("resident", [True, False], ids=["resident", "streamed"])
@pytest.mark.parametrize("batch,n,cluster,c", [(2, 512, 2, 0), (2, 600, 4, 64), (3, 512, 1, 0), (2, 1100, 2, 0)])
def test_panel_with_extreme_and_nearly_repeated_columns(batch, n, cluster, c, resident):
    # columns that nearly repeat the one before (their norms after a reflection cancel), columns near
    # 1e17 and 1e-19 (norms rescaled, a cluster's through its scratch) and a zero column (tau = 0) match
    # geqrf; one CTA streaming its columns takes them two a trip (`_column_pairs`); a resident CholeskyQR2
    # panel (1100 rows) falls back to the column steps for them
    torch.manual_seed(n + c)
    a = torch.randn((batch, n, n), device="cuda")
    cols = range(c, c + WIDTH)
    for k in cols[1::4]:
        a[:, :, k] = a[:, :, k - 1] + 1e-2 * a[:, :, k]
    a[:, :, c + 2] *= 1e17
    a[:, :, c + 6] *= 1e-19
    a[:, :, c + 10] = 0.0
    h = a.clone()
    plan = submission.panel_plan(submission.blocked_plan(n, cluster, resident), n, c)
    tau, t = _run_panel(h, plan, c)

    ref_h, ref_tau = torch.geqrf(a[:, c:, c:c + WIDTH].double())
    got = h[:, c:, c:c + WIDTH].double()
    upper = torch.ones((n - c, WIDTH), dtype=torch.bool, device="cuda").triu()
    column_size = (ref_h * upper).abs().amax(dim=(0, 1))    # R's columns keep their inputs' scales, V is ~1
    atol = torch.where(upper, PANEL_RTOL * column_size, PANEL_RTOL)
    assert bool(((got - ref_h).abs() <= PANEL_RTOL * ref_h.abs() + atol).all())
    assert torch.allclose(tau[:, c:c + WIDTH].double(), ref_tau, rtol=PANEL_RTOL, atol=PANEL_RTOL)
    assert torch.allclose(t.double(), _larft(_unit_lower(ref_h), ref_tau), rtol=PANEL_RTOL, atol=PANEL_RTOL)


@pytest.mark.parametrize("batch,n,cluster,c", [(2, 1100, 2, 0), (1, 1300, 4, 256)])
def test_cholesky_panel_of_condition_300_takes_the_full_second_factor(batch, n, cluster, c):
    # a panel of condition 300 (singular values graded from 1 to 1/300 across its columns, so no power-of-two
    # column scale helps): float32 CholeskyQR leaves ||Q1^T Q1 - I||_inf between CHOLESKY_FIRST_ORDER_LIMIT
    # and CHOLESKY_ORTH_LIMIT, so the second Cholesky runs its elimination, and the panel still matches geqrf
    torch.manual_seed(n + c)
    a = torch.randn((batch, n, n), device="cuda")
    left, _ = torch.linalg.qr(torch.randn((batch, n - c, WIDTH), dtype=torch.float64))
    right, _ = torch.linalg.qr(torch.randn((batch, WIDTH, WIDTH), dtype=torch.float64))
    panel = (left * torch.logspace(0, -torch.log10(torch.tensor(300.0)).item(), WIDTH, dtype=torch.float64)) @ right
    a[:, c:, c:c + WIDTH] = panel.float().cuda()
    q1 = a[:, c:, c:c + WIDTH].cpu()
    q1 = torch.linalg.solve_triangular(torch.linalg.cholesky(q1.mT @ q1, upper=True), q1, upper=True, left=False)
    size = (q1.mT @ q1 - torch.eye(WIDTH)).abs().sum(dim=2).amax()
    assert submission.CHOLESKY_FIRST_ORDER_LIMIT < size < submission.CHOLESKY_ORTH_LIMIT
    h = a.clone()
    plan = submission.panel_plan(submission.blocked_plan(n, cluster, True), n, c)
    assert plan.cholesky
    tau, t = _run_panel(h, plan, c)

    ref_h, ref_tau = torch.geqrf(a[:, c:, c:c + WIDTH].double())
    assert torch.allclose(h[:, c:, c:c + WIDTH].double(), ref_h, rtol=PANEL_RTOL, atol=PANEL_RTOL * ref_h.abs().max())
    assert torch.allclose(tau[:, c:c + WIDTH].double(), ref_tau, rtol=PANEL_RTOL, atol=PANEL_RTOL)
    assert torch.allclose(t.double(), _larft(_unit_lower(ref_h), ref_tau), rtol=PANEL_RTOL, atol=PANEL_RTOL)


@pytest.mark.parametrize("width", [WIDTH, 2 * WIDTH], ids=["panel", "pair"])
@pytest.mark.parametrize("next_panel_only", [False, True], ids=["rest", "next-panel"])
@pytest.mark.parametrize("batch,n,c,splits,fused", [
    (3, 200, 0, 1, True), (2, 333, 64, 1, True), (3, 200, 0, 1, False), (2, 333, 64, 3, False), (1, 512, 32, 4, False),
])
def test_block_reflector_matches_float64(batch, n, c, splits, fused, next_panel_only, width):
    torch.manual_seed(n)
    a = torch.randn((batch, n, n), device="cuda")
    panel_h, panel_tau = torch.geqrf(a[:, c:, c:c + width].double())
    h = a.clone()
    h[:, c:, c:c + width] = panel_h.float()
    v = _unit_lower(panel_h)
    t = _larft(v, panel_tau)
    trailing = a[:, c:, c + width:].double()
    expected = trailing - v @ (t.transpose(-1, -2) @ (v.transpose(-1, -2) @ trailing))

    before = h.clone()
    y = torch.full((splits, batch, width, n - width), float("nan"), device="cuda")
    if next_panel_only:
        update = submission.Update(c + width, c + 2 * width, splits, submission.LOOKAHEAD_BLOCK_N, fused)
    else:
        update = submission.Update(c + width, n, splits, submission.TRAIL_BLOCK_N, fused)
    submission._apply_block_reflector(h, y, t.float().contiguous(), c, width, update)
    got = h[:, c:, update.col_lo:update.col_hi].double()
    want = expected[:, :, :update.col_hi - update.col_lo]
    assert (got - want).abs().max() <= TRAILING_RTOL * want.abs().max()
    assert torch.equal(h[:, :, :update.col_lo], before[:, :, :update.col_lo])
    assert torch.equal(h[:, :, update.col_hi:], before[:, :, update.col_hi:])
    assert torch.equal(h[:, :c, :], before[:, :c, :])


@pytest.mark.parametrize("batch,n,c,from_input,inner", [
    (5, 512, 128, False, False),    # the strip whole: six row blocks, a CTA a tile
    (61, 384, 64, False, False),    # five (odd), runs of two tiles that cross matrices
    (500, 256, 128, False, False),  # two, one tile a matrix: each CTA loads V for ~4 matrices in turn
    (3, 512, 384, False, False),
    (150, 512, 64, False, False),   # seven row blocks: the strip through a ring, twice
    (9, 512, 0, True, False),       # eight through the ring, C read from the input (matrix 0 lifted)
    (4, 384, 0, True, False),       # six whole, from the input
    (5, 512, 64, False, True),      # a pair's inner update: a tile a matrix from column c, V from its first half
    (200, 384, 0, False, True),     # several matrices a CTA
    (300, 320, 0, False, True),     # five row blocks (odd), several matrices a CTA
    (9, 512, 448, False, True),     # one row block
])
def test_pair_update_on_chip_matches_float64(batch, n, c, from_input, inner):
    # Hopper's `pair_update_kernel` (strip and V on chip) applies a pair's block reflector, or for its inner
    # update the first panel's to the second panel's columns, as the Triton update does: C - V T^T V^T C to
    # TRAILING_RTOL, with C = 2^k A from the input where it reads it (the trailing columns of h are then not
    # read), every other entry of h untouched
    device = torch.cuda.current_device()
    if not submission._on_chip_device(device):
        pytest.skip("pair_update_kernel runs on compute capability 9.0 with a Triton of ON_CHIP_TRITON")
    width = WIDTH if inner else 2 * WIDTH
    col_hi = c + 2 * width if inner else n
    block_n = submission.LOOKAHEAD_BLOCK_N if inner else submission.TRAIL_BLOCK_N
    update = submission.Update(c + width, col_hi, 1, block_n, True)
    strip = submission.on_chip_strip(n, c, width, update, submission._device_limits(device)[1])
    blocks = (n - c) // submission.ON_CHIP_BLOCK
    assert strip == blocks if blocks <= 6 or inner else submission.ON_CHIP_MIN_RING <= strip < blocks
    torch.manual_seed(batch + n + c)
    a = torch.randn((batch, n, n), device="cuda")
    if from_input:
        a[0] *= 2.0 ** -80
    size = a.abs().amax(dim=(1, 2))
    exponent = torch.frexp(size).exponent          # size in [2^(e-1), 2^e)
    lift = torch.ones(batch)
    if from_input:
        lift = torch.where(exponent < 1 + submission.TINY_EXPONENT.value,
                           torch.exp2(torch.clamp(1 - exponent, max=126).double()), 1.0)
    lifted = a.double() * lift.view(-1, 1, 1).to(a.device)
    panel_h, panel_tau = torch.geqrf(lifted[:, c:, c:c + width])
    h = lifted.float()
    h[:, c:, c:c + width] = panel_h.float()
    if from_input:
        h[:, :, c + width:] = float("nan")
    v = _unit_lower(panel_h)
    t = _larft(v, panel_tau)
    trailing = lifted[:, c:, c + width:col_hi]
    expected = trailing - v @ (t.transpose(-1, -2) @ (v.transpose(-1, -2) @ trailing))

    before = h.clone()
    submission._apply_block_reflector(h, None, t.float().contiguous(), c, width, update,
                                      (a, size) if from_input else None)
    got = h[:, c:, c + width:col_hi].double()
    scale = expected.abs().amax(dim=(1, 2), keepdim=True)
    assert ((got - expected).abs() <= TRAILING_RTOL * scale).all()
    assert torch.equal(h[:, :, :c + width], before[:, :, :c + width])
    assert torch.equal(h[:, :, col_hi:], before[:, :, col_hi:])
    assert torch.equal(h[:, :c].nan_to_num(7.0), before[:, :c].nan_to_num(7.0))


def test_pair_update_on_chip_leaves_an_input_tma_cannot_read_to_the_triton_update(monkeypatch):
    # a contiguous input off 16-byte alignment (an eager call reads it as the first update's source) is no
    # TMA source: the update is the Triton kernel's, bit for bit
    device = torch.cuda.current_device()
    if not submission._on_chip_device(device):
        pytest.skip("pair_update_kernel runs on compute capability 9.0 with a Triton of ON_CHIP_TRITON")
    batch, n, width = 4, 384, 2 * WIDTH
    update = submission.Update(width, n, 1, submission.TRAIL_BLOCK_N, True)
    assert submission.on_chip_strip(n, 0, width, update, submission._device_limits(device)[1])
    torch.manual_seed(7)
    a = torch.randn(batch * n * n + 1, device="cuda")[1:].view(batch, n, n)
    assert a.is_contiguous() and a.data_ptr() % submission.TMA_ALIGN_BYTES != 0
    size = a.abs().amax(dim=(1, 2))
    panel_h, panel_tau = torch.geqrf(a[:, :, :width].double())
    t = _larft(_unit_lower(panel_h), panel_tau).float().contiguous()
    h = torch.zeros((batch, n, n), device="cuda")
    h[:, :, :width] = panel_h.float()
    got = h.clone()
    submission._apply_block_reflector(got, None, t, 0, width, update, (a, size))
    monkeypatch.setattr(submission, "_on_chip_device", lambda index: False)
    triton_update = h.clone()
    submission._apply_block_reflector(triton_update, None, t, 0, width, update, (a, size))
    assert torch.equal(got, triton_update)


@pytest.mark.parametrize("resident", [True, False], ids=["resident", "streamed"])
@pytest.mark.parametrize("batch,n,cluster,c,big", [
    (2, 200, 1, 0, 1.0), (1, 130, 1, 64, 1.0), (3, 512, 1, 32, 1.0), (2, 512, 2, 0, 1.0), (2, 600, 2, 256, 1.0),
    (2, 1100, 4, 512, 1.0),
    (2, 1024, 1, 0, 1.0), (1, 1024, 1, 448, 1.0),       # resident: both panels CholeskyQR2 ...
    (2, 1024, 1, 0, 1e17),                              # ... but the second falls back to the column steps
])
def test_second_panel_of_a_pair_merges_their_t(batch, n, cluster, c, big, resident):
    # the pair's second panel (`merges`), after the first panel and its update of the second's columns,
    # writes [[T1, T12], [0, T2]]: larft of the pair's 2 x WIDTH reflectors as one block, whichever way the
    # second was factored (a column near `big` takes a CholeskyQR2 panel back to the column steps)
    torch.manual_seed(n + c)
    h = torch.randn((batch, n, n), device="cuda")
    h[:, :, c + WIDTH + 3] *= big
    blocked = submission.blocked_plan(n, cluster, resident)
    tau = torch.zeros((batch, n), device="cuda")
    first = torch.zeros((batch, WIDTH, WIDTH), device="cuda")
    merged = torch.full((batch, 2 * WIDTH, 2 * WIDTH), float("nan"), device="cuda")
    scratch = torch.zeros((batch, cluster, submission.scratch_slots(WIDTH)), device="cuda")
    stream = submission.cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    for panel_c, t, merges in ((c, first, False), (c + WIDTH, merged, True)):
        plan = submission.panel_plan(blocked, n, panel_c, merges)
        # CholeskyQR2 where resident with many rows left; a second panel on one CTA a matrix only
        many_rows = n - panel_c > submission.CHOLESKY_MIN_ROWS
        assert plan.cholesky == (resident and many_rows and (cluster == 1 or not merges))
        args = tuple(submission._cute_tensor(x) for x in (h, h, tau, t, scratch))
        args += (submission.cutlass.Int32(panel_c), stream)
        submission._panel_kernel(plan, args)(*args)
        if not merges:
            update = submission.Update(c + WIDTH, c + 2 * WIDTH, 1, submission.LOOKAHEAD_BLOCK_N, True)
            submission._apply_block_reflector(h, None, first, c, WIDTH, update)
    torch.cuda.synchronize()
    v = _unit_lower(h[:, c:, c:c + 2 * WIDTH].double())
    expected = _larft(v, tau[:, c:c + 2 * WIDTH].double())
    assert torch.equal(merged[:, :WIDTH, :WIDTH], first)
    assert (merged.double() - expected).abs().max() <= PANEL_RTOL * expected.abs().max()


@triton.jit
def _split_kernel(x_ptr, hi_ptr, lo_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    hi, lo = submission._bf16_pair(tl.load(x_ptr + i))
    tl.store(hi_ptr + i, hi)
    tl.store(lo_ptr + i, lo)


def test_bf16_pair_is_bf16_of_x_then_of_the_rest():
    # the kernels' packed split gives hi = bf16(x) and lo = bf16(x - hi) bit for bit, entry by entry
    torch.manual_seed(0)
    scales = 10.0 ** torch.randint(-40, 38, (4088,), device="cuda").double()
    special = [0.0, -0.0, 1e-40, -3e-39, 3.3e38, -3.3e38, float("inf"), float("nan")]
    x = torch.cat([(torch.randn(4088, device="cuda").double() * scales).float(), torch.tensor(special, device="cuda")])
    hi, lo = torch.empty(4096, dtype=torch.bfloat16, device="cuda"), torch.empty(4096, dtype=torch.bfloat16, device="cuda")
    _split_kernel[(1,)](x, hi, lo, N=4096)
    want_hi = x.to(torch.bfloat16)
    want_lo = (x - want_hi.float()).to(torch.bfloat16)
    for got, want in ((hi, want_hi), (lo, want_lo)):
        nan = want.isnan()
        assert torch.equal(got.isnan(), nan)
        assert torch.equal(got[~nan].view(torch.int16), want[~nan].view(torch.int16))
