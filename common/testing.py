"""What the course's tests share (pytest imports every test file by its path, so nothing else is
shared between test folders):

    GPU_OK, GPU_TEXT      is there a usable CUDA GPU here, and what it is (or why not)
    needs_gpu             a pytest mark: skip, saying why, where there is no GPU
    lab_of(path)          the Lab whose folder holds `path` (a test file's __file__)
    needs_cuobjdump()     skip, saying why, where cuobjdump -sass is missing
    legality_drift(rules, record)  the recorded parameter sets that a kernel's static_asserts
                          (common.legality) judge legal where the record says illegal, or the reverse
"""
from pathlib import Path

import pytest

from .device import gpu_status
from .lab import load

GPU_OK, GPU_TEXT = gpu_status()
needs_gpu = pytest.mark.skipif(not GPU_OK, reason=f"needs a CUDA GPU: {GPU_TEXT}")


def lab_of(path):
    """The lab a file belongs to: the nearest folder above it with a lab.py."""
    for d in Path(path).resolve().parents:
        if (d / "lab.py").exists():
            return load(d)
    raise LookupError(f"{path} is not inside a lab folder")


def needs_cuobjdump():
    from .errors import CourseError
    from .sass import find_cuobjdump
    try:
        find_cuobjdump()
    except CourseError as e:
        pytest.skip(f"needs cuobjdump: {e.message}")


def case_id(name, variant, shape, extra=""):
    return f"{name}{'-' + variant if variant else ''}-{'x'.join(map(str, shape))}{extra}"


def gpu_cases(kernels, shapes):
    """[(name, variant, shape)] for pytest.mark.parametrize: every variant of every kernel on every
    shape it serves (the vec/scalar rule is the row's), with readable ids."""
    cases = [(k.name, v, s) for k in kernels for v, s in k.cases(shapes)]
    return cases, [case_id(*c) for c in cases]


def build_for_every_arch(lab, kernels=None):
    """{(name, arch): ptxas resources} for the lab's own kernels on every architecture the course
    supports (and sm_90a for Hopper-only rows), compiled here: no GPU needed."""
    from .build import ALL_ARCHS
    return lab.build(kernels or lab.own(), ALL_ARCHS)


def legality_drift(rules, record):
    """[(params, recorded why, the compiler's why)] where a kernel's static_asserts (rules: a
    common.legality.Legality) and the record (a fixture of {params, why}) disagree on whether the
    parameters are legal. (The sentences may be reworded in the kernel; which sets pass may not drift.)
    Sets that name a parameter the kernel no longer has (a switch taken out) are left out."""
    import json
    probes = [p for p in json.loads(Path(record).read_text())["probes"] if set(p["params"]) <= set(rules.parameters)]
    got = rules.check([p["params"] for p in probes])
    return [(p["params"], p["why"], why) for p, why in zip(probes, got) if (p["why"] is None) != (why is None)]
