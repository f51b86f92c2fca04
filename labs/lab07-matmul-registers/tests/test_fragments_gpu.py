"""The fragment model against the hardware. kernels/probe_fragments.cu moves tag tiles into registers
with the real instructions (ldmatrix, mma.sync m16n8k16 and m16n8k8 TF32, WMMA) and every lane writes
out what it holds; common/fragments.py says what each lane should hold. The compile test needs only
nvcc; the others need a GPU and skip without one."""
import numpy as np
import pytest

from common import fragments as fr
from common.build import ALL_ARCHS, arch_number, compile_cubin
from common.errors import CourseError
from common.testing import lab_of, needs_gpu

LAB = lab_of(__file__)
PROBE = LAB.kernels_dir / "probe_fragments.cu"


def probe_cubin(arch):
    return LAB.build_dir / arch / "probe_fragments.cubin"        # where probe.build_probe puts it


PROBE_ARCHS = [a for a in ALL_ARCHS if arch_number(a) >= arch_number(LAB.module("probe").PROBE_MIN_ARCH)]


def test_the_probe_says_why_it_does_not_run_on_turing():
    with pytest.raises(CourseError, match="needs sm_80 or newer"):
        LAB.module("probe").build_probe("sm_75")


@pytest.mark.parametrize("arch", PROBE_ARCHS)
def test_probe_compiles_for_every_arch_without_warnings(arch):
    res = compile_cubin(PROBE, probe_cubin(arch), arch)
    assert set(res) == set(fr.PROBE_SIZES)
    log = probe_cubin(arch).with_suffix(".ptxas.log").read_text()
    assert "warning" not in log.lower(), log
    assert all(r["spill_stores"] == 0 and r["stack"] == 0 for r in res.values())


@pytest.fixture(scope="module")
def run_probe():
    """run_probe(entry) -> the entry's output array, from one warp, one launch (probe.py)."""
    probe = LAB.module("probe")
    arch = LAB.gpu_arch()
    return lambda entry: probe.run_probe(entry, arch)


@needs_gpu
@pytest.mark.parametrize("entry", ["probe_ldmatrix", "probe_mma_f16", "probe_mma_tf32", "probe_wmma"])
def test_every_lane_holds_what_the_fragment_model_says(run_probe, entry):
    bad = fr.check_probe(entry, run_probe(entry))
    assert not bad, f"{entry}: {len(bad)} mismatches:\n" + "\n".join(bad[:20])


@needs_gpu
def test_wmma_layout_as_measured(run_probe, capsys):
    """WMMA does not specify its layout: print what this GPU does (the fragment explorer shows it)."""
    lay = fr.wmma_layout_from_probe(run_probe("probe_wmma"))
    assert len(lay["matrix_a.row_major"]["per_lane"][0]) == 16      # num_elements of a 16x16x16 half fragment
    with capsys.disabled():
        for name, frag in lay.items():
            print(f"\nWMMA {name} on {LAB.gpu_arch()}: {len(frag['per_lane'][0])} elements per lane; "
                  "lowest lane holding each element:")
            print(fr.lane_tile_text(frag["lanes"]))
