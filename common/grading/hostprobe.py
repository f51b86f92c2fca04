"""Host probes: the static check kind "probe". A lab's small host program includes the student's kernel
file, prints what it computes from it on the CPU (a CuTe layout's offsets, a tiled MMA's partition:
CuTe layouts are ordinary C++ values), and a function of the lab's judges what it printed.

    Probe(program, verdict, builds=({},))   a lab's row: grading/probes.py PROBES = {(part, check): Probe}
    probe_for(g, part, check)               -> the lab's Probe (CourseError naming the table when missing)
    build(program, kernel, out, defines, flags, include_dirs) -> the binary, or CourseError (nvcc's first error)
    run(g, part, check, compiled)           -> (ok, reason): every build of the probe run, then its verdict

The program (the lab's grading/probes/<name>.cu) includes the student's file as PROBE_KERNEL, a macro
holding its path, and only in the host pass:

    #ifndef __CUDA_ARCH__
    #include PROBE_KERNEL
    int main() { ...print... }
    #endif

so nvcc compiles no device code: a few seconds where the kernel itself takes half a minute. Each entry
of `builds` is one set of -D defines (a tile parameter the kernel reads, say), one binary and one run;
the verdict gets [(defines, stdout)] in that order and returns (ok, reason). The reason names what is
wrong (which lanes, which banks, which columns), never the expected code.
"""
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..build import (digest, find_nvcc, from_cache, included_headers, nvcc_timeout_s, nvcc_version, run_nvcc,
                     to_cache)
from ..errors import CourseError

RUN_TIMEOUT_S = 60


@dataclass(frozen=True)
class Probe:
    program: str                      # under the lab's grading/probes/
    verdict: Callable                 # [(defines, stdout)] -> (ok, reason)
    builds: tuple = ({},)             # one dict of -D defines per build


def probe_for(g, part, check):
    module = g.lab.module("grading.probes") if (g.dir / "probes.py").exists() else None
    probes = getattr(module, "PROBES", {})
    if (part, check) not in probes:
        raise CourseError(f"grading/parts.py: {part} {check} is a probe check, and grading/probes.py PROBES has "
                          f"no ({part!r}, {check!r})", hint="add Probe(program, verdict) there")
    return probes[(part, check)]


def _first_error(text, kernel):
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    errs = [l for l in lines if " error" in l or l.startswith("error")]
    line = (errs or lines or ["(no output)"])[0]
    return line.replace(str(Path(kernel).parent) + "/", "")


def build(program, kernel, out, defines=None, flags=(), include_dirs=()):
    """Compile `program` with PROBE_KERNEL = `kernel` into `out`; returns `out`."""
    out = Path(out)
    stamp = _stamp(program, kernel, defines, flags, include_dirs)
    if from_cache(stamp, {".exe": out}) is not None:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [find_nvcc(), "-std=c++17", "-O0", *flags, f'-DPROBE_KERNEL="{Path(kernel).resolve()}"',
           *[f"-D{k}={v}" for k, v in (defines or {}).items()],
           *[f"-I{d}" for d in include_dirs], "-o", str(out), str(program)]
    try:
        proc = run_nvcc(cmd)
    except subprocess.TimeoutExpired:
        raise CourseError(f"the probe {Path(program).name} did not finish compiling with {Path(kernel).name} "
                          f"in {nvcc_timeout_s():g} s (an #include of a file that never ends?)") from None
    if proc.returncode != 0:
        raise CourseError(f"the probe {Path(program).name} does not compile with {Path(kernel).name}: "
                          f"{_first_error(proc.stdout + proc.stderr, kernel)}")
    to_cache(stamp, {".exe": out}, {})
    return out


def _stamp(program, kernel, defines, flags, include_dirs):
    """What a probe's binary is built from, for COURSE_CUBIN_CACHE (build.cache_key): the student's
    file, the program, and the headers each includes ("..."), by contents; the student's own folder
    (a grader's temporary copy) is left out of the include folders, the headers found there being
    counted by their contents. A cached binary is the same program; only a message naming its source
    (an assert's) would name the file it was first built from."""
    kernel = Path(kernel).resolve()
    files = [kernel, *included_headers(kernel, include_dirs), Path(program), *included_headers(program, include_dirs)]
    return {"sources": {str(f): digest(f) for f in files}, "probe": True, "defines": dict(defines or {}),
            "flags": list(flags), "include_dirs": [str(d) for d in include_dirs if Path(d).resolve() != kernel.parent],
            "nvcc": nvcc_version()}


def _run(exe, tries=5):
    """Run a probe's binary. A binary written by this process (a copy from COURSE_CUBIN_CACHE) cannot be
    executed while a child that another thread forked meanwhile still holds it open (ETXTBSY, for the
    moment between its fork and its exec): tried again after a pause."""
    import errno
    import time
    for i in range(tries):
        try:
            return subprocess.run([str(exe)], capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        except OSError as e:
            if e.errno != errno.ETXTBSY or i == tries - 1:
                raise
            time.sleep(0.05 * (i + 1))


def run(g, part, check, compiled):
    """(ok, reason) of one probe check for a compiled student kernel (static.Compiled)."""
    probe = probe_for(g, part.name, check.name)
    program = g.dir / "probes" / probe.program
    row = compiled.row
    # the student's folder first: a header of the lab's HEADERS that the workspace holds is theirs
    includes = [Path(compiled.source).parent, *g.lab._include_dirs(row), g.lab.kernels_dir]
    flags = [f for f in row.nvcc_flags if f.startswith("--expt") or f.startswith("-std")]
    folder = Path(compiled.cubin).parent / "probes" if compiled.cubin else g.build_dir / "probes"
    outputs = []
    for i, defines in enumerate(probe.builds):
        exe = folder / f"{Path(compiled.source).stem}-{part.name}-{check.name}-{i}"
        try:
            build(program, compiled.source, exe, defines, flags, includes)
            proc = _run(exe)
        except CourseError as e:
            return False, e.message
        except subprocess.TimeoutExpired:
            return False, f"the probe {probe.program} ran past {RUN_TIMEOUT_S} s"
        if proc.returncode != 0:
            return False, f"the probe {probe.program} failed: {(proc.stderr or proc.stdout).strip()[:200]}"
        outputs.append((dict(defines), proc.stdout))
    return probe.verdict(outputs)
