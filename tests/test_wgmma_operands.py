"""Hopper's `pair_update_kernel` compiled here for sm_90a (no GPU): no wgmma's register operand is
overwritten while the wgmma may still read it (bench/check_wgmma_operands.py)."""
import sys

import pytest

import submission
from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "bench"))
import check_wgmma_operands as checker  # noqa: E402


@pytest.mark.skipif(not submission._GLUON_KERNELS,
                    reason="pair_update_kernel is defined with a Triton of ON_CHIP_TRITON")
@pytest.mark.skipif(not (checker.TOOLS / "ptxas").exists() or not (checker.TOOLS / "cuobjdump").exists(),
                    reason="needs the ptxas and cuobjdump bundled with Triton")
@pytest.mark.parametrize("slots,strip,from_input,width", checker.PAIR_UPDATE_BUILDS)
def test_pair_update_holds_wgmma_operands_until_retired(slots, strip, from_input, width, tmp_path):
    ptx = tmp_path / "pair_update.ptx"
    ptx.write_text(checker.pair_update_ptx(slots, strip, from_input, width))
    sass = checker.sass_of(ptx)
    assert sum(1 for _, i in checker.instructions(sass) if i.startswith("HGMMA")) > 0
    assert checker.check(f"{slots} row blocks, strip {strip}", sass) == []
