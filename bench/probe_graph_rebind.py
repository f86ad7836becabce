"""A graph shape's CUDA graph replayed straight into fresh outputs, its kernel nodes rebound per call (GPU).

    python bench/probe_graph_rebind.py [--shapes 60x1024,8x2048] [--rounds 5] [--calls 20]

A graph shape's call (`Factorization._queue`) stages the input into the
graph's own h, replays the graph, and clones h and tau out: at 60x1024 the
clones are ~121 us of a 3.16 ms call (`trace-0a162cc.log`). Here the same
launches are captured again with `keep_graph`, and every 8-byte word of a
kernel node's parameters whose value lies inside the graph's h or tau
(`cuFuncGetParamInfo` gives each parameter's size) is recorded with its
offset into that buffer; memset nodes into them likewise. The probe
instantiates that graph itself; a "rebound" call stages the input into a
fresh output, as an eager call does, rewrites the recorded words to the
fresh buffers (`cuGraphExecKernelNodeSetParams`, which leaves launches
already queued as they were) and launches the graph. The copies out go.

Printed per shape: the graph's nodes by type and how many point into h
or tau; `bench/ab.py`'s side-by-side check and timing of `custom_kernel`
against the rebound call (SPEC §5's way; a differing bit is printed); the
host time of both calls while the GPU is busy (`bench/calls.py`'s way).
"""
import argparse
import ctypes
import sys
from collections import Counter
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import ab  # noqa: E402
import calls  # noqa: E402
import submission  # noqa: E402
import cuda.bindings.driver as driver  # noqa: E402

WORD = 8        # bytes of a device address in a kernel's parameters


def _ok(result):
    """The values of a cuda-python driver call after its CUresult, raising on an error."""
    error, *values = result
    if error != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA driver call failed: {error}")
    return values[0] if len(values) == 1 else tuple(values)


def _parameter_sizes(params) -> list[int]:
    """Byte sizes of a kernel node's parameters, in order."""
    sizes = []
    while True:
        if int(params.func) != 0:
            error, _, size = driver.cuFuncGetParamInfo(params.func, len(sizes))
        else:
            error, _, size = driver.cuKernelGetParamInfo(params.kern, len(sizes))
        if error != driver.CUresult.CUDA_SUCCESS:
            return sizes
        sizes.append(size)


class ReboundGraph:
    """A captured launch sequence whose kernel and memset nodes are pointed at other buffers per launch.

    `buffers` are the tensors the capture wrote (h, tau); `rebind(others)`
    moves every recorded address inside buffers[k] by others[k]'s offset
    from it, then `launch(stream)` runs the graph."""

    def __init__(self, graph: torch.cuda.CUDAGraph, buffers: list[torch.Tensor]):
        ranges = [(t.data_ptr(), t.data_ptr() + t.numel() * t.element_size()) for t in buffers]

        def owner(address: int):
            for k, (low, high) in enumerate(ranges):
                if low <= address < high:
                    return k, address - low
            return None

        raw = driver.CUgraph(graph.raw_cuda_graph())
        count = _ok(driver.cuGraphGetNodes(raw))[1]
        nodes = _ok(driver.cuGraphGetNodes(raw, count))[0]
        self.types = Counter()
        self.kernels = []       # (node, params, parameter buffers, their pointer array, [(param, offset, k, delta)])
        self.memsets = []       # (node, params, k, delta)
        for node in nodes:
            kind = _ok(driver.cuGraphNodeGetType(node))
            self.types[kind.name] += 1
            if kind == driver.CUgraphNodeType.CU_GRAPH_NODE_TYPE_KERNEL:
                params = _ok(driver.cuGraphKernelNodeGetParams(node))
                sizes = _parameter_sizes(params)
                if sizes and int(params.kernelParams) == 0:
                    raise RuntimeError("a kernel node with its parameters in `extra`: not rebound here")
                addresses = (ctypes.c_void_p * len(sizes)).from_address(int(params.kernelParams))
                values = [ctypes.create_string_buffer(ctypes.string_at(addresses[i], size), size)
                          for i, size in enumerate(sizes)]
                words = []
                for i, value in enumerate(values):
                    for offset in range(0, len(value.raw) - WORD + 1, WORD):
                        found = owner(int.from_bytes(value.raw[offset:offset + WORD], "little"))
                        if found is not None:
                            words.append((i, offset, *found))
                if words:
                    pointers = (ctypes.c_void_p * len(values))(*(ctypes.addressof(v) for v in values))
                    params.kernelParams = ctypes.addressof(pointers)
                    self.kernels.append((node, params, values, pointers, words))
            elif kind == driver.CUgraphNodeType.CU_GRAPH_NODE_TYPE_MEMSET:
                params = _ok(driver.cuGraphMemsetNodeGetParams(node))
                found = owner(int(params.dst))
                if found is not None:
                    self.memsets.append((node, params, *found))
            elif kind == driver.CUgraphNodeType.CU_GRAPH_NODE_TYPE_MEMCPY:
                raise RuntimeError("a memcpy node: its addresses are not rebound here")
        self.graph = graph                  # its memory pool holds what the captured launches allocated
        self.context = _ok(driver.cuCtxGetCurrent())
        self.exec = _ok(driver.cuGraphInstantiate(raw, 0))

    def rebind(self, others: list[torch.Tensor]) -> None:
        bases = [t.data_ptr() for t in others]
        for node, params, values, _, words in self.kernels:
            for i, offset, k, delta in words:
                ctypes.c_uint64.from_buffer(values[i], offset).value = bases[k] + delta
            _ok(driver.cuGraphExecKernelNodeSetParams(self.exec, node, params))
        for node, params, k, delta in self.memsets:
            params.dst = driver.CUdeviceptr(bases[k] + delta)
            _ok(driver.cuGraphExecMemsetNodeSetParams(self.exec, node, params, self.context))

    def launch(self, stream: torch.cuda.Stream) -> None:
        _ok(driver.cuGraphLaunch(self.exec, driver.CUstream(stream.cuda_stream)))


def rebound_factor(f: "submission.Factorization"):
    """A call of f's shape into fresh outputs through a ReboundGraph of f's launches."""
    graph = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.graph(graph, stream=f.chain, capture_error_mode=submission.CAPTURE_MODE):
        f.launch()
    rebound = ReboundGraph(graph, [f.h, f.tau])

    def factor(data: torch.Tensor):
        batch, n, _ = data.shape
        h, tau = data.new_empty((batch, n, n)), data.new_empty((batch, n))
        f.stage(data, h)
        rebound.rebind([h, tau])
        rebound.launch(torch.cuda.current_stream())
        return h, tau

    return factor, rebound


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="60x1024")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20, help="calls a host-time reading")
    args = parser.parse_args(argv)
    passed = True
    for shape in args.shapes.split(","):
        batch, n = map(int, shape.split("x"))
        submission.custom_kernel(torch.randn(batch, n, n, device="cuda"))       # builds and captures f
        f = submission._factorization(batch, n, torch.device("cuda", torch.cuda.current_device()))
        if f.eager:
            print(f"{shape}: launched eagerly, no graph to rebind", flush=True)
            continue
        factor, rebound = rebound_factor(f)
        print(f"{shape}: nodes {dict(rebound.types)}; kernels rebound {len(rebound.kernels)} "
              f"({sum(len(k[4]) for k in rebound.kernels)} words), memsets {len(rebound.memsets)}", flush=True)
        variants = {"graph": submission.custom_kernel, "rebound": factor}
        passed &= ab.time_side_by_side(ab.benchmark_cases({(batch, n)}), variants, args.rounds)
        x = torch.randn(batch, n, n, device="cuda")
        for name, fn in variants.items():
            print(f"  {name}: host {calls._host_us(lambda: fn(x), args.calls):.0f} us a call", flush=True)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
