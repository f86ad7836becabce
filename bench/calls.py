"""Host time and GPU time of one call, and of its parts.

    python bench/calls.py [--shapes 20x32,40x176] [--calls 150] [--profile 20]

Host time: the mean over --calls calls issued while the GPU is still busy
with a long sleep, so no call waits for the device (--calls stays well under
the ~1000 launches CUDA queues before the host blocks). GPU time: the mean
over the same calls queued behind the sleep between CUDA events, so the GPU
runs them back to back without waiting for the host (L2 not flushed: the
inputs are small). A SPEC §5 time per call is about the larger of the two.
Parts: the input checks and device guard of
every call; for n <= SMALL_MAX_N the one Triton launch and its output
allocation; for shapes with a CUDA graph the copy in, one direct launch
of the compiled CuTe kernel and the two output allocations, then the
graph launched on other buffers (`RetargetedGraph`: outputs allocated
once, and the input where the plan `reads_input`) or, where it is not
retargeted, the graph replay, the two copies out, and the replay with the
copy before it and with the copies after it; for
eagerly launched blocked plans the CuTe views of a fresh output, the first
panel's launch and its argument binding alone (the CuTe JIT executor's
`generate_execution_args`), the first step's updates, the staging and
the lift. With --profile K, cProfile's K functions of most
own time over the calls (host side, the GPU kept busy).
"retargeted launch", "graph replay", "replay, copies" and "cute launch" factor h in place again
and again, that is the previous factorization's output rather than an input,
and ran ~20 us faster at 40x176 than "copy, replay" (131 vs 153.5 us) or an
eager call on the input (149 us): read the kernel's time on inputs from the
rows that copy the input in.
"""
import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import submission  # noqa: E402
import utils  # noqa: E402

SLEEP_CYCLES = 2_000_000_000      # ~1 s of GPU sleep, longer than the host loop


def _host_us(fn, calls: int) -> float:
    fn()
    torch.cuda.synchronize()
    torch.cuda._sleep(SLEEP_CYCLES)
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    host = (time.perf_counter() - t0) / calls * 1e6
    torch.cuda.synchronize()
    return host


def _gpu_us(fn, calls: int) -> float:
    fn()
    torch.cuda.synchronize()
    torch.cuda._sleep(SLEEP_CYCLES)
    watch = utils.Stopwatch(torch.device("cuda"))
    watch.start()
    for _ in range(calls):
        fn()
    watch.stop()
    return watch.elapsed_ns() / calls / 1e3


def _host_profile(fn, calls: int, top: int) -> None:
    fn()
    torch.cuda.synchronize()
    torch.cuda._sleep(SLEEP_CYCLES)
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(calls):
        fn()
    profile.disable()
    torch.cuda.synchronize()
    pstats.Stats(profile).sort_stats("tottime").print_stats(top)


def _eager_parts(f, a: torch.Tensor) -> dict:
    """The host-side parts of an eager blocked call on a, each factoring or updating a fresh output."""
    batch, n, _ = a.shape
    h, tau = torch.empty_like(a), a.new_empty((batch, n))
    f.stage(a, h)
    stream = submission.cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    cute_args = f._cute_args(h, tau)
    first = f.steps[0]
    update = first.rest or first.next
    width = 2 * f.plan.width if first.pair else f.plan.width
    parts = {
        "cute views": lambda: f._cute_args(h, tau),
        "panel launch": lambda: f.panels[0](*cute_args[0], submission.cutlass.Int32(0), stream),
        "panel binding": lambda: f.panels[0].generate_execution_args(*cute_args[0], submission.cutlass.Int32(0),
                                                                      stream),
        "update": lambda: submission._apply_block_reflector(h, f.y_rest, f.t_pair[0] if first.pair else f.t[0],
                                                            0, width, update),
        "stage": lambda: f.stage(a, h),
        "lift": lambda: submission._lift(h, f.size, inverse=True),
    }
    return parts


def _device_guard(device: torch.device) -> None:
    with torch.cuda.device(device):
        pass


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="20x32,40x176")
    parser.add_argument("--calls", type=int, default=150)
    parser.add_argument("--profile", type=int, default=0, metavar="K",
                        help="also print cProfile's K functions of most own time over the calls")
    args = parser.parse_args(argv)

    print(f"{'shape':>8s} {'part':>14s} {'host us':>9s} {'gpu us':>9s}")
    for shape in args.shapes.split(","):
        batch, n = map(int, shape.split("x"))
        a = torch.randn((batch, n, n), device="cuda")
        parts = {"call": lambda: submission.custom_kernel(a),
                 "input checks": lambda: submission._fast_path_ok(a),
                 "device guard": lambda: _device_guard(a.device)}
        if n <= submission.SMALL_MAX_N:
            parts |= {
                "small launch": lambda: submission._small_qr(a),
                "empty": lambda: torch.empty(batch * (n * n + n), device=a.device),
            }
        elif (f := submission._factorization(batch, n, a.device)).graph is not None:    # eager plans: the call only
            stream = submission.cuda.CUstream(torch.cuda.current_stream().cuda_stream)
            parts |= {
                "copy in": lambda: f.h.copy_(a),
                "cute launch": lambda: f.panels[0](*f.cute_args[0], submission.cutlass.Int32(0), stream),
                "empty x2": lambda: (torch.empty_like(a), torch.empty((batch, n), device=a.device)),
            }
            if f.retargeted is not None:        # its graph may read an input through a freed stand-in: not replayed
                buffers = (torch.empty_like(a), torch.empty((batch, n), device=a.device))
                buffers += (a,) if f.reads_input else ()
                parts["retargeted launch"] = lambda: f.retargeted.launch(buffers, torch.cuda.current_stream())
            else:
                parts |= {
                    "graph replay": f.graph.replay,
                    "copies out": lambda: (f.h.clone(), f.tau.clone()),
                    "copy, replay": lambda: (f.h.copy_(a), f.graph.replay()),
                    "replay, copies": lambda: (f.graph.replay(), f.h.clone(), f.tau.clone()),
                }
        elif not f.plan.square:
            parts |= _eager_parts(f, a)
        for name, fn in parts.items():
            print(f"{shape:>8s} {name:>14s} {_host_us(fn, args.calls):9.1f} {_gpu_us(fn, args.calls):9.1f}",
                  flush=True)
        if args.profile:
            _host_profile(parts["call"], args.calls, args.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
