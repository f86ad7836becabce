"""Types shared by the submission, the reference and the harness (qr_v2)."""
from typing import TypedDict

import torch

# A batch of square matrices, `batch x n x n`, float32, contiguous.
input_t = torch.Tensor
# `(H, tau)` in the `torch.geqrf` compact-Householder convention.
output_t = tuple[torch.Tensor, torch.Tensor]


class _SpecShape(TypedDict):
    batch: int
    n: int
    cond: int
    seed: int


class TestSpec(_SpecShape, total=False):
    """One case of task.yml: the keyword arguments of `reference.generate_input`."""

    case: str
