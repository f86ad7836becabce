"""Does a kernel overwrite the A registers of a wgmma still in flight? (no GPU needed)

    python bench/check_wgmma_operands.py [FILE.ptx | FILE.sass ...]

A wgmma whose A operand comes from registers reads them asynchronously,
until a `wgmma.wait_group N` retires its group (at most N groups newer
than it left pending). ptxas holds those registers only up to the next
wait_group of any N: with `N > 0` inside a loop it hands them to the next
trip's loads while the wgmma still reads them (build 9 of
`probe_onepass_gluon.py` at f9e6430 read garbage that way). Triton's
`warpgroup_mma_wait(deps=...)` names its dependencies in a PTX comment only,
so it cannot hold them either.

This tool reads the SASS (`cuobjdump -sass`, from Triton's bundled
toolkit), and for each group of HGMMA with register A follows the control
flow (fall-through and branch targets, groups issued since counted) until
a `WARPGROUP.DEPBAR.LE gsb0, N` retires it; any instruction on the way
that writes one of its A registers is reported. Without files it compiles
the submission's `pair_update_kernel` for sm_90a here, in each build it
launches (PAIR_UPDATE_BUILDS), and checks it (tests/test_wgmma_operands.py runs that). Exit
status 1 when a write is found.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ["QR_SKIP_PRECOMPILE"] = "1"

import triton  # noqa: E402

TOOLS = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
A_REGISTERS = 4             # an m64nNk16 bf16 A fragment: 8 values a thread, 4 registers
NO_REGISTER_WRITE = ("ST", "BAR", "SYNCS", "RED", "BRA", "UTMA", "ISETP", "FSETP", "WARPSYNC", "HGMMA", "WARPGROUP",
                     "EXIT", "RET", "CALL", "NOP", "DEPBAR", "MEMBAR", "FENCE", "ERRBAR", "CCTL", "UBLKCP")
BRANCH = re.compile(r"(@!?U?P\w+ )?BRA(\.\w+)? (\w+, )?0x([0-9a-f]+)")


def sass_of(path: Path) -> str:
    """The SASS of a .sass file as is, of a .ptx file through ptxas (sm_90a) and cuobjdump."""
    if path.suffix == ".sass":
        return path.read_text()
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "k.cubin"
        ptx = Path(tmp) / "k.ptx"
        ptx.write_text(path.read_text().replace(".version 8.8", ".version 8.7"))     # the bundled ptxas's ISA
        subprocess.run([TOOLS / "ptxas", "-arch=sm_90a", ptx, "-o", cubin], check=True)
        return subprocess.run([TOOLS / "cuobjdump", "-sass", cubin], check=True, capture_output=True,
                              text=True).stdout


def instructions(sass: str) -> list[tuple[int, str]]:
    """(address, instruction without its closing `;`) of every SASS line."""
    found = []
    for line in sass.splitlines():
        m = re.search(r"/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if m:
            found.append((int(m.group(1), 16), m.group(2).strip()))
    return found


def unpredicated(instruction: str) -> str:
    """The instruction without its guard (`@P0 `, `@!P1 `)."""
    return instruction.split(None, 1)[1] if instruction.startswith("@") else instruction


def written_registers(instruction: str) -> set[int]:
    """The general registers an instruction writes (its first operand), for the instructions that write one."""
    parts = unpredicated(instruction).split(None, 1)
    if len(parts) < 2 or parts[0].startswith(NO_REGISTER_WRITE) or parts[0].startswith("U"):
        return set()
    m = re.match(r"R(\d+)", parts[1].split(",")[0].strip())
    if not m:
        return set()
    width = 4 if ".128" in parts[0] else 2 if ".64" in parts[0] else 1
    return set(range(int(m.group(1)), int(m.group(1)) + width))


def in_flight_writes(program: list[tuple[int, str]]) -> list[str]:
    """Each write to an in-flight wgmma group's A registers, as text."""
    index = {address: i for i, (address, _) in enumerate(program)}
    groups, registers = [], set()
    for i, (_, instruction) in enumerate(program):
        if instruction.startswith("HGMMA"):
            a = re.match(r"R(\d+)$", instruction.split(None, 1)[1].split(",")[1].strip())
            if a:
                registers |= set(range(int(a.group(1)), int(a.group(1)) + A_REGISTERS))
            if "gsb0" in instruction:
                groups.append((i, registers))
                registers = set()
    found = []
    for end, held in groups:
        if not held:
            continue
        seen, pending = set(), [(end + 1, 0)]
        while pending:
            i, newer = pending.pop()
            if i >= len(program) or (i, newer) in seen:
                continue
            seen.add((i, newer))
            address, instruction = program[i]
            body = unpredicated(instruction)
            if body.startswith("WARPGROUP.DEPBAR") and newer >= int(body.split(",")[-1], 16):
                continue                                    # retired
            if body.startswith("HGMMA") and "gsb0" in body:
                newer = min(newer + 1, 8)
            hit = written_registers(instruction) & held
            if hit:
                found.append(f"group ending at {program[end][0]:#x}: A registers {sorted(hit)} written at "
                             f"{address:#x}: {instruction}")
            if body.startswith(("EXIT", "RET")):
                continue
            branch = BRANCH.match(instruction)
            if branch:
                if int(branch.group(4), 16) in index:
                    pending.append((index[int(branch.group(4), 16)], newer))
                if not branch.group(1):
                    continue                                # unconditional
            pending.append((i + 1, newer))
    return found


def pair_update_ptx(slots: int, strip: int, from_input: bool, width: int) -> str:
    """`submission.pair_update_kernel`'s PTX for sm_90a over `slots` row blocks with a strip of `strip` slots,
    `width` reflector columns (a pair's 64, or 32 for its inner update), 512 x 512 matrices, compiled here."""
    import torch
    from triton.backends.compiler import BaseBackend, GPUTarget
    from triton._C.libtriton import native_specialize_impl
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    import submission

    n, block = 512, submission.ON_CHIP_BLOCK
    keep = block - width
    h = torch.zeros(4 * n, n)
    descriptors = {name: TensorDescriptor(h, list(h.shape), [n, 1], shape,
                                          gl.NVMMASharedLayout.get_default_for(shape, gl.float32))
                   for name, shape in (("h_desc", [block, block]), ("s_desc", [block, block - keep]),
                                       ("c_desc", [block, block]), ("v_desc", [block // 2, width]))}
    signature = {name: native_specialize_impl(BaseBackend, d, False, True, True)[0] for name, d in descriptors.items()}
    signature.update({"t_ptr": "*fp32", "size_ptr": "*fp32", "n": "i32", "c": "i32", "col_lo": "i32",
                      "tiles_n": "i32", "tiles": "i32"})
    constants = dict(W=width, BM=block, BN=block, SLOTS=slots, STRIP=strip, FROM_INPUT=from_input, KEEP=keep,
                     PRODUCER_REGS=submission.ON_CHIP_PRODUCER_REGS)
    source = GluonASTSource(submission.pair_update_kernel, {**signature, **{k: "constexpr" for k in constants}},
                            constexprs=constants)
    kernel = triton.compile(source, target=GPUTarget("cuda", 90, 32),
                            options=dict(num_warps=submission.WARPGROUP // submission.WARP))
    return kernel.asm["ptx"]


# (row blocks, strip slots, from the input, reflector columns) that the submission launches at n 384-512: a
# pair's rest updates with whole strips to 6 row blocks, rings beyond (`on_chip_strip`), the first step's
# reading the input; its inner updates, whole strips
PAIR_UPDATE_BUILDS = ((2, 2, False, 64), (3, 3, False, 64), (4, 4, False, 64), (5, 5, False, 64), (6, 6, False, 64),
                      (6, 6, True, 64), (7, 6, False, 64), (8, 5, False, 64), (8, 5, True, 64),
                      *((blocks, blocks, False, 32) for blocks in range(1, 9)))


def check(name: str, sass: str) -> list[str]:
    """Print and return the writes to in-flight wgmma A registers in one kernel's SASS."""
    program = instructions(sass)
    groups = sum(1 for _, i in program if i.startswith("HGMMA") and "gsb0" in i)
    found = in_flight_writes(program)
    print(f"{name}: {groups} wgmma groups, {len(found)} writes to in-flight A registers")
    for line in found[:20]:
        print("  " + line)
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path,
                        help=".ptx or .sass files (default: the submission's pair_update_kernel, compiled here)")
    args = parser.parse_args(argv)
    status = 0
    if args.files:
        for path in args.files:
            status |= bool(check(str(path), sass_of(path)))
        return status
    with tempfile.TemporaryDirectory() as tmp:
        for slots, strip, from_input, width in PAIR_UPDATE_BUILDS:
            ptx = Path(tmp) / "pair_update.ptx"
            ptx.write_text(pair_update_ptx(slots, strip, from_input, width))
            name = (f"pair_update_kernel, W {width}, {slots} row blocks, strip {strip}"
                    f"{', from the input' if from_input else ''}")
            status |= bool(check(name, sass_of(ptx)))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
