"""Compare the CuTe kernels' PTX of the working tree with another revision's, without a GPU.

    python bench/ptx_identity.py --base HEAD~1 [--plans "(False,32,256,4,512,True,False);..."]

Each plan (a `submission.Plan` as a tuple) is compiled for sm_90a by the CUTLASS DSL
in a process of its own, from the working tree's `submission.py` and from the
one at `--base` (`git show`), with `CUTE_DSL_KEEP_PTX` on; the compiled
kernel's load then fails without a GPU, after its PTX is written. Prints, per
plan, whether the two PTX files are byte-identical: the check that a change
meant to leave the kernels alone (names, constants, comments) did.
"""
import argparse
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# a cluster panel, one-CTA panels (resident, shared SMs, a pair's second, narrow), a cluster pair's second
# panel, and square plans (one CTA, a blocked CTA, two copies)
DEFAULT_PLANS = ("(False,32,256,4,512,True,False);(False,32,1024,1,512,True,False);(False,32,512,1,256,False,False);"
                 "(False,32,512,1,256,False,True);(False,32,128,2,512,True,True);(False,32,288,1,128,False,False);"
                 "(True,64,64,1,512,True,False);(True,176,176,1,512,True,False);(True,176,176,2,512,True,False)")

COMPILE = """
import os, sys
sys.path.insert(0, sys.argv[1])
import torch, submission as s
plan = s.Plan(*eval(sys.argv[2]))
batch, n = 4, 1024
w = plan.width if plan.square else s.PANEL_WIDTH
t = 2 * w if plan.merges else w
views = [s._cute_tensor(x) for x in (torch.zeros(batch, n, n), torch.zeros(batch, n, n), torch.zeros(batch, n),
                                     torch.zeros(batch, t, t), torch.zeros(batch, plan.cluster, s.scratch_slots(w)))]
try:
    s._panel_kernel(plan, (*views, s.cutlass.Int32(0), s.cuda.CUstream(0)))
except Exception as error:       # the load after compilation, without a GPU
    print(type(error).__name__)
"""


def compile_ptx(source: Path, plan: str, out: Path) -> bytes | None:
    """The PTX of `plan`'s kernel compiled from the submission in `source`; None if none was written."""
    out.mkdir(parents=True)
    env = dict(os.environ, CUTE_DSL_ARCH="sm_90a", CUTE_DSL_KEEP_PTX="1", CUTE_DSL_DUMP_DIR=str(out),
               QR_SKIP_PRECOMPILE="1", CUDA_VISIBLE_DEVICES="")
    subprocess.run([sys.executable, "-c", COMPILE, str(source), plan], env=env, capture_output=True, timeout=600)
    files = list(out.glob("*.ptx"))
    return files[0].read_bytes() if len(files) == 1 else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="the git revision to compare with")
    parser.add_argument("--plans", default=DEFAULT_PLANS, help="Plan tuples, separated by ';'")
    args = parser.parse_args()
    plans = args.plans.split(";")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp, "base")
        base.mkdir()
        for name in ("submission.py", "task.py"):
            text = subprocess.run(["git", "show", f"{args.base}:{name}"], cwd=ROOT, check=True,
                                  capture_output=True).stdout
            (base / name).write_bytes(text)
        jobs = [(source, plan, Path(tmp, f"{tag}-{i}")) for i, plan in enumerate(plans)
                for tag, source in (("base", base), ("tree", ROOT))]
        with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
            ptx = list(pool.map(lambda job: compile_ptx(*job), jobs))
    same = True
    for i, plan in enumerate(plans):
        old, new = ptx[2 * i], ptx[2 * i + 1]
        verdict = "no PTX" if old is None or new is None else "identical" if old == new else "DIFFERENT"
        same &= verdict == "identical"
        print(f"{plan:42} {verdict}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
