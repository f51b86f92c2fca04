#!/usr/bin/env python3
"""Lab 7's fragment probe: which lane holds which element, measured on this GPU.

    python3 probe.py            build kernels/probe_fragments.cu for this GPU, run its four entry
                                points (one warp each), compare every lane with common/fragments.py,
                                print a verdict per probe and WMMA's measured layout, and save the raw
                                outputs to results/fragments-probe_<gpu>_<date>_<commit>.json
    build_probe(arch)           -> the cubin's path (compiled if stale)
    run_probe(entry, arch=None) -> the entry point's output array (fragments.PROBE_DTYPES[entry])
    run_all()                   -> {entry: output}; check with fragments.check_probe(entry, output)

The notebooks use the saved file where there is no GPU (WMMA's layout as last measured); they
load this module as lab.module("probe") (common/views.py), so it imports nothing of the lab's.
"""
import datetime
import re
from pathlib import Path

import numpy as np

from common import fragments, report
from common.build import arch_number, compile_cubin
from common.errors import NotOnThisGPU, user_errors

LAB = Path(__file__).resolve().parent
SOURCE = LAB / "kernels" / "probe_fragments.cu"
BUILD_DIR = LAB / "build"
RESULTS_DIR = LAB / "results"
ENTRIES = list(fragments.PROBE_SIZES)


PROBE_MIN_ARCH = "sm_80"     # the probe runs mma.m16n8k16 and TF32 mma.m16n8k8: Turing (sm_75) has neither


def build_probe(arch):
    if arch_number(arch) < arch_number(PROBE_MIN_ARCH):
        raise NotOnThisGPU(f"the fragment probe needs {PROBE_MIN_ARCH} or newer (mma.m16n8k16 and TF32 mma); this is {arch}",
                          hint="the fragment explorer shows the probe recorded on another GPU (results/fragments-probe_*.json)")
    cubin = BUILD_DIR / arch / "probe_fragments.cubin"
    compile_cubin(SOURCE, cubin, arch)
    return cubin


def _arch():
    from common.device import init_gpu
    cc = init_gpu().compute_capability()         # also makes PyCUDA's primary context current
    return f"sm_{cc[0]}{cc[1]}"


def run_probe(entry, arch=None):
    """One launch of `entry` with one warp; its output as fragments.PROBE_DTYPES[entry]."""
    import pycuda.driver as cuda
    arch = arch or _arch()
    module = cuda.module_from_file(str(build_probe(arch)))
    n = fragments.PROBE_SIZES[entry]
    out = np.empty(n, dtype=np.uint32)
    dev = cuda.mem_alloc(out.nbytes)
    try:
        cuda.memset_d32(dev, 0xDEADBEEF, n)      # anything the kernel does not write stays visible
        module.get_function(entry)(dev, block=(32, 1, 1), grid=(1, 1))
        cuda.memcpy_dtoh(out, dev)               # synchronizes: a launch error surfaces here
    finally:
        dev.free()
    return out.view(fragments.PROBE_DTYPES[entry])


def run_all():
    arch = _arch()
    return {entry: run_probe(entry, arch) for entry in ENTRIES}


def main():
    from common.device import gpu_facts
    facts = gpu_facts()
    outputs = run_all()
    for entry, out in outputs.items():
        bad = fragments.check_probe(entry, out)
        what = "every lane matches the model" if entry != "probe_wmma" else "every element held by some lane"
        print(f"{'PASS' if not bad else 'FAIL'} {entry} on {facts['arch']}: "
              + (what if not bad else f"{len(bad)} mismatches, first: {bad[0]}"))
    for name, frag in fragments.wmma_layout_from_probe(outputs["probe_wmma"]).items():
        print(f"\nWMMA {name}: {len(frag['per_lane'][0])} elements per lane; lowest lane holding each element:")
        print(fragments.lane_tile_text(frag["lanes"]))
    info = report.run_info(LAB)
    slug = re.sub(r"[^a-z0-9]+", "-", facts["name"].lower()).strip("-")
    path = RESULTS_DIR / f"fragments-probe_{slug}_{datetime.date.today().isoformat()}_{info['commit'][:7]}.json"
    report.write_json(path, {"what": "fragments-probe", "gpu": facts, "run": info,
                             "outputs": {e: o.tolist() for e, o in outputs.items()}})
    print(f"\nraw outputs: {path.relative_to(LAB)}")


if __name__ == "__main__":
    with user_errors():
        main()
