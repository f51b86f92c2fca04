"""Every kernel compiles for every supported architecture, with no spills (no GPU needed)."""
import pytest

from common.testing import lab_of
from common.build import ALL_ARCHS

LAB = lab_of(__file__)

ALL = LAB.all_kernels


@pytest.fixture(scope="module", params=ALL_ARCHS)
def built(request):
    return request.param, LAB.build(ALL, [request.param])


def test_every_entry_point_of_the_table_is_in_its_cubin(built):
    arch, res = built
    for k in ALL:
        for entry in k.entries.values():
            assert entry in res[(k.name, arch)], f"{entry} not compiled from {k.source} for {arch}"


def test_no_kernel_spills_or_uses_a_stack_frame(built):
    arch, res = built
    for k in ALL:
        for entry in k.entries.values():
            r = res[(k.name, arch)][entry]
            assert r["spill_stores"] == r["spill_loads"] == r["stack"] == 0, f"{entry} on {arch}: {r}"


def test_static_shared_memory_fits_the_default_48_kb(built):
    arch, res = built
    for k in ALL:
        for entry in k.entries.values():
            assert res[(k.name, arch)][entry]["smem"] <= 48 * 1024


def test_register_blocking_costs_registers(built):
    """The chapter's 'price': v5's 8x8 tile needs far more registers than v3's one output."""
    arch, res = built
    regs = {k.name: max(r["registers"] for r in res[(k.name, arch)].values()) for k in LAB.ladders["fp32"]}
    assert regs["v3"] < regs["v4"] < regs["v5"]
    assert regs["v5"] >= 90     # 64 accumulators + 16 operands + addresses: "around 100"


def test_tuning_builds_compile_without_spills():
    arch = "sm_90" if "sm_90" in ALL_ARCHS else ALL_ARCHS[-1]
    for k in [LAB.kernel("v7").with_params(V7_PREFETCH=1), LAB.kernel("t3").with_params(STAGES=3)]:
        res = LAB.build([k], [arch])[(k.name, arch)]
        for entry in k.entries.values():
            assert res[entry]["spill_stores"] == 0, f"{k.name} {entry}: {res[entry]}"
