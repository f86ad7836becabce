"""Tests of reference.py: the input generator and the checker.

The generator must draw exactly what SPEC §3 describes, so each case is
checked against the base draw `randn((batch, n, n))` of a generator seeded the
same way, followed by that case's extra draws in the specified order. The
checker must accept `torch.geqrf`'s factorization of every case and reject
each kind of bad output with a message that says why.

Everything here runs on the CPU in seconds; on a CUDA machine the same tests
run on the GPU, the device `generate_input` picks.
"""
import math
import re

import pytest
import torch

import reference
from reference import check_implementation, generate_input

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
EPS = torch.finfo(torch.float32).eps

# SPEC §3, in the order of its table.
ALL_CASES = (
    "dense", "upper", "diagonal", "rankdef", "nearrank", "clustered",
    "band", "nearcollinear", "rowscale", "mixed",
)
# SPEC §2: the pass message's keys, in this order.
PASS_KEYS = (
    "factor_rtol", "orth_rtol", "scaled_factor_residual", "scaled_reconstruction_residual",
    "scaled_triangular_residual", "scaled_orthogonality_residual", "batch", "n",
)
FACTOR_GATE = 20.0  # scaled factor residual allowed
ORTH_GATE = 100.0  # scaled orthogonality residual allowed


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------
def base_draw(batch: int, n: int, seed: int) -> tuple[torch.Generator, torch.Tensor]:
    """The generator after the base draw, and the base draw itself."""
    gen = torch.Generator(device=DEVICE)
    gen.manual_seed(seed)
    a = torch.randn((batch, n, n), device=DEVICE, dtype=torch.float32, generator=gen)
    return gen, a


def column_scale(n: int, cond: int) -> torch.Tensor:
    """`colscale` of SPEC §3 as a vector: logspace(0, -cond, n), or ones when cond = 0."""
    if cond == 0:
        return torch.ones(n, device=DEVICE, dtype=torch.float32)
    return torch.logspace(0.0, -float(cond), n, device=DEVICE, dtype=torch.float32)


def strict_lower(n: int) -> torch.Tensor:
    return torch.ones(n, n, device=DEVICE, dtype=torch.bool).tril(-1)


def assert_bitwise_equal(actual: torch.Tensor, expected: torch.Tensor) -> None:
    assert actual.shape == expected.shape
    assert torch.equal(actual, expected), f"max |diff| = {(actual - expected).abs().max().item():.3g}"


# ---------------------------------------------------------------------------
# Generator: every case
# ---------------------------------------------------------------------------
def test_cases_are_the_specified_ones():
    assert set(reference.CASES) == set(ALL_CASES)


@pytest.mark.parametrize("case", ALL_CASES)
@pytest.mark.parametrize("batch, n", [(1, 1), (3, 7), (5, 16)])
def test_shape_dtype_device_contiguity(case, batch, n):
    a = generate_input(batch, n, 2, 1234, case)
    assert a.shape == (batch, n, n)
    assert a.dtype == torch.float32
    assert a.device.type == DEVICE.type
    assert a.is_contiguous()
    assert bool(torch.isfinite(a).all())


@pytest.mark.parametrize("case", ALL_CASES)
def test_same_seed_is_bitwise_equal(case):
    assert_bitwise_equal(generate_input(6, 12, 2, 99, case), generate_input(6, 12, 2, 99, case))


@pytest.mark.parametrize("case", ALL_CASES)
def test_different_seed_differs(case):
    assert not torch.equal(generate_input(6, 12, 2, 99, case), generate_input(6, 12, 2, 100, case))


@pytest.mark.parametrize("spelling", ["RankDef", "MIXED", "Dense", "nearCollinear"])
def test_case_name_is_case_insensitive(spelling):
    assert_bitwise_equal(generate_input(3, 9, 1, 7, spelling), generate_input(3, 9, 1, 7, spelling.lower()))


def test_default_case_is_dense():
    assert_bitwise_equal(generate_input(3, 9, 1, 7), generate_input(3, 9, 1, 7, "dense"))


def test_unknown_case_raises_naming_valid_cases():
    with pytest.raises(ValueError) as info:
        generate_input(2, 4, 1, 0, "lowrank")
    message = str(info.value)
    assert "lowrank" in message
    for case in ALL_CASES:
        assert case in message


@pytest.mark.parametrize(
    "batch, n, cond",
    [(0, 4, 1), (-1, 4, 1), (2, 0, 1), (2, -3, 1), (2, 4, -1)],
    ids=["batch0", "batch-neg", "n0", "n-neg", "cond-neg"],
)
def test_bad_sizes_raise(batch, n, cond):
    with pytest.raises(ValueError, match="batch"):
        generate_input(batch, n, cond, 0)


# ---------------------------------------------------------------------------
# Generator: each case's defining property, against the base draw
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("cond", [0, 1, 3])
def test_dense_is_base_times_column_scale(cond):
    batch, n, seed = 4, 16, 11
    _, base = base_draw(batch, n, seed)
    a = generate_input(batch, n, cond, seed, "dense")
    scale = column_scale(n, cond)
    for k in range(n):
        assert_bitwise_equal(a[:, :, k], base[:, :, k] * scale[k])
    assert scale[0].item() == 1.0
    assert scale[-1].item() == pytest.approx(10.0 ** -cond, rel=1e-6)


@pytest.mark.parametrize("cond", [0, 2])
def test_upper_is_triangular_with_shifted_diagonal(cond):
    batch, n, seed = 3, 16, 12
    _, base = base_draw(batch, n, seed)
    a = generate_input(batch, n, cond, seed, "upper")
    scale = column_scale(n, cond)
    assert bool((a[:, strict_lower(n)] == 0).all())
    strict_upper = torch.ones(n, n, device=DEVICE, dtype=torch.bool).triu(1)
    assert_bitwise_equal(a[:, strict_upper], (base * scale)[:, strict_upper])
    shift = torch.linspace(1.0, 0.25, n, device=DEVICE, dtype=torch.float32)
    assert_bitwise_equal(a.diagonal(dim1=-2, dim2=-1), (base.diagonal(dim1=-2, dim2=-1) + shift) * scale)


@pytest.mark.parametrize("cond, decades", [(0, 2), (1, 2), (5, 5)])
def test_diagonal_magnitudes_and_signs(cond, decades):
    batch, n, seed = 4, 16, 13
    gen, _ = base_draw(batch, n, seed)
    d = torch.randn((batch, n), device=DEVICE, dtype=torch.float32, generator=gen)
    a = generate_input(batch, n, cond, seed, "diagonal")
    assert bool((a[:, ~torch.eye(n, device=DEVICE, dtype=torch.bool)] == 0).all())
    diag = a.diagonal(dim1=-2, dim2=-1)
    magnitudes = torch.logspace(0.0, -float(decades), n, device=DEVICE, dtype=torch.float32)
    assert_bitwise_equal(diag.abs(), magnitudes.expand(batch, n))
    assert_bitwise_equal(diag > 0, d > 0)


@pytest.mark.parametrize("n, rank", [(1, 1), (4, 3), (7, 5), (16, 12)])
@pytest.mark.parametrize("cond", [0, 2])
def test_rankdef_zero_columns(n, rank, cond):
    batch, seed = 3, 14
    _, base = base_draw(batch, n, seed)
    a = generate_input(batch, n, cond, seed, "rankdef")
    assert rank == max(1, 3 * n // 4)
    assert bool((a[:, :, rank:] == 0).all())
    assert_bitwise_equal(a[:, :, :rank], (base * column_scale(n, cond))[:, :, :rank])
    assert bool((a[:, :, :rank] != 0).any(dim=1).all()), "a kept column is zero"


@pytest.mark.parametrize("cond", [0, 2])
def test_nearrank_tail_columns_copy_the_first_ones(cond):
    batch, n, seed = 3, 16, 15
    rank, tail = 12, 4
    gen, base = base_draw(batch, n, seed)
    noise = torch.randn((batch, n, tail), device=DEVICE, dtype=torch.float32, generator=gen)
    a = generate_input(batch, n, cond, seed, "nearrank")
    scale = column_scale(n, cond)
    assert_bitwise_equal(a[:, :, :rank], (base * scale)[:, :, :rank])
    assert_bitwise_equal(a[:, :, rank:], (base[:, :, :tail] + 1.0e-5 * noise) * scale[rank:])
    # Unscaled, each tail column is its source column up to noise of size 1e-5.
    unscaled_tail = a[:, :, rank:] / scale[rank:]
    gap = (unscaled_tail - base[:, :, :tail]).abs()
    assert gap.max().item() < 1.0e-5 * 8
    assert bool((gap.amax(dim=1) > 0).all()), "a tail column is an exact copy"


def test_nearrank_n1_is_the_base_draw():
    _, base = base_draw(2, 1, 16)
    assert_bitwise_equal(generate_input(2, 1, 0, 16, "nearrank"), base)


@pytest.mark.parametrize("n", [1, 2, 6, 8, 17])
def test_clustered_column_scales(n):
    batch, seed = 3, 17
    _, base = base_draw(batch, n, seed)
    a = generate_input(batch, n, 3, seed, "clustered")  # cond is ignored
    tiny = torch.tensor(4.0 * EPS, dtype=torch.float32)
    middle = torch.tensor(math.sqrt(EPS), dtype=torch.float32)
    middle_columns = range(max(0, n // 2 - 2), min(n, n // 2 + 2)) if n >= 8 else range(0)
    for k in range(n):
        if k in middle_columns:
            expected = base[:, :, k] * middle
        elif k >= n // 2:
            expected = base[:, :, k] * tiny
        else:
            expected = base[:, :, k]
        assert_bitwise_equal(a[:, :, k], expected)
    if n >= 8:
        assert len(middle_columns) == 4


@pytest.mark.parametrize("n, width", [(8, 2), (64, 2), (160, 5)])
@pytest.mark.parametrize("cond", [0, 1])
def test_band_zeros_outside_the_band(n, width, cond):
    batch, seed = 2, 18
    _, base = base_draw(batch, n, seed)
    a = generate_input(batch, n, cond, seed, "band")
    assert width == max(2, min(32, n // 32))
    idx = torch.arange(n, device=DEVICE)
    distance = (idx[:, None] - idx[None, :]).abs()
    outside = distance > width
    off_diagonal_band = (distance <= width) & (distance > 0)
    scale = column_scale(n, cond)
    assert bool((a[:, outside] == 0).all())
    assert_bitwise_equal(a[:, off_diagonal_band], (base * scale)[:, off_diagonal_band])
    shift = torch.linspace(1.0, 0.5, n, device=DEVICE, dtype=torch.float32)
    assert_bitwise_equal(a.diagonal(dim1=-2, dim2=-1), (base.diagonal(dim1=-2, dim2=-1) + shift) * scale)


@pytest.mark.parametrize("cond, decades", [(0, 4), (4, 4), (6, 6)])
def test_rowscale_row_scales(cond, decades):
    batch, n, seed = 3, 16, 19
    _, base = base_draw(batch, n, seed)
    a = generate_input(batch, n, cond, seed, "rowscale")
    rows = torch.logspace(0.0, -float(decades), n, device=DEVICE, dtype=torch.float32)
    for i in range(n):
        assert_bitwise_equal(a[:, i, :], base[:, i, :] * rows[i])


@pytest.mark.parametrize("cond", [0, 2])
def test_nearcollinear_columns_are_nearly_parallel(cond):
    batch, n, seed = 3, 16, 20
    gen, _ = base_draw(batch, n, seed)
    common = torch.randn((batch, n, 1), device=DEVICE, dtype=torch.float32, generator=gen)
    noise = torch.randn((batch, n, n), device=DEVICE, dtype=torch.float32, generator=gen)
    a = generate_input(batch, n, cond, seed, "nearcollinear")
    assert_bitwise_equal(a, (common + 1.0e-4 * noise) * column_scale(n, cond))
    unit = torch.nn.functional.normalize(a.double(), dim=1)
    cosines = unit.transpose(-1, -2) @ unit
    assert cosines.min().item() > 1.0 - 1.0e-6
    unscaled = a / column_scale(n, cond)
    assert bool((unscaled[:, :, 1:] != unscaled[:, :, :1]).any(dim=1).all()), "two columns are equal"


@pytest.mark.parametrize("batch", [2, 3, 8])
@pytest.mark.parametrize("seed", range(8))
def test_mixed_holds_dense_and_non_dense(batch, seed):
    n, cond = 8, 2
    _, base = base_draw(batch, n, seed)
    a = generate_input(batch, n, cond, seed, "mixed")
    # Every profile but dense changes the base draw of n = 8, so the dense
    # matrices are exactly those equal to the column-scaled base.
    dense = (a == base * column_scale(n, cond)).flatten(1).all(dim=1)
    assert bool(dense.any()), "no dense matrix"
    assert not bool(dense.all()), "no non-dense matrix"


SPEC_MIXED_PROFILES = ["dense", "rankdef", "nearrank", "clustered", "band", "rowscale", "nearcollinear"]
SPEC_MIXED_WEIGHTS = [6.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]


def spec_mixed(batch: int, n: int, cond: int, seed: int) -> tuple[torch.Tensor, str]:
    """SPEC §3's `mixed`, draw by draw: the base, the labels, the fix-up draws, then each profile present,
    in the fixed order, on its own matrices (a profile's own draws through `reference._apply_case`);
    with the labels' branch taken."""
    gen = torch.Generator(device=DEVICE).manual_seed(seed)
    a = torch.randn((batch, n, n), generator=gen, device=DEVICE)
    weights = torch.tensor(SPEC_MIXED_WEIGHTS, device=DEVICE)
    labels = torch.multinomial(weights, batch, replacement=True, generator=gen)
    branch = "mixed"
    if batch >= 2 and not bool((labels == 0).any()):
        branch = "no dense"
        labels[torch.randint(0, batch, (1,), generator=gen, device=DEVICE)] = 0
    elif batch >= 2 and bool((labels == 0).all()):
        branch = "all dense"
        i = torch.randint(0, batch, (1,), generator=gen, device=DEVICE)
        labels[i] = torch.randint(1, len(SPEC_MIXED_PROFILES), (1,), generator=gen, device=DEVICE)
    for k, profile in enumerate(SPEC_MIXED_PROFILES):
        if bool((labels == k).any()):
            a[labels == k] = reference._apply_case(a[labels == k], profile, cond, gen)
    return a.contiguous(), branch


@pytest.mark.parametrize("batch", [2, 40])
def test_mixed_follows_the_specs_draws(batch):
    # every labels branch (with 2 matrices), and batches holding several profiles with draws of their own
    # (nearrank, nearcollinear: their order shows in the values)
    branches = set()
    for seed in range(48):
        want, branch = spec_mixed(batch, 8, 2, seed)
        assert_bitwise_equal(generate_input(batch, 8, 2, seed, "mixed"), want)
        branches.add(branch)
    assert branches == ({"mixed", "no dense", "all dense"} if batch == 2 else {"mixed"})


def test_mixed_batch1_works():
    n, seed = 8, 21
    a = generate_input(1, n, 2, seed, "mixed")
    assert a.shape == (1, n, n)
    assert a.is_contiguous()
    assert bool(torch.isfinite(a).all())
    assert_bitwise_equal(a, generate_input(1, n, 2, seed, "mixed"))


# ---------------------------------------------------------------------------
# Checker: valid factorizations pass
# ---------------------------------------------------------------------------
def factored(batch: int, n: int, case: str = "dense", seed: int = 5, cond: int = 1):
    """An input and `torch.geqrf`'s factorization of it, as fresh tensors."""
    a = generate_input(batch, n, cond, seed, case)
    h, tau = torch.geqrf(a)
    return a, h.clone(), tau.clone()


def parse_message(message: str) -> dict[str, str]:
    pairs = [item.split("=", 1) for item in message.split("; ")]
    assert all(len(pair) == 2 for pair in pairs), message
    return dict(pairs)


@pytest.mark.parametrize("case", ALL_CASES)
@pytest.mark.parametrize("n", [1, 2, 16, 33])
def test_accepts_geqrf_on_every_case(case, n):
    a, h, tau = factored(3, n, case)
    ok, message = check_implementation(a, (h, tau))
    assert ok, message
    fields = parse_message(message)
    assert float(fields["scaled_factor_residual"]) < FACTOR_GATE
    assert float(fields["scaled_orthogonality_residual"]) < ORTH_GATE


def test_pass_message_format():
    batch, n = 3, 16
    a, h, tau = factored(batch, n)
    ok, message = check_implementation(a, (h, tau))
    assert ok, message
    assert "\n" not in message
    fields = parse_message(message)
    assert tuple(fields) == PASS_KEYS
    assert float(fields["factor_rtol"]) == pytest.approx(20 * n * EPS, rel=1e-2)
    assert float(fields["orth_rtol"]) == pytest.approx(100 * n * EPS, rel=1e-2)
    for key in PASS_KEYS[2:6]:
        assert 0.0 <= float(fields[key]) < FACTOR_GATE, (key, fields[key])
    assert fields["batch"] == str(batch)
    assert fields["n"] == str(n)


def test_accepts_a_different_valid_factorization():
    """tau = 2 on the last (empty) reflector flips the sign of Q's last column: still valid."""
    n = 16
    a, h, tau = factored(3, n)
    tau[:, n - 1] = 2.0
    h[:, n - 1, n - 1] = -h[:, n - 1, n - 1]
    ok, message = check_implementation(a, (h, tau))
    assert ok, message


def test_checker_modifies_nothing():
    a, h, tau = factored(3, 16)
    copies = (a.clone(), h.clone(), tau.clone())
    check_implementation(a, (h, tau))
    for before, after in zip(copies, (a, h, tau)):
        assert_bitwise_equal(after, before)


# ---------------------------------------------------------------------------
# Checker: each kind of bad output fails, saying why
# ---------------------------------------------------------------------------
def assert_rejected(a: torch.Tensor, output, *fragments: str) -> str:
    ok, message = check_implementation(a, output)
    assert not ok, "accepted a bad output"
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    return message


def test_rejects_a_list():
    a, h, tau = factored(3, 16)
    assert_rejected(a, [h, tau], "tuple")


@pytest.mark.parametrize("output_len", [1, 3])
def test_rejects_a_tuple_of_the_wrong_length(output_len):
    a, h, tau = factored(3, 16)
    assert_rejected(a, (h, tau, tau)[:output_len], "tuple")


def test_rejects_a_non_tensor():
    a, h, tau = factored(3, 16)
    assert_rejected(a, (h.tolist(), tau), "H must be a torch.Tensor")


@pytest.mark.parametrize("shape", [(3, 16, 15), (2, 16, 16), (16, 16)])
def test_rejects_wrong_h_shape(shape):
    a, h, tau = factored(3, 16)
    bad = torch.zeros(shape, device=a.device, dtype=torch.float32)
    assert_rejected(a, (bad, tau), "H shape must be (3, 16, 16)", f"got {shape}")


@pytest.mark.parametrize("shape", [(3, 15), (3, 16, 1), (16,)])
def test_rejects_wrong_tau_shape(shape):
    a, h, tau = factored(3, 16)
    bad = torch.zeros(shape, device=a.device, dtype=torch.float32)
    assert_rejected(a, (h, bad), "tau shape must be (3, 16)", f"got {shape}")


def test_rejects_float64_h():
    a, h, tau = factored(3, 16)
    assert_rejected(a, (h.double(), tau), "H dtype must be torch.float32", "float64")


def test_rejects_float64_tau():
    a, h, tau = factored(3, 16)
    assert_rejected(a, (h, tau.double()), "tau dtype must be torch.float32", "float64")


def test_rejects_wrong_device_meta():
    a, h, tau = factored(3, 16)
    assert_rejected(a, (h.to("meta"), tau), "H must be on", "meta")
    assert_rejected(a, (h, tau.to("meta")), "tau must be on", "meta")


@pytest.mark.gpu
def test_rejects_cpu_output_for_cuda_input():
    a, h, tau = factored(3, 16)
    assert a.is_cuda
    assert_rejected(a, (h.cpu(), tau), "H must be on cuda", "got cpu")
    assert_rejected(a, (h, tau.cpu()), "tau must be on cuda", "got cpu")


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_rejects_non_finite_h(value):
    a, h, tau = factored(3, 16)
    h[1, 3, 7] = value
    assert_rejected(a, (h, tau), "H contains NaN or Inf")


@pytest.mark.parametrize("value", [math.inf, math.nan])
def test_rejects_non_finite_tau(value):
    a, h, tau = factored(3, 16)
    tau[2, 4] = value
    assert_rejected(a, (h, tau), "tau contains NaN or Inf")


@pytest.mark.parametrize("ratio", [0.7, 1.3])
def test_factor_gate_is_each_matrixs_own_allowed_1_norm(ratio):
    """R's last column of matrix 1 moved by E, whose 1-norm is `ratio` times that matrix's allowed
    residual, 20 n eps ||A_1||_1, spread over the column's n rows (so its inf-norm is n times smaller).

    Matrix 0 is 10^4 times larger: a gate taken from the batch's largest norm, or from inf-norms, or
    looser than 20, would let the 1.3 case through; geqrf's own residual is a few percent of the gate.
    """
    n = 16
    a = generate_input(2, n, 1, 5, "dense")
    a[0] *= 1.0e4
    h, tau = torch.geqrf(a)
    allowed = FACTOR_GATE * n * EPS * torch.linalg.matrix_norm(a[1].double(), ord=1).item()
    h[1, :, n - 1] += ratio * allowed / n
    ok, message = check_implementation(a, (h, tau))
    if ratio < 1:
        assert ok, message
    else:
        assert not ok and "R - Q.T @ A is too large" in message and "matrix=1," in message, message


@pytest.mark.parametrize("ratio", [0.7, 1.3])
def test_orthogonality_gate_is_100_n_eps(ratio):
    """The last reflector of matrix 1 set to tau = t with R's last row scaled by 1 - t (as in
    `test_rejects_non_orthogonal_q_with_a_consistent_r`): ||Q^T Q - I||_1 = 2t - t^2, chosen as `ratio`
    times 100 n eps, while the factor residual stays at rounding level."""
    n = 16
    a, h, tau = factored(3, n)
    target = ratio * ORTH_GATE * n * EPS
    t = 1.0 - math.sqrt(1.0 - target)           # 2t - t^2 = target
    tau[1, n - 1] = t
    h[1, n - 1, n - 1] *= 1.0 - t
    ok, message = check_implementation(a, (h, tau))
    if ratio < 1:
        assert ok, message
    else:
        assert not ok and "Q is not orthogonal enough" in message, message


def test_rejects_overflowing_q():
    """Finite H and tau whose Q overflows float32."""
    a, h, tau = factored(3, 16)
    h[0, 1:, 0] = 1.0e20
    assert_rejected(a, (h, tau), "Q materialized", "NaN or Inf")


@pytest.mark.parametrize("bad", [0, 2])
def test_rejects_perturbed_tau_naming_the_matrix(bad):
    a, h, tau = factored(3, 16)
    tau[bad, 0] *= 1.01
    assert_rejected(a, (h, tau), "R - Q.T @ A is too large", f"matrix={bad},", "allowed=", "scaled=")


@pytest.mark.parametrize("bad", [0, 1])
def test_rejects_perturbed_r_entry(bad):
    a, h, tau = factored(3, 16)
    h[bad, 2, 9] += 1.0e-2
    assert_rejected(a, (h, tau), "R - Q.T @ A is too large", f"matrix={bad},")


@pytest.mark.parametrize("bad", [1, 2])
def test_rejects_perturbed_householder_vector(bad):
    a, h, tau = factored(3, 16)
    h[bad, 12, 3] += 1.0e-2
    assert_rejected(a, (h, tau), "R - Q.T @ A is too large", f"matrix={bad},")


def test_rejects_non_orthogonal_q_with_a_consistent_r():
    """Q scaled in its last column: Q^T A stays triangular, so only orthogonality fails.

    The last reflector acts on one row only (v is empty), so tau_n = t makes
    H_n = diag(1, ..., 1, 1 - t) and Q' = Q H_n. With R' = triu(Q'^T A),
    that is R with its last row scaled by 1 - t, the factor residual stays at
    rounding level while ||Q'^T Q' - I||_1 = |(1 - t)^2 - 1| ~ 2t.
    """
    n, t = 16, 1.0e-2
    a, h, tau = factored(3, n)
    tau[1, n - 1] = t
    h[1, n - 1, n - 1] *= 1.0 - t
    message = assert_rejected(a, (h, tau), "Q is not orthogonal enough", "allowed=", "scaled=")
    scaled = float(re.search(r"scaled=([0-9.e+-]+)", message).group(1))
    # The message prints 3 significant digits.
    assert scaled == pytest.approx(abs((1.0 - t) ** 2 - 1.0) / (n * EPS), rel=1e-2)
