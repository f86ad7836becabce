"""Kernel-by-kernel GPU time of one warm call, and where the blocked path's panel steps go.

    python bench/trace.py [--shapes 640x512,2x4096] [--out DIR]
    python bench/trace.py --load DIR/trace-2x4096.json

Each shape is called twice (compiles, graph capture), then once under
torch.profiler. The report lists each kernel's count and total time, the
GPU's idle time (no kernel or copy running) by the kernel that ends it, and,
where there are several panels, the panel steps: a step runs from one
panel kernel's start to the next one's, so its time beyond the panel is
what the next panel waits for (the next panel's update, or the previous
trailing update on the side stream that it depends on, and launch gaps).
With --out the Chrome trace of each shape is written there (0.5-2 MB);
--load reports on such a trace again without a GPU.
"""
import argparse
import json
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT_SHAPES = "640x512,60x1024,2x4096"
PANEL_KERNEL = "HouseholderPanel"       # in the CuTe kernels' mangled names
SQUARE_KERNEL = "BlockedSquareQR"       # the square kernel, which ends a blocked plan's call where it fits
GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


def _short_name(name: str) -> str:
    if PANEL_KERNEL in name:
        return "panel (CuTe)"
    return "square (CuTe)" if SQUARE_KERNEL in name else name[:48]


def _gpu_events(trace: dict) -> list[dict]:
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") in GPU_CATEGORIES]
    return sorted(events, key=lambda e: e["ts"])


def report(trace: dict, label: str) -> None:
    """Print the kernel totals and the panel steps of one call's trace (times in us)."""
    events = _gpu_events(trace)
    if not events:
        print(f"{label}: no GPU events in the trace")
        return
    span = max(e["ts"] + e["dur"] for e in events) - events[0]["ts"]
    totals = defaultdict(lambda: [0, 0.0])
    for e in events:
        entry = totals[_short_name(e["name"])]
        entry[0] += 1
        entry[1] += e["dur"]
    print(f"{label}: {len(events)} GPU events over {span:.1f} us")
    for name, (count, total) in sorted(totals.items(), key=lambda item: -item[1][1]):
        print(f"  {count:5d} x  {total:9.1f} us  {name}")

    idle = defaultdict(float)       # GPU time with nothing running, by the kernel that ends it
    busy_until = events[0]["ts"]
    for e in events:
        idle[_short_name(e["name"])] += max(0.0, e["ts"] - busy_until)
        busy_until = max(busy_until, e["ts"] + e["dur"])
    print(f"  idle {sum(idle.values()):.1f} us, before: "
          + ", ".join(f"{name} {gap:.1f}" for name, gap in sorted(idle.items(), key=lambda item: -item[1]) if gap > 0))

    panels = [e for e in events if PANEL_KERNEL in e["name"]]
    if len(panels) < 2:
        return
    steps = [(b["ts"] - a["ts"], a["dur"]) for a, b in zip(panels, panels[1:])]
    beyond = [step - panel for step, panel in steps]
    print(f"  panel steps: {len(steps)}, {sum(s for s, _ in steps):.1f} us in all, of which panels "
          f"{sum(p for _, p in steps):.1f} us; beyond the panel a step: median {statistics.median(beyond):.1f} us, "
          f"first {beyond[0]:.1f}, last {beyond[-1]:.1f}")
    every = max(1, len(steps) // 8)
    for k in range(0, len(steps), every):
        step, panel = steps[k]
        print(f"    step {k:4d}: {step:8.1f} us, panel {panel:7.1f} us")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default=DEFAULT_SHAPES)
    parser.add_argument("--out", type=Path, help="folder for the Chrome traces")
    parser.add_argument("--load", type=Path, help="report on a saved trace instead of running")
    args = parser.parse_args(argv)
    if args.load:
        report(json.loads(args.load.read_text()), args.load.stem)
        return 0

    import torch
    import submission

    folder = args.out or Path(tempfile.mkdtemp())
    folder.mkdir(parents=True, exist_ok=True)
    for shape in args.shapes.split(","):
        batch, n = map(int, shape.split("x"))
        a = torch.randn((batch, n, n), device="cuda")
        for _ in range(2):
            submission.custom_kernel(a)
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            submission.custom_kernel(a)
            torch.cuda.synchronize()
        path = folder / f"trace-{shape}.json"
        prof.export_chrome_trace(str(path))
        report(json.loads(path.read_text()), shape)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
