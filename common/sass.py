"""SASS: `cuobjdump -sass` parsed into exact opcode counts per kernel.

    find_cuobjdump()          -> (path, env): PATH first, then the nvidia-cuda-cuobjdump wheel
                                 (cuobjdump calls nvdisasm, so its folder goes on PATH too)
    disassemble(cubin)        -> SASS text
    opcode_counts(text)       -> {kernel: Counter({"FFMA": 512, "LDS.128": 32, ...})}
    COLUMNS                   the families a table shows, each an exact-match rule:
                              LDSM is not LDS, HFMA2.MMA is not a tensor op, LDS.128 is not LDS

Counts are static: an instruction in a loop body counts once, however often the loop runs, and
an unrolled loop counts once per copy. Never-executed placeholders (`@!PT ...`) are not counted.
"""
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

from .errors import CourseError

_FUNC = re.compile(r"^\s*Function\s*:\s*(\S+)")
_INSN = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(@!?U?P[T0-9]\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)")
_NEVER = "@!PT"      # ptxas pads with never-executed placeholders such as `@!PT LDS RZ, [RZ]`: not counted


def _base(op):
    return op.split(".")[0]


def _mods(op):
    return op.split(".")[1:]


def is_lds(op):        # LDS, LDS.64, LDS.U.. (not LDSM, not LDS.128)
    return _base(op) == "LDS" and "128" not in _mods(op)


def is_lds128(op):
    return _base(op) == "LDS" and "128" in _mods(op)


def is_ldg(op):        # LDG.E, LDG.E.64, LDG.E.CONSTANT, LDG.E.U16 ... (not 128-bit)
    return _base(op) == "LDG" and "128" not in _mods(op)


def is_ldg128(op):
    return _base(op) == "LDG" and "128" in _mods(op)


def is_sts(op):
    return _base(op) == "STS" and "128" not in _mods(op)


def is_sts128(op):
    return _base(op) == "STS" and "128" in _mods(op)


# Column name -> rule. Every kernel gets every column, zero included.
COLUMNS = {
    "FFMA": lambda op: _base(op) == "FFMA",
    "LDS": is_lds,
    "LDS.128": is_lds128,
    "LDG": is_ldg,
    "LDG.128": is_ldg128,
    "STS": is_sts,
    "STS.128": is_sts128,
    "BAR": lambda op: _base(op) == "BAR",
    "LDL/STL": lambda op: _base(op) in ("LDL", "STL"),
    "HMMA": lambda op: _base(op) == "HMMA",            # HFMA2.MMA is a register move, not a tensor op
    "LDSM": lambda op: _base(op) == "LDSM",
    "LDGSTS": lambda op: _base(op) == "LDGSTS",
    "DEPBAR": lambda op: _base(op) == "DEPBAR",
    "HGMMA": lambda op: _base(op) == "HGMMA",          # wgmma (sm_90a): HGMMA.64x256x16.F32 ...
    "UTMALDG": lambda op: _base(op) == "UTMALDG",      # TMA loads (cp.async.bulk.tensor)
    "SYNCS": lambda op: _base(op) == "SYNCS",          # mbarrier arrive / wait
    "USETMAXREG": lambda op: _base(op) == "USETMAXREG",  # setmaxnreg: registers handed between warpgroups
    "STG.64": lambda op: _base(op) == "STG" and "64" in _mods(op),
    "STG.128": lambda op: _base(op) == "STG" and "128" in _mods(op),
}


def family_counts(counter, columns=COLUMNS):
    return {name: sum(n for op, n in counter.items() if rule(op)) for name, rule in columns.items()}


def find_cuobjdump():
    env = dict(os.environ)
    exe = shutil.which("cuobjdump")
    if exe and shutil.which("nvdisasm"):
        return exe, env
    for root in sys.path:
        for sub in ("nvidia/cu13/bin", "nvidia/cuda_cuobjdump/bin", "nvidia/cu12/bin"):
            cand = Path(root) / sub / "cuobjdump"
            if cand.exists():
                dirs = {str(cand.parent)}
                dirs.update(str(p.parent) for p in Path(root).glob("nvidia/*/bin/nvdisasm"))
                env["PATH"] = os.pathsep.join([*sorted(dirs), env.get("PATH", "")])
                if shutil.which("nvdisasm", path=env["PATH"]):
                    return str(cand), env
    if exe:
        raise CourseError("cuobjdump is here but nvdisasm is not (cuobjdump -sass needs it)",
                          hint="pip install nvidia-cuda-nvdisasm (or add the CUDA toolkit's bin/ to PATH)")
    raise CourseError("cuobjdump was not found",
                      hint="`make test` installs it into .venv; or pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm")


def disassemble(cubin):
    exe, env = find_cuobjdump()
    proc = subprocess.run([exe, "-sass", str(cubin)], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise CourseError(f"cuobjdump -sass {cubin} failed: {proc.stderr.strip()[:500]}",
                          hint="rebuild with `make`; check that nvdisasm is on PATH")
    return proc.stdout


def opcode_counts(text):
    counts, current = {}, None
    for line in text.splitlines():
        m = _FUNC.match(line)
        if m:
            current = counts.setdefault(m.group(1), Counter())
            continue
        if current is not None:
            m = _INSN.match(line)
            if m and (m.group(1) or "").strip() != _NEVER:
                current[m.group(2)] += 1
    return counts


def kernel_listing(text, kernel):
    """The instruction lines of one kernel, for showing side by side."""
    out, inside = [], False
    for line in text.splitlines():
        m = _FUNC.match(line)
        if m:
            inside = m.group(1) == kernel
            continue
        if inside and _INSN.match(line):
            out.append(line.split(";")[0].strip() + " ;")
    return out
