"""A simulated GPU for tests of the grader on machines without one (never used otherwise).

    PATH                      the folder to put first on PYTHONPATH: its pycuda/ is numpy behind the
                              few pycuda.driver calls the grader's workers make (pycuda/driver.py)
    use(monkeypatch, folder, timing_size=192)   in a pytest test: the grader's workers get this
                              pycuda, racecheck runs the fake compute-sanitizer written into `folder`,
                              and there is no ncu (bank-conflict checks skip, as on a GPU without it)
    env(work, arch="sm_90", seed=1)   -> a grader.Env that says "GPU": grade_many / grade_workspace
                              then run the GPU checks in workers on this simulated GPU (after use())
    write_sanitizer(folder)   -> the fake compute-sanitizer: runs the program, and reports a race in
                              every kernel whose source says `BUG [race]`

It simulates the grader's machinery (workers, guard zones, poison, timing, the re-check, crash
recovery, racecheck's bookkeeping), not the kernels: a kernel computes C = A.B (alpha A.B + beta C)
in float64 from the inputs its entry point's signature declares (float, __half, __nv_bfloat16), and
misbehaves as its source says with a `BUG [effect]` marker (pycuda/driver.py lists the effects).
"""
import os
import sys
from pathlib import Path

PATH = Path(__file__).resolve().parent

_SANITIZER = '''\
import json, re, subprocess, sys
from pathlib import Path
argv = sys.argv[1:]
i = argv.index("--racecheck-report") + 2          # the program starts after the tool's options
proc = subprocess.run(argv[i:], capture_output=True, text=True)
print(proc.stdout + proc.stderr, end="")
spec = json.loads(Path(argv[argv.index("--spec") + 1]).read_text())
racy = []
for it in spec["items"]:
    lines = Path(it["source"]).read_text().splitlines()
    at = [n for n, l in enumerate(lines, 1) if "BUG [race]" in l]
    if at and f"done {it['id']}" in proc.stdout:
        racy.append((Path(it["source"]).name, at[0]))
for name, line in racy:                # the shape of racecheck's analysis report
    print(f"========= Error: Race reported between Write access at kernel_body+0x1a0 in {name}:{line - 2}")
    print(f"=========     and Read access at kernel_body+0x2b0 in {name}:{line + 2} [512 hazards]")
print(f"========= RACECHECK SUMMARY: {len(racy)} hazards displayed ({len(racy)} errors, 0 warnings)")
sys.exit(1 if racy or proc.returncode else 0)
'''


def write_sanitizer(folder):
    fake = Path(folder) / "compute-sanitizer"
    fake.parent.mkdir(parents=True, exist_ok=True)
    fake.write_text(f"#!{sys.executable}\n" + _SANITIZER)
    fake.chmod(0o755)
    return fake


def use(monkeypatch, folder, timing_size=192):
    from common import ncu, sanitizer
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(PATH), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("GRADE_TIMING_SIZE", str(timing_size))
    # one BLAS thread in each worker: its "kernels" are numpy products, and a test run's other workers
    # share the cores (16 pytest workers, each worker's numpy fanning out over all 16 cores, made a
    # reference workspace's item overrun an 8 s hang limit on the GPU machine, 2026-12-06)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(var, "1")
    fake = write_sanitizer(folder)
    monkeypatch.setattr(sanitizer, "find_sanitizer", lambda: str(fake))
    monkeypatch.setattr(ncu, "find_ncu", _no_ncu)     # the same on a machine that has ncu and a GPU
    return fake


def _no_ncu():
    from common.errors import CourseError
    raise CourseError("the simulated GPU has no Nsight Compute (ncu) to count its bank conflicts")


def env(work, arch="sm_90", seed=1):
    from ..grader import Env
    return Env(True, "a simulated GPU (common/grading/simgpu)", arch, seed, Path(work))
