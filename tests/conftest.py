"""Shared pytest set-up: the repository root on `sys.path` and the `gpu` marker.

The task's modules (`task`, `reference`, `submission`, ...) sit at the
repository root, side by side as the leaderboard runner lays them out, so the
root goes on `sys.path` whether or not the project is installed.

Tests marked `gpu` need a CUDA device; without one they are skipped, never
failed.
"""
import sys
from pathlib import Path

import pytest
import torch

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a CUDA device; skipped when torch.cuda.is_available() is False")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA device (torch.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)
