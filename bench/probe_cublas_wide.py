"""The wide update's products on cuBLAS: the bar a pipelined tensor-core GEMM sets (GPU).

    python bench/probe_cublas_wide.py [--shapes 640x512,60x1024] [--reps 7]

`probe_wide_update.py` priced two-level blocking's wide update (the outer
block's reflector, V: n x W, T: W x W, applied to the m = n - W columns past
it as Y = V^T C, Z = T^T Y, C -= V Z) with Triton kernels, and found them
short of the rate their bytes allow by ~1.8x: each k step's chain, not DRAM
or the tensor cores, sets their pace. Before a pipelined CuTe DSL GEMM is
built for it, this probe asks what such a GEMM reaches at these batched
shapes: cuBLAS's (`torch.bmm` / `torch.baddbmm` with bf16 operands and a
float32 result, `out_dtype`), each 3xBF16 product as one GEMM of thrice the
depth over planes laid end to end along k,

    a b ~= [a_hi, a_hi, a_lo] [b_hi; b_lo; b_hi]      (hi = bf16(x), lo = bf16(x - hi))

with the planes made beforehand by `_split_kernel` (timed on its own: in a
real schedule the panels would write V's, and the products' epilogues Y's
and Z's; C's split is the one a fused kernel would do on chip). Beside them,
in the same run: probe_wide_update's best Triton form (V and Z as planes)
and main's pair updates on the columns [W, n), which the wide update would
take over. Each launch alone, L2 flushed, queued behind a GPU sleep, the
median of `reps`; the cuBLAS update is checked against float64.
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
import triton.language as tl  # noqa: E402

from probe_update import median_us, random_batches  # noqa: E402
from probe_wide_update import PAIR, bf16_planes, pair_update, planes_of, reflectors_of, wide_update  # noqa: E402

TRITON_PLANES = (128, 128, 64, 8, 3, 3)      # probe_wide_update's best wide configuration
SPLIT_BLOCK = (32, 128)                      # rows x columns of a `_split_kernel` tile


@triton.jit
def _split_kernel(x_ptr, out_ptr, rows, cols, x_batch, x_row, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """out[b] := [hi; lo; hi] (3 rows x cols, bf16) of x[b] (rows x cols, float32, row stride x_row)."""
    b = tl.program_id(2)
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    j = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (r < rows)[:, None] & (j < cols)[None, :]
    x = tl.load(x_ptr + b.to(tl.int64) * x_batch + r[:, None] * x_row + j[None, :], mask=mask)
    hi = x.to(tl.bfloat16)
    lo = (x - hi.to(tl.float32)).to(tl.bfloat16)
    out = out_ptr + b.to(tl.int64) * 3 * rows * cols + r[:, None] * cols + j[None, :]
    tl.store(out, hi, mask=mask)
    tl.store(out + rows * cols, lo, mask=mask)
    tl.store(out + 2 * rows * cols, hi, mask=mask)


def split_stacked(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """out (batch, 3 rows, cols) := x's planes stacked along rows, [hi; lo; hi], x (batch, rows, cols) with unit
    column stride; one launch."""
    batch, rows, cols = x.shape
    grid = (triton.cdiv(rows, SPLIT_BLOCK[0]), triton.cdiv(cols, SPLIT_BLOCK[1]), batch)
    _split_kernel[grid](x, out, rows, cols, x.stride(0), x.stride(1), BLOCK_R=SPLIT_BLOCK[0], BLOCK_C=SPLIT_BLOCK[1])
    return out


class CublasWide:
    """The wide update at column c (W = t's width) on columns [c + W, n) as three cuBLAS GEMMs over planes.

    Buffers are made once: V's planes in both layouts (along k for the project, [hi; hi; lo] rows; along k
    for the apply, [hi, hi, lo] columns), T's ([hi; hi; lo]), and room for C's, Y's and Z's ([hi; lo; hi]).
    """

    def __init__(self, h: torch.Tensor, t: torch.Tensor, c: int):
        batch, n, width = h.shape[0], h.shape[-1], t.shape[-1]
        self.h, self.c, self.width = h, c, width
        rows, m = n - c, n - c - width
        v_hi, v_lo = bf16_planes(reflectors_of(h, c, width)[:, c:])
        t_hi, t_lo = bf16_planes(t)
        self.v_along_rows = torch.cat([v_hi, v_hi, v_lo], dim=1)     # (batch, 3 rows, W)
        self.v_along_cols = torch.cat([v_hi, v_hi, v_lo], dim=2)     # (batch, rows, 3 W)
        self.t_along_rows = torch.cat([t_hi, t_hi, t_lo], dim=1)     # (batch, 3 W, W)
        self.c_planes = torch.empty(batch, 3 * rows, m, dtype=torch.bfloat16, device=h.device)
        self.y_planes = torch.empty(batch, 3 * width, m, dtype=torch.bfloat16, device=h.device)
        self.z_planes = torch.empty_like(self.y_planes)

    def trailing(self) -> torch.Tensor:
        """C: the view of h's rows [c, n) and columns [c + W, n)."""
        return self.h[:, self.c:, self.c + self.width:]

    def split_c(self):
        return split_stacked(self.trailing(), self.c_planes)

    def project(self) -> torch.Tensor:
        return torch.bmm(self.v_along_rows.mT, self.c_planes, out_dtype=torch.float32)

    def times_t(self, y: torch.Tensor) -> torch.Tensor:
        return torch.bmm(self.t_along_rows.mT, split_stacked(y, self.y_planes), out_dtype=torch.float32)

    def apply(self, z_planes: torch.Tensor, c: torch.Tensor | None = None) -> torch.Tensor:
        """c (default: C in place in h) -= V Z by one baddbmm over the planes."""
        c = self.trailing() if c is None else c
        return torch.baddbmm(c, self.v_along_cols, z_planes, beta=1, alpha=-1, out_dtype=torch.float32, out=c)

    def update(self):
        """All of it: C's split, the project, T^T Y with Y's split, Z's split, the apply."""
        self.split_c()
        z = self.times_t(self.project())
        self.apply(split_stacked(z, self.z_planes))


def check(h, t, c: int, matrices: int = 4) -> float:
    """Largest difference of CublasWide.update from float64's on the first matrices, relative to the update."""
    width, n = t.shape[-1], h.shape[-1]
    sub = h[:matrices].clone()
    before = sub.double()
    CublasWide(sub, t[:matrices], c).update()
    v = reflectors_of(before, c, width)
    cols = slice(c + width, n)
    delta = v @ t[:matrices].double().transpose(1, 2) @ v.transpose(1, 2) @ before[:, :, cols]
    return ((sub[:, :, cols].double() - (before[:, :, cols] - delta)).abs().max() / delta.abs().max()).item()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="640x512,60x1024")
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args(argv)
    device = torch.device("cuda")
    print(f"{torch.cuda.get_device_name()}; torch {torch.__version__}; median of {args.reps}", flush=True)
    for batch, n, pristine, h in random_batches(args.shapes, device):
        width, c = n // 2, 0
        m = n - c - width
        t = (torch.randn(batch, width, width, device=device) / width ** 0.5).triu()
        t_pair = (torch.randn(batch, PAIR, PAIR, device=device) / PAIR ** 0.5).triu()

        def restore():
            h.copy_(pristine)

        def timed(launch) -> float:
            launch()            # compiles, picks cuBLAS's algorithm
            torch.cuda.synchronize()
            return median_us(launch, restore, args.reps, device, queued=True)

        print(f"--- {batch}x{n}: W {width} at c {c}, columns [{c + width}, {n})", flush=True)
        try:
            print(f"cuBLAS update vs float64: {check(h, t, c):.1e} of the update", flush=True)
        except RuntimeError as error:
            print(f"cuBLAS update failed: {str(error).splitlines()[0]}", flush=True)
        wide = CublasWide(h, t, c)
        y = wide.project()
        z = wide.times_t(y)
        z_planes = split_stacked(z, wide.z_planes).clone()
        contiguous_c = wide.trailing().contiguous()
        cublas = {
            "split C (3 planes)": wide.split_c,
            "project": wide.project,
            "split Y + T^T Y": lambda: wide.times_t(y),
            "split Z": lambda: split_stacked(z, wide.z_planes),
            "apply (C in h)": lambda: wide.apply(z_planes),
            "apply (C contiguous)": lambda: wide.apply(z_planes, contiguous_c),
            "whole update": wide.update,
        }
        for name, launch in cublas.items():
            try:
                print(f"cuBLAS  {name:22s} {timed(launch):9.1f} us", flush=True)
            except RuntimeError as error:           # an operand layout cuBLAS's binding refuses
                print(f"cuBLAS  {name:22s} failed: {str(error).splitlines()[0]}", flush=True)
        del wide, contiguous_c, z_planes

        y_rows = torch.empty(batch * width * n, device=device)
        z_rows = torch.empty_like(y_rows)
        planes = planes_of(h, z_rows, c, width, m)
        for part in ("project", "times_t", "apply"):
            us = timed(lambda p=part: wide_update(h, t, y_rows, z_rows, c, c + width, n, TRITON_PLANES, (p,), planes))
            print(f"Triton  {part:22s} {us:9.1f} us  {TRITON_PLANES}", flush=True)
        del planes, y_rows, z_rows

        to_n = to_w = 0.0
        for pair in range(c, c + width, PAIR):
            to_n += timed(lambda p=pair: pair_update(h, t_pair, p, n))
            to_w += timed(lambda p=pair: pair_update(h, t_pair, p, c + width)) if pair + PAIR < c + width else 0.0
        print(f"pairs at c [{c}, {c + width}): to n {to_n:.1f} us, to {c + width} {to_w:.1f} us: "
              f"{to_n - to_w:.1f} us on the columns [{c + width}, {n})", flush=True)
        del pristine, h
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
