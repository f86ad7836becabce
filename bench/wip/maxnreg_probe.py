"""One-off: the fused W64 update with V's halves under register caps (3 CTAs an SM from 170 registers)."""
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import torch, triton
import probe_update as pu
import submission

W = 2 * submission.PANEL_WIDTH
for shape in ("640x512", "60x1024"):
    batch, n = map(int, shape.split("x"))
    torch.manual_seed(0)
    pristine = torch.randn(batch, n, n, device="cuda") / n ** 0.5
    h = pristine.clone()
    t = (0.1 * torch.randn(batch, W, W, device="cuda")).triu()
    v = pristine[:, :, :W].tril(-1)
    v[:, range(W), range(W)] = 1.0
    hi = v.to(torch.bfloat16)
    halves = torch.stack([hi, (v - hi.float()).to(torch.bfloat16)])
    for name, use, cap in (("main", False, None), ("halves", True, None), ("halves 168", True, 168),
                           ("halves 128", True, 128), ("main 168", False, 168)):
        source, plane = (halves, halves.stride(0)) if use else (h, 0)
        extra = {} if cap is None else {"maxnreg": cap}
        def launch():
            return submission._wy_update_kernel[(triton.cdiv(n - W, 64), batch)](
                h, t, h, h, source, n, 0, W, n, plane, W=W, BLOCK_M=64, BLOCK_N=64, FROM_INPUT=False,
                HALVES=use, num_warps=4, num_stages=1, **extra)
        k = launch()
        us = pu.median_us(launch, lambda: h.copy_(pristine), 9, torch.device("cuda"))
        print(f"{shape} {name:12s} {us:8.1f} us  {k.n_regs} regs {k.n_spills} spills", flush=True)
