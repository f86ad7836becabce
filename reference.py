"""Input generator, reference kernel and checker of the qr_v2 task.

`generate_input` draws exactly what the public generator draws (same device,
same seed: bitwise the same matrices), so results carry over to the
leaderboard. `check_implementation` applies the task's two hard gates, each
relative to a matrix 1-norm and evaluated in float64:

    factor:         ||R_b - Q_b^T A_b||_1 <= 20 n eps ||A_b||_1   for every b
    orthogonality:  max_b ||Q_b^T Q_b - I||_1 <= 100 n eps

with `Q = householder_product(H, tau)`, `R = triu(H)` and `eps` the float32
machine epsilon. It returns `(ok, message)`.
"""
import torch

from task import input_t, output_t

EPS = torch.finfo(torch.float32).eps
FACTOR_RTOL_FACTOR = 20.0
ORTH_RTOL_FACTOR = 100.0

# Profiles of the `mixed` case, in the order their draws are made, and their
# sampling weights (dense is the majority).
MIXED_PROFILES = ("dense", "rankdef", "nearrank", "clustered", "band", "rowscale", "nearcollinear")
MIXED_WEIGHTS = (6.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
CASES = ("dense", "upper", "diagonal", *MIXED_PROFILES[1:], "mixed")


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------
def _logspace(stop: float, n: int, device) -> torch.Tensor:
    return torch.logspace(0.0, stop, n, device=device, dtype=torch.float32)


def _scale_columns(a: torch.Tensor, cond: int) -> torch.Tensor:
    """Multiply column k by 10^(-cond k / (n-1)): a dynamic-range knob, not a condition number."""
    if cond:
        return a * _logspace(-float(cond), a.shape[-1], a.device)
    return a


def _apply_case(a: torch.Tensor, case: str, cond: int, gen: torch.Generator) -> torch.Tensor:
    """Turn the base draw `a` (m x n x n) into `case`, drawing any extras from `gen`."""
    m, n = a.shape[0], a.shape[-1]
    device = a.device
    if case == "dense":
        return _scale_columns(a, cond)
    if case == "upper":
        a = torch.triu(a)
        a.diagonal(dim1=-2, dim2=-1).add_(torch.linspace(1.0, 0.25, n, device=device, dtype=torch.float32))
        return _scale_columns(a, cond)
    if case == "diagonal":
        d = torch.randn((m, n), device=device, dtype=torch.float32, generator=gen)
        signs = d.sign().clamp(min=0.0).mul(2.0).sub(1.0)
        return torch.diag_embed(signs * _logspace(-float(max(cond, 2)), n, device))
    if case == "rankdef":
        a[:, :, max(1, (3 * n) // 4):] = 0.0
        return _scale_columns(a, cond)
    if case == "nearrank":
        rank = max(1, (3 * n) // 4)
        tail = n - rank
        if tail > 0:
            noise = torch.randn((m, n, tail), device=device, dtype=torch.float32, generator=gen)
            a[:, :, rank:] = a[:, :, :tail] + 1.0e-5 * noise
        return _scale_columns(a, cond)
    if case == "clustered":
        s = torch.ones((n,), device=device, dtype=torch.float32)
        s[n // 2:] = 4.0 * EPS
        if n >= 8:
            s[max(0, n // 2 - 2):min(n, n // 2 + 2)] = torch.sqrt(torch.tensor(EPS, device=device))
        return a * s
    if case == "band":
        width = max(2, min(32, n // 32))
        idx = torch.arange(n, device=device)
        a = a * ((idx[:, None] - idx[None, :]).abs() <= width)
        a.diagonal(dim1=-2, dim2=-1).add_(torch.linspace(1.0, 0.5, n, device=device, dtype=torch.float32))
        return _scale_columns(a, cond)
    if case == "nearcollinear":
        base = torch.randn((m, n, 1), device=device, dtype=torch.float32, generator=gen)
        noise = torch.randn((m, n, n), device=device, dtype=torch.float32, generator=gen)
        return _scale_columns(base.expand(m, n, n) + 1.0e-4 * noise, cond)
    if case == "rowscale":
        return _logspace(-float(max(cond, 4)), n, device).reshape(1, n, 1) * a
    raise ValueError(f"unknown QR case {case!r}; valid cases: {', '.join(CASES)}")


def _apply_mixed(a: torch.Tensor, cond: int, gen: torch.Generator) -> torch.Tensor:
    """Give each matrix its own profile, drawn at random; both kinds present when m >= 2."""
    m = a.shape[0]
    device = a.device
    weights = torch.tensor(MIXED_WEIGHTS, dtype=torch.float32, device=device)
    labels = torch.multinomial(weights, m, replacement=True, generator=gen)
    if m >= 2:
        dense = labels == 0
        if not bool(dense.any()):
            labels[int(torch.randint(0, m, (1,), device=device, generator=gen))] = 0
        elif bool(dense.all()):
            i = int(torch.randint(0, m, (1,), device=device, generator=gen))
            labels[i] = int(torch.randint(1, len(MIXED_PROFILES), (1,), device=device, generator=gen))
    for k, profile in enumerate(MIXED_PROFILES):
        mask = labels == k
        if bool(mask.any()):
            a[mask] = _apply_case(a[mask], profile, cond, gen)
    return a


def generate_input(batch: int, n: int, cond: int, seed: int, case: str = "dense") -> input_t:
    """A contiguous `batch x n x n` float32 batch of `case` on CUDA if present, else the CPU."""
    if batch <= 0 or n <= 0 or cond < 0:
        raise ValueError(f"need batch > 0, n > 0, cond >= 0; got batch={batch}, n={n}, cond={cond}")
    case = case.lower()
    if case not in CASES:
        raise ValueError(f"unknown QR case {case!r}; valid cases: {', '.join(CASES)}")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    a = torch.randn((batch, n, n), device=device, dtype=torch.float32, generator=gen)
    a = _apply_mixed(a, cond, gen) if case == "mixed" else _apply_case(a, case, cond, gen)
    return a.contiguous()


def ref_kernel(data: input_t) -> output_t:
    """The reference factorization: cuSOLVER/LAPACK through `torch.geqrf`."""
    return torch.geqrf(data)


# ---------------------------------------------------------------------------
# Checker
# ---------------------------------------------------------------------------
def _rtol(n: int, factor: float) -> float:
    return factor * max(n, 1) * EPS


def _norm1(x: torch.Tensor) -> torch.Tensor:
    """Matrix 1-norm (largest column sum of |x|) of each matrix of a batch, in float64."""
    return torch.linalg.matrix_norm(x.double(), ord=1, dim=(-2, -1))


def _scaled(residual: torch.Tensor, scale: torch.Tensor, n: int) -> torch.Tensor:
    return residual / (EPS * max(n, 1) * scale.clamp_min(1e-30))


def _tensor_error(name: str, x, shape: tuple, device: torch.device) -> str | None:
    if not isinstance(x, torch.Tensor):
        return f"{name} must be a torch.Tensor, got {type(x).__name__}"
    if tuple(x.shape) != shape:
        return f"{name} shape must be {shape}, got {tuple(x.shape)}"
    if x.dtype != torch.float32:
        return f"{name} dtype must be torch.float32, got {x.dtype}"
    if x.device != device:
        return f"{name} must be on {device}, got {x.device}"
    if not bool(torch.isfinite(x).all()):
        return f"{name} contains NaN or Inf"
    return None


def check_implementation(data: input_t, output: output_t) -> tuple[bool, str]:
    """Apply the task's gates to `output = (H, tau)` for the input `data`."""
    a = data
    batch, n, _ = a.shape
    factor_rtol = _rtol(n, FACTOR_RTOL_FACTOR)
    orth_rtol = _rtol(n, ORTH_RTOL_FACTOR)

    if not isinstance(output, tuple) or len(output) != 2:
        return False, "output must be a tuple `(H, tau)`"
    h, tau = output
    error = _tensor_error("H", h, (batch, n, n), a.device) or _tensor_error("tau", tau, (batch, n), a.device)
    if error:
        return False, error

    q = torch.linalg.householder_product(h, tau)
    r = torch.triu(h)
    if not bool(torch.isfinite(q).all()):
        return False, "Q materialized from `(H, tau)` contains NaN or Inf"
    if not bool(torch.isfinite(r).all()):
        return False, "R extracted from `triu(H)` contains NaN or Inf"

    a64, q64, r64 = a.double(), q.double(), r.double()
    a_norm = _norm1(a64)

    # R - Q^T A, every matrix on its own
    projected = q64.transpose(-1, -2) @ a64
    if not bool(torch.isfinite(projected).all()):
        return False, "Q.T @ A contains NaN or Inf"
    factor_residual = _norm1(r64 - projected)
    factor_allowed = factor_rtol * a_norm
    factor_scaled = _scaled(factor_residual, a_norm, n)
    if not bool(torch.isfinite(factor_scaled).all()):
        return False, "R - Q.T @ A residual produced NaN or Inf"
    if bool((factor_residual > factor_allowed).any()):
        b = int(factor_scaled.argmax())
        return False, (
            "R - Q.T @ A is too large: "
            f"matrix={b}, residual={factor_residual[b].item():.3g}, "
            f"allowed={factor_allowed[b].item():.3g}, scaled={factor_scaled[b].item():.3g}"
        )

    # Q^T Q - I, worst matrix of the batch
    eye = torch.eye(n, device=a.device, dtype=torch.float64).expand(batch, n, n)
    qtq = q64.transpose(-1, -2) @ q64
    if not bool(torch.isfinite(qtq).all()):
        return False, "Q.T @ Q contains NaN or Inf"
    orth_residual = _norm1(qtq - eye).amax()
    orth_scale = _norm1(eye).amax()
    orth_allowed = orth_rtol * orth_scale
    orth_scaled = _scaled(orth_residual, orth_scale, n)
    if not bool(torch.isfinite(orth_scaled)):
        return False, "Q.T @ Q residual produced NaN or Inf"
    if orth_residual.item() > orth_allowed.item():
        return False, (
            "Q is not orthogonal enough: "
            f"residual={orth_residual.item():.3g}, allowed={orth_allowed.item():.3g}, "
            f"scaled={orth_scaled.item():.3g}"
        )

    # Diagnostics: lower-triangular leakage of Q^T A and the reconstruction Q R - A
    a_norm_max = a_norm.amax()
    tri_scaled = _scaled(_norm1(torch.tril(projected, diagonal=-1)).amax(), a_norm_max, n)
    recon = q64 @ r64
    if not bool(torch.isfinite(recon).all()):
        return False, "Q @ R contains NaN or Inf"
    recon_scaled = _scaled(_norm1(recon - a64).amax(), a_norm_max, n)

    return True, (
        f"factor_rtol={factor_rtol:.3g}; "
        f"orth_rtol={orth_rtol:.3g}; "
        f"scaled_factor_residual={factor_scaled.amax().item():.3g}; "
        f"scaled_reconstruction_residual={recon_scaled.item():.3g}; "
        f"scaled_triangular_residual={tri_scaled.item():.3g}; "
        f"scaled_orthogonality_residual={orth_scaled.item():.3g}; "
        f"batch={batch}; n={n}"
    )
