"""Every kernel compiles for every supported architecture, with no spills (no GPU needed)."""
import pytest

from common.testing import lab_of
from common.build import ALL_ARCHS

LAB = lab_of(__file__)

ALL = LAB.all_kernels


@pytest.fixture(scope="module", params=ALL_ARCHS)
def built(request):
    return request.param, LAB.build(ALL, [request.param])


def runs_on(arch, kernels=ALL):
    """The rows built for arch (v8, t4 and the yardstick are not built for sm_75: their rows say why)."""
    return [k for k in kernels if LAB.build_arch(k, arch)]


def test_every_entry_point_of_the_table_is_in_its_cubin(built):
    arch, res = built
    for k in runs_on(arch):
        for entry in k.entries.values():
            assert entry in res[(k.name, arch)], f"{entry} not compiled from {k.source} for {arch}"


def test_no_kernel_spills_or_uses_a_stack_frame(built):
    arch, res = built
    for k in runs_on(arch):
        for entry in k.entries.values():
            r = res[(k.name, arch)][entry]
            assert r["spill_stores"] == r["spill_loads"] == r["stack"] == 0, f"{entry} on {arch}: {r}"


def test_static_shared_memory_fits_the_default_48_kb(built):
    arch, res = built
    for k in runs_on(arch):
        for entry in k.entries.values():
            assert res[(k.name, arch)][entry]["smem"] <= 48 * 1024


def test_register_blocking_costs_registers(built):
    """The chapter's 'price': v5's 8x8 tile needs far more registers than v3's one output."""
    arch, res = built
    regs = {k.name: max(r["registers"] for r in res[(k.name, arch)].values()) for k in runs_on(arch, LAB.ladders["fp32"])}
    assert regs["v3"] < regs["v4"] < regs["v5"]
    assert regs["v5"] >= 90     # 64 accumulators + 16 operands + addresses: "around 100"


def test_tuning_builds_compile_without_spills():
    arch = "sm_90" if "sm_90" in ALL_ARCHS else ALL_ARCHS[-1]
    for k in [LAB.kernel("v7").with_params(V7_PREFETCH=1), LAB.kernel("t3").with_params(STAGES=3)]:
        res = LAB.build([k], [arch])[(k.name, arch)]
        for entry in k.entries.values():
            assert res[entry]["spill_stores"] == 0, f"{k.name} {entry}: {res[entry]}"


def test_the_chapters_rungs_build_for_turing_and_the_rest_say_why_not():
    """sm_75 (Colab's T4): v3-v7 and t1-t3 are built; v8, t4 and the CUTLASS yardstick are not, each
    with its reason; t3 runs there without its idea, and its row says so."""
    built = [k.name for k in runs_on("sm_75")]
    assert built == ["v3", "v4", "v5", "v6", "v7", "t1", "t2", "t3"]
    for name in ("v8", "t4", "cutlass"):
        why = LAB.kernel(name).unsupported("sm_75")
        assert why and "sm_80" in why and "cp.async" in why, why
        assert LAB.kernel(name).unsupported("sm_80") is None
    assert "cp.async" in LAB.kernel("t3").arch_note("sm_75") and not LAB.kernel("t3").arch_note("sm_80")
    assert not any(LAB.kernel(n).arch_note("sm_75") for n in built if n != "t3")
