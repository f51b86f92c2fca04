"""What lab 7a claims about the compiled code, checked on every architecture without a GPU: no spills,
and each rung's one idea visible in SASS (static counts: an instruction in a loop counts once)."""
import pytest

from common import targets
from common.build import ALL_ARCHS
from common.testing import build_for_every_arch, lab_of, needs_cuobjdump

LAB = lab_of(__file__)
RUNGS = [f"k{i}" for i in range(1, 8)]


def test_every_rung_builds_for_every_architecture_without_spills():
    res = build_for_every_arch(LAB)
    for (name, arch), entries in res.items():
        for entry, r in entries.items():
            assert r["spill_stores"] == r["spill_loads"] == r["stack"] == 0, f"{entry} on {arch}: {r}"


@pytest.fixture(scope="module", params=["sm_80", "sm_90"] if "sm_90" in ALL_ARCHS else ALL_ARCHS[:1])
def sass(request):
    needs_cuobjdump()
    return {c["kernel"]: c for c in targets.sass_counts(LAB, request.param, LAB.own()).values()}


def ops(sass, name, v):
    return sass[f"{name}/{v}"]["opcodes"]


@pytest.mark.parametrize("v", ["vec", "scalar"])
def test_every_rung_multiplies_on_the_tf32_tensor_cores_and_never_in_fp16(sass, v):
    for name in RUNGS:
        o = ops(sass, name, v)
        assert any(op.startswith("HMMA") and "TF32" in op for op in o), f"{name}/{v}: {o}"
        assert not any(op.startswith("HMMA") and "TF32" not in op for op in o), f"{name}/{v} has non-TF32 HMMA"


@pytest.mark.parametrize("v", ["vec", "scalar"])
def test_mma_sync_m16n8k8_from_k2_on(sass, v):
    for name in RUNGS[1:]:
        assert ops(sass, name, v).get("HMMA.1688.F32.TF32", 0) > 0, name


@pytest.mark.parametrize("v", ["vec", "scalar"])
def test_cp_async_from_k3_on_and_not_before(sass, v):
    assert sass[f"k2/{v}"]["LDGSTS"] == 0
    for name in RUNGS[2:]:
        assert sass[f"{name}/{v}"]["LDGSTS"] > 0 and sass[f"{name}/{v}"]["DEPBAR"] > 0, name


@pytest.mark.parametrize("v", ["vec", "scalar"])
def test_ldmatrix_feeds_a_from_k4_on(sass, v):
    for name in RUNGS[:3]:
        if name != "k1":            # WMMA may use LDSM itself; k2 and k3 load A with LDS
            assert sass[f"{name}/{v}"]["LDSM"] == 0, name
    for name in RUNGS[3:]:
        assert sass[f"{name}/{v}"]["LDSM"] > 0, name


def test_float2_stores_of_the_accumulators_from_k6_on(sass):
    for name in RUNGS[5:]:
        assert ops(sass, name, "vec").get("STG.E.64", 0) > 0, name
    assert ops(sass, "k5", "vec").get("STG.E.64", 0) == 0


def test_no_rung_touches_local_memory(sass):
    for key, c in sass.items():
        assert c["LDL/STL"] == 0, f"{key}: {c['LDL/STL']} LDL/STL"


def test_the_cutlass_yardstick_is_built_from_k7s_instructions(sass):
    """The yardstick row is CUTLASS's Ampere TF32 GEMM: HMMA.1688.F32.TF32 as k2..k7, A by ldmatrix as
    k4..k7 (LDSM), B by plain shared loads (row-major B cannot use ldmatrix), cp.async copies."""
    ops = sass["cutlass"]["opcodes"]
    assert ops.get("HMMA.1688.F32.TF32", 0) > 0, ops
    assert not any(op.startswith("HMMA") and "TF32" not in op for op in ops), ops
    assert sass["cutlass"]["LDSM"] > 0 and sass["cutlass"]["LDGSTS"] > 0 and sass["cutlass"]["LDL/STL"] == 0


@pytest.mark.parametrize("sass", ["sm_90"], indirect=True)
def test_cutlass_bounds_probe_reads_b_by_ldmatrix(sass):
    """make bounds KERNEL=cutlass: CUTLASS_PROBE=1 takes B column-major (k contiguous), so B too comes by
    ldmatrix: more LDSM, fewer scalar LDS, the same mma count."""
    from common.sass import disassemble, opcode_counts
    probe = LAB.bind(LAB.kernel("cutlass")).with_params(CUTLASS_PROBE=1)
    LAB.build([probe], ["sm_90"])
    ops = opcode_counts(disassemble(probe.cubin(LAB.build_dir_of(probe), "sm_90")))["tf32gemm_cutlass"]
    base = sass["cutlass"]["opcodes"]
    ldsm = lambda c: sum(n for op, n in c.items() if op.startswith("LDSM"))   # noqa: E731
    assert any(op.startswith("F2FP.TF32") for op in base), "sm_90 rounds each operand to TF32 (the tolerance's premise)"
    assert ldsm(ops) > ldsm(base) > 0, (ops, base)
    assert ops.get("LDS", 0) < base.get("LDS", 0), (ops.get("LDS"), base.get("LDS"))
    assert ops.get("HMMA.1688.F32.TF32", 0) == base.get("HMMA.1688.F32.TF32", 0) > 0


@pytest.mark.parametrize("sass", ["sm_90"], indirect=True)
def test_k7_bounds_builds_leave_out_what_they_say(sass):
    """make bounds KERNEL=k7 (common/bounds.py): K7_PROBE=1 keeps only the prologue's copies (fewer
    LDGSTS, the barrier kept), 2 has no HMMA but every LDSM and LDS of k7, 3 no barrier in the loop."""
    from common.sass import disassemble, opcode_counts
    base = LAB.bind(LAB.kernel("k7"))
    builds = {p: base.with_params(K7_PROBE=p) for p in (1, 2, 3)}
    LAB.build(list(builds.values()), ["sm_90"])
    probe = {p: opcode_counts(disassemble(k.cubin(LAB.build_dir_of(k), "sm_90")))["tf32gemm_k7_vec"]
             for p, k in builds.items()}
    k7 = ops(sass, "k7", "vec")
    ldgsts = lambda c: sum(n for op, n in c.items() if op.startswith("LDGSTS"))   # noqa: E731
    count = lambda c, prefix: sum(n for op, n in c.items() if op.startswith(prefix))  # noqa: E731
    assert 0 < ldgsts(probe[1]) < ldgsts(k7) and count(probe[1], "BAR.SYNC") > 0, probe[1]
    assert count(probe[2], "HMMA") == 0 and count(probe[2], "LDSM") == count(k7, "LDSM"), probe[2]
    assert count(probe[2], "LDS") == count(k7, "LDS") and ldgsts(probe[2]) == ldgsts(k7), probe[2]
    assert count(probe[3], "BAR.SYNC") < count(k7, "BAR.SYNC"), probe[3]
