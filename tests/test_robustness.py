"""What a caller inside a training loop relies on: bad input, extreme values, streams, memory.

Every input is either factored, handed to `torch.geqrf` (documented
fallback) or refused with a clear error; non-finite matrices neither hang
nor disturb their neighbours; device memory stays bounded.
"""
import os
import subprocess
import sys
import threading
from pathlib import Path
from unittest import mock

import pytest
import torch
import triton

import reference
import submission
from checks import assert_factors, assert_passes

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


def _same_as_geqrf(a: torch.Tensor) -> None:
    h, tau = submission.custom_kernel(a)
    ref_h, ref_tau = torch.geqrf(a)
    assert torch.equal(h, ref_h) and torch.equal(tau, ref_tau)


# ---------------------------------------------------------------------------
# Inputs outside the fast path: torch.geqrf, or a clear error
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(6, 6), (2, 3, 5, 5), (3, 7, 4), (3, 4, 7), (0, 5, 5), (2, 0, 0)],
                         ids=["2d", "4d", "tall", "wide", "empty-batch", "n0"])
def test_other_shapes_go_to_geqrf(shape, device):
    torch.manual_seed(0)
    _same_as_geqrf(torch.randn(shape, device=device))


@pytest.mark.parametrize("device", DEVICES)
def test_float64_goes_to_geqrf(device):
    torch.manual_seed(0)
    _same_as_geqrf(torch.randn((3, 9, 9), device=device, dtype=torch.float64))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int64, torch.bool])
def test_unsupported_dtype_names_what_is_accepted(device, dtype):
    with pytest.raises(ValueError, match="float32, float64, complex64 or complex128"):
        submission.custom_kernel(torch.ones((2, 4, 4), device=device, dtype=dtype))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(), (5,)], ids=["0d", "1d"])
def test_fewer_than_two_dims_is_refused(device, shape):
    with pytest.raises(ValueError, match="custom_kernel accepts a"):
        submission.custom_kernel(torch.ones(shape, device=device))


# ---------------------------------------------------------------------------
# Triton kernels on the CPU (interpreter): small matrices, trailing updates, the lift
# ---------------------------------------------------------------------------
SMALL_CHECK = """
import torch, submission
g = torch.Generator().manual_seed(0)
for n in [1, 2, 3, 5, 8, 13, 16, 17, 31, 32]:
    a = torch.randn(7, n, n, generator=g)
    a[1] *= 1e-30                                  # lifted by 2^k before the factorization
    a[2] *= 1e30                                   # norms rescaled
    a[3, 0, :] = 0.0                               # zero column 0 of the view: tau = 0
    a[4, 0, :] *= 1e-39                            # a subnormal column 0 in a matrix of normal size
    a[5, 0, :] *= 3e37                             # column 0's squares would overflow unscaled
    a[6] *= 1e-40                                  # all subnormal: the lift keeps the updates' bits
    view = a.transpose(-1, -2)
    h, tau = submission._small_qr(view)
    ref_h, ref_tau = torch.geqrf(view.double())
    assert h.shape == (7, n, n) and tau.shape == (7, n) and h.is_contiguous() and tau.is_contiguous()
    assert torch.isfinite(h).all() and torch.isfinite(tau).all()
    for b in range(7):
        assert (h[b].double() - ref_h[b]).abs().max() <= 1e-5 * ref_h[b].abs().max(), (n, b)
        assert (tau[b].double() - ref_tau[b]).abs().max() <= 1e-5, (n, b)
    assert torch.equal(tau[3, :1], torch.zeros(1))
print("small ok")
"""


TRAILING_CHECK = """
import torch, triton, triton.language as tl, submission

@triton.jit
def _dot_float32(a, b_big, b_small, acc):       # the interpreter has no bf16 tensor cores: check the indexing
    return tl.dot(a, b_big.to(tl.float32) + b_small.to(tl.float32), acc, input_precision="ieee")

submission._dot_3xbf16_split = _dot_float32

def unit_lower(panel):
    v = panel.tril(-1)
    v[:, range(v.shape[-1]), range(v.shape[-1])] = 1.0
    return v

def larft(v, tau):
    gram = torch.triu(v.transpose(1, 2) @ v, 1)
    eye = torch.eye(v.shape[-1], dtype=torch.float64)
    return torch.linalg.solve_triangular(eye + tau[:, :, None] * gram, torch.diag_embed(tau), upper=True)

g = torch.Generator().manual_seed(0)
batch, n, w, c = 2, 200, submission.PANEL_WIDTH, 32     # 168 rows: 3 row splits of 64
a = torch.randn(batch, n, n, generator=g)
panel_h, panel_tau = torch.geqrf(a[:, c:, c:c + w].double())
h0 = a.clone()
h0[:, c:, c:c + w] = panel_h.float()
v = unit_lower(panel_h)
t = larft(v, panel_tau)
trailing = a[:, c:, c + w:].double()
want = trailing - v @ (t.transpose(1, 2) @ (v.transpose(1, 2) @ trailing))
for fused, splits in ((True, 1), (False, 1), (False, 3)):
    for lo, hi, block_n in ((c + w, n, 64), (c + w, c + 2 * w, 32), (c + 2 * w, n, 64)):
        h = h0.clone()
        y = torch.full((splits, batch, 2 * w, n - w), float("nan"))     # as wide as a pair's: W = w reads w rows
        submission._apply_block_reflector(h, y, t.float().contiguous(), c, w,
                                          submission.Update(lo, hi, splits, block_n, fused))
        got = h[:, c:, lo:hi].double()
        err = (got - want[:, :, lo - c - w:hi - c - w]).abs().max() / want.abs().max()
        assert err <= 1e-4, (fused, splits, lo, hi, err.item())
        assert torch.equal(h[:, :, :lo], h0[:, :, :lo]) and torch.equal(h[:, :, hi:], h0[:, :, hi:])
        assert torch.equal(h[:, :c], h0[:, :c])
# the first panel's update reading C from the input (2^-70 A[1] is lifted by 2^k) instead of from h
source = a.clone()
source[1] *= 2.0 ** -70
size = source.abs().amax(dim=(1, 2))
k = 1 - int(torch.frexp(size[1]).exponent)       # 2^k brings matrix 1's largest entry to [1, 2)
h = h0.clone()
h[:, c:, c + w:] = float("nan")
submission._apply_block_reflector(h, None, t.float().contiguous(), c, w, submission.Update(c + w, n, 1, 64, True),
                                  (source, size))
err = (h[:, c:, c + w:].double() - want * torch.tensor([1.0, 2.0 ** (k - 70)])[:, None, None]).abs().max()
assert err <= 1e-4 * want.abs().max(), err.item()
assert torch.equal(h[:, :, :c + w], h0[:, :, :c + w]) and torch.equal(h[:, :c], h0[:, :c])
# a pair of panels: its 2w-column update (the pair's T is formed by the second panel's kernel)
pair_h, pair_tau = torch.geqrf(a[:, c:, c:c + 2 * w].double())
v = unit_lower(pair_h)
h0 = a.clone()
h0[:, c:, c:c + 2 * w] = pair_h.float()
t = larft(v, pair_tau)
trailing = a[:, c:, c + 2 * w:].double()
want = trailing - v @ (t.transpose(1, 2) @ (v.transpose(1, 2) @ trailing))
for fused, splits, lo, hi, block_n in ((True, 1, c + 2 * w, n, 64), (False, 3, c + 2 * w, n, 64),
                                       (False, 1, c + 2 * w, c + 4 * w, 32)):
    h = h0.clone()
    y = torch.full((splits, batch, 2 * w, n - 2 * w), float("nan"))
    submission._apply_block_reflector(h, y, t.float().contiguous(), c, 2 * w,
                                      submission.Update(lo, hi, splits, block_n, fused))
    err = (h[:, c:, lo:hi].double() - want[:, :, lo - c - 2 * w:hi - c - 2 * w]).abs().max() / want.abs().max()
    assert err <= 1e-4, ("pair", fused, splits, lo, hi, err.item())
    assert torch.equal(h[:, :, :lo], h0[:, :, :lo]) and torch.equal(h[:, :, hi:], h0[:, :, hi:])
print("trailing ok")
"""


def _run_interpreted(script: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, TRITON_INTERPRET="1", QR_SKIP_PRECOMPILE="1", CUDA_VISIBLE_DEVICES="")
    root = Path(__file__).resolve().parent.parent
    return subprocess.run([sys.executable, "-c", script], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)


def test_small_kernel_matches_float64_geqrf():
    result = _run_interpreted(SMALL_CHECK)
    assert result.returncode == 0 and "small ok" in result.stdout, result.stderr[-3000:]


LIFT_CHECK = """
import torch, submission
a = torch.randn(3, 150, 150, generator=torch.Generator().manual_seed(0))     # 5 x 2 tiles
a[1] *= 1e-40                                  # subnormal: lifted by 2^126
a[2] *= 1e-25                                  # below 2^-64: largest entry lifted to [1, 2)
view = a.transpose(-1, -2)
h, size = torch.empty(3, 150, 150), torch.zeros(3)
submission._stage_input(view, h, size)
assert torch.equal(h, view.contiguous()) and torch.equal(size, view.abs().amax(dim=(1, 2)))
staged = h.clone()
submission._lift(h, size, inverse=False)
assert torch.equal(h[0], staged[0])
assert torch.equal(h[1], staged[1] * 2.0 ** 126)
k = 1 - int(torch.frexp(staged[2].abs().max()).exponent)       # 2^k brings the largest entry to [1, 2)
assert torch.equal(h[2], staged[2] * 2.0 ** k) and 1 <= h[2].abs().max() < 2
submission._lift(h, size, inverse=True)
upper = torch.ones(150, 150, dtype=torch.bool).triu()
assert torch.equal(h[:, upper], staged[:, upper])
assert torch.equal(h[1][~upper], staged[1][~upper] * 2.0 ** 126)
# only the first 40 columns staged and lifted; the sizes cover every column where the staged ones are tiny
both = torch.cat([a, a[[0, 0]]]).transpose(-1, -2)     # strided like view; 3 and 4 copies of the normal one
both[3, :, :40] *= 1e-30                       # tiny staged columns, normal others: not lifted
both[4, :, 40:] *= 1e-30                       # normal staged columns, tiny others: not lifted
h, size = torch.full((5, 150, 150), float("nan")), torch.zeros(5)
submission._stage_input(both, h, size, col_end=40)
assert torch.equal(h[:, :, :40], both[:, :, :40]) and h[:, :, 40:].isnan().all()
assert torch.equal(size[[0, 4]], both[[0, 4], :, :40].abs().amax(dim=(1, 2)))     # the staged columns' only
assert torch.equal(size[1:4], both[1:4].abs().amax(dim=(1, 2)))                     # exact: every column
submission._lift(h, size, inverse=False, col_end=40)
factors = torch.tensor([1.0, 2.0 ** 126, 2.0 ** k, 1.0, 1.0])[:, None, None]
assert torch.equal(h[:, :, :40], both[:, :, :40] * factors)
assert h[:, :, 40:].isnan().all()
# 300 columns, 32 staged: the others span three column tiles; sizes are the largest entries that are not NaN
a = torch.randn(6, 300, 300, generator=torch.Generator().manual_seed(1))
a[0] *= 1e-30
a[0, 299, 299] = 3e-25                         # tiny, its largest entry in the last row and column tile
a[1, :, :32] = 0.0                             # zero staged columns, normal others: not lifted
a[2] *= 1e-30
a[2, :, :32] = 0.0                             # zero staged columns, tiny others: lifted by their largest
a[3] *= 2.0 ** -70
a[3, 5, 3] = 2.0 ** -64                        # staged columns reach 2^-64: not lifted, the others not read
a[4] *= 2.0 ** -70
a[4, 200, 250] = 2.0 ** -64                    # staged ones below it, the others reach it: not lifted
a[5] *= 1e-30
a[5, :, 128:256] = float("nan")              # whole tiles of the staging kernel
a[5, 7, 290] = 1e-20                           # NaN skipped: lifted by the largest other entry
largest = a.nan_to_num(nan=0.0).abs().amax(dim=(1, 2))
h, size = torch.empty(6, 300, 300), torch.zeros(6)
submission._stage_input(a, h, size)
assert torch.equal(size, largest)              # every column staged
h, size = torch.empty(6, 300, 300), torch.zeros(6)
submission._stage_input(a, h, size, col_end=32)
assert torch.equal(size, largest)              # 32 staged, the others read for the tiny candidates
submission._lift(h, size, inverse=False, col_end=32)
exponents = [1 - int(torch.frexp(x).exponent) for x in largest]
factors = torch.tensor([2.0 ** k if b in (0, 2, 5) else 1.0 for b, k in enumerate(exponents)])
assert torch.equal(h[:, :, :32], a[:, :, :32] * factors[:, None, None])
print("lift ok")
"""


RUNTIME_LOOP_PROBE = """
import torch, triton, triton.language as tl

@triton.jit
def _count(x_ptr, n):
    for i in range(1, n):
        tl.store(x_ptr + i, i)

x = torch.zeros(3)
_count[(1,)](x, 3)
print("loops ok" if x.tolist() == [0.0, 1.0, 2.0] else "loops wrong")
"""


def _skip_without_runtime_loops():
    probe = _run_interpreted(RUNTIME_LOOP_PROBE)
    if "loops ok" not in probe.stdout:      # Triton 3.6's interpreter under NumPy 2 (int() of a 1-element array)
        pytest.skip("this Triton's interpreter cannot loop to run-time bounds; "
                    "tests/test_kernels.py runs these kernels on a GPU")


def test_trailing_update_kernels_index_the_right_tiles():
    _skip_without_runtime_loops()
    result = _run_interpreted(TRAILING_CHECK)
    assert result.returncode == 0 and "trailing ok" in result.stdout, result.stderr[-3000:]


def test_stage_and_lift_kernels():
    _skip_without_runtime_loops()
    result = _run_interpreted(LIFT_CHECK)
    assert result.returncode == 0 and "lift ok" in result.stdout, result.stderr[-3000:]


# ---------------------------------------------------------------------------
# GPU: views, devices, batches past the grid limit
# ---------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("n", [32, 176, 300])       # 176: an eager square plan, whose kernel reads contiguous inputs
def test_non_contiguous_and_transposed_views(n):
    base = reference.generate_input(6, n, 1, 31, "dense")
    views = {"transposed": base.transpose(-1, -2), "strided": base[::2], "sliced": base[:, 1:, 1:]}
    for name, view in views.items():
        assert not view.is_contiguous(), name
        h, tau = submission.custom_kernel(view)
        ref_h, ref_tau = submission.custom_kernel(view.contiguous())
        assert torch.equal(h, ref_h) and torch.equal(tau, ref_tau), name
        assert_factors(view.contiguous(), (h, tau))


@pytest.mark.gpu
def test_small_kernel_relaunch_follows_alignment_and_strides():
    # after the first call of an n, the compiled kernel is launched directly: a kernel compiled for
    # a 16-byte aligned input would fault (or read wrong data) on a shifted one
    n = 20
    flat = torch.randn(4 * n * n + 1, device="cuda")
    aligned, shifted = flat[:-1].view(4, n, n), flat[1:].view(4, n, n)
    for name, x in [("aligned", aligned), ("shifted", shifted), ("transposed", aligned.transpose(-1, -2)),
                    ("aligned again", aligned), ("shifted again", shifted)]:
        h, tau = submission.custom_kernel(x)
        ref_h, ref_tau = submission.custom_kernel(x.contiguous())
        assert torch.equal(h, ref_h) and torch.equal(tau, ref_tau), name
        assert_factors(x.contiguous(), (h, tau))


@pytest.mark.gpu
@pytest.mark.skipif(not triton.__version__.startswith(submission.SMALL_DIRECT_TRITON),
                    reason="the small kernel's launcher C entry is only called on known Triton releases")
def test_small_kernel_relaunches_through_the_launchers_c_entry():
    # on the releases whose launcher's C entry `_small_qr` knows, every compiled small kernel is relaunched
    # through it (a renamed launcher attribute or a scratch buffer would silently fall back to the wrapper)
    for n in (7, 24):
        x = torch.randn(3, n, n, device="cuda")
        first = submission.custom_kernel(x)
        again = submission.custom_kernel(x)
        assert torch.equal(first[0], again[0]) and torch.equal(first[1], again[1])
        launches = [launch for key, launch in submission._SMALL_LAUNCHES.items() if key[1] == n]
        assert launches and all(direct for _, direct, *_ in launches), n


@pytest.mark.gpu
def test_blocked_relaunches_follow_the_inputs_alignment(monkeypatch):
    # after a key's first launch the blocked path's Triton kernels are relaunched directly (`_launch`); the
    # first update of this plan reads a contiguous input in place, so a 4-byte shifted input needs its own
    # kernel (compiled without the 16-byte alignment), and either input relaunches the one compiled for it
    monkeypatch.setattr(submission, "EAGER_MIN_BYTES", 0)
    batch, n = 640, 300             # a first pair whose two updates are fused while 4 x SMs <= 640 programs
    matrices = reference.generate_input(batch, n, 1, 79, "dense")
    f = submission.Factorization(batch, n, matrices.device)
    assert f.reads_input
    shifted = matrices.new_empty(batch * n * n + 1)[1:].view(batch, n, n)
    shifted.copy_(matrices)
    staged = f(matrices.transpose(-1, -2).contiguous().transpose(-1, -2))     # not contiguous: all staged
    for name, x in [("aligned", matrices), ("shifted", shifted), ("aligned again", matrices),
                    ("shifted again", shifted)]:
        h, tau = f(x)
        assert torch.equal(h, staged[0]) and torch.equal(tau, staged[1]), name
    updates = [key for key in submission._TRITON_LAUNCHES if key[0] is submission._wy_update_kernel]
    assert any((torch.float32, False) in key for key in updates)        # the shifted input's own kernel
    assert_factors(matrices, staged)


@pytest.mark.gpu
def test_square_kernel_reads_any_contiguous_input_in_place():
    # an eager square plan passes the input's address to the kernel: a 4-byte shifted start, an input that
    # requires grad and a second call on the same input all read the same values, and none is written
    n = 176
    matrices = reference.generate_input(3, n, 1, 39, "dense")
    flat = torch.cat([matrices.flatten(), matrices.new_ones(1)])
    aligned, shifted = flat[:-1].view(3, n, n), flat[1:].view(3, n, n)
    original = flat.clone()
    grad = aligned.clone().requires_grad_(True)
    for name, x in [("aligned", aligned), ("shifted", shifted), ("requires grad", grad), ("aligned again", aligned)]:
        h, tau = submission.custom_kernel(x)
        ref_h, ref_tau = submission.custom_kernel(x.detach().transpose(-1, -2).contiguous().transpose(-1, -2))
        assert torch.equal(h, ref_h) and torch.equal(tau, ref_tau), name
        assert_factors(x.detach(), (h, tau))
    torch.cuda.synchronize()
    assert torch.equal(flat, original)


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs a second CUDA device")
def test_second_device():
    a = reference.generate_input(4, 300, 1, 37, "dense").to("cuda:1")
    h, tau = submission.custom_kernel(a)
    assert h.device == a.device and tau.device == a.device
    assert_factors(a, (h, tau))


@pytest.mark.gpu
def test_batches_past_the_grid_limit_give_each_chunks_own_factors(monkeypatch):
    # with the grid's batch limit lowered to 4, a batch of 10 on the blocked path goes in chunks of 4, 4
    # and 2: bit for bit what the three chunks give as calls of their own
    a = reference.generate_input(10, 300, 1, 71, "dense")
    expected = [submission.custom_kernel(a[lo:lo + 4]) for lo in (0, 4, 8)]
    monkeypatch.setattr(submission, "GRID_MAX_BATCH", 4)
    h, tau = submission.custom_kernel(a)
    assert torch.equal(h, torch.cat([part[0] for part in expected]))
    assert torch.equal(tau, torch.cat([part[1] for part in expected]))
    assert_factors(a, (h, tau))


# ---------------------------------------------------------------------------
# GPU: autograd, inference mode, random streams, the cache's lifetimes
# ---------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("batch,n,eager_bytes", [(3, 100, None), (3, 176, None), (3, 300, None), (480, 300, 0)],
                         ids=["square-graph", "square-eager", "blocked-graph", "blocked-eager"])
def test_a_first_call_in_inference_mode_leaves_the_shape_usable_outside_it(batch, n, eager_bytes, monkeypatch):
    # a shape's buffers are built by its first call; built as inference tensors, later calls outside
    # inference mode could not write them
    if eager_bytes is not None:
        monkeypatch.setattr(submission, "EAGER_MIN_BYTES", eager_bytes)
    a = reference.generate_input(batch, n, 1, 73, "dense")
    with submission._FACTORIZATIONS_LOCK:
        submission._FACTORIZATIONS.pop((a.device.index, batch, n), None)
    with torch.inference_mode():
        first = submission.custom_kernel(a)
    later = submission.custom_kernel(a)
    assert torch.equal(first[0], later[0]) and torch.equal(first[1], later[1])
    assert_factors(a, later)


@pytest.mark.gpu
@pytest.mark.parametrize("n", [100, 300])
def test_an_input_that_requires_grad_leaves_no_history(n):
    # a strided input is copied into a square graph plan's buffer: that copy must not join autograd
    a = reference.generate_input(3, n, 1, 79, "dense")
    x = a.transpose(-1, -2).contiguous().transpose(-1, -2).requires_grad_(True)
    expected = submission.custom_kernel(x.detach())
    for _ in range(2):
        h, tau = submission.custom_kernel(x)
        assert not h.requires_grad and not tau.requires_grad
        assert torch.equal(h, expected[0]) and torch.equal(tau, expected[1])
    f = submission._FACTORIZATIONS[(a.device.index, 3, n)]
    assert f.eager or (f.h.grad_fn is None and not f.h.requires_grad)


@pytest.mark.gpu
def test_precompile_leaves_the_callers_random_stream_alone(monkeypatch):
    monkeypatch.setattr(submission, "custom_kernel", lambda a: None)
    torch.cuda.manual_seed(7)
    expected = torch.randn(8, device="cuda")
    torch.cuda.manual_seed(7)
    submission.precompile(((2, 40),))
    assert torch.equal(torch.randn(8, device="cuda"), expected)


@pytest.mark.gpu
def test_a_new_shapes_first_run_orders_the_calls_after_it(monkeypatch):
    # the first run of a new Factorization uses the buffers every call uses: `done` is recorded after it,
    # so a first call from another stream waits. Here the first run queues behind a ~1 s sleep, so its
    # event is still pending when the constructor returns (an eager plan: no capture synchronizes)
    monkeypatch.setattr(submission, "EAGER_MIN_BYTES", 0)
    a = reference.generate_input(480, 300, 1, 83, "dense")
    submission.custom_kernel(a)                     # compiled
    torch.cuda.synchronize()
    torch.cuda._sleep(2_000_000_000)
    f = submission.Factorization(480, 300, a.device)
    assert f.eager and not f.done.query()
    other = torch.cuda.Stream()
    with torch.cuda.stream(other):
        h, tau = f(a)
    torch.cuda.synchronize()
    assert_factors(a, (h, tau))


@pytest.mark.gpu
def test_a_dropped_shape_still_serves_a_thread_that_holds_it(monkeypatch):
    # another thread may hold a Factorization that the cache drops: its calls finish on the GPU before
    # they return, so its buffers are idle whenever they are freed
    a = reference.generate_input(3, 300, 1, 89, "dense")
    f = submission._factorization(3, 300, a.device)
    expected = f(a)
    monkeypatch.setattr(submission, "MAX_CACHED_SHAPES", 1)
    submission._factorization(3, 301, a.device)
    assert f.retired and (a.device.index, 3, 300) not in submission._FACTORIZATIONS
    h, tau = f(a)
    assert f.done.query()
    assert torch.equal(h, expected[0]) and torch.equal(tau, expected[1])


# ---------------------------------------------------------------------------
# GPU: values
# ---------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("batch,n", [(6, 32), (6, 200), (70, 300), (6, 600)],
                         ids=["small-32", "square-200", "one-cta-panels", "cluster-panels"])
def test_nan_and_inf_stay_in_their_matrix(batch, n):
    clean = reference.generate_input(batch, n, 1, 41, "dense")
    dirty = clean.clone()
    dirty[1, n // 2, n // 3] = float("nan")
    dirty[3, 0, n - 1] = float("inf")
    dirty[4, n - 1, 0] = -float("inf")
    h, tau = submission.custom_kernel(dirty)
    torch.cuda.synchronize()                      # returns at all: nothing hangs on NaN
    ref_h, ref_tau = submission.custom_kernel(clean)
    good = [b for b in range(batch) if b not in (1, 3, 4)]
    assert torch.equal(h[good], ref_h[good]) and torch.equal(tau[good], ref_tau[good])
    for b in (1, 3, 4):
        assert not bool(torch.isfinite(h[b]).all()), b


@pytest.mark.gpu
@pytest.mark.parametrize("n", [32, 200, 512, 1100])
def test_subnormal_entries(n):
    # |a| ~ 1e-40 is below float32's smallest normal (1.2e-38): nothing may flush them to zero.
    # Subnormals carry ~16 bits, so the gates are held, not this project's margin.
    a = reference.generate_input(3, n, 0, 43, "dense") * 1e-40
    assert bool((a[a != 0].abs() < torch.finfo(torch.float32).tiny).all())
    assert_passes(a, submission.custom_kernel(a))


@pytest.mark.gpu
@pytest.mark.parametrize("batch,n", [(6, 600), (70, 300)], ids=["cluster-panels", "one-cta-panels"])
def test_nearly_repeated_columns(batch, n):
    # every other column nearly repeats the one before: each such column's norm cancels after a reflection
    a = reference.generate_input(batch, n, 1, 45, "dense")
    a[:, :, 1::2] = a[:, :, 0::2] + 1e-2 * a[:, :, 1::2]
    assert_factors(a, submission.custom_kernel(a))


@pytest.mark.gpu
@pytest.mark.parametrize("n", [300, 1100])
def test_tiny_and_normal_matrices_in_one_batch(n):
    a = reference.generate_input(4, n, 1, 44, "dense")
    a *= torch.tensor([1.0, 1e-25, 1e-40, 1e-19], device=a.device)[:, None, None]
    h, tau = submission.custom_kernel(a)
    for b in range(4):
        assert_passes(a[b:b + 1], (h[b:b + 1], tau[b:b + 1]))


# ---------------------------------------------------------------------------
# GPU: concurrency
# ---------------------------------------------------------------------------
@pytest.mark.gpu
def test_first_call_while_another_thread_uses_the_gpu():
    # the first call of a shape captures a CUDA graph; another thread's work must not break it
    stop = threading.Event()
    errors = []

    def busy():
        try:
            x = torch.randn((512, 512), device="cuda")
            while not stop.is_set():
                x = (x @ x).tanh_()
                torch.empty(1 << 20, device="cuda")
                torch.cuda.current_stream().synchronize()
        except Exception as error:           # reported below, in the test's own thread
            errors.append(error)

    thread = threading.Thread(target=busy)
    thread.start()
    try:
        for n in (40, 264, 520):
            a = reference.generate_input(3, n, 1, 47, "dense")
            assert_factors(a, submission.custom_kernel(a))
    finally:
        stop.set()
        thread.join()
    assert not errors, errors


@pytest.mark.gpu
@pytest.mark.filterwarnings("ignore:The CUDA Graph is empty")     # the simulated failure captures nothing
def test_a_broken_capture_falls_back_to_eager_launches():
    # a device-wide synchronize in another thread breaks any capture (CUDA forbids it); simulated here
    a = reference.generate_input(3, 300, 1, 61, "dense")
    expected = submission.custom_kernel(a)
    with submission._FACTORIZATIONS_LOCK:
        submission._FACTORIZATIONS.pop((a.device.index, 3, 300), None)
    launch = submission.Factorization.launch

    def launch_unless_capturing(f, *args, **kwargs):
        if torch.cuda.is_current_stream_capturing():
            raise RuntimeError("capture broken")
        launch(f, *args, **kwargs)

    stream = torch.cuda.current_stream()
    with mock.patch.object(submission.Factorization, "launch", launch_unless_capturing):
        for _ in range(submission.CAPTURE_ATTEMPTS + 1):
            h, tau = submission.custom_kernel(a)
            assert torch.equal(h, expected[0]) and torch.equal(tau, expected[1])
            assert torch.cuda.current_stream() == stream
    f = submission._FACTORIZATIONS[(a.device.index, 3, 300)]
    assert f.graph is None and f.captures_left == 0
    h, tau = submission.custom_kernel(a)
    assert torch.equal(h, expected[0]) and torch.equal(tau, expected[1])


@pytest.mark.gpu
def test_small_launches_tell_apart_which_stride_is_wide():
    # a stride >= 2^31 reaches the kernel as i64: wide strides in different places need different kernels
    storage = torch.randn(2 ** 31 + 8, device="cuda")          # 8 GiB: a row 2^31 floats from the first
    wide_batch = storage.as_strided((1, 2, 2), (2 ** 31, 2, 1))
    wide_rows = storage.as_strided((1, 2, 2), (4, 2 ** 31, 1))
    for view in (wide_batch, wide_rows):
        assert_factors(view, submission.custom_kernel(view))


# ---------------------------------------------------------------------------
# GPU: memory
# ---------------------------------------------------------------------------
PEAK_LIMIT = 3.0          # peak extra device memory of a call, in input sizes


@pytest.mark.gpu
@pytest.mark.parametrize("batch,n", [(20, 32), (40, 176), (1, 233), (1, 300), (64, 512), (4, 1024), (1, 2048)])
def test_peak_memory_of_first_and_later_calls(batch, n):
    a = reference.generate_input(batch, n, 1, 53, "dense")
    with submission._FACTORIZATIONS_LOCK:
        submission._FACTORIZATIONS.pop((a.device.index, batch, n), None)
    peaks = []
    for _ in range(2):                        # first call builds the shape's buffers and graph
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        out = submission.custom_kernel(a)
        torch.cuda.synchronize()
        peaks.append((torch.cuda.max_memory_allocated() - before) / a.nbytes)
        del out
    assert max(peaks) <= PEAK_LIMIT, peaks


@pytest.mark.gpu
@pytest.mark.parametrize("batch,n", [(20, 32), (40, 352)])
def test_no_memory_growth_over_a_thousand_calls(batch, n):
    a = reference.generate_input(batch, n, 1, 59, "dense")
    submission.custom_kernel(a)
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    for _ in range(1000):
        out = submission.custom_kernel(a)
    del out
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() == before


@pytest.mark.gpu
def test_cached_shapes_are_bounded():
    for n in range(40, 40 + 2 * submission.MAX_CACHED_SHAPES):
        submission.custom_kernel(torch.randn((2, n, n), device="cuda"))
    assert len(submission._FACTORIZATIONS) <= submission.MAX_CACHED_SHAPES
    assert sum(f.nbytes for f in submission._FACTORIZATIONS.values()) <= submission.MAX_CACHED_BYTES
