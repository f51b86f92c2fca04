"""The host program tools/layouts.cu: CuTe's own layouts of c4 and c5, printed on the CPU (no GPU).

    run()        -> Printed: .text (what the program printed: print_layout's grids and the lines below),
                    .banks {"plain"|"swizzled": [[bank per k] per row]}, .mma {"plain"|"permuted": {lane:
                    [(m, n) of values j = 0..7]}}, .copy_a / .copy_b {lane: (row, k)}, .offsets {m: [offset
                    per k]} (swizzled sA). Built once into the lab's build/host/ (rebuilt when the .cu changes).

nvcc compiles it as host code with the CUTLASS headers (common/headers.py finds them): about 10-20 s
the first time.
"""
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from common.build import find_nvcc
from common.errors import CourseError
from common.headers import cutlass_include

LAB = Path(__file__).resolve().parent
SOURCE = LAB / "tools" / "layouts.cu"
BINARY = LAB / "build" / "host" / "layouts"


@dataclass
class Printed:
    text: str
    banks: dict = field(default_factory=dict)
    mma: dict = field(default_factory=dict)
    copy_a: dict = field(default_factory=dict)
    copy_b: dict = field(default_factory=dict)
    offsets: dict = field(default_factory=dict)


def build():
    """Compile the program if it is missing or older than its source; returns its path."""
    if BINARY.exists() and BINARY.stat().st_mtime >= SOURCE.stat().st_mtime:
        return BINARY
    BINARY.parent.mkdir(parents=True, exist_ok=True)
    cmd = [find_nvcc(), "-std=c++17", "--expt-relaxed-constexpr", "-O1", f"-I{cutlass_include()}",
           "-o", str(BINARY), str(SOURCE)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise CourseError(f"nvcc could not build {SOURCE.name}:\n{(proc.stdout + proc.stderr)[-1500:]}",
                          hint="the command was: " + " ".join(cmd))
    return BINARY


def parse(text):
    out = Printed(text)
    for line in text.splitlines():
        m = re.match(r"banks (\w+) (\d+): (.*)", line)
        if m:
            out.banks.setdefault(m.group(1), []).append([int(x) for x in m.group(3).split()])
            continue
        m = re.match(r"mma (\w+) (\d+): (.*)", line)
        if m:
            pairs = re.findall(r"\((\d+),(\d+)\)", m.group(3))
            out.mma.setdefault(m.group(1), {})[int(m.group(2))] = [(int(a), int(b)) for a, b in pairs]
            continue
        m = re.match(r"copy ([AB]) (\d+): (\d+) (\d+)", line)
        if m:
            (out.copy_a if m.group(1) == "A" else out.copy_b)[int(m.group(2))] = (int(m.group(3)), int(m.group(4)))
            continue
        m = re.match(r"offsets swizzled (\d+): (.*)", line)
        if m:
            out.offsets[int(m.group(1))] = [int(x) for x in m.group(2).split()]
    return out


def run():
    """Build (if needed) and run the program; its output parsed."""
    proc = subprocess.run([str(build())], capture_output=True, text=True)
    if proc.returncode != 0:
        raise CourseError(f"{BINARY} failed: {proc.stderr[-500:]}", hint=f"rebuild it: rm {BINARY}")
    return parse(proc.stdout)
